"""Whole-process latency of the front door: `trainsizer estimate` (built-in example, table output) and
`trainsizer --help`, median of N runs each (target: <= 0.3 s for both).

The package's bytecode is compiled first (as `pip install` does), and each run starts a fresh
interpreter with PYTHONDONTWRITEBYTECODE unset, so the figure is what a user's shell sees.

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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    import trainsizer

    compileall.compile_dir(Path(trainsizer.__file__).parent, quiet=1)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    entry = _entry()
    print(f"entry point: {' '.join(entry)}; {args.runs} runs each; load average {os.getloadavg()[0]:.2f}")
    for label, argv in COMMANDS.items():
        subprocess.run(entry + argv, capture_output=True, check=True, env=env)  # warm the OS file cache
        times = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            subprocess.run(entry + argv, capture_output=True, check=True, env=env)
            times.append(time.perf_counter() - t0)
        med = statistics.median(times)
        verdict = "OK" if med <= TARGET_S else "SLOW"
        print(f"trainsizer {label:<16} median {med:.3f} s  min {min(times):.3f} s  target <= {TARGET_S} s  {verdict}")


if __name__ == "__main__":
    main()
