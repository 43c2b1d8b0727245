"""Latency of one memory estimate and of `trainsizer --help` start-up (targets: < 5 ms, < 1 s).

Usage: python benchmarks/bench_estimate.py
"""

from __future__ import annotations

import subprocess
import sys
import time

from trainsizer.api import estimate

SCENARIO = {"model": {"preset": "llama-3.1-70b"},
            "training": {"method": "full", "micro_batch_size": 1, "seq_len": 4096},
            "parallel": {"gpus": 64, "tp": 8, "pp": 2, "zero": 1}, "hardware": {"gpu": "h100-sxm5-80gb"}}


def main() -> None:
    estimate(SCENARIO, with_limits=False)  # warm caches (catalog, presets)
    n = 200
    t0 = time.perf_counter()
    for _ in range(n):
        estimate(SCENARIO, with_limits=False)
    per = (time.perf_counter() - t0) / n
    t0 = time.perf_counter()
    estimate(SCENARIO, with_limits=True)
    with_limits = time.perf_counter() - t0
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "trainsizer.cli", "--help"], capture_output=True, check=True)
    startup = time.perf_counter() - t0
    print(f"estimate (no limits): {per * 1e3:.2f} ms  target < 5 ms  {'OK' if per < 0.005 else 'SLOW'}")
    print(f"estimate with fit limits (binary searches): {with_limits * 1e3:.1f} ms")
    print(f"trainsizer --help start-up: {startup:.2f} s  target < 1 s  {'OK' if startup < 1 else 'SLOW'}")


if __name__ == "__main__":
    main()
