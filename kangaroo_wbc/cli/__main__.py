"""``python -m kangaroo_wbc.cli``: the ``kangaroo-wbc`` command line."""

import sys

from kangaroo_wbc.cli import main

sys.exit(main())
