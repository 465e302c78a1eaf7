"""Lists of numbers grown with ``append`` in one loop and read after it, as arrays.

(Lists made at the function's top level; elsewhere the refusal and its hint stand.)

``xs = [x0]`` ... ``for k in range(a, b): ... xs.append(x)`` ... ``xs[j]``, ``len(xs)``,
``np.array(xs)`` after the loop (a Kalman filter's states) is a tape the user wrote.  Its
final length is the loop's trip count plus the initial entries, so it becomes

    _xs_0 = x0                                  (where the list was made)
    _xs_start = a                               (right before the loop)
    xs = np.zeros(max(0, b - _xs_start) + 1)
    xs[0] = _xs_0
    for k in range(a, b): ... xs[k - _xs_start + 1] = x
    ... xs[j] ... len(xs) ... xs.copy()

when the append runs once per trip (at the top of the loop's body, no ``break`` or
``continue`` in the loop), the list is made in the loop's block before it, and nothing
else touches it (no read before or inside the loop, where the array's length and
negative indices would differ from the list's).  The entries must be float numbers:
``refuse_list_entries`` checks that once kinds are known.  Anything else keeps the
refusal with its hint (``analysis/list_hint.py``).
"""

from __future__ import annotations

import ast
import builtins

import numpy as np

from ..nodes import clone, walk, walk_stmts
from ..notes import ELEMENTWISE
from .desugar import assign

#: ELEMENTWISE's value on a list's entry write (checked by ``refuse_list_entries``)
LIST_ENTRY = "<list entry>"


def value_lists(body: list[ast.stmt], returns: list[ast.expr], env: dict,
                namer) -> list[ast.stmt]:
    """Rewrite the lists made at the top level of ``body`` that fit (see the module doc);
    ``returns``: the returned expressions, read after the body."""
    tail = [ast.Expr(value=r) for r in returns]
    i = 0
    while i < len(body):
        s = body[i]
        if isinstance(s, ast.Assign) and len(s.targets) == 1 \
                and isinstance(s.targets[0], ast.Name) and isinstance(s.value, ast.List):
            new = _rewrite(body, i, tail, env, namer)
            if new is not None:
                body = new
        i += 1
    for e, r in zip(tail, returns, strict=True):
        if e.value is not r:
            returns[returns.index(r)] = e.value
    return body


def _rewrite(body: list[ast.stmt], i: int, tail: list[ast.stmt], env: dict,
             namer) -> list[ast.stmt] | None:
    s = body[i]
    name = s.targets[0].id
    loop_at = next((j for j in range(i + 1, len(body)) if _touches(body[j], name)), None)
    if loop_at is None or not isinstance(body[loop_at], ast.For):
        return None
    loop = body[loop_at]
    it = loop.iter
    if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
            and env.get("range", range) is range and 1 <= len(it.args) <= 2
            and not it.keywords and isinstance(loop.target, ast.Name) and not loop.orelse):
        return None
    appends = [k for k, x in enumerate(loop.body) if _is_append(x, name)]
    if len(appends) != 1 or any(isinstance(n, (ast.Break, ast.Continue, ast.Return))
                                for n in walk(ast.Module(body=loop.body, type_ignores=[]))):
        return None
    if any(isinstance(n, ast.Name) and n.id == loop.target.id and isinstance(n.ctx, ast.Store)
           for n in walk(ast.Module(body=loop.body, type_ignores=[]))):
        return None  # the index is rebound in the body: not the trip number
    others = [x for k, x in enumerate(loop.body) if k != appends[0]]
    if any(_touches(x, name) for x in others) \
            or _uses_outside(body[loop_at + 1:] + tail, name, env) \
            or any(_touches(e, name) for e in s.value.elts):
        return None
    m = len(s.value.elts)
    first = namer.fresh(f"_{name}_start")
    start = ast.Name(id=first, ctx=ast.Load()) if len(it.args) == 2 else ast.Constant(0)
    stop = it.args[-1]
    keep = [namer.fresh(f"_{name}_entry") for k in range(m)]
    made = [ast.copy_location(assign(k, e), s) for k, e in zip(keep, s.value.elts, strict=True)]
    plus = f" + {m}" if m else ""
    minus = f" - {ast.unparse(start)}" if len(it.args) == 2 else ""
    count = ast.unparse(stop) if not minus and isinstance(stop, ast.Call) \
        and isinstance(stop.func, ast.Name) and stop.func.id == "len" \
        else f"max(0, {ast.unparse(stop)}{minus})"  # (a len is never negative)
    npn = namer.global_name(env, "np", np)  # (a user's local 'np' or 'max' stays theirs)
    if "max(" in count:
        count = count.replace("max(", f"{namer.global_name(env, 'max', max)}(", 1)
    size = ast.parse(f"{npn}.zeros({count}{plus})", mode="eval").body
    pre = [ast.copy_location(assign(first, clone(it.args[0])), loop)] if len(it.args) == 2 else []
    pre.append(ast.copy_location(assign(name, size), s))
    for k, kept in enumerate(keep):
        pre.append(_entry(name, ast.Constant(k), ast.Name(id=kept, ctx=ast.Load()), s))
    app = loop.body[appends[0]]
    at = ast.parse(f"{loop.target.id}{minus}{plus}", mode="eval").body
    loop.body[appends[0]] = _entry(name, at, app.value.args[0], app)
    _copies(body[loop_at + 1:] + tail, name, env)
    return body[:i] + made + body[i + 1:loop_at] + pre + body[loop_at:]


