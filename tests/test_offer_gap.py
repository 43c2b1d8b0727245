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

# Continued pre-training of Llama-3.1-70B on 50 B tokens: in the US no known offer rents its layouts by the hour.
LLAMA_70B_CPT = {"model": {"preset": "llama-3.1-70b"},
                 "training": {"method": "full", "framework": "megatron-lm", "precision": "bf16-mixed",
                              "optimizer": "adamw", "micro_batch_size": 1, "seq_len": 8192, "global_batch_size": 256,
                              "activation_checkpointing": "selective", "tokens": 5.0e10}}


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
    # what decided it is the objective, not the cost of cheaper options it never weighed
    assert rec["binding"]["code"] == "fastest"


def test_a_quoted_answers_cost_range_is_the_range_of_the_cost_it_states(tmp_path):
    """Where the answer is the layout to ask a quote on, its range (80 %) is of its GPU time, the cost the answer
    states (the plan's offer_gap.floor_range), not of the option's priced run (here a purchase)."""
    from trainsizer.report.answer import card

    req = PlanRequest(currency="USD", deadline_s=30 * 86400)
    out = plan_job(load_job(_job(tmp_path, LLAMA_70B_CPT)), req).out
    rec, gap = out["recommendation"], out["offer_gap"]
    assert rec is not None and rec["acquisition"] == "quote" and gap is not None
    lo, hi = gap["floor_range"]
    assert lo < rec["per_run"] < hi
    priced = out["options"][rec["option"]]["range"]["per_run_cost"]
    assert priced[0] > hi  # the layout's priced run costs more than its GPU time: its range is not the answer's
    facts = dict(card(out, "en")["facts"])
    assert f"{lo:,} USD–{hi:,} USD a run" in facts["Range (80 %)"]
    from trainsizer.report.tables import recommendation_sheet  # the exported sheet says the same range

    sheet = recommendation_sheet(out, out["options"][rec["option"]], True).rows
    assert [r[1] for r in sheet if str(r[0]).startswith("one training run, ")] == [lo, hi]
