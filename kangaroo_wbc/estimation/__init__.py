"""State estimation of closed-linkage robots (Kangaroo paper Section VI; no ROS imports).

* :mod:`.calibration` — relative-encoder offsets from passive absolute encoders, eq. (41)-(42);
* :mod:`.passive_state` — 1 kHz passive-state estimator, eq. (35)-(40);
* :mod:`.floating_base` — base pose and twist from the IMU and contact-aided leg kinematics;
* :mod:`.contact_wrench` — quasi-static sole wrenches, CoPs and ZMP, eq. (43)-(47);
* :mod:`.actuator_force` — actuator forces from motor torques beyond eq. (47);
* :mod:`.filters` — per-sample Butterworth low-pass;
* :mod:`.encoder_sanity` — jump and freeze checks of the actuator encoder stream;
* :mod:`.stamp_order` — out-of-order stamps and restarted clocks of an input stream.

The closure terms of a tick (``e_l``, ``J_l``, the LU of ``J_lu``) come from
:class:`kangaroo_wbc.model.closure_kinematics.ClosureKinematics`.
"""

from kangaroo_wbc.estimation.contact_wrench import paper_screws

__all__ = ["paper_screws"]
