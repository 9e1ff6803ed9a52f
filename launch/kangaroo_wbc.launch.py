"""Whole kangaroo_wbc stack: robot backend, estimation, control, robot model and (optionally) RViz.

    ros2 launch kangaroo_wbc kangaroo_wbc.launch.py                        # MuJoCo sim, 4 processes
    ros2 launch kangaroo_wbc kangaroo_wbc.launch.py deployment:=composed behaviour:=sway rviz:=true
    ros2 launch kangaroo_wbc kangaroo_wbc.launch.py backend:=hardware namespace:=kangaroo
    ros2 launch kangaroo_wbc kangaroo_wbc.launch.py backend:=ros2_control joint_space:=serial
    ros2 launch kangaroo_wbc kangaroo_wbc.launch.py backend:=hardware interface:=ros2_control
    ros2 launch kangaroo_wbc kangaroo_wbc.launch.py behaviour:=walk     # then drive it on cmd_vel
    ros2 launch kangaroo_wbc kangaroo_wbc.launch.py behaviour:=walk cmd_vel:=0.2,0.0,0.0
    ros2 launch kangaroo_wbc kangaroo_wbc.launch.py rig:=one_leg sim_mode:=lockstep  # the one-leg bench

Arguments:
    backend       sim (the MuJoCo simulator node ``sim``), ros2_control (the same simulator as a
                  ros2_control system: joint_state_broadcaster, imu_sensor_broadcaster and the
                  legs' effort controllers, docs/ros2_control.md), gazebo (``gazebo.launch.py``
                  with gz_ros2_control, untested; needs ros_gz_sim and ros_gz_bridge), or hardware
                  (no backend started: the robot's driver or controller manager provides the topics
                  of ``interface``).
    interface     auto (default: ros2_control for backends ros2_control and gazebo, native for sim
                  and hardware), native (``actuators/state``, ``passive_encoders/state``,
                  ``imu/data``, ``actuators/command``: docs/interface.md) or ros2_control (the
                  standard broadcasters and effort controllers); parameter ``interface`` of ``sim``,
                  ``state_estimator`` and ``whole_body_controller``. Only backend hardware may
                  choose; a choice contradicting the backend stops the launch before anything starts.
    joint_space   actuator (default: the 12 actuators are the ros2_control joints) or serial (six
                  serial-equivalent joints per leg, as PAL's bringup); interface ros2_control only
                  (parameter ``joint_space``; gazebo.launch.py's argument of the same name).
    deployment    composed (the default: one process, executable ``composed``, hosting the nodes
                  with the same names and all four parameter files; the deployment that keeps up
                  with 1 kHz on a 2-core computer, docs/performance.md) or separate (one process per
                  node: ``sim``, ``state_estimator``, ``contact_wrench_estimator``,
                  ``whole_body_controller``, each with ``config/<node>.yaml``).
    sim_mode      realtime (the simulator paces itself to the wall clock) or lockstep (one step per
                  ``actuators/command``; parameter ``lockstep`` of ``sim``).
    behaviour     stand, squat, sway, weight_shift, push_recovery, walk or jump (parameter
                  ``behaviour`` of ``whole_body_controller``; switchable at run time).
    cmd_vel       vx,vy,wz [m/s, m/s, rad/s]: the walk's command until the ``cmd_vel`` topic
                  (geometry_msgs/Twist, e.g. from teleop_twist_keyboard) gives one (default empty:
                  the parameter file's, zero).
    rig           empty (default: the robot on the floor) or one_leg: the one-leg test bench (one leg,
                  the pelvis clamped, a force plate; docs/morphology.md), parameter ``rig`` of every
                  node: the simulator, the estimators and the controller build the bench from the
                  same generated files; the controller runs the bench's behaviour (``behaviour`` is
                  ignored).
    rig_leg       left (default) or right: the leg the bench keeps (parameter ``rig_leg``).
    rviz          true/false (default false): start RViz with ``config/kangaroo.rviz``.
    namespace     pushed onto every node (topics are relative; ``/tf``, ``/clock`` and
                  ``/diagnostics`` stay global).
    use_sim_time  auto (default: true for backends sim, ros2_control and gazebo, false for
                  hardware), true or false.

Optional tools are looked up before anything starts, so a missing one can never stop the launch
half-way with processes left running. Without ``robot_state_publisher`` the package's ``link_tf``
node publishes ``robot_description`` and the links' TF instead; without ``rviz2`` RViz is skipped;
each with one warning line. A missing kangaroo_wbc install or, for backend gazebo, a missing
ros_gz stops the launch with one error before any process starts. When numba's cache of the
package's compiled kernels is not built for the installed sources (``colcon build`` builds it), one
process builds it first, with a log line saying so and how long it takes; then the nodes start. If
a core node (the backend ``sim``, an estimator, the controller, or the ``composed`` process) exits,
the whole launch shuts down: a partial pipeline never keeps driving the robot. The topic contract
is in ``docs/interface.md``.
"""

