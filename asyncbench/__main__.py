"""``python -m asyncbench``."""

import sys

from asyncbench.cli.main import main

sys.exit(main())
