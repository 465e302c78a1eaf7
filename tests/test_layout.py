"""The package layout: no import cycles between jitgrad's modules, and the halves kept apart
(the transpiler and the rules never import the eager runtime)."""

import ast
from pathlib import Path

import jitgrad

ROOT = Path(jitgrad.__file__).parent


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports() -> dict[str, set[str]]:
    """Each module's imports of other jitgrad modules, those inside functions too (one
    there runs at call time, so it cannot fail at import, but it still ties the two
    modules into one: a cycle closed that way is a cycle)."""
    mods = {_module(p): p for p in ROOT.rglob("*.py")}
    out: dict[str, set[str]] = {}
    for name, path in mods.items():
        pkg = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = pkg.split(".")
                if node.level:
                    base = base[:len(base) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                for alias in node.names:
                    full = f"{target}.{alias.name}"
                    deps.add(full if full in mods else target)
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names}
        out[name] = {d for d in deps if d in mods and d != name}
    return out


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of imports (a package's ``__init__`` importing its submodules counts)."""
    def edges(m):
        return graph[m]

    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for d in sorted(edges(m)):
            if state.get(d) == 1:
                return stack[stack.index(d):] + [d]
            if d not in state:
                found = visit(d)
                if found:
                    return found
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def test_no_import_cycles():
    cycle = _cycle(_imports())
    assert cycle is None, " -> ".join(cycle)


def test_transpiler_and_rules_do_not_import_the_runtime():
    graph = _imports()
    for name, deps in graph.items():
        if name.startswith(("jitgrad.transpiler", "jitgrad.rules", "jitgrad.kernels")):
            bad = {d for d in deps if d.startswith("jitgrad.runtime")}
            assert not bad, f"{name} imports {bad}"


def test_node_facts_only_through_notes():
    """Facts one pass leaves on a syntax node for another are declared in
    ``transpiler/notes.py`` and read and written only through it."""
    import re

    attr = re.compile(r"""\._jg_\w|["']_jg_\w""")
    for path in ROOT.rglob("*.py"):
        if path.name == "notes.py":
            continue
        for k, line in enumerate(path.read_text().splitlines(), 1):
            assert not attr.search(line), f"{path.relative_to(ROOT)}:{k}: {line.strip()}"


#: the most lines a function may take, its docstring (a pass's before/after example) included
LONGEST = 60


def test_no_long_functions():
    """No function (nested ones too) is over ``LONGEST`` lines: a longer one is split into
    named parts with one job each."""
    long = []
    for path in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > LONGEST:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {lines}")
    assert not long, "functions over the limit:\n" + "\n".join(long)
