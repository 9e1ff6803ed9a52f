"""Console-script entry points of the kangaroo_wbc nodes, quiet under SIGINT/SIGTERM from the start.

A node spends its first second importing numpy, pinocchio, MuJoCo and rclpy. Python's default
SIGINT handler turns a Ctrl-C (or ``ros2 launch`` shutting down early) in that second into a
``KeyboardInterrupt`` traceback and exit code -2. Every console script of ``setup.py`` therefore
points here: importing this module (standard library only) in a node's interpreter first installs
handlers that end the process at once with exit code 0 (:func:`started_as_node`; a program that
merely imports the module keeps its handlers), then the entry function imports the node module and calls its
``main()``, whose :func:`~kangaroo_wbc.ros.node_base.run_nodes` replaces these handlers by its own
clean shutdown (flag, ``on_shutdown`` hooks, exit 0) as soon as rclpy is initialised.

Before ``run_nodes`` takes over nothing has been published and no resource needs releasing, so the
handler ends the process with :func:`os._exit` after flushing the standard streams: raising
``SystemExit`` in the middle of an extension module's import could leave that import half done and
print errors of its own.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys

#: Exit code when a node module is not installed.
EXIT_NOT_INSTALLED = 1
#: After its nodes are destroyed, a node process that has not exited after this [s] ends with
#: its exit code (a stalled middleware teardown at interpreter exit: :mod:`kangaroo_wbc.ros.exit_guard`).
FINALIZE_EXIT_AFTER_S = 3.0

#: executable name -> module whose ``main()`` runs it (the keys are ``setup.py``'s NODES).
NODE_MODULES = {
    "sim": "kangaroo_wbc.nodes.sim_node",
    "state_estimator": "kangaroo_wbc.nodes.state_estimator_node",
    "contact_wrench_estimator": "kangaroo_wbc.nodes.contact_wrench_node",
    "whole_body_controller": "kangaroo_wbc.nodes.whole_body_controller_node",
    "composed": "kangaroo_wbc.nodes.composed_node",
    "link_tf": "kangaroo_wbc.nodes.link_tf_node",
}


def _exit_quietly(signum: int, frame: object) -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(0)


def install_quiet_exit_handlers() -> None:
    """SIGINT and SIGTERM end the process with exit code 0, without a traceback."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _exit_quietly)


def started_as_node() -> bool:
    """Whether this interpreter was started to run a node: a console script of ``setup.py``
    (``<executable>`` in the ROS package's lib folder, ``kangaroo_wbc_<executable>`` on the PATH) or
    ``python -c`` (the graph runner's way), not a program that imports this module (a test runner
    must keep its own signal handlers)."""
    program = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return program.removeprefix("kangaroo_wbc_") in NODE_MODULES or program == "-c"


if started_as_node():
    install_quiet_exit_handlers()  # at import: before anything heavy is imported


def run(executable: str) -> int:
    """Import the node module of ``executable`` and return its ``main()``'s exit code.

    A node module that is not installed gives one FATAL line naming it and exit code
    :data:`EXIT_NOT_INSTALLED` (a missing dependency *of* the module still raises, with its name).
    """
    install_quiet_exit_handlers()
    module_name = NODE_MODULES[executable]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is None or not module_name.startswith(exc.name):
            raise
        sys.stderr.write(
            f"[FATAL] [kangaroo_wbc]: executable {executable!r}: module {module_name} is not "
            "installed in this version of kangaroo_wbc\n"
        )
        return EXIT_NOT_INSTALLED
    code = module.main()
    # the nodes are gone: bound the interpreter's finalisation
    from kangaroo_wbc.ros import exit_guard

    exit_guard.arm(FINALIZE_EXIT_AFTER_S, code, "interpreter finalisation")
    return code


def _entry(executable: str, doc: str):
    """The console-script function ``() -> int`` of ``executable`` (``setup.py`` points at it)."""

    def main() -> int:
        return run(executable)

    main.__name__ = main.__qualname__ = executable
    main.__doc__ = f"``{executable}``: {doc}"
    return main


sim = _entry("sim", "the MuJoCo simulator node.")
state_estimator = _entry("state_estimator", "calibration, passive state and floating base.")
contact_wrench_estimator = _entry("contact_wrench_estimator", "contact wrenches, CoP and ZMP from motor torques.")
whole_body_controller = _entry("whole_body_controller", "the QP whole-body controller.")
composed = _entry("composed", "the four nodes in one process.")
link_tf = _entry("link_tf", "TF of every link from ``joint_states`` (stand-in for robot_state_publisher).")
