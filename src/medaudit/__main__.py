"""``python -m medaudit``: the same command line as ``medaudit``."""

import sys

from medaudit.cli.main import main

sys.exit(main())