import sys  # noqa: I001 (launch/ here is not the launch package)
import tempfile

import launch.logging
import yaml
from ament_index_python.packages import PackageNotFoundError, get_package_share_directory
from launch import LaunchDescription
from launch.actions import (
    DeclareLaunchArgument,
    ExecuteProcess,
    GroupAction,
    IncludeLaunchDescription,
    LogInfo,
    OpaqueFunction,
    RegisterEventHandler,
    Shutdown,
)
from launch.event_handlers import OnProcessExit
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node, PushROSNamespace, SetParameter
from launch_ros.parameter_descriptions import Parameter


PACKAGE = 'kangaroo_wbc'
BACKENDS = ['sim', 'ros2_control', 'gazebo', 'hardware']
#: Backends started as the package's simulator node ``sim`` (ros2_control: as that system).
SIMULATED = ['sim', 'ros2_control']
#: Hardware interfaces of the nodes (auto: the backend's) and the joints a ros2_control system exposes.
INTERFACES = ['auto', 'native', 'ros2_control']
JOINT_SPACES = ['actuator', 'serial']
DEPLOYMENTS = ['separate', 'composed']
SIM_MODES = ['realtime', 'lockstep']
BEHAVIOURS = ['stand', 'squat', 'sway', 'weight_shift', 'push_recovery', 'walk', 'jump']
BOOLEANS = ['true', 'false']
#: use_sim_time: auto is true for backends sim, ros2_control and gazebo, false for hardware.
SIM_TIME_CHOICES = ['auto', 'true', 'false']
#: Test benches (kangaroo_wbc.robots.kangaroo.rig.RIGS; empty: the robot on the floor) and their legs.
RIGS = ['', 'one_leg']
RIG_LEGS = ['left', 'right']
#: kangaroo_wbc node executables (setup.py) started for every backend, after the backend itself.
PIPELINE = ['state_estimator', 'contact_wrench_estimator', 'whole_body_controller']
#: The one process of deployment composed; it hosts the nodes ``sim`` (backend sim) + PIPELINE.
COMPOSED = 'composed'
#: Stand-in for robot_state_publisher (setup.py executable).
LINK_TF = 'link_tf'
GHOST_LINK_TF = 'ground_truth_link_tf'
#: Packages needed by backend gazebo (checked before anything starts).
GAZEBO_PACKAGES = ['ros_gz_sim', 'ros_gz_bridge']


def package_share(name):
    """Share directory of an installed ROS package, or None."""
    try:
        return get_package_share_directory(name)
    except PackageNotFoundError:
        return None


def parse_cmd_vel(text):
    """``vx,vy,wz`` → three floats; a malformed value stops the launch before anything starts."""
    try:
        values = [float(x) for x in text.split(',')]
    except ValueError:
        values = []
    if len(values) != 3 or not all(v == v and abs(v) != float('inf') for v in values):
        raise RuntimeError(f'cmd_vel:={text!r}: expected vx,vy,wz (three finite numbers); nothing was started')
    return values


def hardware_interface(backend, interface, rig=''):
    """interface:=auto|native|ros2_control → the nodes' interface; a contradiction stops the launch
    before anything starts."""
    implied = {'ros2_control': 'ros2_control', 'gazebo': 'ros2_control', 'sim': 'native'}.get(backend)
    if interface == 'auto':
        interface = implied or 'native'
    elif implied is not None and interface != implied:
        raise RuntimeError(f'backend:={backend} speaks interface {implied}, not interface:={interface} '
                           f'(backend:=ros2_control is the simulator as a ros2_control system); '
                           'nothing was started')
    if rig and interface != 'native':
        raise RuntimeError('rig:=' + rig + ' runs on the native interface only (the bench is not a '
                           'ros2_control system); nothing was started')
    return interface


