"""The shipped node graph run and observed as processes (``demo --processes``, the graph soak, the
graph benchmark): above ``nodes`` and ``ros``, below ``bench`` and ``cli``. The in-process loop
without ROS is :mod:`kangaroo_wbc_tools.pipeline`."""
