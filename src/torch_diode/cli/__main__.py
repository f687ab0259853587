"""``python -m torch_diode.cli``: the ``diode`` command."""

import sys

from . import main

sys.exit(main())
