"""Run-time settings of jitgrad.

``verbose``: print what a first call is doing (transforming, compiling with Numba, and
how long each took) to stderr while it runs; set ``jg.config.verbose = True`` or the
environment variable ``JITGRAD_VERBOSE=1``.  The same records always go to the
``logging.getLogger("jitgrad")`` logger at INFO, and ``f.cache_info()`` sums them.

``cache``: keep every function's gradients on disk as if differentiated with
``cache=True`` (generated code and Numba's machine code, where Numba caches: next to the
source, or ``NUMBA_CACHE_DIR``), so a later process skips the transform and the compile;
off by default, on with ``JITGRAD_CACHE=1`` or ``jg.config.cache = True`` (like JAX's
persistent compilation cache); ``cache=False`` on a function keeps it off there.  A
function whose code reads something that cannot be written to a module (an object with
no importable name) is built in memory as before.  Read when a function is differentiated.

``auto_checkpoint``: reverse mode runs a time loop (a ``range`` loop in no other loop)
whose tape would take more than ``checkpoint_bytes`` on the binomial schedule of
``jg.checkpointed`` over blocks of steps whose tape takes at most a quarter of it, so that
the tape stays in cache (``docs/long-loops.md``); off by default (both branches are
compiled: the first call takes about three times as long), on with
``JITGRAD_AUTO_CHECKPOINT=1``, ``jg.config.auto_checkpoint = True`` or
``auto_checkpoint=True`` on ``jg.differentiate``/``grad``/``value_and_grad``/``vjp``;
``JITGRAD_CHECKPOINT_BYTES`` sets the size (0: every such loop with a tape, whatever its
snapshots take: for testing).  Read when a function is transformed.

``vector_jacfwd``: ``jg.jacfwd`` runs vector forward mode (the primal once per 64
columns, ``docs/forward.md``); its code takes Numba longer to compile than the jvp's
(LLVM's loop vectorizer on the direction loops), so ``JITGRAD_VECTOR_JACFWD=0`` or
``jg.config.vector_jacfwd = False`` keeps one jvp per column where the first call
matters more than the later ones.  Read at each Jacobian call.
"""

from __future__ import annotations

import os

verbose: bool = os.environ.get("JITGRAD_VERBOSE", "").strip().lower() not in ("", "0",
                                                                             "false", "no")


def _on(value: str) -> bool:
    return value.strip().lower() in ("1", "true", "yes", "on")


cache: bool = _on(os.environ.get("JITGRAD_CACHE", ""))
auto_checkpoint: bool = _on(os.environ.get("JITGRAD_AUTO_CHECKPOINT", ""))
checkpoint_bytes: int = int(os.environ.get("JITGRAD_CHECKPOINT_BYTES", "").strip() or 4 << 20)
vector_jacfwd: bool = os.environ.get("JITGRAD_VECTOR_JACFWD", "").strip().lower() not in (
    "0", "false", "no", "off")


def checkpoint_threshold(on: bool | None = None) -> int | None:
    """The tape size (bytes) above which a time loop is checkpointed automatically, None
    where that is off (``on``: the function's own choice; None: ``auto_checkpoint``)."""
    return checkpoint_bytes if (auto_checkpoint if on is None else on) else None


__all__ = ["auto_checkpoint", "cache", "checkpoint_bytes", "checkpoint_threshold", "vector_jacfwd",
           "verbose"]
