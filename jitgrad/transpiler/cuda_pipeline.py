"""The CUDA target's passes, as data: the shared passes with a kernel front and a device
lowering.

``CUDA_PREPARE`` is ``pipeline.PREPARE`` with ``parse`` followed by the kernel pass
(``front/kernel.py``: one thread's part of a kernel as a function of the thread
index); ``CUDA_SPECIALISE`` runs kinds, a device check (no allocation, only primitives
allowed on the device), analyse, reverse and optimize as on the CPU, then lowers to a
device function or an adjoint kernel (``backend/cuda.py``).  ``build`` evaluates the
tape capacities for one launch's arguments and compiles the result with ``numba.cuda``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from .analysis.kinds import Kind
from .backend import cuda as device
from .backend import emit
from .backend.jit import imports
from .front.kernel import cuda_uses, is_kernel, kernel_body
from .front_passes import PREPARE, analyse_, kinds_, parse_, show_analysis, show_kinds
from .pipeline import prepare, transform
from .reverse_passes import optimize_, reverse_, show_ir
from .unit import Pass, Unit


def parse_cuda_(u: Unit) -> None:
    """Parse; a kernel becomes one thread's part, the thread indices its last parameters.

    >>> print(example_cuda("parse", '''
    ... def step(x, out):
    ...     i = cuda.grid(1)
    ...     if i < out.shape[0]:
    ...         out[i] = x[i] * 2.0
    ... '''))
    def step(x, out, i):
        if i < out.shape[0]:
            out[i] = x[i] * 2.0
        return out
    """
    parse_(u)
    if is_kernel(u.parsed):
        u.kernel, u.body = kernel_body(u.parsed, u.body, u.params)
        u.params = [*u.params, *u.kernel.index]
        return
    uses = cuda_uses(u.parsed)
    if uses:
        node, path = uses[0]
        raise u.parsed.error(f"cuda.{path} in a device function: a function differentiated "
                             "for the GPU without cuda.grid is a device function, which "
                             "computes from its scalar arguments alone", node,
                             "start a kernel with 'i = cuda.grid(1)' (docs/cuda.md)")


def device_check_(u: Unit) -> None:
    """Refuse what device code cannot run: arrays made inside it, primitives not allowed on
    the device (their ``device`` fact), method calls; device functions take scalars only."""
    if u.kernel is None:
        for p in u.params:
            if u.kinds[p].is_array:
                raise u.parsed.error(
                    f"the device function's parameter '{p}' is an array: device_grad "
                    "differentiates functions of scalars", u.parsed.tree,
                    "pass scalars, or write a kernel (i = cuda.grid(1)) over the arrays")
    arrays = frozenset(p for p in u.params if u.kinds[p].is_array)
    device.check_device_code(u.parsed, u.body, u.env, u.kinds, arrays)


def lower_cuda_(u: Unit) -> None:
    """The adjoint kernel (a kernel) or the device function (a scalar function)."""
    names = device.module_names(u)
    u.lowered = device.lower_kernel(u, names) if u.kernel is not None \
        else device.lower_device(u, names)
    u.sources["cuda"] = emit.unparse(u.lowered.fn)


CUDA_PREPARE: list[Pass] = [Pass("parse", parse_cuda_), *PREPARE[1:]]
CUDA_SPECIALISE: list[Pass] = [
    Pass("kinds", kinds_, show_kinds),
    Pass("device_check", device_check_),
    Pass("analyse", analyse_, show_analysis),
    Pass("reverse", reverse_, show_ir),
    Pass("optimize", optimize_, show_ir),
    Pass("lower_cuda", lower_cuda_, lambda u: u.sources["cuda"]),
]


def prepare_cuda(func: Any, until: str | None = None) -> Unit:
    """The kind-independent passes of the CUDA target."""
    return prepare(func, until, CUDA_PREPARE)


def transform_cuda(prep: Unit, wrt: list[str], arg_kinds: dict[str, Kind],
                   until: str | None = None) -> Unit:
    """The specialising passes of the CUDA target on a copy of ``prep``."""
    return transform(prep, wrt, arg_kinds, until, CUDA_SPECIALISE)


@dataclass
class Built:
    """One compiled device function or adjoint kernel (for one set of tape capacities)."""

    source: str
    pyfunc: Any
    dispatcher: Any
    caps: dict[str, int] = field(default_factory=dict)


#: the first capacity of a checked tape (one whose length only the kernel knows)
CHECKED_START = 16


def capacities(u: Unit, values: dict[str, Any], checked: dict[str, int] | None = None) \
        -> dict[str, int]:
    """Each tape's capacity for a launch with parameter values ``values``; ``checked``: the
    capacities of checked tapes (else ``CHECKED_START``).  ValueError when the tapes
    would not fit in a thread's local memory."""
    checked = checked or {}
    caps = {c: checked.get(c, CHECKED_START) if c in u.lowered.checked
            else max(1, int(device.evaluate(e, values)))
            for c, (e, _) in u.lowered.caps.items()}
    total = sum(caps[c] * size for c, (_, size) in u.lowered.caps.items())
    if total > device.LOCAL_BYTES:
        raise ValueError(f"the adjoint of {u.name} needs {total} bytes of tape per thread "
                         f"for these arguments, more than the {device.LOCAL_BYTES} bytes of "
                         "local memory a CUDA thread has: shorten the loop, or split it "
                         "into several kernels")
    return caps


def build(u: Unit, caps: dict[str, int], qualname: str) -> Built:
    """Compile the lowered function with these capacities (``numba.cuda.jit``)."""
    from numba import cuda

    fn = u.lowered.with_caps(caps)
    src = emit.unparse(fn)
    namespace = imports({"cuda": src}, u.env)
    pyfunc = emit.load(src, fn.name, namespace, qualname)
    disp = cuda.jit(device=u.lowered.kind == "device")(pyfunc)
    return Built(src, pyfunc, disp, caps)


def example_cuda(pass_name: str, source: str, args: tuple | None = None) -> str:
    """``pipeline.example`` for the CUDA passes (the doctests above)."""
    import linecache
    import math
    import textwrap

    import numpy as np
    from numba import cuda

    from .analysis.kinds import of_value

    fname = f"<jitgrad-cuda-example-{pass_name}>"
    text = textwrap.dedent(source).strip("\n") + "\n"
    linecache.cache[fname] = (len(text), None, text.splitlines(True), fname)
    ns: dict[str, Any] = {"np": np, "math": math, "cuda": cuda}
    exec(compile(text, fname, "exec"), ns)
    func = ns[ast.parse(text).body[0].name]
    if pass_name in [p.name for p in CUDA_PREPARE]:
        from .unit import show_body

        return show_body(prepare_cuda(func, until=pass_name)).rstrip("\n")
    prep = prepare_cuda(func)
    values = args or ()
    kinds = {p: of_value(a) for p, a in zip(prep.params, values, strict=False)}
    wrt = [p for p in kinds if kinds[p].cls == "f"]
    return transform_cuda(prep, wrt, kinds).sources["cuda"].rstrip("\n")


__all__ = ["CUDA_PREPARE", "CUDA_SPECIALISE", "Built", "build", "capacities", "example_cuda",
           "prepare_cuda", "transform_cuda"]
