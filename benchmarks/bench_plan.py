"""Planner speed, each figure a range (min / median / max) over repeated runs, wall-clock and CPU time, with the
machine's cores and load:

- in process, each run from cold per-job caches (``estimate.estimator.clear_caches``; the data files stay
  loaded): the 7B LoRA whole-catalog plan (examples/jobs/qwen2.5-7b-lora.yaml) in USD and CNY through the full
  pipeline (``plan_job``: search, exact re-check, pricing), target <= 150 ms; the 70B whole-catalog search up to
  1,024 GPUs, target <= 1 s;
- as a process (interpreter start and imports included, bytecode compiled first as pip does): ``trainsizer plan``
  of the 7B job (target <= 0.5 s) and ``trainsizer estimate`` (target <= 0.25 s).

The targets are for 2 idle cores. On a shared machine the wall-clock figures move with the neighbours; the CPU
figures much less.

Usage: python benchmarks/bench_plan.py [--runs 7]
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from trainsizer.estimate.estimator import clear_caches
from trainsizer.models.catalog import resolve_model
from trainsizer.plan.search import Constraints, plan
from trainsizer.scenario import scenario_from_dict
from trainsizer.workflows.jobs import load_job
from trainsizer.workflows.plan_job import PlanRequest, plan_job

ROOT = Path(__file__).resolve().parents[1]
JOB_7B = ROOT / "examples" / "jobs" / "qwen2.5-7b-lora.yaml"
JOB_70B = {"model": {"preset": "llama-3.1-70b"},
           "training": {"method": "full", "precision": "bf16-mixed", "micro_batch_size": 1, "seq_len": 4096,
                        "global_batch_size": 512, "tokens": 2.0e10},
           "parallel": {"gpus": 1}, "hardware": {"gpu": "h100-sxm5-80gb"}}


def _range(values: list[float], unit: float = 1000.0, fmt: str = "{:.0f}") -> str:
    v = sorted(values)
    return "/".join(fmt.format(x * unit) for x in (v[0], statistics.median(v), v[-1]))


def in_process(label: str, run: Callable[[], object], runs: int, target_s: float) -> None:
    walls, cpus = [], []
    for _ in range(runs):
        clear_caches()
        t0, c0 = time.perf_counter(), time.process_time()
        run()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    verdict = "OK" if statistics.median(walls) <= target_s else "SLOW"
    print(f"{label}: wall {_range(walls)} ms, CPU {_range(cpus)} ms (min/median/max of {runs})  "
          f"target <= {target_s * 1000:.0f} ms  {verdict}")


def as_process(label: str, argv: list[str], runs: int, target_s: float) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    walls, cpus = [], []
    subprocess.run(argv, capture_output=True, check=True, env=env)  # warm the file cache and the data cache
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        walls.append(time.perf_counter() - t0)
        cpus.append(usage.ru_utime + usage.ru_stime)
        if os.waitstatus_to_exitcode(status):
            raise SystemExit(f"{' '.join(argv)} failed")
    verdict = "OK" if statistics.median(walls) <= target_s else "SLOW"
    print(f"{label}: wall {_range(walls, 1, '{:.2f}')} s, CPU {_range(cpus, 1, '{:.2f}')} s (min/median/max of "
          f"{runs})  target <= {target_s} s  {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    import trainsizer

    compileall.compile_dir(Path(trainsizer.__file__).parent, quiet=1)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"{cores} cores, load average {os.getloadavg()[0]:.2f}")
    job7 = load_job(JOB_7B)
    job70 = scenario_from_dict(JOB_70B)
    arch70 = resolve_model(job70.model)
    plan_job(load_job(ROOT / "src" / "trainsizer" / "examples" / "default.yaml"), PlanRequest())  # data loaded
    in_process("plan 7B LoRA, whole catalog (plan_job, USD)", lambda: plan_job(job7, PlanRequest(currency="USD")),
               args.runs, 0.15)
    in_process("plan 7B LoRA, whole catalog (plan_job, CNY)", lambda: plan_job(job7, PlanRequest(currency="CNY")),
               args.runs, 0.15)
    result = plan(job70, arch70, Constraints(max_gpus=1024))
    in_process(f"plan 70B full, whole catalog up to 1024 GPUs (search: {result.evaluated:,} layouts screened, "
               f"{len(result.options)} options)", lambda: plan(job70, arch70, Constraints(max_gpus=1024)),
               args.runs, 1.0)
    cli = [sys.executable, "-m", "trainsizer.cli"]
    as_process("trainsizer plan qwen2.5-7b-lora.yaml (process)", [*cli, "plan", str(JOB_7B)], args.runs, 0.5)
    as_process("trainsizer estimate (process)", [*cli, "estimate"], args.runs, 0.25)


if __name__ == "__main__":
    main()
