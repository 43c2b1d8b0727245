"""Two source trees compared as processes, interleaved: `trainsizer plan` of the 7B job (table and --json) and
`trainsizer estimate` (table and --json), each tree run in turn in every round, so a slow spell of a shared
machine falls on both alike. A machine whose speed drifts from hour to hour (a shared VM) cannot tell a 5 % change
from two runs of bench_plan.py minutes apart; run side by side, it can. Each figure is a range (min / median / max)
of wall-clock and CPU time (user + system); ``python3 -c pass`` is the floor.

``--in-process`` adds the 7B whole-catalog plan in process (``plan_job`` in USD and in CNY, from cold per-job caches,
the data files loaded), each round a fresh interpreter per tree that times it ``IN_PROCESS_PLANS`` times (its median).
The last column is this tree's median CPU over the base's.

Usage: python benchmarks/bench_ab.py --base /path/to/other/checkout/src [--runs 15] [--in-process]
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
JOB = Path("examples") / "jobs" / "qwen2.5-7b-lora.yaml"  # each tree plans its own copy (the format grows)
COMMANDS: dict[str, list[str | Path]] = {
    "plan 7B": ["plan", JOB], "plan 7B CNY": ["plan", JOB, "--currency", "CNY"],
    "plan 7B --json": ["plan", JOB, "--json"], "estimate": ["estimate"], "estimate --json": ["estimate", "--json"],
    "--help": ["--help"]}


def _cli(tree: str, argv: list[str | Path]) -> list[str]:
    """The command line of ``argv`` for the tree whose src folder is ``tree``, the job read from that checkout."""
    return [sys.executable, "-m", "trainsizer.cli",
            *(str(Path(tree).parent / a) if isinstance(a, Path) else a for a in argv)]
IN_PROCESS_PLANS = 5
IN_PROCESS = """
import statistics, sys, time
from pathlib import Path
from trainsizer.estimate.estimator import clear_caches
from trainsizer.workflows.jobs import load_job
from trainsizer.workflows.plan_job import PlanRequest, plan_job
job, currency, plans = load_job(Path(sys.argv[1])), sys.argv[2], int(sys.argv[3])
plan_job(job, PlanRequest(currency=currency))  # the data files loaded
walls, cpus = [], []
for _ in range(plans):
    clear_caches()
    t0, c0 = time.perf_counter(), time.process_time()
    plan_job(job, PlanRequest(currency=currency))
    walls.append(time.perf_counter() - t0)
    cpus.append(time.process_time() - c0)
print(statistics.median(walls), statistics.median(cpus))
"""


def _run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{' '.join(argv)} failed")
    return time.perf_counter() - t0, usage.ru_utime + usage.ru_stime


def _in_process(env: dict[str, str], currency: str) -> tuple[float, float]:
    job = str(Path(env["PYTHONPATH"]).parent / JOB)
    out = subprocess.run([sys.executable, "-c", IN_PROCESS, job, currency, str(IN_PROCESS_PLANS)], env=env, check=True,
                         capture_output=True, text=True)
    wall, cpu = out.stdout.split()
    return float(wall), float(cpu)


def _range(values: list[float]) -> str:
    return "/".join(f"{x:.3f}" for x in (min(values), statistics.median(values), max(values)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the other tree's src folder")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--in-process", action="store_true", help="also the 7B plan in process (plan_job)")
    args = parser.parse_args()
    trees = {"base": str(Path(args.base).resolve()), "this": str(ROOT / "src")}
    for tree in trees.values():
        compileall.compile_dir(tree, quiet=1)  # as pip does: no bytecode compilation in the timed runs
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    runs: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for argv in COMMANDS.values():  # warm the file cache and the data caches of both trees
        for tree in trees.values():
            _run(_cli(tree, argv), {**env, "PYTHONPATH": tree})
    loads = []
    for _ in range(args.runs):
        loads.append(os.getloadavg()[0])
        runs.setdefault(("python3 -c pass", ""), []).append(_run([sys.executable, "-c", "pass"], env))
        for label, argv in COMMANDS.items():
            for name, tree in trees.items():
                runs.setdefault((label, name), []).append(_run(_cli(tree, argv), {**env, "PYTHONPATH": tree}))
        for currency in ("USD", "CNY") if args.in_process else ():
            for name, tree in trees.items():
                runs.setdefault((f"plan_job 7B {currency}", name), []).append(
                    _in_process({**env, "PYTHONPATH": tree}, currency))
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"{cores} cores; {args.runs} interleaved rounds; load average {min(loads):.1f}-{max(loads):.1f}")
    for (label, name), values in runs.items():
        cpu = [c for _, c in values]
        base = [c for _, c in runs.get((label, "base"), [])]
        ratio = f"  x{statistics.median(cpu) / statistics.median(base):.2f}" if name == "this" and base else ""
        print(f"{label:16} {name:5} wall {_range([w for w, _ in values])} s  CPU {_range(cpu)} s{ratio}")


if __name__ == "__main__":
    main()
