"""The plan's types for its faces (workflows.plan_schema) say what the plan really holds: every key the plan writes
is declared, every required key is written, in every option, its run, range and the recommendation, for plans that
rent, buy, price per token and claim a voucher."""

from __future__ import annotations

import types
from typing import Any, Union, get_args, get_origin, get_type_hints, is_typeddict

import pytest
from conftest import REPO

from trainsizer.workflows.catalogs import ModelRow, PriceRow, model_rows, price_rows
from trainsizer.workflows.jobs import load_job
from trainsizer.workflows.plan_job import PlanRequest, plan_job, price_hardware
from trainsizer.workflows.plan_schema import ExportJSON, HardwareCostJSON, PlanJSON, ReportJSON
from trainsizer.workflows.report_model import build_report


def mismatches(value: Any, tp: Any, path: str = "") -> list[str]:
    """Where ``value`` strays from ``tp``: a TypedDict's keys (missing required, undeclared), followed into its
    values, lists and unions; other leaves are not checked."""
    if is_typeddict(tp):
        if not isinstance(value, dict):
            return [f"{path}: {type(value).__name__}, not a {tp.__name__}"]
        declared = tp.__required_keys__ | tp.__optional_keys__
        out = [f"{path}.{k}: missing" for k in sorted(tp.__required_keys__ - value.keys())]
        out += [f"{path}.{k}: not declared in {tp.__name__}" for k in sorted(value.keys() - declared)]
        hints = get_type_hints(tp)
        for k in sorted(value.keys() & declared):
            out += mismatches(value[k], hints[k], f"{path}.{k}")
        return out
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in get_args(tp):
            return []
        tried = [mismatches(value, arg, path) for arg in get_args(tp) if arg is not type(None)]
        return [] if any(not t for t in tried) else tried[0]
    if origin is list and isinstance(value, list):
        return [m for i, item in enumerate(value) for m in mismatches(item, get_args(tp)[0], f"{path}[{i}]")]
    return []


QWEN = REPO / "examples" / "jobs" / "qwen2.5-7b-lora.yaml"
LLAMA = REPO / "examples" / "jobs" / "llama-3.1-70b-full-finetune.yaml"


@pytest.mark.parametrize(("job", "req"), [
    (QWEN, PlanRequest(currency="CNY", all_options=True)),
    (QWEN, PlanRequest(currency="CNY", voucher="chengdu-compute-voucher-2025", budget=3000)),
    (LLAMA, PlanRequest(currency="CNY", runs_per_month=4)),
], ids=["rent", "voucher-budget", "buy"])
def test_the_plan_holds_the_keys_its_types_declare(job, req):
    out = plan_job(load_job(job), req).out
    assert out["options"] and out["recommendation"]
    assert mismatches(out, PlanJSON, "plan") == []


def test_a_run_without_its_length_is_priced_per_token_as_declared():
    job = load_job(QWEN)
    job = job.model_copy(update={"training": job.training.model_copy(update={"tokens": None})})
    out = plan_job(job, PlanRequest(currency="CNY", max_gpus=8)).out
    assert any("cost_per_million_tokens" in o["per_run"] for o in out["options"])
    assert mismatches(out, PlanJSON, "plan") == []


def test_the_report_model_holds_the_keys_its_type_declares():
    report = build_report(load_job(QWEN), PlanRequest(currency="USD", max_gpus=8), "qwen.yaml")
    assert mismatches(report, ReportJSON, "report") == []


def test_the_priced_hardware_and_the_exports_hold_the_keys_their_types_declare():
    from trainsizer.web.service import report_data

    priced = price_hardware(load_job(QWEN), "h100-sxm5-80gb", 8, PlanRequest(currency="USD"))
    assert mismatches(priced, HardwareCostJSON, "cost") == []
    export = report_data(plan_job(load_job(QWEN), PlanRequest(currency="CNY", max_gpus=8)))
    assert export["recommended"] is not None and mismatches(export, ExportJSON, "export") == []


def test_the_catalog_rows_hold_the_keys_their_types_declare():
    models, prices = model_rows(), price_rows()
    assert models and prices and any(r["machine"] for r in prices)
    assert [m for r in models for m in mismatches(r, ModelRow, r["id"])] == []
    assert [m for r in prices for m in mismatches(r, PriceRow, str(r["item"]))] == []


def test_a_stray_key_is_caught():
    out = plan_job(load_job(QWEN), PlanRequest(currency="CNY", max_gpus=8)).out
    out["options"][0]["per_run"]["typo"] = 1
    del out["options"][0]["hardware"]["gpu"]
    assert set(mismatches(out, PlanJSON, "plan")) == {"plan.options[0].per_run.typo: not declared in PerRunJSON",
                                                      "plan.options[0].hardware.gpu: missing"}
