"""Kernel: a CUDA kernel's source as the function one thread runs.

Before (the user's kernel)::

    def step(x, k, out):
        i = cuda.grid(1)
        if i < out.shape[0]:
            out[i] = x[i] * x[i + 1] + k * math.sin(x[i])

After (a CPU-shaped function the other passes differentiate; the thread index is a
parameter, the arrays the kernel writes are its outputs)::

    def step(x, k, out, i):
        if i < out.shape[0]:
            out[i] = x[i] * x[i + 1] + k * math.sin(x[i])
        return out

The shape accepted is ``i = cuda.grid(1)`` (or ``i, j = cuda.grid(2)``, three names for
3; or the index written out, ``cuda.threadIdx.x + cuda.blockIdx.x * cuda.blockDim.x``,
``thread_index.py``), then a guard: one ``if`` on the thread indices holding the rest,
or an early ``if ...: return`` followed by it; or one grid-stride loop, ``for i in
range(cuda.grid(1), n, cuda.gridsize(1))`` (its body is one element's part).
Everything else that makes threads depend on each other is refused here with the line
(barriers, shared arrays, warp functions, atomics, other thread queries, an output
written or read at an index other than the thread's).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from ..nodes import this_loop
from .parse import Parsed
from .thread_index import cuda_path, grid_prefix, is_cuda_module, stride_loop

#: the dotted ``cuda.`` names refused in a kernel, and why
_REFUSED = {
    "syncthreads": "barriers (cuda.syncthreads) make threads depend on each other",
    "shared": "shared arrays are written by several threads",
    "local": "local arrays are not supported in differentiated kernels",
    "const": "constant arrays are not supported in differentiated kernels",
    "atomic": "atomics make the result depend on other threads",
    "threadIdx": "thread queries other than cuda.grid (or the index 'i = "
                 "cuda.threadIdx.x + cuda.blockIdx.x * cuda.blockDim.x' first) are not "
                 "supported",
    "blockIdx": "thread queries other than cuda.grid (or the index written out first) are "
                "not supported",
    "blockDim": "thread queries other than cuda.grid (or the index written out first) are "
                "not supported",
    "gridDim": "thread queries other than cuda.grid are not supported",
    "gridsize": "grid-stride loops are not supported",
    "laneid": "warp functions are not supported",
    "warpsize": "warp functions are not supported",
}
_WARP = ("shfl", "all_sync", "any_sync", "eq_sync", "ballot", "match", "activemask",
         "lanemask", "syncwarp", "threadfence", "selp")


def cuda_uses(parsed: Parsed) -> list[tuple[ast.AST, str]]:
    """Every ``cuda.`` name the function reads (outermost attribute only), in source order."""
    out: list[tuple[ast.AST, str]] = []
    inner: set[int] = set()
    for n in ast.walk(parsed.tree):
        if id(n) in inner or not isinstance(n, (ast.Attribute, ast.Name)):
            continue
        path = cuda_path(n, parsed.env)
        if path is not None:
            out.append((n, path))
            e = n
            while isinstance(e, ast.Attribute):
                e = e.value
                inner.add(id(e))
    return sorted(out, key=lambda t: (getattr(t[0], "lineno", 0), getattr(t[0], "col_offset", 0)))


def refuse_on_cpu(parsed: Parsed) -> None:
    """A function using ``numba.cuda`` is a kernel: the CPU target refuses it at once."""
    uses = cuda_uses(parsed)
    if uses:
        node, path = uses[0]
        raise parsed.error(
            f"{parsed.tree.name} uses cuda.{path}: it is CUDA code, and the CPU target "
            "differentiates CPU code only", node,
            "differentiate it for the GPU with @jg.differentiate(wrt=..., target=\"cuda\") "
            "(see docs/cuda.md)")


@dataclass(frozen=True)
class KernelShape:
    """What the kernel pass learnt of a kernel's shape."""

    #: the thread-index names bound by ``cuda.grid`` (``("i",)``, ``("i", "j")``)
    index: tuple[str, ...]
    #: the parameters the kernel writes (its outputs), in parameter order
    outputs: tuple[str, ...]
    #: the ``i = cuda.grid(1)`` statement as the user wrote it (or as it stands for the
    #: index written out); for a grid-stride loop the loop's header, with no body
    grid: ast.stmt


