"""Dump the generated gradient source of every corpus case and fuzz program, for refactors.

    python tests/golden.py dump OUT.txt [--fuzz N] [--seed S]
    python tests/golden.py diff OLD.txt NEW.txt

A refactor of the transpiler should leave the generated code unchanged (or shorter):
dump before, dump after, diff.  Each entry is the ``jit=False`` source of one case
(or its refusal message), keyed by a stable name; a second entry, the key with
``:grad_only``, holds its gradient-only variant (what ``f.grad`` runs).  Not a test; a tool.
"""

from __future__ import annotations

import difflib
import os
import sys
import tempfile
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))  # this checkout's jitgrad


def _cases():
    import corpus_loops
    import corpus_soundness
    import test_numpy_transpiled
    import test_rule_coverage
    import test_straightline

    for mod in (corpus_loops, corpus_soundness, test_numpy_transpiled, test_rule_coverage):
        for k, (f, make, wrt) in enumerate(mod.CASES):
            yield f"{mod.__name__}:{k}:{f.__name__}", f, make, wrt
    for k, (f, args) in enumerate(test_straightline.SCALAR_CASES):
        yield f"test_straightline:{k}:{f.__name__}", f, (lambda a=args: a), (0, 1)


def _source(f, args, wrt) -> tuple[str, str | None]:
    """The value-and-gradient variant's source (or the refusal), and the gradient-only
    variant's (None where the first is a refusal)."""
    import jitgrad as jg

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g = jg.grad(f, wrt=wrt, jit=False)
            src = g.source(*args)
            return src, g.diff._last.unit.sources["grad_only"]
    except Exception as exc:  # a refusal is part of the behaviour too
        return f"!{type(exc).__name__}: {exc}", None


def _put(entries: dict, key: str, sources: tuple[str, str | None], tmp: str = "") -> None:
    """Both variants' entries (the gradient-only one under ``key:grad_only``)."""
    src, only = sources
    entries[key] = src.replace(tmp, "<tmp>") if tmp else src
    if only is not None:
        entries[f"{key}:grad_only"] = only.replace(tmp, "<tmp>") if tmp else only


def dump(out: str, fuzz: int = 200, seed: int = 7) -> None:
    entries = {}
    for key, f, make, wrt in _cases():
        _put(entries, key, _source(f, make(), wrt))
    from fuzz.check import load, sample, unload
    from fuzz.gen import generate

    with tempfile.TemporaryDirectory() as tmp:
        for i in range(fuzz):
            prog = generate(seed, i)
            try:
                mod, path = load(prog, tmp)
            except Exception:
                continue
            _put(entries, f"fuzz:{seed}:{i}", _source(mod.f, sample(prog, 0), prog.wrt), tmp)
            unload(mod, path)
    with open(out, "w") as fh:
        for k, v in entries.items():
            fh.write(f"=== {k}\n{v.rstrip()}\n")
    print(f"{len(entries)} entries written to {out}")


def _read(path: str) -> dict:
    entries, key, lines = {}, None, []
    with open(path) as fh:
        for line in fh:
            if line.startswith("=== "):
                if key is not None:
                    entries[key] = "".join(lines)
                key, lines = line[4:].strip(), []
            else:
                lines.append(line)
    if key is not None:
        entries[key] = "".join(lines)
    return entries


def diff(old: str, new: str) -> int:
    a, b = _read(old), _read(new)
    changed = longer = 0
    for k in a:
        if k not in b or a[k] == b[k]:
            continue
        changed += 1
        if b[k].count("\n") > a[k].count("\n") or (a[k].startswith("!") != b[k].startswith("!")):
            longer += 1
            print(f"--- {k}")
            sys.stdout.writelines(difflib.unified_diff(a[k].splitlines(True),
                                                       b[k].splitlines(True), n=1))
    print(f"golden: {len(a)} entries, {changed} changed, {longer} longer or refusal changed")
    return 1 if longer else 0


if __name__ == "__main__":
    if sys.argv[1] == "dump":
        args = sys.argv[2:]
        n = int(args[args.index("--fuzz") + 1]) if "--fuzz" in args else 200
        s = int(args[args.index("--seed") + 1]) if "--seed" in args else 7
        dump(args[0], n, s)
    else:
        sys.exit(diff(sys.argv[2], sys.argv[3]))
