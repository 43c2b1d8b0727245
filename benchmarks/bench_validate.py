"""`trainsizer validate --view user --json` (every shipped case, held out by publication and by GPU family, the
ranges' nested coverage) timed as its own process, once with the folds one after another (`TRAINSIZER_JOBS=1`) and
once on every core (`evidence/fold_pool.py`); the two answers must be byte for byte the same. Target: under 10
minutes on two cores, the hang guard of tests/test_shipped_fit.py well above it.

Usage: python benchmarks/bench_validate.py [--jobs 1 2]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
from trainsizer.evidence.fold_pool import JOBS_ENV, jobs  # noqa: E402  (this checkout's package)

TARGET_S = 600.0


def run(workers: int) -> tuple[float, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), JOBS_ENV: str(workers)}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "trainsizer.cli", "validate", "--view", "user", "--json"],
                          capture_output=True, env=env, check=True)
    return time.perf_counter() - start, hashlib.sha256(proc.stdout).hexdigest()[:16]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, jobs()])
    args = parser.parse_args()
    answers = set()
    for workers in args.jobs:
        seconds, digest = run(workers)
        answers.add(digest)
        print(f"jobs {workers}: {seconds:7.1f} s  answer {digest}  {'ok' if seconds < TARGET_S else 'OVER TARGET'}")
    print("answers identical" if len(answers) == 1 else "ANSWERS DIFFER")
    return 0 if len(answers) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
