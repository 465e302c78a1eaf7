"""The ``jitgrad`` command line: ``jitgrad show`` and ``jitgrad check``.

    jitgrad show path/to/file.py:func [--wrt 0,2] [--stage adjoint] [--args EXPR]
    jitgrad check package.module:func --args "(np.ones(5), 2.0)" [--wrt 0,1]

``show`` prints the code jitgrad generates for a function (highlighted with
Pygments when stdout is a terminal); ``check`` compares jitgrad's compiled
gradient with central finite differences, argument by argument, and exits 1
when a check fails.  Anything that stops a command from running (a missing file
or function, source jitgrad cannot transform, bad ``--args``) exits 2 with one
message on stderr; ``--traceback`` shows the full Python traceback instead.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import math
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["CLIError", "build_parser", "load_target", "main", "parse_args_expr", "parse_wrt"]

EXIT_OK, EXIT_FAIL, EXIT_ERROR = 0, 1, 2


class CLIError(Exception):
    """A user error the CLI reports as one message with exit status 2."""


# --- targets and options --------------------------------------------------------------


def _split_target(target: str) -> tuple[str, str]:
    where, sep, attr = target.rpartition(":")
    if not sep or not where or not attr:
        raise CLIError(f"target {target!r} must be 'path/to/file.py:function' or "
                       "'package.module:function'")
    return where, attr


def _is_path(where: str) -> bool:
    return where.endswith(".py") or os.sep in where or "/" in where or os.path.isfile(where)


def _load_module(where: str) -> Any:
    """Import ``where``: a path to a ``.py`` file, or a dotted module name."""
    if _is_path(where):
        path = Path(where).expanduser()
        if not path.is_file():
            raise CLIError(f"no such file: {where}")
        path = path.resolve()
        name = f"_jitgrad_target_{path.stem}_{abs(hash(str(path))):x}"
        if name in sys.modules:
            return sys.modules[name]
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise CLIError(f"cannot load {where} as a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        sys.path.insert(0, str(path.parent))  # sibling imports work, as when run as a script
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
        return module
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())  # the console script, like `python -m`, sees ./
    try:
        return importlib.import_module(where)
    except ModuleNotFoundError as e:
        if e.name and where.startswith(e.name):
            raise CLIError(f"no module named {where!r} (give a file path ending in .py, "
                           "or a module importable from the current directory)") from e
        raise


def load_target(target: str) -> Any:
    """The object named by ``file.py:func`` or ``package.module:func`` (dotted names allowed)."""
    where, attr = _split_target(target)
    module = _load_module(where)
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise CLIError(f"{where} has no function {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise CLIError(f"{where}:{attr} is a {type(obj).__name__}, not a function")
    return obj


def _plain_function(obj: Any, target: str) -> Callable[..., Any]:
    """The user's function behind a ``@jg.differentiate`` object (or ``obj`` itself: a
    Python function or a ``numba.njit`` dispatcher); anything else is a CLIError."""
    from .api import Differentiated, GradFunction
    from .transpiler.front.parse import python_function

    if isinstance(obj, GradFunction):
        obj = obj.diff
    if isinstance(obj, Differentiated):
        return obj._orig
    try:
        python_function(obj)  # a CUDA kernel raises TransformError, reported as such
    except TypeError as e:
        raise CLIError(f"{target}: {e}") from None
    return obj


def _default_wrt(obj: Any) -> Any:
    from .api import Differentiated, GradFunction

    if isinstance(obj, GradFunction):
        obj = obj.diff
    if isinstance(obj, Differentiated):
        return obj.wrt_positions[0] if obj.single else obj.wrt_positions
    return 0


def parse_wrt(text: str) -> int | str | tuple[int | str, ...]:
    """``"0"`` -> 0, ``"x"`` -> ``"x"``, ``"0,2"`` or ``"x,k"`` -> a tuple (as in ``wrt=``)."""
    items: list[int | str] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        items.append(int(part) if part.lstrip("-").isdigit() else part)
    if not items:
        raise CLIError(f"--wrt {text!r}: give argument positions or names, e.g. --wrt 0,2")
    if len(items) == 1 and "," not in text:
        return items[0]
    return tuple(items)


def parse_args_expr(expr: str) -> tuple[Any, ...]:
    """Evaluate ``--args``: a Python expression (``np`` and ``math`` available) -> a tuple."""
    namespace = {"np": np, "numpy": np, "math": math, "__builtins__": __builtins__}
    try:
        value = eval(expr, namespace)  # noqa: S307 - the user's own command line
    except Exception as e:
        raise CLIError(f"--args {expr!r}: {type(e).__name__}: {e}") from e
    return value if isinstance(value, tuple) else (value,)


def _args_from(spec: str) -> tuple[Any, ...]:
    factory = load_target(spec)
    try:
        value = factory()
    except Exception as e:
        raise CLIError(f"--args-from {spec}: {spec.rpartition(':')[2]}() raised "
                       f"{type(e).__name__}: {e}") from e
    return value if isinstance(value, tuple) else (value,)


def _example_args(ns: argparse.Namespace) -> tuple[Any, ...] | None:
    if ns.args is not None:
        return parse_args_expr(ns.args)
    if ns.args_from is not None:
        return _args_from(ns.args_from)
    return None


def _copy(a: Any) -> Any:
    return a.copy() if isinstance(a, np.ndarray) else a


# --- commands --------------------------------------------------------------------------


def _highlight(text: str) -> str:
    try:
        from pygments import highlight
        from pygments.formatters import TerminalFormatter
        from pygments.lexers import PythonLexer
    except ImportError:  # pragma: no cover - Pygments is optional
        return text
    return highlight(text, PythonLexer(), TerminalFormatter())


def _use_color(ns: argparse.Namespace) -> bool:
    if ns.no_color or os.environ.get("NO_COLOR"):
        return False
    return sys.stdout.isatty()


def _auto_checkpoint(obj: Any) -> bool | None:
    """The ``auto_checkpoint`` option of a ``@jg.differentiate`` target (None: the config's)."""
    from .api import Differentiated, GradFunction

    if isinstance(obj, GradFunction):
        obj = obj.diff
    return obj.auto_checkpoint if isinstance(obj, Differentiated) else None


def _differentiate(func: Callable[..., Any], wrt: Any, ns: argparse.Namespace,
                   args: tuple[Any, ...] | None, auto_checkpoint: bool | None = None) -> Any:
    """``differentiate(func, wrt=...)``, with bad ``--wrt``/``--args`` reported as CLIErrors
    (``auto_checkpoint``: a decorated target's own option)."""
    from .api import differentiate

    try:
        diff = differentiate(func, wrt=wrt, jit=not ns.no_jit, auto_checkpoint=auto_checkpoint)
    except (TypeError, ValueError) as e:
        raise CLIError(f"--wrt {ns.wrt}: {e}" if ns.wrt is not None else str(e)) from e
    if args is not None and len(args) != len(diff.params):
        raise CLIError(f"--args gives {len(args)} argument{'s' * (len(args) != 1)}; "
                       f"{func.__name__} takes {len(diff.params)} ({', '.join(diff.params)})")
    return diff


def cmd_show(ns: argparse.Namespace) -> int:
    """Print the generated code of one stage (or all of it) for the target."""
    obj = load_target(ns.target)
    func = _plain_function(obj, ns.target)
    wrt = parse_wrt(ns.wrt) if ns.wrt is not None else _default_wrt(obj)
    args = _example_args(ns)
    diff = _differentiate(func, wrt, ns, args, _auto_checkpoint(obj))
    mode = getattr(ns, "mode", "vjp")
    if mode == "hvp" and ns.stage != "all":
        raise CLIError(f"--stage {ns.stage}: --mode hvp shows the whole function only")
    try:
        text = diff.source(*(args or ()), stage=ns.stage, mode=mode)
    except ValueError as e:
        if mode != "jvp":
            raise
        raise CLIError(f"--stage {ns.stage}: {e}") from e
    names = ", ".join(diff.params[i] for i in diff.wrt_positions)
    spec = "the example arguments" if args else "arguments guessed from the source"
    what = {"jvp": " (forward mode, jvp)", "hvp": " (forward over reverse, hvp)"}.get(mode, "")
    header = (f"# jitgrad show {func.__name__}: stage {ns.stage}{what}, wrt ({names}), "
              f"specialised for {spec}\n")
    text = header + text.rstrip("\n") + "\n"
    if getattr(ns, "schedule", None) is not None:
        text += schedule_report(diff, ns.schedule, args)
    sys.stdout.write(_highlight(text) if _use_color(ns) else text)
    return EXIT_OK


def _snapshots_value(expr: str, diff: Any, args: tuple[Any, ...] | None) -> tuple[Any, str]:
    """The ``snapshots=`` value for the report: a literal, None, or a parameter's value in
    ``--args``; else the default (and a note saying so)."""
    import ast

    try:
        value = ast.literal_eval(expr)
    except (ValueError, SyntaxError):
        value = ...
    if value is ... and args is not None and expr in diff.params:
        value = args[diff.params.index(expr)]
    if value is ... or not (value is None or isinstance(value, int)):
        return None, f"snapshots={expr}: not known here (give --args), the default shown"
    return value, f"snapshots={expr}" + (f" = {value}" if expr != repr(value) else "")


def schedule_report(diff: Any, steps: int, args: tuple[Any, ...] | None) -> str:
    """``--schedule T``: for each checkpointed loop of the shown gradient, its snapshots,
    recompute factor and peak tape for ``T`` steps, as ``#`` comment lines."""
    from .kernels.revolve import schedule

    diff.source(*(args or ()))  # the gradient's specialisation (also after --mode jvp)
    loops = diff._last.unit.ir.schedules
    out = [f"# schedule for {steps} steps (jitgrad.schedule):"]
    if not loops:
        out.append("#   no jg.checkpointed loop")
    sizes = {"float64": 8, "int64": 8, "bool": 1}
    autos = [lp for lp in loops if lp.automatic is not None]
    for lp in loops:
        if lp.automatic is not None:
            out += _automatic_report(lp, steps, _automatic_sizes(diff, autos.index(lp), args))
            continue
        k, said = _snapshots_value(lp.snapshots, diff, args)
        scalars = sum(sizes.get(kind, 0) for _, kind in lp.state)
        arrays = [n for n, kind in lp.state if kind.startswith("array")]
        state = ", ".join(f"{n} ({kind})" for n, kind in lp.state) or "nothing"
        per_step = lp.tape and next((c for where, c in lp.tape if where is None), 0) or 0
        inner = [f"{c} float64 per trip of the loop at line {where}"
                 for where, c in lp.tape if where is not None]
        sc = schedule(steps, k, state_bytes=scalars, step_tape_bytes=8 * per_step)
        out += [f"#   line {lp.line}: {said}",
                f"#     {sc}",
                f"#     a snapshot holds {state}: "
                + " + ".join(([f"{scalars} B"] if scalars or not arrays else [])
                             + [f"the elements of {n}" for n in arrays]),
                f"#     tape: one step's at a time, {per_step} float64 ({8 * per_step} B)"
                + "".join(f" + {x}" for x in inner)
                + (f" + {lp.arrays} array copies" if lp.arrays else "")
                + f"; the same loop over a plain range keeps {steps} steps' tape"]
    return "\n".join(out) + "\n"


def _automatic_sizes(diff: Any, index: int, args: tuple[Any, ...] | None) \
        -> tuple[int, int, int] | None:
    """The bytes of the tape, the trip count and the bytes of one snapshot that the
    ``index``-th automatically checkpointed loop of the shown gradient sees where it starts,
    at ``args`` (the generated code up to that loop, run as Python); None without args."""
    import ast

    import numpy as np

    from .transpiler.backend.jit import BUFFER, imports

    if args is None:
        return None
    u = diff._last.unit
    fn = ast.parse(u.sources["grad"]).body[0]
    ifs = [k for k, x in enumerate(fn.body) if isinstance(x, ast.If)
           and isinstance(x.test, ast.Name) and x.test.id.startswith("_checkpointed")]
    if index >= len(ifs):
        return None
    k = ifs[index]
    flag = next(x.value for x in fn.body[:k] if isinstance(x, ast.Assign)
                and isinstance(x.targets[0], ast.Name) and x.targets[0].id == fn.body[k].test.id)
    calls = [c for x in (flag, *fn.body[k].body[:2]) for c in ast.walk(x)
             if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)]
    sized = next((c for c in calls if c.func.id == "block_slots"), None)
    pays = next((c for c in calls if c.func.id.endswith("_pays")), None)
    tape = flag.left if isinstance(flag, ast.Compare) else flag.values[0].left
    if sized is not None:
        trips, state = sized.args[0], sized.args[2]
    elif pays is not None:
        trips, state = pays.args[1], pays.args[2]
    else:  # (a threshold of 0 and a snapshot per step: the sizes are not computed)
        return None
    probe = ast.FunctionDef(name="_sizes", args=fn.args, body=[*fn.body[:k], ast.Return(
        value=ast.Tuple(elts=[tape, trips, state], ctx=ast.Load()))], decorator_list=[],
        returns=None)
    space = dict(imports({"grad": u.sources["grad"]}, u.env))
    exec(compile(ast.fix_missing_locations(ast.Module(body=[probe], type_ignores=[])),
                 "<sizes>", "exec"), space)
    ws = tuple(np.empty(0, np.float64 if d == BUFFER else d)
               for d in u.workspaces.get("grad", ()))
    copies = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
    try:
        return tuple(int(v) for v in space["_sizes"](*copies, 1.0, *((ws,) if ws else ())))
    except Exception:  # noqa: BLE001 - the code before the loop failed: the rule only
        return None


