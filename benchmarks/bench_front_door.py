"""Whole-process latency of the front door: `trainsizer estimate` (built-in example, table output) and
`trainsizer --help`, median of N runs each (target: <= 0.3 s for both).

The package's bytecode is compiled first (as `pip install` does), and each run starts a fresh
interpreter with PYTHONDONTWRITEBYTECODE unset, so the figure is what a user's shell sees.

The commands run interleaved (one round = each command once), so a slow spell of a shared machine falls on all
of them alike. Besides wall-clock time it prints each command's CPU time (user + system, from wait4): on a
virtual machine whose speed drifts with its neighbours the CPU figure moves less than the wall-clock one. The
target applies to the wall-clock median. ``python3 -c pass`` is timed too: the floor a Python command cannot
go below on this machine.

Usage: python benchmarks/bench_front_door.py [--runs 15]
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGET_S = 0.3
COMMANDS = {"estimate": ["estimate"], "--help": ["--help"], "estimate --json": ["estimate", "--json"]}


def _entry() -> list[str]:
    exe = shutil.which("trainsizer")
    return [exe] if exe else [sys.executable, "-m", "trainsizer.cli"]


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds user + system) of one run of ``argv`` to completion."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    import trainsizer

    compileall.compile_dir(Path(trainsizer.__file__).parent, quiet=1)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    entry = _entry()
    runs = {label: entry + argv for label, argv in COMMANDS.items()}
    runs["(python3 -c pass)"] = [sys.executable, "-c", "pass"]
    for argv in runs.values():
        _timed(argv, env)  # warm the OS file cache and the data cache
    walls: dict[str, list[float]] = {label: [] for label in runs}
    cpus: dict[str, list[float]] = {label: [] for label in runs}
    for _ in range(args.runs):
        for label, argv in runs.items():
            wall, cpu = _timed(argv, env)
            walls[label].append(wall)
            cpus[label].append(cpu)
    print(f"entry point: {' '.join(entry)}; {args.runs} interleaved rounds; load average {os.getloadavg()[0]:.2f}")
    for label in runs:
        med = statistics.median(walls[label])
        verdict = "" if label.startswith("(") else ("OK" if med <= TARGET_S else "SLOW")
        print(f"trainsizer {label:<18} wall median {med:.3f} s  min {min(walls[label]):.3f} s  "
              f"CPU median {statistics.median(cpus[label]):.3f} s  target <= {TARGET_S} s  {verdict}")


if __name__ == "__main__":
    main()
