"""Run-time settings of jitgrad.

``verbose``: print what a first call is doing (transforming, compiling with Numba, and
how long each took) to stderr while it runs; set ``jg.config.verbose = True`` or the
environment variable ``JITGRAD_VERBOSE=1``.  The same records always go to the
``logging.getLogger("jitgrad")`` logger at INFO, and ``f.cache_info()`` sums them.
"""

from __future__ import annotations

import os

verbose: bool = os.environ.get("JITGRAD_VERBOSE", "").strip().lower() not in ("", "0",
                                                                             "false", "no")

__all__ = ["verbose"]
