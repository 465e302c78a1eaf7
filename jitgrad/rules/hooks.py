"""Rules the transpiler uses for jitgrad's own calls inside differentiated code.

``jg.hook(fn, x)`` is the identity whose pullback passes the incoming gradient
through ``fn``; ``jg.nobacksies(msg, x)`` is the identity whose gradient is refused.
(``jg.checkpoint`` is a control construct, handled by the transpiler itself.)
The functions are ``jitgrad.markers``; called eagerly, they run ``runtime/hooks.py``.
"""

from ..markers import hook
from .registry import grad_rule


@grad_rule(hook, kind_of=1, pure=False)  # (its pullback calls the user's fn: never moved)
def hook_rule(fn, x):
    def back(dy):
        return (None, fn(dy))
    return x, back