def is_kernel(parsed: Parsed) -> bool:
    """Does the function ask for its thread's index (``cuda.grid``, ``cuda.threadIdx.x``...;
    else it is a device function)?"""
    return any(path.split(".")[0] in _THREAD for _, path in cuda_uses(parsed))


_THREAD = ("grid", "gridsize", "threadIdx", "blockIdx", "blockDim", "gridDim")


def own_index(sl: ast.expr, index: tuple[str, ...]) -> bool:
    """Is the subscript ``sl`` the thread's own element (every grid index once, in any
    order), so no other thread reaches it?"""
    elts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
    ids = [e.id for e in elts if isinstance(e, ast.Name)]
    return len(ids) == len(elts) == len(index) and sorted(ids) == sorted(index)


def kernel_body(parsed: Parsed, body: list[ast.stmt], params: list[str]) \
        -> tuple[KernelShape, list[ast.stmt]]:
    """The kernel's shape and one thread's part of its body (the guard and what it holds),
    ending in ``return`` of the outputs; TransformError for anything else."""
    hint = ("write the kernel as 'i = cuda.grid(1)' followed by one guard, 'if i < n:' "
            "holding the body, or 'if i >= n: return' followed by it, or as one grid-stride "
            "loop 'for i in range(cuda.grid(1), n, cuda.gridsize(1)):' (docs/cuda.md)")
    if not body:
        raise parsed.error("an empty kernel has nothing to differentiate", parsed.tree, hint)

    strided = stride_loop(body, parsed.env)
    if strided is not None:  # for i in range(cuda.grid(1), n, cuda.gridsize(1)): one i
        header, guard = strided
        for n in this_loop(guard.body):
            if isinstance(n, (ast.Break, ast.Continue)):
                raise parsed.error("break/continue in a grid-stride loop: each element is "
                                   "differentiated on its own", n,
                                   "put the element's work under an 'if' instead")
        outputs = _check_body(parsed, guard, [header.target.id], params)
        return KernelShape((header.target.id,), tuple(outputs), header), \
            [guard, _returns(outputs, guard)]
    written_out = grid_prefix(body, parsed.env)
    if written_out is not None:  # threadIdx.x + blockIdx.x * blockDim.x: cuda.grid(1)
        body = [written_out[0], *body[written_out[1]:]]
    first = body[0]
    index = _grid_names(first, parsed.env)
    if index is None:
        raise parsed.error("a differentiated kernel starts with 'i = cuda.grid(1)' (or "
                           "'i, j = cuda.grid(2)')", first, hint)
    rest = body[1:]
    if len(rest) >= 1 and isinstance(rest[0], ast.If) and not rest[0].orelse \
            and len(rest[0].body) == 1 and isinstance(rest[0].body[0], ast.Return) \
            and rest[0].body[0].value is None:
        guard = ast.copy_location(ast.If(test=ast.copy_location(
            ast.UnaryOp(op=ast.Not(), operand=rest[0].test), rest[0].test), body=rest[1:],
            orelse=[]), rest[0])
        if not guard.body:
            raise parsed.error("the kernel does nothing after its guard", rest[0], hint)
    elif len(rest) == 1 and isinstance(rest[0], ast.If) and not rest[0].orelse:
        guard = rest[0]
    else:
        at = rest[0] if rest else first
        raise parsed.error("a differentiated kernel is 'i = cuda.grid(...)' followed by one "
                           "guard on the thread indices (an 'if' without 'else', or an early "
                           "'return')", at, hint)
    if not {n.id for n in ast.walk(guard.test) if isinstance(n, ast.Name)} & set(index):
        raise parsed.error("the kernel's guard does not test the thread indices "
                           f"({', '.join(index)})", guard, hint)
    outputs = _check_body(parsed, guard, index, params)
    return KernelShape(tuple(index), tuple(outputs), first), [guard, _returns(outputs, guard)]


