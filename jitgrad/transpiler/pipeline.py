"""The transpiler's passes, in order, in one place.

parse -> fence -> single_exit -> inline -> loops -> normalize -> kinds -> analyse
-> reverse (tapes, reverse_flow) -> optimize -> emit.  ``transform`` runs them and
returns the generated sources and functions; ``stage`` names let ``jitgrad show
--stage`` print what a pass produced.
"""

from __future__ import annotations

import ast
import copy
import functools
import gc
from dataclasses import dataclass, field
from typing import Any

from . import emit
from .analyse import analyse
from .desugar import loops, rotations, single_exit
from .fence import fence
from .inline import fold_param_binds, inline
from .kinds import Kind, infer
from .naming import Namer, names_in
from .nodes import clone
from .normalize import Normalizer, inplace_updates
from .optimize import dead_code, merge_accumulations
from .parse import Parsed, parse_function
from .reverse import reverse
from .versions import version_names

STAGES = ("normalized", "forward", "adjoint", "all")


def _without_gc(fn):
    """Run ``fn`` with the cyclic garbage collector paused: the passes allocate millions of
    short-lived nodes, and each collection re-walks every live one (superlinear time)."""

    @functools.wraps(fn)
    def run(*args, **kwargs):
        if not gc.isenabled():
            return fn(*args, **kwargs)
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            gc.enable()

    return run


@dataclass
class Prepared:
    """The primal after the kind-independent passes (cached per function)."""

    parsed: Parsed
    body: list[ast.stmt]
    returns: list[ast.expr]
    env: dict[str, Any]
    namer: Namer
    args: list[str]


@dataclass
class Generated:
    """What ``transform`` produces for one (wrt, argument kinds) specialisation."""

    grad_src: str
    normalized_src: str
    forward_src: str
    adjoint_src: str
    grad_fn: Any
    namespace: dict[str, Any]
    return_kinds: list[Kind] = field(default_factory=list)
    jitted: Any = None
    grad_only_src: str = ""
    grad_only_fn: Any = None
    grad_only_jitted: Any = None
    callables: set[str] = field(default_factory=set)


@_without_gc
def prepare(func: Any) -> Prepared:
    """parse, fence, single exit, inline helpers, desugar loops, normalize."""
    parsed = parse_function(func)
    fence(parsed)
    tree = parsed.tree
    namer = Namer(names_in(tree) | parsed.free | {"_dret"})
    parsed.origin = namer.origin  # messages name the user's variables, not generated ones
    env = parsed.env
    body = clone(tree.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    body, rets = single_exit(parsed, body, namer)
    ret_tuple = ast.Tuple(elts=rets, ctx=ast.Load())
    body = inline(parsed, body + [ast.Return(value=ret_tuple)], namer)
    rets = list(body.pop().value.elts)  # helper calls in the returned expressions inlined too
    body = loops(parsed, body, env, namer)
    args = [a.arg for a in tree.args.args]
    norm = Normalizer(parsed, env, namer)
    body = rotations(norm.block(body), rets)
    atoms = []
    for r in rets:
        if isinstance(r, ast.Constant):
            atoms.append(r)
        else:
            atoms.append(norm.atom(r, body) if not isinstance(r, ast.Name) else r)
    body, atoms = version_names(body, atoms, args, namer)
    return Prepared(parsed, body, atoms, env, namer, args)


@_without_gc
def transform(prep: Prepared, wrt: list[str], arg_kinds: dict[str, Kind]) -> Generated:
    """kinds, analyse, reverse and emit for one specialisation."""
    namer = copy.deepcopy(prep.namer)
    env = dict(prep.env)
    body = clone(prep.body)
    returns = clone(prep.returns)
    kinds = infer(body, env, arg_kinds)
    body = fold_param_binds(body, kinds)
    body = inplace_updates(body, kinds, env, namer)
    an = analyse(body, env, kinds, prep.args, wrt, returns, prep.parsed)
    sw = reverse(prep.parsed, body, an, env, namer, prep.args, wrt, returns)
    name = prep.parsed.tree.name
    gname = namer.fresh(f"{name}_grad_")
    # the adjoint sweep may restore overwritten names: keep the outputs aside first
    saved = []
    for r in returns:
        if isinstance(r, ast.Name) and r.id in sw.restored:
            keep = namer.fresh("_value")
            sw.forward.append(ast.Assign(targets=[ast.Name(id=keep, ctx=ast.Store())],
                                         value=ast.Name(id=r.id, ctx=ast.Load())))
            saved.append(ast.Name(id=keep, ctx=ast.Load()))
        else:
            saved.append(r)
    ret = saved[0] if len(saved) == 1 else ast.Tuple(elts=saved, ctx=ast.Load())
    grads = [ast.Name(id=g, ctx=ast.Load()) for g in sw.grads]
    gtuple = grads[0] if len(grads) == 1 else ast.Tuple(elts=grads, ctx=ast.Load())
    out = ast.Return(value=ast.Tuple(elts=[ret, gtuple], ctx=ast.Load()))
    sw.adjoint = merge_accumulations(sw.adjoint, sw.shared)
    body = sw.prologue + sw.forward + sw.init + sw.adjoint
    full = emit.function_def(gname, [*prep.args, "_dret"],
                             dead_code(clone(body) + [out], sw.shared))
    grad_src = emit.unparse(full)
    # gradient only: the forward work that only served the returned value goes
    only = ast.Return(value=ast.Tuple(elts=[ast.Constant(value=None), gtuple], ctx=ast.Load()))
    gonly_name = namer.fresh(f"{name}_gradonly_")
    gonly = emit.function_def(gonly_name, [*prep.args, "_dret"],
                              dead_code(clone(body) + [only], sw.shared))
    gonly_src = emit.unparse(gonly)
    fwd_src = emit.unparse(emit.function_def(f"{name}_forward", prep.args,
                                             sw.prologue + sw.forward))
    adj_src = emit.unparse(emit.function_def(f"{name}_adjoint", ["_dret"], sw.init + sw.adjoint))
    norm_ret = returns[0] if len(returns) == 1 else ast.Tuple(elts=returns, ctx=ast.Load())
    norm_src = emit.unparse(emit.function_def(name, prep.args, clone(prep.body) + [
        ast.Return(value=clone(norm_ret))]))
    fn = emit.load(grad_src, gname, env, prep.parsed.func.__qualname__)
    gonly_fn = emit.load(gonly_src, gonly_name, env, prep.parsed.func.__qualname__)
    rk = [kinds.get(r.id) if isinstance(r, ast.Name) else None for r in returns]
    return Generated(grad_src, norm_src, fwd_src, adj_src, fn, env, rk,
                     grad_only_src=gonly_src, grad_only_fn=gonly_fn, callables=sw.callables)


__all__ = ["STAGES", "Generated", "Prepared", "prepare", "transform", "fence"]
