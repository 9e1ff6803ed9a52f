"""The Kangaroo lower-body model generator: one parameter file → every model format.

.. code-block:: python

    from kangaroo_wbc.robots.kangaroo import generate
    generate("urdf")                  # kangaroo.urdf, kangaroo_closures.yaml, kangaroo.sdf,
                                      # kangaroo_serial.urdf (+ kangaroo.xml when the MJCF exporter exists)

or ``kangaroo-wbc model generate``. See ``urdf/README.md`` for the design and the
origin of every number, and :mod:`kangaroo_wbc.robots.kangaroo.generator` for the topology.
"""

from kangaroo_wbc.robots.kangaroo.files import FILE_NAMES, generate, generate_texts
from kangaroo_wbc.robots.kangaroo.generator import actuated_joints, build, output_joints
from kangaroo_wbc.robots.kangaroo.params import ACTUATORS, OUTPUTS, KangarooParams, load_params
from kangaroo_wbc.robots.kangaroo.serial_twin import SerialTwin, build_serial

__all__ = [
    "ACTUATORS", "OUTPUTS", "FILE_NAMES", "KangarooParams", "SerialTwin", "actuated_joints", "build",
    "build_serial", "generate", "generate_texts", "load_params", "output_joints",
]
