"""Packaging checks: what ``setup.py`` puts in the built distribution, the colcon build of a ROS 2
workspace, and the tf2_msgs build.

Integration tests (they build a wheel, a colcon workspace or start processes); no ROS installation
is needed beyond the project's virtual environment (``scripts/bootstrap.sh``). The colcon test runs
where ``colcon`` is on the PATH (a ROS 2 installation, or ``pip install colcon-common-extensions``)
and is skipped, with the reason, elsewhere.
"""

from __future__ import annotations

import ast
import os
import random
import shutil
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "kangaroo_wbc"

# What the ROS 2 package must install under share/ (relative to the repository root). Every file
# matching one of these patterns must be in the wheel, whatever the folders hold today.
SHARED_DATA_PATTERNS = ["launch/*.py", "config/*.yaml", "config/*.rviz", "urdf/*"]
# Python package data declared in setup.py's package_data.
PACKAGE_DATA_PATTERNS = ["kangaroo_wbc/robots/kangaroo/*.yaml"]

# Left out when the source tree is copied for the build (local state, not sources).
COPY_IGNORE = shutil.ignore_patterns(
    ".git", ".venv", "build", "dist", "install", "log", "out", "reports", "*.egg-info",
    "__pycache__", ".pytest_cache", ".ruff_cache", ".mypy_cache", "test",
)

BUILD_TIMEOUT_S = 300.0  # [s]
COLCON_TIMEOUT_S = 300.0  # [s]
TF_EXCHANGE_TIMEOUT_S = 30.0  # [s] per process


