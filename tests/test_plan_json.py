"""The plan's JSON (docs/plan-json.md): the answer and its runner-ups in full, every other option sized to the job
as its summary, every option in full with --all; small enough for a script and the web API to read on every call."""

from __future__ import annotations

import json

from conftest import REPO
from typer.testing import CliRunner

from trainsizer.cli import app
from trainsizer.workflows.plan_json import SUMMARY_KEYS, detailed_options, plan_json

JOB = str(REPO / "examples" / "jobs" / "qwen2.5-7b-lora.yaml")
LIMIT_BYTES = 150_000  # the 7B LoRA plan as `plan --json` prints it


def _plan(*extra: str) -> tuple[dict, int]:
    res = CliRunner().invoke(app, ["plan", JOB, "--currency", "CNY", "--json", *extra])
    assert res.exit_code == 0, res.output[-2000:]
    return json.loads(res.stdout), len(res.stdout.encode("utf-8"))


def test_the_7b_plan_json_is_small_and_keeps_the_answer_in_full():
    out, size = _plan()
    assert size < LIMIT_BYTES, size
    rec = out["recommendation"]
    full = {rec["option"], *(r["option"] for r in rec["runner_ups"])}
    assert len(full) >= 2 and len(out["options"]) > len(full)  # a real answer with runner-ups, and more options
    for i, o in enumerate(out["options"]):
        assert o["detail"] == ("full" if i in full else "summary")
        if i not in full:
            assert set(o) == {*SUMMARY_KEYS, "detail"} - ({"range"} if "range" not in o else set())
    pick = out["options"][rec["option"]]
    assert {"system", "verdict", "why"} <= set(pick) and "breakdown_s" in pick["performance"]
    for idx in out["rankings"].values():  # every index still points at an option
        assert all(0 <= i < len(out["options"]) for i in idx)


def test_all_gives_every_option_in_full():
    out, size = _plan("--all")
    assert size > LIMIT_BYTES  # the lean form above is the smaller one
    assert out["options"] and all(o["detail"] == "full" and "system" in o for o in out["options"])


def test_a_summary_keeps_the_values_of_the_full_option():
    full = {"hardware": {"gpu": "x", "gpus": 2}, "parallel": {"tp": 1}, "training": {"micro_batch_size": 4,
            "activation_checkpointing": "none", "method": "lora"}, "memory": {"device_gib": 10.0, "capacity_gib": 24.0,
            "components_gib": {}}, "performance": {"step_time_s": 1.0, "tokens_per_s": 5.0, "mfu": 0.3,
            "breakdown_s": {}}, "per_run": {"acquisition": "rent", "cost": 7, "commitment": 7, "rent": {}},
            "why": {"code": "x"}, "system": {}}
    out = {"options": [full, full], "recommendation": {"option": 1, "runner_ups": []}}
    assert detailed_options(out) == {1}
    lean = plan_json(out)
    summary = lean["options"][0]
    assert summary["training"] == {"micro_batch_size": 4, "activation_checkpointing": "none"}
    assert summary["per_run"] == {"acquisition": "rent", "cost": 7, "commitment": 7}
    assert "why" not in summary and "system" not in summary and lean["options"][1]["system"] == {}
    assert out["options"][0] is full and "detail" not in full  # the plan itself is left as it was
