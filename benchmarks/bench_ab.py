"""Two source trees compared as processes, interleaved: `trainsizer plan` of the 7B job (table and --json) and
`trainsizer estimate` (table and --json), each tree run in turn in every round, so a slow spell of a shared
machine falls on both alike. A machine whose speed drifts from hour to hour (a shared VM) cannot tell a 5 % change
from two runs of bench_plan.py minutes apart; run side by side, it can. Each figure is a range (min / median / max)
of wall-clock and CPU time (user + system); ``python3 -c pass`` is the floor.

Usage: python benchmarks/bench_ab.py --base /path/to/other/checkout/src [--runs 15]
(e.g. ``git worktree add /tmp/base main`` and ``--base /tmp/base/src``; this checkout's src is the other tree).
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JOB = str(ROOT / "examples" / "jobs" / "qwen2.5-7b-lora.yaml")
COMMANDS = {"plan 7B": ["plan", JOB], "plan 7B --json": ["plan", JOB, "--json"], "estimate": ["estimate"],
            "estimate --json": ["estimate", "--json"]}


def _run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{' '.join(argv)} failed")
    return time.perf_counter() - t0, usage.ru_utime + usage.ru_stime


def _range(values: list[float]) -> str:
    return "/".join(f"{x:.3f}" for x in (min(values), statistics.median(values), max(values)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the other tree's src folder")
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    trees = {"base": str(Path(args.base).resolve()), "this": str(ROOT / "src")}
    for tree in trees.values():
        compileall.compile_dir(tree, quiet=1)  # as pip does: no bytecode compilation in the timed runs
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    runs: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for argv in COMMANDS.values():  # warm the file cache and the data caches of both trees
        for tree in trees.values():
            _run([sys.executable, "-m", "trainsizer.cli", *argv], {**env, "PYTHONPATH": tree})
    loads = []
    for _ in range(args.runs):
        loads.append(os.getloadavg()[0])
        runs.setdefault(("python3 -c pass", ""), []).append(_run([sys.executable, "-c", "pass"], env))
        for label, argv in COMMANDS.items():
            for name, tree in trees.items():
                runs.setdefault((label, name), []).append(
                    _run([sys.executable, "-m", "trainsizer.cli", *argv], {**env, "PYTHONPATH": tree}))
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"{cores} cores; {args.runs} interleaved rounds; load average {min(loads):.1f}-{max(loads):.1f}")
    for (label, name), values in runs.items():
        print(f"{label:16} {name:5} wall {_range([w for w, _ in values])} s  CPU {_range([c for _, c in values])} s")


if __name__ == "__main__":
    main()
