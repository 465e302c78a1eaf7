"""Command line of the jitgrad fuzzer.

    python tests/fuzz/run.py --programs 300 --seed 1 --jit off --shrink
    python tests/fuzz/run.py --programs 60 --seed 1 --jit on --workers 2
    python tests/fuzz/run.py --seed 1 --only 37 --shrink      # one program, its source
    python tests/fuzz/run.py --programs 300 --seed 1 --jit off --triage   # hygiene or draws?

Program ``i`` of a run is generated from ``(seed, i)`` alone.  One line is printed
per non-ok program, then a tally of refusal reasons, and as the last line::

    fuzz: N programs, ok O, refused R, wrong W, crash C, hang H

(``skipped`` programs, where no smooth input point was found, count as ok.)
With ``--triage`` each failure is re-checked with plain names (``rename.neutralise``, and
without the alpha-renaming) and, if it has random draws, also without them; a line
``TRIAGE ... hygiene`` / ``random draws`` / ``not hygiene`` says which the failure needs.
The exit status is 1 when any program is wrong, crashes or hangs.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import sys
import time
from dataclasses import dataclass, field

if __package__ in (None, ""):  # run as a script: make ``fuzz`` importable, and fuzz this
    _TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # checkout's
    sys.path[:0] = [_TESTS, os.path.dirname(_TESTS)]  # jitgrad (the spawned workers too)

from fuzz.check import APIS, DRAW_SEED, SEVERITY, Pool, draws  # noqa: E402
from fuzz.gen import Program, generate  # noqa: E402
from fuzz.rename import neutralise  # noqa: E402
from fuzz.shrink import shrink  # noqa: E402

TIMEOUT = {False: 20.0, True: 60.0}
CLASSES = ("ok", "refused", "wrong", "crash", "hang")


def mode_name(jit: bool) -> str:
    return "on" if jit else "off"


def signature(res: dict) -> str:
    return res.get("signature") or f"{res['outcome']}:{res.get('error_type', '')}"


def signatures(res: dict) -> set:
    probs = res.get("problems") or [res]
    return {signature(p) for p in probs}


def normalise_refusal(msg: str) -> str:
    """Group refusal messages that differ only in the names they quote."""
    msg = re.sub(r"'[^']*'", "'_'", msg)
    return re.sub(r"\b\d+\b", "N", msg)


@dataclass
class ProgramResult:
    index: int
    results: dict = field(default_factory=dict)  # jit -> result dict

    @property
    def worst(self) -> tuple:
        jit, res = max(self.results.items(),
                       key=lambda kv: (SEVERITY.get(kv[1]["outcome"], 0), not kv[0]))
        return jit, res

    @property
    def outcome(self) -> str:
        out = self.worst[1]["outcome"]
        return "ok" if out in ("skipped", "invalid") else out

    @property
    def program(self) -> Program | None:
        for r in self.results.values():
            if r.get("program") is not None:
                return r["program"]
        return None


@dataclass
class Summary:
    seed: int
    programs: list = field(default_factory=list)  # ProgramResult
    shrunk: list = field(default_factory=list)  # (ProgramResult, jit, Program, result, text)
    times: dict = field(default_factory=lambda: collections.defaultdict(list))
    wall: float = 0.0
    hygiene: set = field(default_factory=set)  # failures that pass with plain names

    def tally(self) -> collections.Counter:
        c = collections.Counter({k: 0 for k in CLASSES})
        for p in self.programs:
            c[p.outcome] += 1
        return c

    def last_line(self) -> str:
        t = self.tally()
        line = (f"fuzz: {len(self.programs)} programs, ok {t['ok']}, refused {t['refused']}, "
                f"wrong {t['wrong']}, crash {t['crash']}, hang {t['hang']}")
        if self.hygiene:
            line += f" ({len(self.hygiene)} of the failures pass with plain names)"
        return line

    def failures(self) -> list:
        return [p for p in self.programs if p.outcome in ("wrong", "crash", "hang")]

    def refusals(self) -> tuple:
        """(Counter of normalised refusal messages, {message: first program index})."""
        c = collections.Counter()
        first: dict = {}
        for p in self.programs:
            if p.outcome == "refused":
                r = next(r for r in p.results.values() if r["outcome"] == "refused")
                msg = normalise_refusal(r.get("refusal", r["reason"]))
                c[msg] += 1
                first.setdefault(msg, p.index)
        return c, first


def _inputs_text(res: dict) -> str:
    args = res.get("args")
    if not args:
        return ""
    x, a, n = args
    return f"x = np.array({x.tolist()!r})\na = {a!r}\nn = {n!r}"


def format_repro(prog: Program, res: dict, jit: bool, title: str = "repro") -> str:
    lines = [f"# --- {title}: {res['outcome']} ({signature(res)}), jit={jit}, "
             f"{prog.describe()}"]
    lines.append(prog.source.rstrip("\n"))
    inputs = _inputs_text(res)
    if inputs:
        lines.append("")
        lines.append("# inputs the checker used:")
        lines += [f"# {ln}" for ln in inputs.splitlines()]
    lines.append(f"# d = jitgrad.differentiate(f, wrt={prog.wrt!r}, jit={jit}); "
                 "d.value_and_grad(x, a, n)")
    if draws(prog):
        lines.append(f"# (random draws: np.random.seed({DRAW_SEED}) before every call, and "
                     "with jit=True also in an @numba.njit function: Numba's generator)")
    for p in res.get("problems") or [res]:
        lines.append(f"# -> {p['outcome']}: {p['reason']}".replace("\n", "\n#    "))
    return "\n".join(lines)


def reason_line(p: ProgramResult, seed: int) -> str:
    jit, res = p.worst
    modes = ",".join(mode_name(j) for j, r in sorted(p.results.items())
                     if r["outcome"] == res["outcome"])
    reason = " ".join(res.get("reason", "").split())
    return f"{p.outcome.upper():7s} seed={seed} #{p.index} [jit {modes}] {reason[:240]}"


def _modes(jit: str, index: int, jit_every: int) -> list:
    if jit == "off":
        return [False]
    if jit == "on":
        return [True]
    return [False, True] if index % max(1, jit_every) == 0 else [False]


def shrink_failure(pool: Pool, prog: Program, res: dict, jit: bool, budget_s: float,
                   max_tests: int, timeouts: dict, log=None) -> tuple:
    """(shrunk program, its result)."""
    target = res["outcome"]
    sig = signature(res)
    last: dict = {}

    # run only the entry point that failed (Numba compiles one function, not three)
    apis = tuple(dict.fromkeys(("value_and_grad", res.get("api") or "value_and_grad")))
    if target == "hang" or "api" not in res:
        apis = APIS

    def reproduces(cand: Program) -> bool:
        r = next(pool.run([(0, ("prog", cand, jit, apis), timeouts[jit])]))[1]
        if r["outcome"] != target:
            return False
        if target != "hang" and sig not in signatures(r):
            return False
        last[cand.source] = r
        return True

    small = shrink(prog, reproduces, max_tests=max_tests, budget_s=budget_s, log=log)
    return small, last.get(small.source, res)


def run_fuzz(seed: int, programs: int, start: int = 0, jit: str = "both", workers: int = 1,
             do_shrink: bool = False, shrink_all: bool = False, shrink_budget: float = 120.0,
             shrink_tests: int = 400, show_refusals: bool = False, jit_every: int = 1,
             timeouts: dict | None = None, shrink_total: float | None = None,
             triage: bool = False, out=print, progress: int = 0) -> Summary:
    """Generate and check programs ``start .. start+programs-1`` of ``seed``; ``triage``:
    re-check each failure with plain names (``neutralise``) and say whether it passes so;
    ``progress``: print the running tally every that many programs (a run cut short still
    says what it checked)."""
    timeouts = dict(TIMEOUT if timeouts is None else timeouts)
    summary = Summary(seed)
    t0 = time.monotonic()
    by_index: dict = {}
    tasks = []
    for i in range(start, start + programs):
        modes = _modes(jit, i, jit_every)
        by_index[i] = (ProgramResult(i), len(modes))
        for m in modes:
            tasks.append(((i, m), ("gen", seed, i, m), timeouts[m]))
    with Pool(workers) as pool:
        for (i, m), res in pool.run(tasks):
            pr, nmodes = by_index[i]
            pr.results[m] = res
            summary.times[m].append(res.get("elapsed", 0.0))
            if len(pr.results) == nmodes:
                summary.programs.append(pr)
                if pr.outcome in ("wrong", "crash", "hang") or \
                        (show_refusals and pr.outcome == "refused"):
                    out(reason_line(pr, seed))
                if progress and len(summary.programs) % progress == 0:
                    out(f"so far ({time.monotonic() - t0:.0f} s): {summary.last_line()}")
        summary.programs.sort(key=lambda p: p.index)
        if triage:
            triage_names(pool, summary, timeouts, out)
        if do_shrink:
            seen: set = set()
            t_shrink = time.monotonic()
            for pr in summary.failures():
                if shrink_total is not None and time.monotonic() - t_shrink > shrink_total:
                    break
                jit_m, res = pr.worst
                # prefer shrinking without Numba when that mode shows the same failure
                if jit_m and False in pr.results and \
                        pr.results[False]["outcome"] == res["outcome"]:
                    jit_m, res = False, pr.results[False]
                key = (res["outcome"], signature(res))
                prog = res.get("program") or pr.program
                if prog is None or (key in seen and not shrink_all):
                    continue
                seen.add(key)
                budget = shrink_budget
                if shrink_total is not None:
                    budget = min(budget, shrink_total - (time.monotonic() - t_shrink))
                small, sres = shrink_failure(pool, prog, res, jit_m, max(1.0, budget),
                                             shrink_tests, timeouts)
                text = format_repro(small, sres, jit_m, title=f"shrunk #{pr.index}")
                summary.shrunk.append((pr, jit_m, small, sres, text))
                out(text)
    summary.wall = time.monotonic() - t0
    return summary


def triage_names(pool: Pool, summary: Summary, timeouts: dict, out=print) -> None:
    """Re-check every failure with the pool names it binds renamed to plain ones (and
    without its alpha-renaming), and, if that fails too and the program draws random
    numbers, also without its draws: says which of the two the failure needs.  Those
    that pass with plain names are counted in ``summary.hygiene``."""
    fails = {pr.index: pr for pr in summary.failures() if pr.program is not None}
    variants = {}
    for i, pr in fails.items():
        prog = pr.program
        src = neutralise(prog.original or prog.source)
        plain = Program(src, prog.shape, prog.n, _plain_wrt(prog), prog.seed, prog.index,
                        prog.attempt)
        variants[(i, "names")] = plain
        if draws(prog):
            variants[(i, "draws")] = plain.with_source(DRAW_CALL.sub("0.25", src))
    got = dict(pool.run([(key, ("prog", p, fails[key[0]].worst[0]),
                          timeouts[fails[key[0]].worst[0]]) for key, p in variants.items()]))
    passes = lambda r: r is not None and r["outcome"] in ("ok", "skipped", "refused")  # noqa
    for i, pr in fails.items():
        res, nodraw = got.get((i, "names")), got.get((i, "draws"))
        if passes(res):
            summary.hygiene.add(i)
            tag = "hygiene (passes with plain names)"
        elif passes(nodraw):
            tag = "random draws (passes with plain names and without its draws)"
        elif res is not None and signatures(res) & signatures(pr.worst[1]):
            tag = "not hygiene (fails the same way with plain names)"
        else:
            reason = " ".join((res or {}).get("reason", "").split())[:160]
            tag = f"hygiene, then with plain names: {(res or {}).get('outcome')}: {reason}"
        out(f"TRIAGE  seed={summary.seed} #{i}: {tag}")


#: a random draw with constant arguments, as the generator writes them
DRAW_CALL = re.compile(r"\bnp\.random\.\w+\([^()]*\)")


def _plain_wrt(prog: Program):
    """``prog.wrt`` in the original's parameter names (x, a, n)."""
    orig = ("x", "a", "n")
    back = lambda w: orig[prog.params.index(w)] if isinstance(w, str) else w  # noqa: E731
    return tuple(back(w) for w in prog.wrt) if isinstance(prog.wrt, tuple) else back(prog.wrt)


