"""``jitgrad.to_torch``: a jitgrad function as a ``torch.autograd.Function``.

The forward runs ``Differentiated.vjp`` on the tensors' data (NumPy views of CPU
tensors, copied by jitgrad where the code writes them) and keeps the pullback; the
backward runs the pullback on the incoming gradient.  Double backward is refused
(``once_differentiable``): the pullback is compiled code, not torch operations.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch.autograd.function import once_differentiable

from .common import Bridge, bind, plain


class _Apply(torch.autograd.Function):
    """``apply(bridge, positions, *args)``: the value, and the gradients of ``positions``."""

    @staticmethod
    def forward(ctx: Any, bridge: Bridge, positions: tuple[int, ...], *args: Any) -> Any:
        value, pullback = bridge.diff(positions).vjp(*(_numpy(a) for a in args))
        ctx.pullback, ctx.positions, ctx.nargs = pullback, positions, len(args)
        ctx.like = [args[i] if torch.is_tensor(args[i]) else None for i in positions]
        return _tensors(value, _float_dtype(args))

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, *dys: torch.Tensor) -> tuple:
        seeds = tuple(plain(d.detach().numpy()) for d in dys)
        grads = ctx.pullback(seeds if len(seeds) > 1 else seeds[0])
        out: list[Any] = [None] * (2 + ctx.nargs)
        for i, like, g in zip(ctx.positions, ctx.like, grads, strict=True):
            if like is not None:
                out[2 + i] = torch.as_tensor(np.asarray(g)).to(dtype=like.dtype)
        return tuple(out)


class TorchFunction:
    """What ``jitgrad.to_torch`` returns: call it on tensors (and other arguments)."""

    def __init__(self, func: Callable, wrt: Any, jit: bool):
        self.bridge = Bridge(func, wrt, jit)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        args = bind(self.bridge, args, kwargs)
        positions = self._positions(args)
        if not positions or not torch.is_grad_enabled():
            d = self.bridge.diff(positions)
            return _tensors(d(*(_numpy(a) for a in args)), _float_dtype(args))
        return _Apply.apply(self.bridge, positions, *args)

    def _positions(self, args: tuple) -> tuple[int, ...]:
        """The arguments that get gradients: ``wrt``, else the tensors requiring them."""
        b = self.bridge
        needs = tuple(i for i, a in enumerate(args) if torch.is_tensor(a) and a.requires_grad)
        if b.wrt is None:
            return needs
        b.check_positions(b.wrt, len(args))
        stray = [i for i in needs if i not in b.wrt]
        if stray:
            i = stray[0]
            name = b.params[i] if i < len(b.params) else str(i)
            raise ValueError(f"argument {i} ('{name}') of {b.name} requires a gradient but is "
                             f"not in wrt={b.wrt}: add it to wrt, or pass it detached "
                             f"({name}.detach())")
        return b.wrt


def _numpy(a: Any) -> Any:
    """A tensor's data as NumPy (a 0-d one as a Python scalar); other values as they are."""
    if torch.is_tensor(a):
        if a.device.type != "cpu":
            raise ValueError(f"jitgrad runs on the CPU: a tensor on {a.device} was passed "
                             "to a jg.to_torch function; pass it .cpu() (and move the "
                             "result back)")
        return plain(a.detach().numpy())
    return a


def _float_dtype(args: tuple) -> torch.dtype:
    """The floating dtype of a scalar result: the promotion of the float tensors passed."""
    dtypes = [a.dtype for a in args if torch.is_tensor(a) and a.is_floating_point()]
    out = dtypes[0] if dtypes else torch.get_default_dtype()
    for d in dtypes[1:]:
        out = torch.promote_types(out, d)
    return out


def _tensors(value: Any, dtype: torch.dtype) -> Any:
    """The function's result as tensors: arrays keep their dtype, floats take ``dtype``."""
    if isinstance(value, tuple):
        return tuple(_tensors(v, dtype) for v in value)
    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(value))
    return torch.tensor(value, dtype=dtype if isinstance(value, float) else None)
