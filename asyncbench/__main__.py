"""``python -m asyncbench``."""

import sys

from asyncbench.cli import main

sys.exit(main())
