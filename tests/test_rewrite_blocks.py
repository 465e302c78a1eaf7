"""nodes.rewrite_blocks: the one copy-on-write rewriter of statement blocks the backend's
steps share (tape accessors, zero_skip, loop_buffers, elements, snapshots)."""

from __future__ import annotations

import ast

from jitgrad.transpiler.nodes import rewrite_blocks

SRC = "a = 1\nfor i in range(3):\n    b = 2\n    if c:\n        d = 3\n    e = 4\nf = 5\n"


def _assigned(s: ast.stmt, name: str) -> bool:
    return isinstance(s, ast.Assign) and s.targets[0].id == name


def test_nothing_changed_is_the_same_list():
    body = ast.parse(SRC).body
    assert rewrite_blocks(body, lambda s: None) is body
    assert rewrite_blocks(body, lambda s: s) is body


def test_only_the_path_to_a_change_is_copied():
    """``d = 3`` becomes two statements: the loop and the ``if`` holding it are copies,
    everything else (and the input) is shared and unchanged."""
    body = ast.parse(SRC).body
    before = ast.unparse(ast.Module(body=body, type_ignores=[]))
    new = [ast.parse("d = 30").body[0], ast.parse("g = 6").body[0]]
    out = rewrite_blocks(body, lambda s: new if _assigned(s, "d") else None)
    assert ast.unparse(ast.Module(body=body, type_ignores=[])) == before
    assert out is not body and out[0] is body[0] and out[2] is body[2]
    loop, branch = out[1], out[1].body[1]
    assert loop is not body[1] and branch is not body[1].body[1]
    assert loop.body[0] is body[1].body[0] and loop.body[2] is body[1].body[2]
    assert branch.body == new
    assert "d = 30\n        g = 6" in ast.unparse(ast.Module(body=out, type_ignores=[]))


def test_a_statement_given_back_is_not_searched():
    """``fn``'s result stands for the whole statement: its blocks are not rewritten."""
    body = ast.parse(SRC).body
    seen: list[str] = []

    def fn(s: ast.stmt):
        seen.append(type(s).__name__)
        return s if isinstance(s, ast.For) else None

    assert rewrite_blocks(body, fn) is body
    assert seen == ["Assign", "For", "Assign"]
