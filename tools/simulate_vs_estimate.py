"""Cross-check the analytic memory estimator against the CPU simulation (FakeTensorMode + MemTracker) over a
grid of methods, precisions and checkpointing, component by component. No GPU needed; a few minutes on 2 cores.

Usage: python tools/simulate_vs_estimate.py [--json]

The simulation is the real Hugging Face model code, so where the two differ the estimator's assumptions are
what to look at (see the closing column: the estimator's peak phase). It is not a measurement: no allocator
rounding, CPU kernels for attention; ground truth comes from benchmarks/gpu_ground_truth.sh on a GPU.
"""

from __future__ import annotations

import json
import sys

from trainsizer.api import estimate
from trainsizer.probe.memory.simulate import simulate
from trainsizer.scenario import scenario_from_dict

ARCH = {"model_type": "llama", "hidden_size": 512, "num_hidden_layers": 4, "num_attention_heads": 8,
        "num_key_value_heads": 4, "intermediate_size": 1376, "vocab_size": 8000}
GRID = [("full", "bf16-mixed", "none", 1), ("full", "bf16-true", "none", 1), ("full", "fp32", "none", 1),
        ("full", "bf16-mixed", "full", 1), ("full", "bf16-true", "none", 2), ("lora", "bf16-mixed", "none", 1),
        ("lora", "bf16-true", "full", 1), ("freeze", "bf16-mixed", "none", 1)]


def main() -> None:
    rows = []
    for method, precision, ckpt, accumulation in GRID:
        scenario = scenario_from_dict({
            "model": {"architecture": ARCH},
            "training": {"method": method, "precision": precision, "micro_batch_size": 2, "seq_len": 512,
                         "global_batch_size": 2 * accumulation, "activation_checkpointing": ckpt,
                         "attention": "sdpa"},
            "parallel": {"gpus": 1}, "hardware": {"gpu": "h100-sxm5-80gb"}})
        sim = simulate(scenario)
        est = estimate(scenario, with_limits=False, with_performance=False).memory
        rows.append({"method": method, "precision": precision, "checkpointing": ckpt, "accumulation": accumulation,
                     "simulated_gib": round(sim.peak_gib, 4), "estimated_gib": round(est.allocated_gib, 4),
                     "error": round((est.allocated_gib - sim.peak_gib) / sim.peak_gib, 4),
                     "simulated": {k: round(v, 4) for k, v in sim.groups_gib().items()},
                     "estimated": {k: round(v, 4) for k, v in est.groups_gib().items()},
                     "estimator_peak_phase": est.peak_phase})
    if "--json" in sys.argv:
        print(json.dumps(rows, indent=2))
        return
    print(f"{'method':7} {'precision':10} {'ckpt':5} {'GA':>2} {'sim GiB':>8} {'est GiB':>8} {'error':>7}  "
          f"gradients sim/est  activations sim/est  peak phase (estimator)")
    for r in rows:
        s, e = r["simulated"], r["estimated"]
        print(f"{r['method']:7} {r['precision']:10} {r['checkpointing']:5} {r['accumulation']:>2} "
              f"{r['simulated_gib']:8.3f} {r['estimated_gib']:8.3f} {r['error']:+7.1%}  "
              f"{s['gradients']:.3f}/{e['gradients']:.3f}        {s['activations']:.3f}/{e['activations']:.3f}"
              f"          {r['estimator_peak_phase']}")


if __name__ == "__main__":
    main()
