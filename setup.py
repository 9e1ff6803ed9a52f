"""ament_python / setuptools build of kangaroo_wbc.

Works both as a plain ``pip install -e .`` (console scripts on PATH) and inside a ROS 2
workspace with ``colcon build`` (launch/config/urdf installed under ``share/kangaroo_wbc``,
node executables under ``lib/kangaroo_wbc`` so that ``ros2 run`` finds them).
"""

from glob import glob

from setuptools import find_packages, setup

PACKAGE = "kangaroo_wbc"

NODES = {
    "sim": "kangaroo_wbc.nodes.entry:sim",
    "state_estimator": "kangaroo_wbc.nodes.entry:state_estimator",
    "contact_wrench_estimator": "kangaroo_wbc.nodes.entry:contact_wrench_estimator",
    "whole_body_controller": "kangaroo_wbc.nodes.entry:whole_body_controller",
    "composed": "kangaroo_wbc.nodes.entry:composed",
    "link_tf": "kangaroo_wbc.nodes.entry:link_tf",
}

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
    entry_points={
        "console_scripts": ["kangaroo-wbc = kangaroo_wbc.cli:main"]
        + [f"{PACKAGE}_{name} = {target}" for name, target in NODES.items()]
        + [f"{name} = {target}" for name, target in NODES.items()],
    },
)