def print_report(summary: Summary, out=print) -> None:
    refusals, first = summary.refusals()
    if refusals:
        out("refusal reasons (count, message with names as '_', first program):")
        for msg, n in refusals.most_common():
            out(f"  {n:4d}  {msg}  (#{first[msg]})")
    t = summary.tally()
    skipped = sum(1 for p in summary.programs if p.worst[1]["outcome"] == "skipped")
    ill = [p.index for p in summary.programs if any(r.get("ill") for r in p.results.values())]
    regen = sum(1 for p in summary.programs if p.program is not None and p.program.attempt)
    times = ", ".join(f"jit {mode_name(m)} {sum(v) / len(v):.2f} s/program ({len(v)})"
                      for m, v in sorted(summary.times.items()) if v)
    if ill:
        out(f"ill-conditioned adjoints (skipped; reverse mode's rounding, amplified): "
            f"{len(ill)}: #{', #'.join(map(str, ill))}")
    out(f"skipped (no smooth point or ill-conditioned) {skipped}, regenerated {regen}; {times}; "
        f"wall {summary.wall:.0f} s")
    del t
    out(summary.last_line())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--programs", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--start", type=int, default=0, help="index of the first program")
    ap.add_argument("--jit", choices=("both", "on", "off"), default="both")
    ap.add_argument("--jit-every", type=int, default=1,
                    help="with --jit both: check jit=True only for every K-th program")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--shrink", action="store_true", help="shrink failing programs")
    ap.add_argument("--shrink-all", action="store_true",
                    help="shrink every failure, not only the first of each kind")
    ap.add_argument("--shrink-budget", type=float, default=120.0, help="seconds per failure")
    ap.add_argument("--show-refusals", action="store_true")
    ap.add_argument("--triage", action="store_true",
                    help="re-check each failure with plain names: is it one of hygiene?")
    ap.add_argument("--only", type=int, default=None,
                    help="re-run program I of the seed and print its source and results")
    ap.add_argument("--timeout", type=float, default=None,
                    help="per-program timeout in seconds (default 20 without jit, 60 with)")
    ap.add_argument("--progress", type=int, default=0,
                    help="print the running tally every N programs")
    args = ap.parse_args(argv)
    timeouts = dict(TIMEOUT)
    if args.timeout:
        timeouts = {False: args.timeout, True: args.timeout}
    if args.only is not None:
        return only(args, timeouts)
    summary = run_fuzz(args.seed, args.programs, args.start, args.jit, args.workers,
                       args.shrink, args.shrink_all, args.shrink_budget,
                       show_refusals=args.show_refusals, jit_every=args.jit_every,
                       timeouts=timeouts, triage=args.triage,
                       out=lambda line: print(line, flush=True), progress=args.progress)
    print_report(summary)
    t = summary.tally()
    return 1 if t["wrong"] or t["crash"] or t["hang"] else 0


