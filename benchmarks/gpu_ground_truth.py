"""Ground truth on a real GPU: `probe memory` over a grid of scenarios, in one process, within a time budget.

Architectures (scaled down with --layers where the full model would not fit), full and LoRA, checkpointing
on and off, two sequence lengths, bf16-mixed and bf16-true. Every run appends its cases to
OUT/cases.yaml as soon as it ends (a timeout loses nothing), and OUT/summary.json holds predicted vs
measured per run. Runs are ordered so that the first ones vary every axis; the budget cuts the tail.

Usage: python benchmarks/gpu_ground_truth.py OUT [--budget-s 360] [--device cuda]
       python benchmarks/gpu_ground_truth.py OUT --smoke --device cpu     # the same code path on tiny models
Called by benchmarks/gpu_ground_truth.sh, which adds the interconnect probe and a burn-in.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
import traceback
from pathlib import Path
from typing import Any

# (model, layers to run or None for full depth): small models at full depth, 7-8B scaled to 4 and 8 layers
MODELS: list[tuple[dict[str, Any], int | None]] = [
    ({"preset": "llama-3.2-1b"}, None),
    ({"preset": "qwen2.5-1.5b"}, None),
    ({"preset": "llama-3.1-8b"}, 4),
    ({"preset": "mistral-7b"}, 4),
    ({"preset": "gpt2-124m"}, None),
]
SMOKE_MODELS: list[tuple[dict[str, Any], int | None]] = [
    ({"architecture": {"model_type": "llama", "hidden_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4,
                       "num_key_value_heads": 2, "intermediate_size": 256, "vocab_size": 512}}, None),
    ({"architecture": {"model_type": "qwen2", "hidden_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4,
                       "num_key_value_heads": 2, "intermediate_size": 256, "vocab_size": 512}}, 1),
]
METHODS = ("full", "lora")
CHECKPOINTING = ("none", "full")
SEQ_LENS = (1024, 4096)
PRECISIONS = ("bf16-mixed", "bf16-true")


def grid(smoke: bool) -> list[tuple[dict[str, Any], int | None, str, str, int, str]]:
    """Every combination, ordered so that consecutive runs differ on as many axes as possible."""
    models = SMOKE_MODELS if smoke else MODELS
    seqs = (32, 64) if smoke else SEQ_LENS
    combos = list(itertools.product(range(len(models)), METHODS, CHECKPOINTING, seqs, PRECISIONS))
    # interleave: sort by how many times each value was already used (a simple space-filling order)
    ordered, used = [], {}
    while combos:
        def score(c: tuple[Any, ...]) -> int:
            return sum(used.get((axis, v), 0) for axis, v in enumerate(c))

        best = min(combos, key=score)
        combos.remove(best)
        ordered.append(best)
        for axis, v in enumerate(best):
            used[(axis, v)] = used.get((axis, v), 0) + 1
    return [(models[m][0], models[m][1], method, ckpt, seq, prec) for m, method, ckpt, seq, prec in ordered]


def scenario_for(model: dict[str, Any], method: str, ckpt: str, seq: int, precision: str) -> Any:
    from trainsizer.scenario import scenario_from_dict

    training: dict[str, Any] = {"method": method, "precision": precision, "optimizer": "adamw",
                                "micro_batch_size": 1, "seq_len": seq, "activation_checkpointing": ckpt,
                                "attention": "sdpa"}
    if method == "lora":
        training["lora"] = {"rank": 16, "alpha": 32, "targets": "all-linear"}
    return scenario_from_dict({"model": model, "training": training, "parallel": {"gpus": 1},
                               "hardware": {"gpu": "h100-sxm5-80gb"}})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--budget-s", type=float, default=360.0)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="tiny models (checks the script on a CPU)")
    args = parser.parse_args()

    from trainsizer.probe.common.gpu_match import local_gpu
    from trainsizer.probe.memory.cases import compare_with_estimate, environment, measured_cases, write_cases
    from trainsizer.probe.memory.measure import measure
    from trainsizer.scenario import scenario_from_dict

    args.out.mkdir(parents=True, exist_ok=True)
    env = environment()
    gpu: Any = local_gpu() or "h100-sxm5-80gb"
    (args.out / "environment.json").write_text(json.dumps({**env, "catalog_gpu": gpu}, indent=2), encoding="utf-8")
    cases_path, summary, start = args.out / "cases.yaml", [], time.monotonic()
    for model, layers, method, ckpt, seq, precision in grid(args.smoke):
        if time.monotonic() - start > args.budget_s:
            summary.append({"stopped": f"budget of {args.budget_s:.0f} s reached"})
            break
        scenario = scenario_for(model, method, ckpt, seq, precision)
        label = f"{model.get('preset', 'inline')} {method} {precision} ckpt={ckpt} seq={seq} layers={layers or 'all'}"
        began = time.monotonic()
        try:
            measurement = measure(scenario, args.device, layers, args.steps)
        except Exception as exc:  # one failing run (e.g. out of memory) must not stop the grid
            summary.append({"run": label, "error": f"{type(exc).__name__}: {exc}",
                            "trace": traceback.format_exc(limit=3)})
            print(f"FAIL {label}: {exc}", flush=True)
            continue
        cases = measured_cases(scenario, gpu, measurement, env, f"benchmarks/gpu_ground_truth.py on "
                               f"{env['hostname']}, {env['date']} ({env.get('gpu_name') or 'CPU'})")
        write_cases(cases_path, cases, append=True)
        predicted = {r["metric"]: r["predicted"] for r in
                     compare_with_estimate(measurement, scenario_from_dict(cases[0]["scenario"]))}
        row = {"run": label, "seconds": round(time.monotonic() - began, 1), **measurement.to_dict(),
               **{f"predicted_{metric}": predicted[metric] for metric in ("allocated_gib", "reserved_gib",
                                                                          "device_gib")}}
        summary.append(row)
        print(f"ok   {label}: allocated {measurement.allocated_gib:.2f} GiB "
              f"(predicted {predicted['allocated_gib']:.2f}), step {measurement.step_time_s:.3f} s, "
              f"{row['seconds']} s", flush=True)
        (args.out / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
