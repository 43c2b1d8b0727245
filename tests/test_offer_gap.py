"""Where no known offer rents a layout by the hour (workflows.offer_gap): the answer on each objective, and the
figures it states with their ranges."""

from __future__ import annotations

from pathlib import Path

import yaml

from trainsizer.workflows.decide import NEAR_TIE
from trainsizer.workflows.jobs import load_job
from trainsizer.workflows.plan_job import PlanRequest, plan_job

# A full fine-tune of Qwen2.5-14B on 0.5 B tokens: in China an 8-card instance rents it by the hour, while its fastest
# layouts (hundreds of GPUs) are had only on a multi-year contract or bought.
QWEN_14B_FULL = {"model": {"preset": "qwen2.5-14b"},
                 "training": {"method": "full", "framework": "llama-factory+deepspeed", "precision": "bf16-mixed",
                              "optimizer": "adamw", "micro_batch_size": 1, "seq_len": 4096, "global_batch_size": 64,
                              "activation_checkpointing": "full", "tokens": 5.0e8}}


def _job(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_the_fastest_answer_is_the_fastest_option_priced_on_its_own_offer(tmp_path):
    """On --objective fastest the answer is the fastest option that can be had, priced on its offer; where no offer
    rents that layout by the hour, its own GPU time is said beside it (never another layout's quote)."""
    out = plan_job(load_job(_job(tmp_path, QWEN_14B_FULL)), PlanRequest(currency="CNY", objective="fastest")).out
    rec, options = out["recommendation"], out["options"]
    assert rec is not None and rec["acquisition"] in ("rent", "buy")
    had = [o for o in options if (o.get("per_run") or {}).get("acquisition")
           and o["range"]["p_exceeds_capacity"] <= 0.1]
    fastest = min(o["performance"]["time_to_train_s"] for o in had)
    pick = options[rec["option"]]
    assert pick["performance"]["time_to_train_s"] <= fastest * (1 + NEAR_TIE)
    assert rec["per_run"] == pick["per_run"]["cost"]
    gap = out["offer_gap"]
    assert gap is None or ((gap["gpu"], gap["gpus"]) == (rec["gpu"], rec["gpus"]) and not gap.get("leads"))