def only(args, timeouts) -> int:
    i = args.only
    modes = _modes(args.jit, i, 1)
    pr = ProgramResult(i)
    with Pool(1) as pool:
        for (_, m), res in pool.run([((i, m), ("gen", args.seed, i, m), timeouts[m])
                                     for m in modes]):
            pr.results[m] = res
        prog = pr.program or generate(args.seed, i)
        print(f"# {prog.describe()}")
        print(prog.source)
        for m, res in sorted(pr.results.items()):
            print(f"# jit {mode_name(m)}: {res['outcome']}  ({res.get('elapsed', 0):.2f} s)")
            inputs = _inputs_text(res)
            if inputs:
                print("#   " + inputs.replace("\n", "\n#   "))
            for p in res.get("problems") or ([res] if res["outcome"] != "ok" else []):
                print(f"#   {p['outcome']}: {p['reason']}".replace("\n", "\n#     "))
                if p.get("traceback"):
                    print("#     " + p["traceback"].rstrip().replace("\n", "\n#     "))
        if args.shrink:
            for m, res in sorted(pr.results.items()):
                if res["outcome"] in ("wrong", "crash", "hang"):
                    small, sres = shrink_failure(pool, prog, res, m, args.shrink_budget, 400,
                                                 timeouts, log=print)
                    print(format_repro(small, sres, m, title="shrunk"))
    t = collections.Counter({pr.outcome: 1})
    print(f"fuzz: 1 programs, ok {t['ok']}, refused {t['refused']}, wrong {t['wrong']}, "
          f"crash {t['crash']}, hang {t['hang']}")
    return 1 if t["wrong"] or t["crash"] or t["hang"] else 0


if __name__ == "__main__":
    sys.exit(main())
