"""Bridges to PyTorch and JAX: a jitgrad function as a differentiable operation of theirs.

``to_torch(f)`` gives a callable on torch tensors (a ``torch.autograd.Function``);
``to_jax(f)`` a function for JAX programs (``jax.custom_vjp`` over ``jax.pure_callback``).
Torch and JAX are optional (``pip install jitgrad[torch]``, ``jitgrad[jax]``): each is
imported when its bridge is first made, never by ``import jitgrad``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["to_jax", "to_torch"]


def to_torch(func: Callable, wrt: Any = None, *, jit: bool = True) -> Callable:
    """``func`` as a function of torch tensors whose results support ``.backward()``:
    the value is ``func`` run on the tensors' data, the gradient jitgrad's (``vjp``).
    ``wrt``: the arguments that get gradients (None: the float tensors that require them;
    another tensor requiring a gradient is then an error)."""
    from .torch_bridge import TorchFunction

    return TorchFunction(func, wrt, jit)


def to_jax(func: Callable, wrt: Any = None, *, jit: bool = True) -> Callable:
    """``func`` as a JAX function usable under ``jax.jit``, ``jax.grad`` and ``jax.vmap``
    (which loops): ``jax.custom_vjp`` whose value and pullback run through
    ``jax.pure_callback``.  ``wrt``: the arguments that get gradients (None: every float
    array argument); the others are constants to JAX, as under ``jax.lax.stop_gradient``."""
    from .jax_bridge import jax_function

    return jax_function(func, wrt, jit)
