"""What to write instead of a list of values grown with ``append`` in a loop.

``xs = [x0]`` before ``for k in range(n): ... xs.append(x)`` is a tape the user wrote;
jitgrad refuses lists of values, and the message shows the preallocated array that
holds the same values: ``xs = np.zeros(n + 1)`` (``np.zeros((n + 1,) + x0.shape)`` for
arrays), ``xs[0] = x0``, and ``xs[k + 1] = x`` in place of the append.  ``xs[k]`` and
``len(xs)`` read it as before.
"""

from __future__ import annotations

import ast

from .kinds import Kind


def list_refusal(s: ast.Assign, stmts: list[ast.stmt], loops_of: dict[int, list[ast.stmt]],
                 kinds: dict[str, Kind], parsed) -> tuple[str, str]:
    """The message and hint refusing the list made by ``s`` (``name = [...]``)."""
    name = s.targets[0].id
    user = parsed.user_name(name)
    appends = [x for x in stmts if isinstance(x, ast.Expr) and isinstance(x.value, ast.Call)
               and isinstance(x.value.func, ast.Attribute) and x.value.func.attr == "append"
               and isinstance(x.value.func.value, ast.Name) and x.value.func.value.id == name
               and len(x.value.args) == 1]
    if not appends:
        return ("lists and tuples of values are not supported in differentiated code",
                "keep the values in separate variables or in an array")
    msg = (f"lists of values are not supported in differentiated code: '{user}' grows "
           "with append; jitgrad differentiates arrays written by index")
    loops = loops_of.get(id(appends[0]), [])
    head = _range_head(loops[-1], parsed) if len(appends) == 1 and loops else None
    m = len(s.value.elts)
    if head is None:
        return msg, (f"preallocate an array of the final length ('{user} = np.zeros(N)') and "
                     f"write '{user}[i] = value' in place of '{user}.append(value)'")
    target, count, start = head
    elem = _appended_text(appends[0], parsed)
    k = kinds.get(appends[0].value.args[0].id) \
        if isinstance(appends[0].value.args[0], ast.Name) else None
    size = f"{count} + {m}" if m else count
    shape = f"({size},) + {elem}.shape" if k is not None and k.is_array and k.ndim else size
    first = "".join(f"; {user}[{i}] = {parsed.user_source(e)}"
                    for i, e in enumerate(s.value.elts))
    last = f"; inside the loop the last entry so far is '{user}[{_index(target, start, m - 1)}]'" \
        if m else ""
    return msg, (f"preallocate it: '{user} = np.zeros({shape}){first}' before the loop, "
                 f"and '{user}[{_index(target, start, m)}] = {elem}' in place of "
                 f"'{user}.append({elem})'{last}; after the loop '{user}[k]' and "
                 f"'len({user})' read it as before, and 'np.array({user})' is '{user}'")


def _index(target: str, start: str, m: int) -> str:
    """``target - start + m`` written short."""
    text = target + (f" - {start}" if start != "0" else "")
    return text + (f" + {m}" if m > 0 else f" - {-m}" if m < 0 else "")


def _appended_text(append: ast.Expr, parsed) -> str:
    """The appended expression as the user wrote it (their line, else the normalized one)."""
    text = parsed.source_line(getattr(append, "lineno", 0) or 0).strip()
    try:
        e = ast.parse(text).body[0]
    except (SyntaxError, IndexError):
        e = None
    if isinstance(e, ast.Expr) and isinstance(e.value, ast.Call) \
            and isinstance(e.value.func, ast.Attribute) and e.value.func.attr == "append" \
            and len(e.value.args) == 1:
        return ast.unparse(e.value.args[0])
    return parsed.user_source(append.value.args[0])


def _range_head(loop: ast.stmt, parsed) -> tuple[str, str, str] | None:
    """(index, trip count, start) of the user's ``for i in range(...)`` line, else None."""
    text = parsed.source_line(getattr(loop, "lineno", 0) or 0).strip()
    try:
        head = ast.parse(text + "\n    pass").body[0]
    except SyntaxError:
        return None
    if not (isinstance(head, ast.For) and isinstance(head.target, ast.Name)
            and isinstance(head.iter, ast.Call) and isinstance(head.iter.func, ast.Name)
            and head.iter.func.id == "range" and 1 <= len(head.iter.args) <= 2
            and not head.iter.keywords):
        return None
    args = [ast.unparse(a) for a in head.iter.args]
    if len(args) == 1:
        return head.target.id, args[0], "0"
    return head.target.id, f"{args[1]} - {args[0]}", args[0]
