"""The docs as tests: Sybil parsers for README.md and docs/*.md (used by ../conftest.py).

* every ```python block runs, page by page in order, in one namespace per page;
* a ```python block after ``<!-- generated: NAME stage=STAGE [mode=MODE] args=EXPR -->`` is
  not run but must equal ``NAME.source(*(EXPR), stage=STAGE, mode=MODE)``, with ``NAME``
  taken from the page's namespace (a function an earlier block defined);
* a ```text block whose first line is ``$ jitgrad ...`` runs that command (in-process, from
  the page's scratch folder) and must print the rest of the block; a line ``...`` stands for any
  number of lines;
* a ```python block after ``<!-- file: NAME.py -->`` is also saved as ``NAME.py`` in the
  page's scratch folder, where the page's commands run (``examples`` there is the
  repository's) and which is on ``sys.path`` while the page runs (``import NAME``);
* a ```python block after ``<!-- excerpt: PATH -->`` is not run but must appear in the
  repository's file PATH line for line (a line ``...`` stands for any lines): a quote of
  an example script, which tests/test_examples.py runs whole;
* ``<!-- skip: next -->`` before a block marks it as an excerpt that does not run.

When jitgrad's output changes, refresh the quoted code and output with
``python tests/doctools.py --update`` (an elided ``...`` output block that no longer
matches is replaced by the whole output: trim it again by hand).
"""

from __future__ import annotations

import contextlib
import doctest
import io
import math
import os
import re
import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import numpy as np
from sybil import Document, Example, Region, Sybil
from sybil.parsers.markdown import PythonCodeBlockParser, SkipParser

REPO = Path(__file__).resolve().parents[1]
PAGES = ["README.md", "docs/*.md"]
#: pages that launch CUDA kernels: run by tests/test_cuda.py in a subprocess under Numba's
#: CUDA simulator (``python tests/doctools.py --run docs/cuda.md``), not in pytest's process
SIMULATED = ["docs/cuda.md"]

_GENERATED = re.compile(
    r"<!-- generated: (?P<head>[^>]*?) -->\n```python\n(?P<code>.*?)```", re.S)
_FILE = re.compile(r"<!-- file: (?P<name>[\w.]+) -->\n```python\n")
_EXCERPT = re.compile(r"<!-- excerpt: (?P<path>[\w./-]+) -->\n```python\n(?P<code>.*?)```",
                      re.S)
_CONSOLE = re.compile(r"```text\n(?P<code>\$ jitgrad (?P<cmd>[^\n]*)\n.*?)```", re.S)

#: set by ``--update``: (path, start, end, text now) of every quoted block that differs
UPDATES: list[tuple[str, int, int, str]] | None = None


def _differs(example: Example, quoted: str, now: str, what: str) -> str | None:
    """None when ``quoted`` is ``now``; else the failure message (or a recorded update)."""
    if UPDATES is not None:
        UPDATES.append((example.path, example.region.start, example.region.end, now))
        return None
    return (f"{what} quoted in {Path(example.path).name} (line {example.line}) is not what "
            f"jitgrad prints today; run: python tests/doctools.py --update\n"
            f"--- today:\n{now}")


# --- generated code ---------------------------------------------------------------------


def _block_offset(example: Example, func) -> int:
    """Lines before the code block that defines ``func``: generated code's ``# line N``
    comments count from the block's first line, as if the block were the user's file."""
    first = func.__code__.co_firstlineno
    for other in example.document.examples():
        start = other.line + getattr(other.parsed, "line_offset", 0) + 1
        end = start + str(other.parsed).count("\n")
        if start <= first <= end:
            return start - 1
    return 0


def _generated_now(example: Example, head: str) -> str:
    name, stage, mode, args = re.fullmatch(
        r"(\w+) stage=(\w+)(?: mode=(\w+))? args=(.*)", head).groups()
    namespace = example.namespace
    example_args = eval(f"({args},)", {"np": np, "math": math, **namespace})
    target = namespace[name]
    text = target.source(*example_args, stage=stage, **({"mode": mode} if mode else {}))
    offset = _block_offset(example, target.func)
    text = re.sub(r"(# line )(\d+)", lambda m: f"{m.group(1)}{int(m.group(2)) - offset}", text)
    return text.rstrip("\n") + "\n"


def _check_generated(example: Example) -> str | None:
    head, code = example.parsed
    now = _generated_now(example, head)
    if code == now:
        return None
    return _differs(example, code, now, f"generated code <!-- generated: {head} -->")


def parse_generated(document: Document) -> Iterator[Region]:
    for m in _GENERATED.finditer(document.text):
        yield Region(m.start("code"), m.end("code"), (m.group("head"), m.group("code")),
                     _check_generated)


class PythonBlocks(PythonCodeBlockParser):
    """Python blocks, less those that quote generated code (checked, not run); a block
    after ``<!-- file: NAME -->`` is saved as NAME in the scratch folder, then run."""

    def __call__(self, document: Document) -> Iterable[Region]:
        quoted = [(m.start(), m.end()) for pattern in (_GENERATED, _EXCERPT)
                  for m in pattern.finditer(document.text)]
        files = {m.end(): m.group("name") for m in _FILE.finditer(document.text)}
        for region in super().__call__(document):
            if any(s <= region.start < e for s, e in quoted):
                continue
            name = next((n for end, n in files.items() if region.start < end <= region.end
                         or end == region.start), None)
            if name is not None:
                region.evaluator = _saving(name, region.evaluator)
            yield region


