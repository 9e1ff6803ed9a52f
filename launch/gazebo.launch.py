"""Gazebo (gz sim) backend: start Gazebo, spawn ``urdf/kangaroo.sdf``, bridge ``/clock``.

UNTESTED: Gazebo and ros_gz are not available where this package is developed; only the syntax
and the declared arguments of this file are checked (``test/test_launch_files.py``).

    ros2 launch kangaroo_wbc gazebo.launch.py world:=empty.sdf

Included by ``kangaroo_wbc.launch.py backend:=gazebo``. The SDF closes every loop with real
joints (see ``urdf/README.md``) but carries no Gazebo system plugin yet, so nothing provides
``actuators/state``, ``imu/data`` or consumes ``actuators/command`` in Gazebo: a plugin (or a
ros2_control hardware interface) mapping the actuated prismatic joints to those topics is the
missing piece; see ``docs/interface.md`` for the contract it must meet.

ros_gz_sim and ros_gz_bridge are looked up before anything starts: without them the launch stops
with one error and no process left running. Gazebo's exit shuts the launch down.
"""

from ament_index_python.packages import PackageNotFoundError, get_package_share_directory  # noqa: I001
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription, OpaqueFunction
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node


PACKAGE = 'kangaroo_wbc'
#: Packages this file starts nodes of (checked before anything starts).
REQUIRED = ['ros_gz_sim', 'ros_gz_bridge']


def gazebo(context):
    """Gazebo, the spawner and the /clock bridge, once every package is known to be installed."""
    shares = {}
    missing = []
    for name in [PACKAGE, *REQUIRED]:
        try:
            shares[name] = get_package_share_directory(name)
        except PackageNotFoundError:
            missing.append(name)
    if missing:
        raise RuntimeError(f'gazebo.launch.py needs {", ".join(missing)} (not installed); '
                           'nothing was started')
    world = LaunchConfiguration('world').perform(context)
    spawn_z = LaunchConfiguration('spawn_z').perform(context)
    return [
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(f'{shares["ros_gz_sim"]}/launch/gz_sim.launch.py'),
            launch_arguments={'gz_args': f'-r {world}', 'on_exit_shutdown': 'true'}.items(),
        ),
        Node(
            package='ros_gz_sim',
            executable='create',
            name='spawn_kangaroo',
            arguments=['-name', 'kangaroo', '-file', f'{shares[PACKAGE]}/urdf/kangaroo.sdf',
                       '-z', spawn_z],
            output='screen',
        ),
        Node(
            package='ros_gz_bridge',
            executable='parameter_bridge',
            name='clock_bridge',
            arguments=['/clock@rosgraph_msgs/msg/Clock[gz.msgs.Clock'],
            output='screen',
        ),
    ]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument(
            'world', default_value='empty.sdf',
            description='Gazebo world file (name on GZ_SIM_RESOURCE_PATH or absolute path)'),
        DeclareLaunchArgument(
            'spawn_z', default_value='1.0',
            description='Height [m] of the base when spawned'),
        OpaqueFunction(function=gazebo),
    ])
