"""Labels of the web page: the report's own (``i18n.LABELS``) plus the page's, as English message ids of
the one catalog (:mod:`trainsizer.i18n`). ``labels(lang)`` gives one flat mapping for the templates."""

from __future__ import annotations

from functools import cache

from trainsizer.i18n import LABELS, LANGS, N_, tr
from trainsizer.report.charts import TIGHT_FRACTION
from trainsizer.workflows.defaults import DEFAULT_MAX_OOM_RISK

WEB_LABELS: dict[str, str] = {
    "page_title": N_("trainsizer planner"),
    "tagline": N_("For this model, trained this way, what GPUs do we need?"),
    "language": N_("Language"),
    "model": N_("Model"),
    "preset": N_("Preset (search the catalog)"),
    "config_json": N_("…or paste a Hugging Face config.json"),
    "config_hint": N_("When filled, it is used instead of the preset."),
    "training": N_("Training"),
    "method": N_("Method"),
    "precision": N_("Precision"),
    "optimizer": N_("Optimizer"),
    "framework": N_("Training framework"),
    "micro_batch": N_("Micro-batch size"),
    "seq_len": N_("Sequence length"),
    "mean_tokens": N_("Mean tokens per sample"),
    "max_tokens": N_("Longest sample (tokens)"),
    "lengths_hint": N_("optional: from trainsizer data-shape; memory takes the longest, speed the mean"),
    "global_batch": N_("Global batch (sequences per step)"),
    "tokens": N_("Training tokens"),
    "checkpointing": N_("Activation checkpointing"),
    "lora_rank": N_("LoRA rank"),
    "lora_targets": N_("LoRA targets"),
    "targets_default": N_("peft default"),
    "quantization": N_("Quantization (QLoRA)"),
    "none": N_("none"),
    "constraints": N_("Constraints"),
    "gpus_allowed": N_("GPUs allowed (none selected = all)"),
    "max_gpus": N_("Max GPUs"),
    "gpus_per_node": N_("GPUs per server"),
    "any": N_("any"),
    "budget": N_("Budget"),
    "currency": N_("Currency"),
    "deadline_days": N_("Deadline (days)"),
    "site": N_("Site"),
    "per_rack": N_("{kw} kW per rack"),
    "horizon": N_("Horizon (years)"),
    "utilisation": N_("Utilisation"),
    "time_value": N_("Time value per hour (empty: one engineer's pay)"),
    "setup_minutes": N_("Setup minutes (empty: from the model's size)"),
    "objective": N_("Objective"),
    "objective_cheapest": N_("cheapest run (time valued)"),
    "objective_fastest": N_("fastest"),
    "objective_fewest-gpus": N_("fewest GPUs"),
    "runs_per_month": N_("Runs per month (bought hardware)"),
    "voucher": N_("Compute voucher (rentals)"),
    "one_run": N_("One run"),
    "want_scale": N_("Also draw the scaling curve"),
    "submit": N_("Plan"),
    "planning": N_("Planning…"),
    "failed": N_("The request failed"),
    "busy": N_("The planner is busy; try again in a moment."),
    "invalid_json": N_("not valid JSON"),
    "layout": N_("Layout"),
    "step_time": N_("Step time"),
    "tokens_per_s": N_("Tokens/s"),
    "mfu": N_("MFU"),
    "time_to_train": N_("Time to train"),
    "memory_per_gpu": N_("Memory per GPU"),
    "why_option": N_("What binds"),
    "power": N_("Power"),
    "site_fit": N_("Site fit"),
    "rent_vs_buy": N_("Rent vs buy"),
    "capex": N_("Buy: capex"),
    "opex": N_("Buy: opex per year"),
    "rent_year": N_("Rent per year"),
    "verdict": N_("Verdict"),
    "no_cost": N_("no price data for this GPU"),
    "charts": N_("Charts"),
    "gpus": N_("GPUs"),
    "rankings": N_("Rankings"),
    "gpu": N_("GPU"),
    "nodes": N_("Servers"),
    "ranked": N_("Ranked"),
    "compare": N_("Compare"),
    "compare_title": N_("Two options side by side"),
    "compare_hint": N_("Tick two rows of the rankings table to compare them."),
    "r_recommended": N_("recommended"),
    "r_fastest": N_("fastest"),
    "r_fewest_gpus": N_("fewest GPUs"),
    "r_best_mfu": N_("best MFU"),
    "r_cheapest_to_buy": N_("cheapest to buy"),
    "r_pareto_time_vs_gpus": N_("Pareto"),
    "fits_site": N_("fits"),
    "no_fit_site": N_("does not fit"),
    "candidates": N_("{n} candidate layouts screened"),
    "day_span": N_("{lo}-{hi} days"),
    "recommendation_detail": N_("Recommendation in detail"),
    "timeline": N_("Deployment timeline"),
    "verification": N_("Verify before you buy"),
    "prices_used": N_("Prices used"),
    "api_docs": N_("API (OpenAPI)"),
    "mem_fits": N_("fits"),
    "mem_tight": N_("tight: over {pct} of capacity"),
    "mem_no_fit": N_("does not fit"),
    "download": N_("Download the plan"),
    "download_xlsx": N_("Excel (.xlsx)"),
    "download_csv": N_("CSV"),
    "export_failed": N_("The download failed"),
    "on_the_machine": N_("on the machine:"),
    "oom_rule": N_("Only a layout whose chance of running out of memory is at most {pct} is recommended (the planner's "
                   "rule)."),
    "job_file": N_("The job with the plan's layout and hardware, the file the commands below take:"),
    "ck_none": N_("no recomputation"),
    "ck_selective": N_("selective recomputation"),
    "ck_full": N_("full recomputation"),
    "original": N_("the original"),
    "tokens_hint": N_("e.g. 2e8, 200M or 2亿"),
    "budget_hint": N_("e.g. 200000 or 20万"),
    "bad_number": N_("“{value}” is not a number; write it as 200000000, 2e8, 200M or 2亿"),
}


def resolve(lang: str | None, accept_language: str | None = None) -> str:
    """``lang`` when it is one of LANGS, else Chinese for an Accept-Language starting with zh."""
    if lang in LANGS:
        return lang
    if lang and lang.lower().startswith("zh"):
        return "zh-CN"
    if lang is None and accept_language and accept_language.strip().lower().startswith("zh"):
        return "zh-CN"
    return "en"


@cache
def labels(lang: str) -> dict[str, str]:
    lang = resolve(lang)
    merged = {key: tr(msgid, lang) for key, msgid in LABELS.items()}
    merged.update({key: tr(msgid, lang) for key, msgid in WEB_LABELS.items()})
    merged["mem_tight"] = tr(WEB_LABELS["mem_tight"], lang, pct=f"{TIGHT_FRACTION:.0%}")
    merged["oom_rule"] = tr(WEB_LABELS["oom_rule"], lang, pct=f"{DEFAULT_MAX_OOM_RISK:.0%}")
    return merged