def _saving(name: str, run):
    def evaluate(example: Example) -> str | None:
        (Path(example.namespace["__docdir__"]) / name).write_text(str(example.parsed))
        return run(example)
    return evaluate


# --- excerpts of the repository's files -----------------------------------------------


def _pattern(quoted: str) -> str:
    """A regex for ``quoted``'s lines, where a line ``...`` stands for any lines."""
    return "".join(r"(?:[^\n]*\n)*?" if line.strip() == "..." else re.escape(line) + r"\n"
                   for line in quoted.splitlines())


def _check_excerpt(example: Example) -> str | None:
    path, quoted = example.parsed
    if re.search(_pattern(quoted), (REPO / path).read_text()):
        return None
    return (f"the excerpt of {path} quoted in {Path(example.path).name} (line "
            f"{example.line}) is not in {path} any more: quote it again")


def parse_excerpts(document: Document) -> Iterator[Region]:
    for m in _EXCERPT.finditer(document.text):
        yield Region(m.start("code"), m.end("code"), (m.group("path"), m.group("code")),
                     _check_excerpt)


# --- command output ---------------------------------------------------------------------


def run_cli(cmd: str, where: Path) -> str:
    """What ``jitgrad CMD`` prints (stdout, then stderr), run in-process in ``where``."""
    from jitgrad.cli import main

    out = io.StringIO()
    here = os.getcwd()
    os.chdir(where)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            main(shlex.split(cmd))
    finally:
        os.chdir(here)
    return out.getvalue()


def matches(quoted: str, printed: str) -> bool:
    """``printed`` is ``quoted``, where a line ``...`` of ``quoted`` stands for any lines."""
    return re.fullmatch(_pattern(quoted), printed) is not None


def _check_console(example: Example) -> str | None:
    cmd, quoted = example.parsed
    printed = run_cli(cmd, Path(example.namespace["__docdir__"]))
    if matches(quoted, printed):
        return None
    return _differs(example, quoted, f"$ jitgrad {cmd}\n{printed}", f"output of `jitgrad {cmd}`")


def parse_console(document: Document) -> Iterator[Region]:
    for m in _CONSOLE.finditer(document.text):
        output = m.group("code").split("\n", 1)[1]
        yield Region(m.start("code"), m.end("code"), (m.group("cmd"), output), _check_console)


# --- the configuration ------------------------------------------------------------------


def save_rules() -> Callable[[], None]:
    """Snapshot the primitive table; the function returned restores it (rules a page or a
    test registers are gone afterwards)."""
    from jitgrad.rules import primitives as P

    tables = (P._RECORDS, P._BY_METHOD, P._BY_ATTR)
    saved = [dict(t) for t in tables]
    fields = {id(r): dict(vars(r)) for r in P._RECORDS.values()}

    def restore() -> None:
        for t, kept in zip(tables, saved, strict=True):
            t.clear()
            t.update(kept)
        for r in P._RECORDS.values():
            vars(r).update(fields[id(r)])
        P.bump()
    return restore


def _setup(namespace: dict) -> None:
    where = Path(tempfile.mkdtemp(prefix="jitgrad-docs-"))
    (where / "examples").symlink_to(REPO / "examples")
    namespace["__docdir__"] = str(where)
    namespace["__restore_rules__"] = save_rules()
    sys.path.insert(0, str(where))


def _teardown(namespace: dict) -> None:
    namespace.pop("__restore_rules__")()
    where = namespace.pop("__docdir__")
    if where in sys.path:
        sys.path.remove(where)
    for name, module in list(sys.modules.items()):  # the page's own modules
        if (getattr(module, "__file__", None) or "").startswith(where):
            del sys.modules[name]
    shutil.rmtree(where, ignore_errors=True)


def doc_sybil() -> Sybil:
    """The Sybil that collects README.md and docs/*.md (paths relative to the repo root)."""
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    parsers = [PythonBlocks(doctest_optionflags=flags), parse_generated, parse_excerpts,
               parse_console, SkipParser()]
    return Sybil(parsers=parsers, path=str(REPO), patterns=PAGES, excludes=SIMULATED,
                 name="docs", setup=_setup, teardown=_teardown)


def update(pages: Iterable[Path]) -> None:
    """Run every page in order and rewrite the quoted code and output that changed."""
    global UPDATES
    for page in pages:
        UPDATES = []
        run(page)
        text = page.read_text()
        for _, start, end, now in sorted(UPDATES, key=lambda u: -u[1]):
            text = text[:start] + now + text[end:]
        page.write_text(text)
        print(f"{page.relative_to(REPO)}: {len(UPDATES)} block(s) updated")
    UPDATES = None


def run(page: Path) -> None:
    """Run every example of ``page`` in order, as pytest would (``--run``)."""
    document = doc_sybil().parse(page)
    _setup(document.namespace)
    try:
        for example in document.examples():
            example.evaluate()
    finally:
        _teardown(document.namespace)
    print(f"{page.relative_to(REPO)}: every example ran")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--run"] and len(sys.argv) == 3:
        run(Path(sys.argv[2]).resolve())
    elif sys.argv[1:2] == ["--update"]:
        chosen = [Path(p).resolve() for p in sys.argv[2:]]
        update(chosen or [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))])
    else:
        sys.exit("usage: python tests/doctools.py --update [PAGE.md ...] | --run PAGE.md")
