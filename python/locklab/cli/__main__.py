"""``python -m locklab.cli``."""

import sys

from locklab.cli.main import main

sys.exit(main())
