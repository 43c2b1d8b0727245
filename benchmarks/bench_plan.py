"""Planner speed: full search for a 70B job up to 1,024 GPUs over the whole catalog (target < 2 s on a
2-core machine), candidates screened per second, and `trainsizer estimate` wall time including
interpreter start (target < 0.5 s).

Usage: python benchmarks/bench_plan.py
"""

from __future__ import annotations

import subprocess
import sys
import time

from trainsizer.models.catalog import resolve_model
from trainsizer.plan.search import Constraints, plan
from trainsizer.scenario import scenario_from_dict

JOB = {"model": {"preset": "llama-3.1-70b"},
       "training": {"method": "full", "precision": "bf16-mixed", "micro_batch_size": 1, "seq_len": 4096,
                    "global_batch_size": 512, "tokens": 2.0e10},
       "parallel": {"gpus": 1}, "hardware": {"gpu": "h100-sxm5-80gb"}}


def main() -> None:
    job = scenario_from_dict(JOB)
    arch = resolve_model(job.model)
    plan(job, arch, Constraints(("h100-sxm5-80gb",), max_gpus=8))  # warm caches
    t0 = time.perf_counter()
    result = plan(job, arch, Constraints(max_gpus=1024))
    search = time.perf_counter() - t0
    rate = result.evaluated / search
    print(f"plan 70B, whole catalog, up to 1024 GPUs: {search:.2f} s  target < 2 s  "
          f"{'OK' if search < 2 else 'SLOW'}")
    print(f"  {result.evaluated:,} candidate layouts screened ({rate:,.0f}/s); {len(result.options)} options")
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "trainsizer.cli", "estimate", "--json"], capture_output=True, check=True)
    wall = time.perf_counter() - t0
    print(f"trainsizer estimate (built-in example, interpreter start included): {wall:.2f} s  target < 0.5 s  "
          f"{'OK' if wall < 0.5 else 'SLOW'}")


if __name__ == "__main__":
    main()
