"""Gazebo (gz sim) backend: start Gazebo, spawn ``urdf/kangaroo.sdf``, bridge ``/clock``.

UNTESTED: Gazebo and ros_gz are not available where this package is developed; only the syntax
and the declared arguments of this file are checked (``test/test_launch_files.py``).

    ros2 launch kangaroo_wbc gazebo.launch.py world:=empty.sdf

Included by ``kangaroo_wbc.launch.py backend:=gazebo``. The SDF closes every loop with real
joints (see ``urdf/README.md``) but carries no Gazebo system plugin yet, so nothing provides
``actuators/state``, ``imu/data`` or consumes ``actuators/command`` in Gazebo: a plugin (or a
ros2_control hardware interface) mapping the actuated prismatic joints to those topics is the
missing piece; see ``docs/interface.md`` for the contract it must meet.
"""

from launch import LaunchDescription  # noqa: I001 (launch/ here is not the launch package)
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare


PACKAGE = 'kangaroo_wbc'


def generate_launch_description():
    world = LaunchConfiguration('world')
    spawn_z = LaunchConfiguration('spawn_z')
    sdf = PathJoinSubstitution([FindPackageShare(PACKAGE), 'urdf', 'kangaroo.sdf'])

    return LaunchDescription([
        DeclareLaunchArgument(
            'world', default_value='empty.sdf',
            description='Gazebo world file (name on GZ_SIM_RESOURCE_PATH or absolute path)'),
        DeclareLaunchArgument(
            'spawn_z', default_value='1.0',
            description='Height [m] of the base when spawned'),
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(
                PathJoinSubstitution([FindPackageShare('ros_gz_sim'), 'launch', 'gz_sim.launch.py'])),
            launch_arguments={'gz_args': ['-r ', world], 'on_exit_shutdown': 'true'}.items(),
        ),
        Node(
            package='ros_gz_sim',
            executable='create',
            name='spawn_kangaroo',
            arguments=['-name', 'kangaroo', '-file', sdf, '-z', spawn_z],
            output='screen',
        ),
        Node(
            package='ros_gz_bridge',
            executable='parameter_bridge',
            name='clock_bridge',
            arguments=['/clock@rosgraph_msgs/msg/Clock[gz.msgs.Clock'],
            output='screen',
        ),
    ])
