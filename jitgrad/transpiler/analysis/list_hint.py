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
    elem = appends[0].value.args[0]
    k = kinds.get(elem.id) if isinstance(elem, ast.Name) else None
    size = f"{count} + {m}" if m else count
    shape = size if k is None or not k.is_array else \
        f"({size},) + {parsed.user_source(elem)}.shape"
    first = "".join(f"; {user}[{i}] = {parsed.user_source(e)}"
                    for i, e in enumerate(s.value.elts))
    offset = f"{target}{f' - {start}' if start != '0' else ''}{f' + {m}' if m else ''}"
    return msg, (f"preallocate it: '{user} = np.zeros({shape}){first}' before the loop, "
                 f"and '{user}[{offset}] = {parsed.user_source(elem)}' in place of "
                 f"'{user}.append({parsed.user_source(elem)})'; '{user}[k]' and "
                 f"'len({user})' read it as before, and 'np.array({user})' is '{user}'")


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
