"""``composed`` executable: the whole node graph in one process, components chained in-process.

    ros2 run kangaroo_wbc composed --backend sim --ros-args --params-file config/sim.yaml ...

Hosts the nodes ``state_estimator``, ``contact_wrench_estimator`` and ``whole_body_controller``
(and ``sim`` with ``--backend sim``) with their own names, parameters, diagnostics and published
topics, so RViz, bags and other tools see the same graph as with separate processes. Inside, the
samples do not go through DDS: each actuator sample runs the chain

    state estimation → controller model update → contact wrenches (sharing that update)
    → controller → command

With ``--backend sim`` the chain runs in the simulator's loop thread on each sample while MuJoCo
computes the next step in its worker thread (it releases the interpreter), and the command drives
the step after (the one-tick delay of separate processes; in lockstep, the very next step); with
``--backend hardware`` the chain runs in the executor on the newest driver sample and the command
goes out on ``actuators/command``. The node ``composed`` reports the chain's
tick time and the samples it skipped.

With ``--link-tf`` the process also hosts ``link_tf`` (robot_state_publisher's stand-in, fed each
estimate in-process: no 1 kHz ``joint_states`` subscription) and, with ``--backend sim``,
``ground_truth_link_tf`` (the simulator's truth as a ``ground_truth/`` ghost).

Time: with ``--backend sim`` every hosted node runs on simulated time set in-process from each
sample's stamp (no ``/clock`` subscription per node, whatever ``use_sim_time`` says); with
``--backend hardware`` the nodes keep their clocks (the driver's stamps are system time).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # small matrices: BLAS threads only add latency

import sys  # noqa: E402
import time  # noqa: E402

from rclpy.clock import ClockType  # noqa: E402
from rclpy.time import Time  # noqa: E402

from kangaroo_wbc.components.assembly import Chain, ChainHooks, ChainSettings  # noqa: E402
from kangaroo_wbc.components.samples import (  # noqa: E402
    ActuatorCommand,
    ActuatorSample,
    EncoderSample,
    ImuSample,
    Level,
    NameMap,
    Status,
)
from kangaroo_wbc.ros.node_base import KangarooNode, run_nodes  # noqa: E402
from kangaroo_wbc.ros.node_support import joint_indices  # noqa: E402

BACKENDS = ("sim", "hardware")
#: GIL switch interval [s]: the simulator's loop gets the interpreter back soon after MuJoCo's
#: step instead of waiting up to Python's default 5 ms for the chain thread to yield.
SWITCH_INTERVAL_S = 2e-4
#: The hosted nodes' clocks (diagnostics, timers, the stamps of external references) follow the
#: samples' stamps every this many ticks; the chain itself runs on each sample's stamp.
CLOCK_DECIMATION = 10


class ComposedChain(KangarooNode):
    """The in-process chain between the hosted nodes (see the module docstring).

    Args:
        estimator, wrench, controller: the hosted nodes (built with ``chained=True`` except the
            estimator with the hardware backend, which subscribes the driver's topics itself).
        sim: the hosted simulator node, or None (hardware backend).
        link_tf: a hosted ``link_tf`` node built with ``chained=True``, or None.
    """

    def __init__(self, estimator, wrench, controller, sim=None, link_tf=None) -> None:
        super().__init__("composed")
        self.estimator, self.wrench, self.controller, self.sim = estimator, wrench, controller, sim
        clm = estimator.clm
        rigs = {n.get_name(): n.params.rig for n in (sim, estimator, wrench, controller) if n is not None}
        if len(set(rigs.values())) > 1:  # one bench or none: the nodes share one model
            from kangaroo_wbc.errors import ConfigError

            raise ConfigError(f"composed: the hosted nodes' rig parameters differ: {rigs}")
        self.rig = estimator.params.rig
        self.link_tf = link_tf
        if link_tf is not None:
            self._link_q = joint_indices(clm.model, link_tf.joint_names)[0]
        self._stats = {"ticks": 0, "total": 0.0, "max": 0.0}
        self._reported: float = 0  # the ticks count of _stats (typed with its float values)
        for node in (sim, estimator, wrench, controller, link_tf):  # one process: its CPU is reported here
            if node is not None:
                node.report_process = False
        # the one chain (components.assembly) over the hosted nodes' components; the nodes publish
        self.chain = Chain(estimator.component, wrench.component, controller.component,
                           ChainSettings(estimator.params, wrench.params, controller.params))
        self._hooks = ChainHooks(
            before=controller.apply_pending,  # the operator's modes and payloads, before the model update
            estimate=estimator.process,
            wrench=lambda sample, projected: wrench.process(sample, projected=projected),
            control=lambda sample, est, prepared: controller.process(
                est.q, est.v, est.stamp_s if est.base_valid else float("nan"), prepared=prepared,
                now_s=sample.stamp_s))
        self._clocks = []
        #: ros2_control with the hosted simulator: its broadcasts and the controllers' data through
        #: the estimator's boundary in-process (components.ros2_control.link)
        self._link = None
        if sim is not None:
            self._ticks_since_clocks = CLOCK_DECIMATION
            for node in (controller, sim, estimator, wrench, self):  # simulated time, set in-process
                self._clocks.append(node.use_time_set_in_process())
            sys.setswitchinterval(SWITCH_INTERVAL_S)
            self._act = NameMap(sim.actuator_names, clm.actuated_joint_names)
            self._enc = NameMap(sim.passive_encoder_names, clm.absolute_encoders)
            self._cmd = NameMap(clm.actuated_joint_names, sim.actuator_names)
            if estimator.boundary is not None and sim.params.interface == "ros2_control":
                from kangaroo_wbc.components.ros2_control.link import Ros2ControlLink

                self._link = Ros2ControlLink(estimator.boundary)
                sim.add_sample_listener(self._on_broadcast)
            else:
                controller.command_listener = self._to_sim
                sim.add_sample_listener(self._on_sample)
        else:
            estimator.estimate_listener = self._chain

    # ------------------------------------------------------------------ simulator backend
    def _on_sample(self, act: ActuatorSample, enc: EncoderSample, imu: ImuSample) -> None:
        """Simulator loop thread, while MuJoCo steps: the whole chain on this sample."""
        self._set_clocks(act.stamp_s)
        sample = ActuatorSample(self._act(act.position), self._act(act.velocity),
                                None if act.effort is None else self._act(act.effort), act.stamp_s)
        plate = self.sim.plate_reading  # the bench's force plate, read with these samples
        try:
            self._tick(sample, EncoderSample(self._enc(enc.position), enc.stamp_s), imu,
                       None if plate is None else (-float(plate[0][2]), plate[1]))
        except Exception as exc:  # noqa: BLE001 - reported; the simulator's watchdog acts
            self.throttled.error("chain", f"composed chain failed: {exc!r}")

    def _set_clocks(self, stamp_s: float) -> None:
        self._ticks_since_clocks += 1
        if self._ticks_since_clocks >= CLOCK_DECIMATION:  # the nodes' clocks stamp diagnostics and timers
            self._ticks_since_clocks = 0  # (the chain itself runs on the samples' stamps)
            now = Time(nanoseconds=round(stamp_s * 1e9), clock_type=ClockType.ROS_TIME)
            for clock in self._clocks:
                clock.set_ros_time_override(now)  # type: ignore[union-attr]  # rclpy: nodes' clocks are ROSClocks

    def _to_sim(self, cmd: ActuatorCommand) -> None:
        self.sim.submit_command(ActuatorCommand(self._cmd(cmd.force), cmd.stamp_s))

    def _on_broadcast(self, state) -> None:
        """ros2_control, simulator loop thread: the broadcasters' update through the boundary, the
        chain, and its command through the boundary to the simulated effort controllers."""
        from kangaroo_wbc.components.ros2_control.boundary import BoundaryInputError

        assert self._link is not None  # the listener is registered with the link only
        self._set_clocks(state.stamp_s)
        try:
            try:
                act, enc, imu = self._link.native(state)
            except BoundaryInputError as exc:  # skipped and reported, as the estimator node does
                self.estimator.component.reject(self._link.boundary.source_topic(exc), exc)
                return self.estimator.log_events(self.estimator.component)
            step = self._tick(act, enc, imu)
            if step is not None and step.command is not None:
                data = self._link.controller_data(step.command.tau_a, step.estimate.q, self.controller.component.ready,
                                                  state.stamp_s)
                for controller, values in (data or {}).items():
                    self.sim.face.on_data(controller, values)
        except Exception as exc:  # noqa: BLE001 - reported; the simulator's watchdog acts
            self.throttled.error("chain", f"composed chain failed: {exc!r}")

    # ------------------------------------------------------------------ the chain
    def _chain(self, sample: ActuatorSample, est) -> None:
        """Hardware backend: the chain after the estimate the estimator node made of a driver sample."""
        self._tick(sample, hooks=ChainHooks(self._hooks.before, lambda _: est, self._hooks.wrench, self._hooks.control))

    def _tick(self, sample: ActuatorSample, encoders=None, imu=None, plate=None, hooks=None):
        """One sample through the chain (:meth:`Chain.tick`), then the in-process link TF; returns the step."""
        t0 = time.perf_counter()
        step = self.chain.tick(sample, encoders, imu, plate, hooks or self._hooks)
        est = step.estimate
        if est is not None and self.link_tf is not None and self.link_tf.due(est.stamp_s):  # off the command path
            self.link_tf.on_positions(est.q[self._link_q], est.stamp_s)
        if est is None:
            return step
        dt = time.perf_counter() - t0
        self.tick_count += 1
        s = self._stats
        s["ticks"], s["total"], s["max"] = s["ticks"] + 1, s["total"] + dt, max(s["max"], dt)
        return step

    # ------------------------------------------------------------------ diagnostics / shutdown
    def diagnostic_statuses(self) -> list:
        s = self._stats
        ticks = s["ticks"] - self._reported
        self._reported = s["ticks"]
        values = {"ticks": ticks, "chain_mean_ms": 1e3 * s["total"] / max(ticks, 1), "chain_max_ms": 1e3 * s["max"]}
        s["total"] = s["max"] = 0.0
        return self.to_diagnostics([Status("chain", Level.OK if ticks else Level.WARN,
                                           "running" if ticks else "no sample in the last period", values)])


def _options(argv: list[str]) -> tuple[str, bool, list[str]]:
    """``--backend NAME`` and ``--link-tf`` (before ``--ros-args``), and the remaining arguments."""
    args = list(argv)
    ros_args = args.index("--ros-args") if "--ros-args" in args else len(args)
    link_tf = "--link-tf" in args[:ros_args]
    if link_tf:
        args.remove("--link-tf")
    backend = "sim"
    if "--backend" in args:
        i = args.index("--backend")
        if i + 1 >= len(args) or args[i + 1] not in BACKENDS:
            sys.stderr.write(f"composed: --backend must be one of {list(BACKENDS)}\n")
            raise SystemExit(2)
        backend = args[i + 1]
        del args[i:i + 2]
    return backend, link_tf, args


def main(args: list[str] | None = None) -> int:
    """Run the composed graph until SIGINT/SIGTERM; return the exit code."""
    backend, link_tf, argv = _options(sys.argv if args is None else args)
    from kangaroo_wbc.nodes.contact_wrench_node import ContactWrenchNode
    from kangaroo_wbc.nodes.state_estimator_node import StateEstimatorNode
    from kangaroo_wbc.nodes.whole_body_controller_node import WholeBodyControllerNode

    built: dict = {}

    def make(key, factory):
        def build():
            built[key] = factory()
            return built[key]
        build.__name__ = key
        return build

    factories = []
    if backend == "sim":
        from kangaroo_wbc.nodes.sim_node import SimNode

        factories.append(make("sim", lambda: SimNode(chained=True)))
    factories += [
        make("estimator", lambda: StateEstimatorNode(chained=backend == "sim")),
        make("wrench", lambda: ContactWrenchNode(clm=built["estimator"].clm, chained=True)),
        make("controller", lambda: WholeBodyControllerNode(clm=built["estimator"].clm, chained=True)),
    ]
    if link_tf:
        from rclpy.parameter import Parameter

        from kangaroo_wbc.nodes.link_tf_node import LinkTfNode

        factories.append(make("link_tf", lambda: LinkTfNode(chained=True)))
        if backend == "sim":
            ghost = [Parameter("frame_prefix", Parameter.Type.STRING, "ground_truth/")]

            def ghost_node():
                node = LinkTfNode("ground_truth_link_tf", joint_states_topic="sim/ground_truth/joint_states",
                                  description_topic="ground_truth/robot_description", parameter_overrides=ghost)
                node.report_process = False  # the process's CPU is reported by ``composed``
                return node
            factories.append(make("ground_truth_link_tf", ghost_node))
    factories.append(make("chain", lambda: ComposedChain(built["estimator"], built["wrench"], built["controller"],
                                                         built.get("sim"), built.get("link_tf"))))
    return run_nodes(factories, args=argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