def node_overrides(sim_mode, behaviour, cmd_vel='', rig='', rig_leg='left', interface='native',
                   joint_space='actuator'):
    """Launch-argument parameters, per node: ``{node name: {parameter: value}}``."""
    # the hardware interface of sim, state_estimator and whole_body_controller: the package's one
    # mapping (kangaroo_wbc.components.ros2_control.settings), as the demo and the graph runner use it
    from kangaroo_wbc.components.ros2_control.settings import hardware_overrides

    overrides = {name: dict(values) for name, values in hardware_overrides(interface, joint_space).items()}
    controller = overrides['whole_body_controller']
    controller['behaviour'] = behaviour
    if cmd_vel:
        controller['cmd_vel'] = parse_cmd_vel(cmd_vel)
    overrides['sim']['lockstep'] = sim_mode == 'lockstep'
    if rig:  # every node builds the bench (link_tf draws it)
        for name in ['sim', *PIPELINE, LINK_TF, GHOST_LINK_TF]:
            overrides.setdefault(name, {}).update({'rig': rig, 'rig_leg': rig_leg})
    return overrides


def parameter_rules(params):
    """``{name: value}`` → launch_ros parameter descriptions: ``-p name:=value`` on the node's
    command line, for nodes without a parameter file of their own (robot_state_publisher, the
    ghost's ``frame_prefix``). Nothing is written to disk (a dict in ``parameters`` would make
    launch_ros write a ``launch_params_*`` file to the temporary folder, left there after the
    launch)."""
    return [Parameter(name, value) for name, value in params.items()]


def overrides_file(overrides):
    """The launch arguments' parameters as one parameter file with a ``/**/<node>`` section per
    node, in this launch's log folder (``ros2 launch`` prints it; ``$ROS_LOG_DIR`` or
    ``~/.ros/log``), beside the processes' logs: nothing goes to the temporary folder.

    A file, given after each node's ``config/<node>.yaml``: a ``-p name:=value`` rule would lose
    against the ``/**/<node>`` section of that file (rcl applies node-specific sections after
    ``/**`` ones) and, in the composed process, reach every hosted node (which refuse parameters
    they do not declare)."""
    content = {f'/**/{name}': {'ros__parameters': params} for name, params in overrides.items() if params}
    with tempfile.NamedTemporaryFile('w', dir=launch.logging.launch_config.log_dir,
                                     prefix=f'{PACKAGE}_launch_parameters_', suffix='.yaml',
                                     delete=False) as handle:
        yaml.safe_dump(content, handle)
    return handle.name


def use_sim_time(value, backend):
    """use_sim_time:=auto|true|false → bool (auto: the simulated clock unless on hardware)."""
    return backend != 'hardware' if value == 'auto' else value == 'true'


def core_node(executable, parameters, reason, **kwargs):
    """A kangaroo_wbc node whose exit shuts the whole launch down."""
    return Node(
        package=PACKAGE,
        executable=executable,
        parameters=parameters,
        output='screen',
        emulate_tty=True,
        on_exit=Shutdown(reason=reason),
        **kwargs,
    )


def warn(message):
    """One warning line of this launch file."""
    launch.logging.get_logger(PACKAGE + '.launch').warning(message)