def _returns(outputs: list[str], guard: ast.stmt) -> ast.Return:
    ret = ast.Return(value=ast.Name(id=outputs[0], ctx=ast.Load()) if len(outputs) == 1 else
                     ast.Tuple(elts=[ast.Name(id=o, ctx=ast.Load()) for o in outputs],
                               ctx=ast.Load()))
    return ast.copy_location(ret, guard)


def _grid_names(s: ast.stmt, env: dict[str, Any]) -> list[str] | None:
    """``["i"]`` for ``i = cuda.grid(1)``, ``["i", "j"]`` for ``i, j = cuda.grid(2)``."""
    if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.value, ast.Call)
            and cuda_path(s.value.func, env) == "grid" and len(s.value.args) == 1
            and not s.value.keywords and isinstance(s.value.args[0], ast.Constant)
            and s.value.args[0].value in (1, 2, 3)):
        return None
    t = s.targets[0]
    names = [t] if isinstance(t, ast.Name) else list(t.elts) if isinstance(t, ast.Tuple) else []
    if not all(isinstance(n, ast.Name) for n in names) or len(names) != s.value.args[0].value:
        return None
    return [n.id for n in names]


def _check_body(parsed: Parsed, guard: ast.If, index: list[str], params: list[str]) \
        -> list[str]:
    """Refuse what one thread's part may not do; the parameters it writes, in order."""
    written: dict[str, ast.AST] = {}
    for n in ast.walk(guard):
        if isinstance(n, ast.Return):
            raise parsed.error("'return' inside a kernel's body is not supported (only an "
                               "early 'if ...: return' guard right after cuda.grid)", n,
                               "put the rest of the body under an 'if'")
        if isinstance(n, (ast.Attribute, ast.Name)) and isinstance(n.ctx, ast.Load):
            path = cuda_path(n, parsed.env)
            if path is not None:
                head = path.split(".")[0]
                why = _REFUSED.get(head) or ("warp functions are not supported"
                                             if head.startswith(_WARP) else None)
                why = why or ("cuda.grid may be called once, first" if head == "grid"
                              else f"cuda.{path} is not supported in a differentiated kernel")
                raise parsed.error(f"cuda.{path} in a differentiated kernel: {why}", n,
                                   "each thread must compute its outputs from the inputs "
                                   "alone; see docs/cuda.md for what kernels may contain")
    for n in ast.walk(guard):
        targets: list[ast.AST] = []
        if isinstance(n, ast.Assign):
            targets = list(n.targets)
        elif isinstance(n, (ast.AugAssign, ast.For)):
            targets = [n.target]
        for t in targets:
            for m in (t.elts if isinstance(t, ast.Tuple) else [t]):
                if isinstance(m, ast.Name) and m.id in index:
                    raise parsed.error(f"the thread index '{m.id}' is rebound", n,
                                       "keep the names cuda.grid binds unchanged; use "
                                       "another name")
            for m in (t.elts if isinstance(t, ast.Tuple) else [t]):
                if isinstance(m, ast.Subscript):
                    base = m.value
                    if not (isinstance(base, ast.Name) and base.id in params):
                        raise parsed.error("a kernel writes only elements of its array "
                                           "parameters", n, "write into an output array "
                                           "parameter at the thread's own index")
                    written.setdefault(base.id, n)
    for n in ast.walk(guard):
        if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) \
                and n.value.id in written and not own_index(n.slice, tuple(index)):
            what = "written" if isinstance(n.ctx, ast.Store) else "read"
            raise parsed.error(
                f"the output '{n.value.id}' is {what} at an index other than the thread's "
                f"own ({', '.join(index)}): threads would race on it", n,
                f"write and read '{n.value.id}' only at [{', '.join(index)}]; pass the "
                "values other threads need as a separate input array")
    if not written:
        raise parsed.error("the kernel writes no array parameter, so there is nothing to "
                           "differentiate", guard, "write the result into an output array "
                           "parameter, out[i] = ...")
    return [p for p in params if p in written]


__all__ = ["KernelShape", "cuda_path", "cuda_uses", "is_cuda_module", "is_kernel",
           "kernel_body", "own_index", "refuse_on_cpu"]
