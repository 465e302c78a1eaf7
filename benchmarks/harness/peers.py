"""Peer AD frameworks (JAX, PyTorch, autograd) behind one small array API.

Each workload writes its peer loss once against :class:`Backend`; the backend
supplies the array functions, a ``loop`` primitive (``lax.scan`` for JAX, a Python
loop for the eager frameworks) and the framework-specific way to build a
gradient thunk. Frameworks are imported lazily, so a missing peer is only a skip.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from importlib import metadata
from typing import Any

import numpy as np


class Backend:
    """Array API shared by the peer losses, plus gradient construction.

    Subclasses set ``exp, log, sqrt, tanh, stack, cat`` (sequence -> array) and
    implement the remaining methods.
    """

    name = "?"
    package = "?"

    def __init__(self, threads: int) -> None:
        self.threads = threads

    # --- array API used by workloads -------------------------------------------------
    def amax(self, x: Any, axis: int) -> Any:
        """Maximum along ``axis`` keeping the dimension."""
        raise NotImplementedError

    def sum(self, x: Any, axis: int | None = None) -> Any:
        """Sum of all elements, or along ``axis``."""
        return x.sum() if axis is None else x.sum(axis)

    def const(self, a: np.ndarray) -> Any:
        """A non-differentiable constant in the framework's array type."""
        raise NotImplementedError

    def zero(self) -> Any:
        """A float64 scalar zero (initial accumulator in ``loop`` carries)."""
        return self.const(np.zeros(()))

    def loop(self, step: Callable[[Any], Any], init: Any, n: int) -> Any:
        """Apply ``step`` to the carry ``n`` times (a Python loop by default)."""
        carry = init
        for _ in range(n):
            carry = step(carry)
        return carry

    # --- gradient construction ----------------------------------------------------
    def grad_thunk(self, loss: Callable[..., Any], values: Sequence[Any]) -> Callable[[], Any]:
        """Return a zero-argument callable computing the gradient of ``loss`` at ``values``
        synchronously (input conversion happens here, outside the timed call)."""
        raise NotImplementedError

    def to_numpy(self, raw: Any) -> tuple[np.ndarray, ...]:
        """Gradient tuple as float64 NumPy arrays."""
        return tuple(np.asarray(g, dtype=np.float64) for g in raw)

    def version(self) -> str:
        """Version string(s) of the framework."""
        return metadata.version(self.package)


class JaxBackend(Backend):
    """``jax.jit(jax.grad(loss))`` in float64; loops become ``lax.scan``."""

    name = "jax"
    package = "jax"

    def __init__(self, threads: int) -> None:
        super().__init__(threads)
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)
        self.jax, self.jnp = jax, jnp
        self.exp, self.log, self.sqrt, self.tanh = jnp.exp, jnp.log, jnp.sqrt, jnp.tanh
        self.stack, self.cat = jnp.stack, jnp.concatenate
        # Initialise the XLA backend now so first-call times measure compilation only.
        jax.jit(lambda x: x + 1.0)(jnp.ones(2)).block_until_ready()

    def amax(self, x, axis):
        return self.jnp.max(x, axis=axis, keepdims=True)

    def const(self, a):
        return self.jnp.asarray(a)

    def loop(self, step, init, n):
        return self.jax.lax.scan(lambda c, _: (step(c), None), init, None, length=n)[0]

    def grad_thunk(self, loss, values):
        jax = self.jax
        fn = jax.jit(jax.grad(loss, argnums=tuple(range(len(values)))))
        xs = [self.jnp.asarray(np.asarray(v, dtype=np.float64)) for v in values]
        return lambda: jax.block_until_ready(fn(*xs))

    def version(self):
        return f"{metadata.version('jax')} (jaxlib {metadata.version('jaxlib')})"


class TorchBackend(Backend):
    """PyTorch eager, float64, ``torch.autograd.grad`` on leaf tensors."""

    name = "torch"
    package = "torch"

    def __init__(self, threads: int) -> None:
        super().__init__(threads)
        import torch

        torch.set_num_threads(threads)
        try:
            torch.set_num_interop_threads(1)
        except RuntimeError:  # already set (e.g. torch used earlier in the process)
            pass
        self.torch = torch
        self.exp, self.log, self.sqrt, self.tanh = torch.exp, torch.log, torch.sqrt, torch.tanh
        self.stack, self.cat = torch.stack, torch.cat

    def amax(self, x, axis):
        return self.torch.amax(x, dim=axis, keepdim=True)

    def const(self, a):
        return self.torch.from_numpy(np.array(a))

    def grad_thunk(self, loss, values):
        torch = self.torch
        leaves = [torch.tensor(np.asarray(v), dtype=torch.float64, requires_grad=True)
                  for v in values]
        return lambda: torch.autograd.grad(loss(*leaves), leaves)

    def to_numpy(self, raw):
        return tuple(g.detach().numpy().astype(np.float64) for g in raw)


class AutogradBackend(Backend):
    """HIPS autograd over ``autograd.numpy``; loops are Python loops."""

    name = "autograd"
    package = "autograd"

    def __init__(self, threads: int) -> None:
        super().__init__(threads)
        import autograd
        import autograd.numpy as anp

        self.autograd, self.anp = autograd, anp
        self.exp, self.log, self.sqrt, self.tanh = anp.exp, anp.log, anp.sqrt, anp.tanh
        self.stack, self.cat = anp.stack, anp.concatenate

    def amax(self, x, axis):
        return self.anp.max(x, axis=axis, keepdims=True)

    def sum(self, x, axis=None):
        return self.anp.sum(x, axis=axis)

    def const(self, a):
        return np.array(a)

    def grad_thunk(self, loss, values):
        fn = self.autograd.grad(lambda xs: loss(*xs))
        xs = tuple(np.array(v, dtype=np.float64) if np.ndim(v) else float(v) for v in values)
        return lambda: fn(xs)


PEER_BACKENDS: dict[str, type[Backend]] = {
    "jax": JaxBackend,
    "torch": TorchBackend,
    "autograd": AutogradBackend,
}