def _package_xml_version() -> str:
    version = ET.parse(REPO / "package.xml").getroot().findtext("version")
    assert version, "package.xml has no <version>"
    return version.strip()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[zipfile.ZipFile]:
    """Integration fixture: a wheel built with pip from a copy of the source tree."""
    work = tmp_path_factory.mktemp("packaging")
    src = work / "src"
    shutil.copytree(REPO, src, ignore=COPY_IGNORE)
    dist = work / "dist"
    cmd = [
        sys.executable, "-m", "pip", "wheel", str(src),
        "--no-deps", "--no-build-isolation", "--quiet", "--wheel-dir", str(dist),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    assert proc.returncode == 0, f"pip wheel failed:\n{proc.stdout}\n{proc.stderr}"
    wheels = sorted(dist.glob(f"{PACKAGE}-*.whl"))
    assert len(wheels) == 1, f"expected one wheel, found {[w.name for w in wheels]}"
    with zipfile.ZipFile(wheels[0]) as archive:
        yield archive


def _data_prefix(archive: zipfile.ZipFile) -> str:
    prefixes = {name.split("/", 1)[0] for name in archive.namelist() if ".data/" in name}
    assert len(prefixes) == 1, f"expected one .data folder in the wheel, found {prefixes}"
    return prefixes.pop() + "/data/"


def _repo_files(patterns: list[str]) -> list[str]:
    files = {p for pattern in patterns for p in REPO.glob(pattern) if p.is_file()}
    return sorted(p.relative_to(REPO).as_posix() for p in files)


@pytest.mark.integration
def test_wheel_installs_ament_index_marker_and_package_xml(wheel: zipfile.ZipFile) -> None:
    data = _data_prefix(wheel)
    names = set(wheel.namelist())
    assert f"{data}share/ament_index/resource_index/packages/{PACKAGE}" in names
    assert f"{data}share/{PACKAGE}/package.xml" in names


@pytest.mark.integration
def test_wheel_installs_launch_config_and_urdf_files(wheel: zipfile.ZipFile) -> None:
    data = _data_prefix(wheel)
    names = set(wheel.namelist())
    expected = _repo_files(SHARED_DATA_PATTERNS)
    missing = [rel for rel in expected if f"{data}share/{PACKAGE}/{rel}" not in names]
    assert not missing, f"not installed under share/{PACKAGE} (see setup.py data_files): {missing}"


@pytest.mark.integration
def test_wheel_contains_package_data_and_no_tests(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    # the kernel cache is built where the package is installed, never into a wheel
    assert not [n for n in names if n.endswith((".nbi", ".nbc", "compiled-kernels.json"))]
    missing = [rel for rel in _repo_files(PACKAGE_DATA_PATTERNS) if rel not in names]
    assert not missing, f"package data missing from the wheel (see setup.py package_data): {missing}"
    assert f"{PACKAGE}/__init__.py" in names
    assert not [n for n in names if n.startswith("test/")], "tests must not be installed"


@pytest.mark.integration
def test_wheel_metadata_matches_package_xml(wheel: zipfile.ZipFile) -> None:
    dist_info = next(n.split("/", 1)[0] for n in wheel.namelist() if ".dist-info/" in n)
    version = dist_info.removesuffix(".dist-info").split("-", 1)[1]
    assert version == _package_xml_version(), "setup.py and package.xml versions differ"
    entry_points = wheel.read(f"{dist_info}/entry_points.txt").decode()
    assert "kangaroo-wbc = kangaroo_wbc_tools.cli:main" in entry_points


def _node_executables() -> list[str]:
    """The node executables of ``setup.py`` (its ``NODES``)."""
    tree = ast.parse((REPO / "setup.py").read_text())
    (nodes,) = [n.value for n in tree.body if isinstance(n, ast.Assign)
                and getattr(n.targets[0], "id", "") == "NODES"]
    return sorted(ast.literal_eval(nodes))


def test_setuptools_keeps_develop_editable() -> None:
    """Unit test: the pinned setuptools still has ``setup.py develop --editable``, which
    ``colcon build --symlink-install`` calls (setuptools 80 dropped the option: colcon then fails
    with "option --editable not recognized" or, since colcon-core 0.21, quietly copies instead)."""
    proc = subprocess.run([sys.executable, "setup.py", "develop", "--help"], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    import setuptools

    assert "--editable" in proc.stdout, (
        f"setuptools {setuptools.__version__} has no `setup.py develop --editable`: "
        "`colcon build --symlink-install` cannot link the package (requirements.txt pins setuptools)")


def _colcon_or_skip() -> str:
    colcon = shutil.which("colcon")
    if colcon is None:
        pytest.skip("colcon is not installed (a ROS 2 installation has it; or "
                    "`pip install colcon-common-extensions`): the workspace build is not tested")
    return colcon


def test_pinned_setuptools_meets_colcon_requirement() -> None:
    """Unit test: requirements.txt's setuptools is one the installed colcon-core accepts."""
    _colcon_or_skip()
    from importlib import metadata

    from packaging.requirements import Requirement

    try:
        requires = metadata.requires("colcon-core") or []
    except metadata.PackageNotFoundError:
        pytest.skip("colcon is not installed as a Python distribution here (colcon-core metadata missing)")
    specs = [Requirement(r) for r in requires if Requirement(r).name.lower() == "setuptools"]
    pins = [ln.split("==", 1)[1].strip() for ln in (REPO / "requirements.txt").read_text().splitlines()
            if ln.strip().startswith("setuptools==")]
    assert len(pins) == 1, "requirements.txt must pin setuptools exactly once"
    for spec in specs:
        assert spec.specifier.contains(pins[0]), f"setuptools=={pins[0]} does not meet colcon-core's {spec}"


@pytest.mark.integration
def test_colcon_symlink_install(tmp_path: Path) -> None:
    """Integration test: ``colcon build --symlink-install --packages-select kangaroo_wbc`` in a fresh
    workspace succeeds and links the package's files to the sources (what docs/install.md says)."""
    colcon = _colcon_or_skip()
    src = tmp_path / "src" / PACKAGE
    shutil.copytree(REPO, src, ignore=COPY_IGNORE)
    proc = subprocess.run(
        [colcon, "build", "--symlink-install", "--packages-select", PACKAGE, "--base-paths", "src",
         "--event-handlers", "console_direct+"],
        cwd=tmp_path, capture_output=True, text=True, timeout=COLCON_TIMEOUT_S,
        # the kernel cache (tens of seconds from an empty cache) is tested in
        # test/pipeline/test_compile_cache.py; here only that the develop step asks for it
        env={**os.environ, "COLCON_HOME": str(tmp_path / "colcon_home"), "KANGAROO_WBC_SKIP_KERNEL_CACHE": "1"})
    output = proc.stdout[-4000:] + proc.stderr[-4000:]
    assert proc.returncode == 0, f"colcon build --symlink-install failed:\n{output}"
    assert "kernel cache not built (KANGAROO_WBC_SKIP_KERNEL_CACHE is set)" in proc.stdout, output
    prefix = tmp_path / "install" / PACKAGE
    share = prefix / "share" / PACKAGE
    assert (prefix / "share" / "ament_index" / "resource_index" / "packages" / PACKAGE).is_file()
    for rel in _repo_files(SHARED_DATA_PATTERNS):
        installed = share / rel
        assert installed.is_symlink(), f"{installed} is not a link: the install was copied\n{output}"
        assert installed.resolve() == (src / rel).resolve(), f"{installed} -> {installed.resolve()}"
    for name in _node_executables():
        assert os.access(prefix / "lib" / PACKAGE / name, os.X_OK), f"lib/{PACKAGE}/{name} missing"
    # the Python package is the source tree itself (editable: an egg-link to the build folder, whose
    # kangaroo_wbc is a link to the sources), not a copy
    site = next(prefix.glob("lib/python3*/site-packages"))
    assert not (site / PACKAGE).exists(), f"{site / PACKAGE} is a copy of the sources"
    (link,) = site.glob("*.egg-link")
    target = Path(link.read_text().splitlines()[0].strip()) / PACKAGE
    assert target.resolve() == (src / PACKAGE).resolve(), f"{link} points at {target.resolve()}"


def _tf_message_or_skip():
    try:
        from tf2_msgs.msg import TFMessage
    except ImportError as exc:
        pytest.skip(
            f"tf2_msgs is not installed ({exc}); scripts/build_interfaces.sh tf2_msgs builds it into .venv "
            "(needs cmake, make, g++ and the Python headers). Without it TF falls back at run time."
        )
    return TFMessage


def test_tf_message_serializes_round_trip() -> None:
    """Unit test: the built TFMessage type support (de)serializes through rclpy."""
    tf_message = _tf_message_or_skip()
    serialization = pytest.importorskip("rclpy.serialization")
    from geometry_msgs.msg import TransformStamped

    transform = TransformStamped(child_frame_id="base_link")
    transform.header.frame_id = "odom"
    transform.transform.translation.z = 0.9
    msg = tf_message(transforms=[transform, TransformStamped(child_frame_id="leg_left_sole")])
    back = serialization.deserialize_message(serialization.serialize_message(msg), tf_message)
    assert back == msg


_PUBLISHER = """
import sys, time
import rclpy
from geometry_msgs.msg import TransformStamped
from tf2_msgs.msg import TFMessage

rclpy.init()
node = rclpy.create_node("tf_test_publisher")
pub = node.create_publisher(TFMessage, "tf", 10)
msg = TFMessage(transforms=[TransformStamped(child_frame_id=sys.argv[1])])
deadline = time.monotonic() + float(sys.argv[2])
while time.monotonic() < deadline:
    pub.publish(msg)
    rclpy.spin_once(node, timeout_sec=0.05)
"""

_SUBSCRIBER = """
import sys, time
import rclpy
from tf2_msgs.msg import TFMessage

rclpy.init()
node = rclpy.create_node("tf_test_subscriber")
received = []
node.create_subscription(TFMessage, "tf", lambda m: received.extend(m.transforms), 10)
deadline = time.monotonic() + float(sys.argv[2])
while time.monotonic() < deadline and not received:
    rclpy.spin_once(node, timeout_sec=0.1)
frames = {t.child_frame_id for t in received}
print("received", sorted(frames))
sys.exit(0 if sys.argv[1] in frames else 1)
"""


@pytest.mark.ros
@pytest.mark.integration
def test_tf_message_travels_between_processes(tmp_path: Path) -> None:
    """Integration test: one process publishes TFMessage on ``tf``, another receives it over DDS."""
    _tf_message_or_skip()
    pytest.importorskip("rclpy")
    env = dict(os.environ)
    env.update(
        ROS_DOMAIN_ID=str(random.Random().randint(1, 100)),
        ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST",
        ROS_LOG_DIR=str(tmp_path / "ros_log"),
    )
    frame = "kangaroo_test_frame"
    timeout = str(TF_EXCHANGE_TIMEOUT_S)
    run = [sys.executable, "-c"]
    publisher = subprocess.Popen(
        run + [textwrap.dedent(_PUBLISHER), frame, timeout],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        subscriber = subprocess.run(
            run + [textwrap.dedent(_SUBSCRIBER), frame, timeout],
            env=env, capture_output=True, text=True, timeout=TF_EXCHANGE_TIMEOUT_S + 30.0,
        )
    finally:
        publisher.kill()
        publisher_output = publisher.communicate(timeout=30.0)[0]
    assert subscriber.returncode == 0, (
        f"subscriber did not receive the transform:\n{subscriber.stdout}\n{subscriber.stderr}\n"
        f"publisher output:\n{publisher_output}"
    )
