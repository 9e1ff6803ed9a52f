"""``python -m kangaroo_wbc_tools.cli``: the ``kangaroo-wbc`` command line."""

import sys

from kangaroo_wbc_tools.cli import main

sys.exit(main())