def _entry(name: str, index: ast.expr, value: ast.expr, where: ast.stmt) -> ast.stmt:
    t = ast.Subscript(value=ast.Name(id=name, ctx=ast.Load()), slice=index, ctx=ast.Store())
    st = ast.copy_location(ast.Assign(targets=[t], value=value), where)
    ast.fix_missing_locations(st)
    ELEMENTWISE.set(st, LIST_ENTRY)
    return st


def _is_append(s: ast.stmt, name: str) -> bool:
    v = getattr(s, "value", None)
    return (isinstance(s, ast.Expr) and isinstance(v, ast.Call)
            and isinstance(v.func, ast.Attribute) and v.func.attr == "append"
            and isinstance(v.func.value, ast.Name) and v.func.value.id == name
            and len(v.args) == 1 and not v.keywords
            and not any(isinstance(n, ast.Name) and n.id == name for n in walk(v.args[0])))


def _touches(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in walk(node))


def _uses_outside(stmts: list[ast.stmt], name: str, env: dict) -> bool:
    """Is ``name`` used after the loop other than as ``name[i]``, ``len(name)``,
    ``np.array(name)``, or rebound there?"""
    ok: set[int] = set()
    for n in walk(ast.Module(body=stmts, type_ignores=[])):
        if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) \
                and n.value.id == name and isinstance(n.ctx, ast.Load):
            ok.add(id(n.value))
        elif _call_of(n, name, env) in (len, np.array, np.asarray):
            ok.add(id(n.args[0]))
    return any(isinstance(n, ast.Name) and n.id == name and id(n) not in ok
               for n in walk(ast.Module(body=stmts, type_ignores=[])))


def _copies(stmts: list[ast.stmt], name: str, env: dict) -> None:
    """``np.array(xs)`` -> ``xs.copy()`` (a new array, as from the list)."""
    for n in walk(ast.Module(body=stmts, type_ignores=[])):
        for f, v in ast.iter_fields(n):
            if _call_of(v, name, env) in (np.array, np.asarray):
                setattr(n, f, _copy_call(v))
            elif isinstance(v, list):
                for k, x in enumerate(v):
                    if _call_of(x, name, env) in (np.array, np.asarray):
                        v[k] = _copy_call(x)


def _call_of(c: ast.AST, name: str, env: dict):
    """The function ``c`` calls with ``name`` as its one argument (``len``, ``np.array``
    under any module name), else None."""
    if not (isinstance(c, ast.Call) and len(c.args) == 1 and not c.keywords
            and isinstance(c.args[0], ast.Name) and c.args[0].id == name):
        return None
    f = c.func
    if isinstance(f, ast.Name):
        return env.get(f.id, getattr(builtins, f.id, None))
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
        return getattr(env.get(f.value.id), f.attr, None)
    return None


def _copy_call(c: ast.Call) -> ast.expr:
    new = ast.Call(func=ast.Attribute(value=c.args[0], attr="copy", ctx=ast.Load()), args=[],
                   keywords=[])
    return ast.fix_missing_locations(ast.copy_location(new, c))


def refuse_list_entries(body: list[ast.stmt], kinds: dict, parsed) -> None:
    """Refuse, at the append, a rewritten list whose entries are not float numbers."""
    for s in walk_stmts(body):
        if ELEMENTWISE.get(s) != LIST_ENTRY:
            continue
        v = s.value
        k = kinds.get(v.id) if isinstance(v, ast.Name) else None
        if isinstance(v, ast.Constant) and isinstance(v.value, float) or (
                k is not None and not k.is_array and k.cls == "f"):
            continue
        lst = parsed.user_name(s.targets[0].value.id)
        raise parsed.error(
            f"the list '{lst}' holds values that are not float numbers; jitgrad turns "
            "lists of float numbers appended in a loop into arrays", s,
            f"preallocate an array ('{lst} = np.zeros((n,) + x0.shape)' for arrays) and write "
            f"'{lst}[i] = value' in place of '{lst}.append(value)'")
