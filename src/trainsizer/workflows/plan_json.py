"""The plan as JSON, what ``plan --json`` and ``/api/plan`` carry (the contract: docs/plan-json.md): the answer, every
option sized to the job and the rankings. The recommended option and its runner-ups come in full (memory
breakdown, step-time terms, servers, costs, verdict, notes); every other option as its summary, the figures the
rankings and a comparison read. ``--all`` (``all_options``) gives every option searched, each in full."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the JSON's types, for annotations
    from trainsizer.workflows.plan_schema import OptionJSON, PlanJSON


# An option's summary: per part of the option, the keys it keeps (the same values as in full).
SUMMARY_KEYS: dict[str, tuple[str, ...] | None] = {
    "hardware": None,  # None: the part whole
    "parallel": None,
    "training": ("micro_batch_size", "activation_checkpointing"),  # the rest is the job's, the same in every option
    "memory": ("device_gib", "capacity_gib"),
    "performance": ("step_time_s", "tokens_per_s", "mfu", "time_to_train_s"),
    "per_run": ("acquisition", "cost", "commitment", "cost_per_million_tokens"),
    "range": ("p_exceeds_capacity", "time_to_train_s", "per_run_cost"),
}
SUMMARY = "summary"
FULL = "full"


def option_summary(option: OptionJSON) -> dict[str, Any]:
    """The option's summary: its layout whole, its headline figures, and ``detail: "summary"``."""
    out: dict[str, Any] = {}
    for part, keys in SUMMARY_KEYS.items():
        value = option.get(part)
        if value is None:
            continue
        out[part] = value if keys is None else {k: value[k] for k in keys if k in value}
    out["detail"] = SUMMARY
    return out


def detailed_options(out: PlanJSON) -> set[int]:
    """The indices of the options shown in full: the recommended one, the priced answer beside a quote, and the
    runner-ups."""
    rec = out.get("recommendation") or {}
    shown = {rec["option"]} if rec.get("option") is not None else set()
    priced = rec.get("priced")
    shown |= {priced["option"]} if priced else set()
    return shown | {r["option"] for r in rec.get("runner_ups") or []}


def plan_json(out: PlanJSON, every_option_in_full: bool = False) -> dict[str, Any]:
    """The plan (``PlanOutcome.out``) as its JSON carries it: options outside the answer as summaries, unless
    ``every_option_in_full`` (``--all``). Indices into ``options`` (rankings, runner-ups) are unchanged."""
    if every_option_in_full:
        return {**out, "options": [{**o, "detail": FULL} for o in out["options"]]}
    full = detailed_options(out)
    options = [{**o, "detail": FULL} if i in full else option_summary(o) for i, o in enumerate(out["options"])]
    return {**out, "options": options}
