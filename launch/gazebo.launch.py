"""Gazebo (gz sim) backend through gz_ros2_control: the robot, its controllers and ``/clock``.

UNTESTED in Gazebo: Gazebo, ros_gz and gz_ros2_control are not available where this package is
developed; the syntax, the declared arguments, the files it reads and the error when a package is
missing are checked (``test/test_launch_files.py``), and the files it starts Gazebo with are the
generated ones (``kangaroo-wbc model ros2-control``, ``docs/ros2_control.md``).

    ros2 launch kangaroo_wbc gazebo.launch.py joint_space:=actuator world:=empty.sdf

Starts, once every package is known to be installed:

* Gazebo with ``world`` (``ros_gz_sim``'s ``gz_sim.launch.py``, ``-r``), and spawns
  ``urdf/kangaroo_gz[_serial].sdf`` (the loops closed by real joints) ``spawn_z`` above the
  ground; its gz_ros2_control plugin runs the controller manager (``config/ros2_controllers[_serial].yaml``);
* ``robot_state_publisher`` in namespace ``ros2_control`` with ``urdf/kangaroo_ros2_control[_serial].urdf``
  (the URDF with the ``<ros2_control>`` block): the controller manager reads
  ``/ros2_control/robot_description``, so the package's own ``/robot_description`` and TF are untouched;
* the ``/clock`` bridge;
* after the spawn, the controllers: ``joint_state_broadcaster``, ``imu_sensor_broadcaster`` and the
  legs' position controllers active (they hold the legs at boot), the legs' effort controllers
  loaded inactive (switched in when the whole-body controller is ready).

``hardware_map:=FILE`` regenerates every file from an override of ``config/hardware_map.yaml``.
Gazebo's exit shuts the launch down. Without one of ``ros_gz_sim``, ``ros_gz_bridge``,
``gz_ros2_control``, ``controller_manager`` or ``robot_state_publisher`` the launch stops with one
error naming them and no process started.
"""

import tempfile  # noqa: I001

from ament_index_python.packages import PackageNotFoundError, get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription, OpaqueFunction, RegisterEventHandler
from launch.event_handlers import OnProcessExit
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node


PACKAGE = 'kangaroo_wbc'
#: Packages this file starts nodes or plugins of (checked before anything starts).
REQUIRED = ['ros_gz_sim', 'ros_gz_bridge', 'gz_ros2_control', 'controller_manager', 'robot_state_publisher']
JOINT_SPACES = ['actuator', 'serial']


def gazebo(context):
    """Gazebo, the spawner, robot_state_publisher, the /clock bridge and the controllers."""
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
    from kangaroo_wbc.robots.kangaroo.ros2_control import gazebo_files

    files = gazebo_files(shares[PACKAGE], LaunchConfiguration('joint_space').perform(context),
                         tempfile.mkdtemp(prefix='kangaroo_gz_'),
                         LaunchConfiguration('hardware_map').perform(context) or None)
    spawn = Node(
        package='ros_gz_sim',
        executable='create',
        name='spawn_kangaroo',
        arguments=['-name', 'kangaroo', '-file', str(files.sdf_path),
                   '-z', LaunchConfiguration('spawn_z').perform(context)],
        output='screen',
    )
    spawners = [
        Node(package='controller_manager', executable='spawner', name='spawn_controllers',
             arguments=[*files.active, '--param-file', str(files.controllers_path)], output='screen'),
        Node(package='controller_manager', executable='spawner', name='spawn_effort_controllers',
             arguments=[*files.inactive, '--inactive', '--param-file', str(files.controllers_path)],
             output='screen'),
    ]
    return [
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(f'{shares["ros_gz_sim"]}/launch/gz_sim.launch.py'),
            launch_arguments={'gz_args': f'-r {LaunchConfiguration("world").perform(context)}',
                              'on_exit_shutdown': 'true'}.items(),
        ),
        Node(
            package='robot_state_publisher',
            executable='robot_state_publisher',
            namespace='ros2_control',
            parameters=[{'robot_description': files.urdf, 'use_sim_time': True}],
            remappings=[('/tf', 'tf'), ('/tf_static', 'tf_static')],
            output='screen',
        ),
        spawn,
        Node(
            package='ros_gz_bridge',
            executable='parameter_bridge',
            name='clock_bridge',
            arguments=['/clock@rosgraph_msgs/msg/Clock[gz.msgs.Clock'],
            output='screen',
        ),
        RegisterEventHandler(OnProcessExit(target_action=spawn, on_exit=spawners)),
    ]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument(
            'world', default_value='empty.sdf',
            description='Gazebo world file (name on GZ_SIM_RESOURCE_PATH or absolute path)'),
        DeclareLaunchArgument(
            'spawn_z', default_value='1.0',
            description='Height [m] of the base when spawned'),
        DeclareLaunchArgument(
            'joint_space', default_value='actuator', choices=JOINT_SPACES,
            description='Joints the ros2_control system exposes: the 12 actuators, or six serial joints per leg'),
        DeclareLaunchArgument(
            'hardware_map', default_value='',
            description='Override of config/hardware_map.yaml (empty: the generated files as installed)'),
        OpaqueFunction(function=gazebo),
    ])
