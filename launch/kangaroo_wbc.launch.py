"""Whole kangaroo_wbc stack: robot backend, estimation, control, robot model and RViz.

    ros2 launch kangaroo_wbc kangaroo_wbc.launch.py                       # MuJoCo sim + RViz
    ros2 launch kangaroo_wbc kangaroo_wbc.launch.py backend:=hardware rviz:=false namespace:=kangaroo

Arguments:
    backend       sim (the embedded MuJoCo simulator node ``sim``), gazebo (``gazebo.launch.py``,
                  untested), or hardware (nothing started: the robot's driver provides
                  ``actuators/state``, ``passive_encoders/state``, ``imu/data`` and consumes
                  ``actuators/command``).
    rviz          true/false: start RViz with ``config/kangaroo.rviz``.
    namespace     pushed onto every node (topics are relative; ``/tf``, ``/clock`` and
                  ``/diagnostics`` stay global).
    use_sim_time  true/false; default true for sim and gazebo, false for hardware.

Every kangaroo_wbc node reads ``config/<node>.yaml``. ``robot_state_publisher`` publishes the URDF
(``urdf/kangaroo.urdf``) on ``robot_description`` and TF from ``joint_states``; with backend sim a
second one, prefixed ``ground_truth/``, draws the simulator's ground truth as a ghost in RViz.
The topic contract is in ``docs/interface.md``.
"""

from launch import LaunchDescription  # noqa: I001 (launch/ here is not the launch package)
from launch.actions import DeclareLaunchArgument, GroupAction, IncludeLaunchDescription, LogInfo
from launch.conditions import IfCondition
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import (
    EqualsSubstitution,
    FileContent,
    IfElseSubstitution,
    LaunchConfiguration,
    PathJoinSubstitution,
)
from launch_ros.actions import Node, PushROSNamespace, SetParameter
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare


PACKAGE = 'kangaroo_wbc'
BACKENDS = ['sim', 'gazebo', 'hardware']
#: kangaroo_wbc node executables (setup.py) started for every backend, after the backend itself.
PIPELINE = ['state_estimator', 'contact_wrench_estimator', 'whole_body_controller']


def kangaroo_wbc_node(executable, share, condition=None):
    """A kangaroo_wbc node named like its executable, with its parameter file."""
    return Node(
        package=PACKAGE,
        executable=executable,
        name=executable,
        parameters=[PathJoinSubstitution([share, 'config', executable + '.yaml'])],
        output='screen',
        emulate_tty=True,
        condition=condition,
    )


def generate_launch_description():
    share = FindPackageShare(PACKAGE)
    backend = LaunchConfiguration('backend')
    rviz = LaunchConfiguration('rviz')
    namespace = LaunchConfiguration('namespace')
    use_sim_time = LaunchConfiguration('use_sim_time')
    is_sim = IfCondition(EqualsSubstitution(backend, 'sim'))

    robot_description = ParameterValue(
        FileContent(PathJoinSubstitution([share, 'urdf', 'kangaroo.urdf'])), value_type=str)

    arguments = [
        DeclareLaunchArgument(
            'backend', default_value='sim', choices=BACKENDS,
            description='Where actuators/state comes from and actuators/command goes to'),
        DeclareLaunchArgument(
            'rviz', default_value='true', choices=['true', 'false'],
            description='Start RViz with config/kangaroo.rviz'),
        DeclareLaunchArgument(
            'namespace', default_value='',
            description='ROS namespace pushed onto every node (empty: none)'),
        DeclareLaunchArgument(
            'use_sim_time',
            default_value=IfElseSubstitution(
                EqualsSubstitution(backend, 'hardware'), if_value='false', else_value='true'),
            choices=['true', 'false'],
            description='Use /clock (default: true unless backend is hardware)'),
    ]

    stack = GroupAction([
        PushROSNamespace(namespace),
        SetParameter(name='use_sim_time', value=use_sim_time),
        # backend
        kangaroo_wbc_node('sim', share, condition=is_sim),
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(PathJoinSubstitution([share, 'launch', 'gazebo.launch.py'])),
            condition=IfCondition(EqualsSubstitution(backend, 'gazebo'))),
        LogInfo(
            msg='backend hardware: expecting the robot driver on actuators/state, '
                'passive_encoders/state, imu/data and actuators/command',
            condition=IfCondition(EqualsSubstitution(backend, 'hardware'))),
        # estimation and control
        *[kangaroo_wbc_node(executable, share) for executable in PIPELINE],
        # robot model
        Node(
            package='robot_state_publisher',
            executable='robot_state_publisher',
            name='robot_state_publisher',
            parameters=[{'robot_description': robot_description}],
            output='screen',
        ),
        Node(
            package='robot_state_publisher',
            executable='robot_state_publisher',
            name='ground_truth_state_publisher',
            parameters=[{'robot_description': robot_description, 'frame_prefix': 'ground_truth/'}],
            remappings=[
                ('robot_description', 'ground_truth/robot_description'),
                ('joint_states', 'sim/ground_truth/joint_states'),
            ],
            output='screen',
            condition=is_sim,
        ),
        Node(
            package='rviz2',
            executable='rviz2',
            name='rviz2',
            arguments=['-d', PathJoinSubstitution([share, 'config', 'kangaroo.rviz'])],
            output='screen',
            condition=IfCondition(rviz),
        ),
    ])

    return LaunchDescription([*arguments, stack])