def robot_model_nodes(share, backend, hosted, overrides, parameters_file):
    """robot_state_publisher (or link_tf) for the estimate, and a ``ground_truth/`` ghost for sim.

    Without robot_state_publisher, ``hosted`` (deployment composed) means the composed process
    hosts link_tf (``--link-tf``): no process is added here. ``overrides``: the launch arguments'
    parameters per node (a rig: the bench's URDF, derived from the same files as the nodes'), in
    ``parameters_file`` (:func:`overrides_file`)."""
    urdf = f'{share}/urdf/kangaroo.urdf'
    rig = overrides.get(LINK_TF, {})
    ghost_remaps = [('robot_description', 'ground_truth/robot_description'),
                    ('joint_states', 'sim/ground_truth/joint_states')]
    ghost = backend in SIMULATED
    if package_share('robot_state_publisher') is not None:
        if rig:
            from kangaroo_wbc.robots.kangaroo.rig import one_leg_texts

            text = one_leg_texts(rig['rig_leg'], f'{share}/urdf')['urdf']
        else:
            with open(urdf) as handle:
                text = handle.read()
        description = Parameter('robot_description', text, value_type=str)
        nodes = [Node(package='robot_state_publisher', executable='robot_state_publisher',
                      name='robot_state_publisher', output='screen', parameters=[description])]
        if ghost:
            nodes.append(Node(
                package='robot_state_publisher', executable='robot_state_publisher',
                name='ground_truth_state_publisher', output='screen', remappings=ghost_remaps,
                parameters=[description, Parameter('frame_prefix', 'ground_truth/')]))
        return nodes
    warn('robot_state_publisher is not installed: kangaroo_wbc link_tf publishes '
         'robot_description and the link TF instead')
    if hosted:
        return []  # in the composed process (--link-tf)
    config = f'{share}/config/{LINK_TF}.yaml'
    nodes = [Node(package=PACKAGE, executable=LINK_TF, name=LINK_TF, output='screen',
                  parameters=[config, parameters_file])]
    if ghost:
        nodes.append(Node(package=PACKAGE, executable=LINK_TF, name=GHOST_LINK_TF,
                          output='screen', remappings=ghost_remaps,
                          parameters=[config, parameters_file,
                                      *parameter_rules({'frame_prefix': 'ground_truth/'})]))
    return nodes


def launch_stack(context):
    """Every action of the stack, built once the arguments are known and the packages checked."""
    value = {name: LaunchConfiguration(name).perform(context)
             for name in ('backend', 'deployment', 'sim_mode', 'behaviour', 'cmd_vel', 'rviz', 'namespace',
                          'use_sim_time', 'rig', 'rig_leg', 'interface', 'joint_space')}
    backend, deployment = value['backend'], value['deployment']
    simulated = backend in SIMULATED
    share = package_share(PACKAGE)
    if share is None:
        raise RuntimeError(f'{PACKAGE} is not installed in an ament prefix (AMENT_PREFIX_PATH); '
                           'nothing was started')
    if backend == 'gazebo':
        missing = [p for p in GAZEBO_PACKAGES if package_share(p) is None]
        if missing:
            raise RuntimeError(f'backend gazebo needs {", ".join(missing)} (not installed); '
                               'nothing was started')
    config = {name: f'{share}/config/{name}.yaml' for name in ['sim', *PIPELINE]}
    interface = hardware_interface(backend, value['interface'], value['rig'])
    overrides = node_overrides(value['sim_mode'], value['behaviour'], value['cmd_vel'], value['rig'],
                               value['rig_leg'], interface, value['joint_space'])
    parameters_file = overrides_file(overrides)
    actions = []

    composed = deployment == 'composed'
    host_link_tf = composed and package_share('robot_state_publisher') is None
    if composed:
        names = (['sim'] if simulated else []) + PIPELINE
        arguments = ['--backend', 'sim' if simulated else 'hardware']
        files = [config[name] for name in ['sim', *PIPELINE]]
        if host_link_tf:
            names.append(LINK_TF)
            arguments.append('--link-tf')
            files.append(f'{share}/config/{LINK_TF}.yaml')
        actions.append(core_node(
            COMPOSED, files + [parameters_file],
            f'{COMPOSED} (nodes {", ".join(names)}) exited', arguments=arguments))
    else:
        for name in (['sim'] if simulated else []) + PIPELINE:
            actions.append(core_node(name, [config[name], parameters_file], f'{name} exited', name=name))

    if backend == 'gazebo':
        actions.insert(0, IncludeLaunchDescription(
            PythonLaunchDescriptionSource(f'{share}/launch/gazebo.launch.py'),
            launch_arguments={'joint_space': value['joint_space']}.items()))
    elif backend == 'hardware' and interface == 'ros2_control':
        actions.insert(0, LogInfo(
            msg=f'backend hardware, interface ros2_control ({value["joint_space"]} joints): expecting the '
                'controller manager\'s joint_state_broadcaster, imu_sensor_broadcaster and the legs\' '
                'effort controllers (docs/ros2_control.md)'))
    elif backend == 'hardware':
        actions.insert(0, LogInfo(
            msg='backend hardware: expecting the robot driver on actuators/state, '
                'passive_encoders/state, imu/data and actuators/command'))

    actions += robot_model_nodes(share, backend, host_link_tf, overrides, parameters_file)
    if value['rviz'] == 'true':
        if package_share('rviz2') is None:
            warn('rviz2 is not installed: RViz skipped')
        else:
            actions.append(Node(package='rviz2', executable='rviz2', name='rviz2', output='screen',
                                arguments=['-d', f'{share}/config/kangaroo.rviz']))

    return kernel_cache_first([GroupAction([
        PushROSNamespace(value['namespace']),
        SetParameter(name='use_sim_time', value=use_sim_time(value['use_sim_time'], backend)),
        *actions,
    ])])