def _automatic_report(lp: Any, steps: int, sizes: tuple[int, int, int] | None) -> list[str]:
    """``--schedule`` lines for an automatically checkpointed loop (``auto_checkpoint``):
    the schedule it runs for ``steps`` steps at the sizes ``sizes`` (``_automatic_sizes``)."""
    import numpy as np

    from .kernels import revolve

    thr = lp.automatic
    rule = ("a snapshot before each step" if lp.each_step else
            f"blocks of steps whose tape takes at most {thr // 4} B, reversed a block at a time")
    out = [f"#   line {lp.line}: automatic (auto_checkpoint): its tape where that takes at "
           f"most {thr} B, else {rule}"]
    if sizes is None:
        return out + ["#     the sizes are known where the loop starts (give --args)"]
    tape, trips, state = sizes
    per_step = tape // trips if trips > 0 else 0
    total = per_step * steps
    pays = revolve.each_step_pays if lp.each_step else revolve.checkpoint_pays
    said = f"#     one step's tape {per_step} B, {steps} steps' {total} B; a snapshot {state} B"
    if not (total > thr and (thr == 0 or pays(total, steps, state))):
        return out + [said, "#     runs with its tape (within the threshold, or the "
                            "snapshots would take more than it saves)"]
    if lp.each_step:
        return out + [said, f"#     {steps} snapshots, each step run twice (the forward sweep, "
                            f"then right before its adjoint): recompute factor 2.00; peak "
                            f"memory {steps} x {state} B of snapshots + {per_step} B of tape"]
    block = revolve.block_steps(total, steps, thr // 4)
    k = revolve.snapshot_count(-(-steps // block),
                               revolve.block_slots(steps, block, state, total))
    runs = np.zeros(steps, np.int64)
    untaped, taped, peak = revolve.simulate(steps, k, np.zeros(0, np.int64), runs, block)
    factor = (untaped + taped) / steps if steps else 0.0
    return out + [said, f"#     blocks of {block} steps, {k} snapshots: {untaped} untaped + "
                        f"{taped} taped step runs, recompute factor {factor:.2f}, each step "
                        f"run untaped at most {int(runs.max(initial=0))} times; peak memory "
                        f"{peak} x {state} B of snapshots + {block * per_step} B of tape "
                        f"(one block)"]


def cmd_check(ns: argparse.Namespace) -> int:
    """Compare the compiled gradient with central finite differences; 1 if any fails."""
    from .errors import JitError
    from .runtime.checks import gradcheck_report

    obj = load_target(ns.target)
    func = _plain_function(obj, ns.target)
    args = _example_args(ns)
    if args is None:
        raise CLIError("check needs example arguments: --args EXPR or --args-from FILE:FACTORY")
    wrt = parse_wrt(ns.wrt) if ns.wrt is not None else _default_wrt(obj)
    diff = _differentiate(func, wrt, ns, args)
    positions = diff.wrt_positions
    grads = diff.grad(*(_copy(a) for a in args))
    grads = (grads,) if diff.single else tuple(grads)
    # finite differences of the primal, the user's own function: compiled with Numba as
    # ``diff(...)`` runs it (their dispatcher, else numba.njit), plain Python with --no-jit
    # or when Numba cannot compile it
    reference: Callable[..., Any] = diff.func
    if diff.jit:
        try:
            diff(*(_copy(a) for a in args))
            reference = diff
        except JitError:
            reference = diff.func

    def f_wrt(*xs: Any) -> Any:
        full = [_copy(a) for a in args]
        for i, x in zip(positions, xs, strict=True):
            full[i] = x
        return reference(*full)

    reports = gradcheck_report(f_wrt, *(args[i] for i in positions), grads=grads,
                               rtol=ns.rtol, atol=ns.atol)
    mode = "jit" if diff.jit else "no-jit"
    print(f"gradient check of {func.__name__} ({mode}) against central finite differences, "
          f"rtol={ns.rtol:g} atol={ns.atol:g}")
    rows = [("arg", "shape", "max abs err", "max rel err", "result")]
    for pos, rep in zip(positions, reports, strict=True):
        rows.append((f"{pos} {diff.params[pos]}", str(tuple(rep["shape"])),
                     f"{rep['max_abs_err']:.3e}", f"{rep['max_rel_err']:.3e}",
                     "PASS" if rep["passed"] else "FAIL"))
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    for r in rows:
        print("  " + "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())
    failed = [(pos, rep) for pos, rep in zip(positions, reports, strict=True)
              if not rep["passed"]]
    for pos, rep in failed:
        if rep.get("worst") is None:
            print(f"  {diff.params[pos]}: gradient has the wrong shape")
        else:
            print(f"  {diff.params[pos]}{list(rep['worst']) if rep['worst'] else ''}: "
                  f"jitgrad {rep['analytic']:.8g} vs finite differences {rep['numeric']:.8g}")
    print(f"FAIL: {len(failed)} of {len(reports)} gradients differ" if failed
          else f"PASS: all {len(reports)} gradients match")
    return EXIT_FAIL if failed else EXIT_OK


def _tolerance(text: str) -> float:
    """``--rtol``/``--atol``: a finite number >= 0 (argparse reports anything else)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a tolerance must be a finite number >= 0")
    return value


# --- parser and entry point ------------------------------------------------------------


def _steps(text: str) -> int:
    """``--schedule T``: a number of steps >= 0 (``1e6`` allowed)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if value < 0 or value != int(value):
        raise argparse.ArgumentTypeError(f"not a number of steps >= 0: {text!r}")
    return int(value)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("target", help="path/to/file.py:function or package.module:function")
    p.add_argument("--wrt", metavar="ARGS",
                   help="argument positions or names to differentiate, e.g. 0,2 or x,k "
                        "(default: the target's own wrt, else 0)")
    p.add_argument("--no-jit", action="store_true", help="do not compile with Numba")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--args", metavar="EXPR",
                     help="example arguments: a Python expression giving the argument tuple "
                          "(np and math available), e.g. '(np.linspace(0, 1, 5), 2.0)'")
    src.add_argument("--args-from", metavar="FILE:FACTORY",
                     help="example arguments: FACTORY() in file.py or module, returning the tuple")
    p.add_argument("--traceback", action="store_true",
                   help="show the full Python traceback on errors")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``jitgrad`` command."""
    from . import __version__
    from .transpiler.forward_pipeline import VECTOR
    from .transpiler.pipeline import BACKEND, PASSES, STAGES

    parser = argparse.ArgumentParser(
        prog="jitgrad",
        description="Inspect and check the gradient code jitgrad generates.")
    parser.add_argument("--version", action="version", version=f"jitgrad {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    show = sub.add_parser("show", help="print the generated forward/adjoint code",
                          description="Print the code jitgrad generates for a function.")
    _common(show)
    show.add_argument("--stage", default="all", metavar="STAGE",
                      choices=(*STAGES, *(p.name for p in VECTOR)),
                      help="which code to print: all (default: the compiled gradient "
                           "function), forward, adjoint, normalized, or the output of one "
                           f"pass ({', '.join(p.name for p in PASSES)}) or of one step of "
                           f"lower ({', '.join(BACKEND)}), or backend: every step of "
                           "lower in turn and what it changed")
    show.add_argument("--mode", default="vjp", choices=("vjp", "jvp", "hvp"),
                      help="vjp (default): the reverse-mode gradient code; jvp: the "
                           "forward-mode tangent code (stages all, kinds, analyse, forward, "
                           "bounds, and jacfwd's vector, fuse_directions, lower_vector, "
                           "vector_bounds); "
                           "hvp: what jg.hvp runs, forward mode of the gradient code "
                           "(stage all)")
    show.add_argument("--no-color", action="store_true", help="never highlight the output")
    show.add_argument("--schedule", type=_steps, metavar="T",
                      help="after the code, report each jg.checkpointed loop's binomial "
                           "schedule for T steps: snapshots, recompute factor, peak tape")
    show.set_defaults(run=cmd_show)
    check = sub.add_parser(
        "check", help="compare the compiled gradient with finite differences",
        description="Compare jitgrad's compiled gradient with central finite differences. "
                    "Exit status 0 if every wrt argument passes, 1 if one fails.")
    _common(check)
    check.add_argument("--rtol", type=_tolerance, default=1e-5,
                       help="relative tolerance, a number >= 0 (1e-5)")
    check.add_argument("--atol", type=_tolerance, default=1e-5,
                       help="absolute tolerance, a number >= 0 (1e-5)")
    check.set_defaults(run=cmd_check)
    return parser


def _describe(e: BaseException) -> str:
    from .errors import JitError, TransformError

    if isinstance(e, TransformError):
        return f"cannot differentiate: {e}"
    if isinstance(e, JitError):
        return str(e)
    if isinstance(e, SyntaxError):
        return f"syntax error in {e.filename}:{e.lineno}: {e.msg}"
    return f"{type(e).__name__}: {e}"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``jitgrad`` command line; returns the exit status (0, 1 or 2)."""
    parser = build_parser()
    ns = parser.parse_args(argv)
    if ns.command is None:
        parser.print_help(sys.stderr)
        return EXIT_ERROR
    try:
        return int(ns.run(ns))
    except KeyboardInterrupt:
        return 130
    except Exception as e:
        from .errors import JitgradError

        if ns.traceback:
            traceback.print_exc()
            return EXIT_ERROR
        if isinstance(e, CLIError):
            message = str(e)
        else:
            message = _describe(e)
            if not isinstance(e, JitgradError):
                message += "\n(run with --traceback for the full traceback)"
        print(f"jitgrad {ns.command}: error: {message}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
