"""Time the exact serial <-> actuator maps of the ros2_control serial joint space at 1 kHz.

    source scripts/env.sh && OPENBLAS_NUM_THREADS=1 python scripts/bench_serial_map.py [--samples N]

A smooth 1 kHz actuator trajectory around the standing pose (the benchmarks' workload, floating
base) is mapped to the serial joints once; then, warm-started sample to sample as a node runs it:
``to_actuators`` (serial -> actuator state, what the state estimator's boundary solves per
joint_states message), ``to_serial`` (actuator -> serial, the simulated driver's side),
``serial_torques`` (actuator forces -> serial torques, the controller's command) and the boundary's
whole ``state`` conversion. Prints median and 99th percentile [ms] and the round-trip error.
"""

from __future__ import annotations

import argparse
import json
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from kangaroo_wbc.components.ros2_control.settings import build_boundary  # noqa: E402
from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo, standing_configuration  # noqa: E402
from kangaroo_wbc_tools.bench.timing import time_calls  # noqa: E402
from kangaroo_wbc_tools.bench.workload import actuator_trajectory  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=2000)
    n = parser.parse_args().samples
    clm = load_kangaroo(floating_base=True)
    p = argparse.Namespace(joint_space="serial", hardware_map="", ros2_controllers="")
    boundary = build_boundary(clm, p)
    smap = boundary.map
    q0 = standing_configuration(clm)
    clm.closure_fk(q0[clm.idx_q_a], q0)
    traj = actuator_trajectory(clm, n, 1000.0, 0.5, 0)
    theta0 = q0[clm.idx_q_a] - clm.actuator_positions(clm.q_ref)  # the trajectory around the standing pose
    states, q = [], q0
    for th, thd in zip(traj.theta_a + theta0, traj.theta_dot_a):
        s = smap.to_serial(th, thd, q)
        states.append(s)
        q = s.q
    forces = np.random.default_rng(0).normal(scale=300.0, size=(n, clm.n_a))
    names = [j.name for j in boundary.hw.joints]
    out = {}
    smap.to_actuators(states[0].y, states[0].y_dot, q0)
    t, sol = time_calls(lambda s: smap.to_actuators(s.y, s.y_dot), states, warmup=10)
    err = max(max(np.max(np.abs(a.theta_a - s.theta_a)), np.max(np.abs(a.theta_dot_a - s.theta_dot_a)))
              for a, s in zip(sol, states[10:]))
    out["to_actuators_ms"] = {"p50": t.median, "p99": t.p99, "round_trip_max_error": float(err)}
    t, _ = time_calls(lambda s: smap.to_serial(s.theta_a, s.theta_dot_a), states, warmup=10, keep_outputs=False)
    out["to_serial_ms"] = {"p50": t.median, "p99": t.p99}
    t, _ = time_calls(lambda k: smap.serial_torques(states[k].q, forces[k]), list(range(n)), warmup=10,
                      keep_outputs=False)
    out["serial_torques_ms"] = {"p50": t.median, "p99": t.p99}
    boundary.state(names, states[0].y, states[0].y_dot, None, 0.0)
    t, _ = time_calls(lambda k: boundary.state(names, states[k].y, states[k].y_dot, forces[k], k * 1e-3),
                      list(range(n)), warmup=10, keep_outputs=False)
    out["boundary_state_ms"] = {"p50": t.median, "p99": t.p99}
    out["load_average"] = os.getloadavg()[0]
    print(json.dumps(out, indent=1, default=lambda x: round(x, 4)))


if __name__ == "__main__":
    main()
