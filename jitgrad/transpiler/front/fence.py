"""Fence: reject syntax jitgrad cannot differentiate, before any rewriting.

Before:  ``try: y = f(x)`` ...
After:   TransformError("try/except is not supported", file:line, source line, hint)

Also refused here: parameters other than plain positional ones (``*args``,
``**kwargs``, keyword-only; defaults are fine: the API fills them in, ``inline.py`` at a
helper's call), and (``fence_entry``, for the function passed
to ``differentiate`` only) a function that returns no value.
"""

from __future__ import annotations

import ast

from ..nodes import nodes_of
from .parse import Parsed

_HINTS: dict[type, tuple[str, str]] = {
    ast.Try: ("try/except is not supported", "move error handling outside the function"),
    ast.With: ("'with' blocks are not supported", "move the context manager outside"),
    ast.AsyncWith: ("'async with' is not supported", "use a plain function"),
    ast.AsyncFor: ("'async for' is not supported", "use a plain for loop"),
    ast.Global: ("'global' declarations are not supported",
                 "pass the value as an argument and return the new value"),
    ast.Nonlocal: ("'nonlocal' declarations are not supported",
                   "pass the value as an argument and return the new value"),
    ast.ClassDef: ("class definitions are not supported inside differentiated code",
                   "define classes outside the function"),
    ast.FunctionDef: ("nested function definitions are not supported",
                      "define the helper at module level; jitgrad inlines module-level helpers"),
    ast.AsyncFunctionDef: ("async functions are not supported", "use a plain function"),
    ast.Lambda: ("lambda expressions are not supported", "define a module-level helper"),
    ast.Yield: ("generators ('yield') are not supported", "return an array instead"),
    ast.YieldFrom: ("generators ('yield from') are not supported", "return an array instead"),
    ast.Await: ("'await' is not supported", "use a plain function"),
    ast.Delete: ("'del' is not supported", "let the variable go out of scope"),
    ast.Import: ("imports inside the function are not supported", "import at module level"),
    ast.ImportFrom: ("imports inside the function are not supported",
                     "import at module level"),
    ast.ListComp: ("list comprehensions are not supported", "write an explicit loop"),
    ast.SetComp: ("set comprehensions are not supported", "write an explicit loop"),
    ast.DictComp: ("dict comprehensions are not supported", "write an explicit loop"),
    ast.GeneratorExp: ("generator expressions are not supported",
                       "write an explicit loop (e.g. accumulate a sum in a for loop)"),
    ast.Dict: ("dicts are not supported", "use arrays or separate variables"),
    ast.Set: ("sets are not supported", "use arrays"),
    ast.Starred: ("star-unpacking is not supported", "unpack the values explicitly"),
    ast.NamedExpr: ("assignment expressions (':=') are not supported",
                    "assign in a separate statement"),
    ast.Match: ("'match' statements are not supported", "use if/elif/else"),
    ast.JoinedStr: ("f-strings are not supported", "remove the formatting from the function"),
}


def _names_tuple(t: ast.expr) -> bool:
    """``(a, b)`` or ``(a, (b, c))`` as a target: split with a tuple it unpacks
    (``tuples.py``; where that tuple is not split, refused there)."""
    return isinstance(t, ast.Tuple) and all(isinstance(e, ast.Name) or _names_tuple(e)
                                            for e in t.elts)


def fence(parsed: Parsed) -> None:
    """Raise TransformError at the first unsupported construct of the function."""
    fn = parsed.tree
    a = fn.args
    if a.vararg or a.kwarg:
        inner = getattr(parsed.func, "__wrapped__", None)
        if inner is not None:  # a decorator's wrapper: jitgrad differentiates what it was given
            raise parsed.error(
                f"*args/**kwargs parameters are not supported: {fn.name} is a decorator's "
                f"wrapper (functools.wraps around {getattr(inner, '__qualname__', inner)!r}), "
                "and jitgrad differentiates the function it is given, not the wrapped one", fn,
                "pass the undecorated function, or give the wrapper explicit parameters")
        raise parsed.error("*args/**kwargs parameters are not supported", fn,
                           "list the parameters explicitly")
    if a.kwonlyargs or a.posonlyargs:
        raise parsed.error("keyword-only and positional-only parameters are not supported", fn,
                           "use plain positional parameters")
    shapes = _ndindex_stars(fn)
    for node in nodes_of(fn):
        if node is fn or id(node) in shapes:
            continue
        kind = type(node)
        if kind in _HINTS:
            msg, hint = _HINTS[kind]
            raise parsed.error(msg, node, hint)
        if isinstance(node, (ast.For, ast.While)) and node.orelse:
            raise parsed.error("'else' on a loop is not supported", node,
                               "use a flag variable set before 'break'")
        if isinstance(node, ast.For) and not isinstance(node.target, (ast.Name, ast.Tuple)):
            raise parsed.error("loop targets must be plain names", node)
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, (ast.Tuple, ast.List)) and any(
                        not isinstance(e, (ast.Name, ast.Subscript, ast.Starred))
                        and not _names_tuple(e) for e in t.elts):
                    raise parsed.error("nested tuple targets are not supported", node,
                                       "unpack in two steps")
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            raise parsed.error("assigning to attributes is not supported", node)
        if isinstance(node, ast.Call) and any(k.arg is None for k in node.keywords):
            raise parsed.error("'**kwargs' in calls is not supported", node)


def _ndindex_stars(fn: ast.FunctionDef) -> set[int]:
    """``*shape`` in ``for ... in np.ndindex(*shape)`` (``front/iterables.py`` reads it)."""
    return {id(a) for n in nodes_of(fn) if isinstance(n, ast.For) and isinstance(n.iter, ast.Call)
            and getattr(n.iter.func, "attr", getattr(n.iter.func, "id", None)) == "ndindex"
            for a in n.iter.args if isinstance(a, ast.Starred)}


def fence_entry(parsed: Parsed) -> None:
    """Refusals for the function passed to ``differentiate`` itself (not its helpers,
    which may fill an array and return nothing): it must return a value."""
    fn = parsed.tree
    if not any(isinstance(n, ast.Return) and n.value is not None
               and not (isinstance(n.value, ast.Constant) and n.value.value is None)
               for n in nodes_of(fn)):
        raise parsed.error(f"{fn.name} returns no value (it has no 'return' statement with "
                           "a value), so there is nothing to differentiate", fn,
                           "return the value to differentiate; a function that only writes "
                           "into an array argument can return that array")