def kernel_cache_first(actions):
    """``actions``, after one build of numba's kernel cache when it is not built for the installed
    sources (first start after ``colcon build`` without its build step, or after an update): one
    log line says so with the expected time, one process compiles every kernel, then the nodes
    start and load them (instead of every node process compiling the same kernels at once)."""
    try:
        from kangaroo_wbc_tools.pipeline import compile_cache
    except ImportError:  # the nodes report what is missing
        return actions
    found = compile_cache.state()
    if found.built:
        return actions
    build = ExecuteProcess(cmd=[sys.executable, '-m', compile_cache.__name__, '--quiet'],
                           name='compile_cache', output='screen')

    def start_nodes(event, context):
        if event.returncode != 0:
            warn(f'the kernel cache was not built (exit code {event.returncode}): each node '
                 'compiles the kernels it needs when it starts')
        return actions

    return [LogInfo(msg=found.message()), build,
            RegisterEventHandler(OnProcessExit(target_action=build, on_exit=start_nodes))]


def generate_launch_description():
    arguments = [
        DeclareLaunchArgument(
            'backend', default_value='sim', choices=BACKENDS,
            description='Where actuators/state comes from and actuators/command goes to'),
        DeclareLaunchArgument(
            'interface', default_value='auto', choices=INTERFACES,
            description='The nodes\' hardware interface: auto (ros2_control for backends ros2_control '
                        'and gazebo, native for sim and hardware), native or ros2_control (backend '
                        'hardware only may choose)'),
        DeclareLaunchArgument(
            'joint_space', default_value='actuator', choices=JOINT_SPACES,
            description='interface ros2_control: the joints the system exposes, actuator (the 12 '
                        'actuators) or serial (six serial-equivalent joints per leg)'),
        DeclareLaunchArgument(
            'deployment', default_value='composed', choices=DEPLOYMENTS,
            description='composed (default): one process for all nodes, the deployment that keeps up '
                        'with 1 kHz on a 2-core robot computer (no DDS hop, no message conversion '
                        'between the nodes; docs/performance.md); separate: one process per node '
                        '(inspect or restart one node alone; four processes need more than 2 cores '
                        'at 1 kHz)'),
        DeclareLaunchArgument(
            'sim_mode', default_value='realtime', choices=SIM_MODES,
            description='Simulator pacing: wall clock (realtime) or one step per command '
                        '(lockstep); backends sim and ros2_control'),
        DeclareLaunchArgument(
            'behaviour', default_value='stand', choices=BEHAVIOURS,
            description='Initial behaviour of the whole-body controller'),
        DeclareLaunchArgument(
            'cmd_vel', default_value='',
            description='walk: vx,vy,wz [m/s, m/s, rad/s] until the cmd_vel topic gives a command '
                        '(empty: the parameter file\'s)'),
        DeclareLaunchArgument(
            'rig', default_value='', choices=RIGS,
            description='Test bench: empty (the robot on the floor) or one_leg (one leg, the pelvis '
                        'clamped, a force plate); passed to every node as its rig parameter'),
        DeclareLaunchArgument(
            'rig_leg', default_value='left', choices=RIG_LEGS,
            description='rig: the leg the bench keeps'),
        DeclareLaunchArgument(
            'rviz', default_value='false', choices=BOOLEANS,
            description='Start RViz with config/kangaroo.rviz (skipped if rviz2 is missing)'),
        DeclareLaunchArgument(
            'namespace', default_value='',
            description='ROS namespace pushed onto every node (empty: none)'),
        DeclareLaunchArgument(
            'use_sim_time', default_value='auto', choices=SIM_TIME_CHOICES,
            description='Use /clock; auto: true for backends sim, ros2_control and gazebo, false for '
                        'hardware'),
    ]
    return LaunchDescription([*arguments, OpaqueFunction(function=launch_stack)])
