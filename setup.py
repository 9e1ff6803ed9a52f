"""ament_python / setuptools build of kangaroo_wbc.

Works both as a plain ``pip install -e .`` (console scripts on PATH) and inside a ROS 2
workspace with ``colcon build`` (launch/config/urdf installed under ``share/kangaroo_wbc``,
node executables under ``lib/kangaroo_wbc`` so that ``ros2 run`` finds them).

``colcon build`` (``setup.py install``, or ``setup.py develop`` with ``--symlink-install``) also
builds numba's cache of the package's compiled kernels where it installed the package
(``python -m kangaroo_wbc_tools.pipeline.compile_cache``, tens of seconds once), so that the first
``ros2 launch`` does not compile them; ``KANGAROO_WBC_SKIP_KERNEL_CACHE=1`` skips it (then the
launch file builds it before the nodes start). A failed build is reported and does not fail the
install.
"""

import os
import subprocess
import sys
from glob import glob

from setuptools import find_packages, setup
from setuptools.command.develop import develop
from setuptools.command.install import install

PACKAGE = "kangaroo_wbc"

NODES = {
    "sim": "kangaroo_wbc.nodes.entry:sim",
    "state_estimator": "kangaroo_wbc.nodes.entry:state_estimator",
    "contact_wrench_estimator": "kangaroo_wbc.nodes.entry:contact_wrench_estimator",
    "whole_body_controller": "kangaroo_wbc.nodes.entry:whole_body_controller",
    "composed": "kangaroo_wbc.nodes.entry:composed",
    "link_tf": "kangaroo_wbc.nodes.entry:link_tf",
}

#: colcon builds with ``setup.py install`` / ``develop``, whose scripts go to ``lib/kangaroo_wbc``
#: (setup.cfg): there ``ros2 run kangaroo_wbc sim`` and the launch file need the bare node names. A pip
#: install (a wheel) puts scripts on PATH: only ``kangaroo-wbc`` and the prefixed ``kangaroo_wbc_<node>``.
ROS_LAYOUT = any(command in sys.argv[1:] for command in ("install", "develop"))

#: Environment variable that skips building the kernel cache at install time.
SKIP_KERNEL_CACHE = "KANGAROO_WBC_SKIP_KERNEL_CACHE"


def build_kernel_cache(site):
    """Build numba's kernel cache of the package installed in the folder ``site``."""
    if os.environ.get(SKIP_KERNEL_CACHE, "") not in ("", "0"):
        print(f"{PACKAGE}: kernel cache not built ({SKIP_KERNEL_CACHE} is set)")
        return
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([site, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    cmd = [sys.executable, "-m", "kangaroo_wbc_tools.pipeline.compile_cache"]
    print(f"{PACKAGE}: building the compiled-kernel cache ({' '.join(cmd[1:])}; "
          f"{SKIP_KERNEL_CACHE}=1 skips it; the first launch builds it then)", flush=True)
    code = subprocess.call(cmd, env=env, cwd=site)
    if code != 0:
        print(f"{PACKAGE}: the kernel cache was not built (exit code {code}); the first launch "
              "builds it", flush=True)


class InstallWithKernelCache(install):
    """``setup.py install`` (colcon build), then the kernel cache of the installed package."""

    def run(self):
        super().run()
        if self.root is None:  # not staged for a wheel or a package (bdist_wheel, --root)
            build_kernel_cache(os.path.abspath(self.install_lib))


class DevelopWithKernelCache(develop):
    """``setup.py develop`` (colcon build --symlink-install), then the kernel cache of the sources."""

    def run(self):
        super().run()
        if not self.uninstall:
            build_kernel_cache(os.path.dirname(os.path.abspath(__file__)))


setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test", "test.*"]),
    include_package_data=True,
    package_data={PACKAGE: ["robots/kangaroo/*.yaml", "data/**/*"]},
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", glob("launch/*.py")),
        (f"share/{PACKAGE}/config", glob("config/*.yaml") + glob("config/*.rviz")),
        (f"share/{PACKAGE}/urdf", glob("urdf/*.urdf") + glob("urdf/*.yaml") + glob("urdf/*.xml")
         + glob("urdf/*.sdf") + glob("urdf/*.md")),
    ],
    install_requires=["setuptools"],
    zip_safe=True,
    maintainer="kangaroo_wbc maintainers",
    maintainer_email="maintainers@kangaroo-wbc.dev",
    description="Closed-linkage model, estimation and whole-body control for the Kangaroo biped",
    license="Apache-2.0",
    cmdclass={"install": InstallWithKernelCache, "develop": DevelopWithKernelCache},
    entry_points={
        "console_scripts": ["kangaroo-wbc = kangaroo_wbc_tools.cli:main"]
        + [f"{PACKAGE}_{name} = {target}" for name, target in NODES.items()]
        + ([f"{name} = {target}" for name, target in NODES.items()] if ROS_LAYOUT else []),
    },
)
