"""``python -m jitgrad``: the same command line as the ``jitgrad`` console script."""

import sys

from .cli import main

sys.exit(main())
