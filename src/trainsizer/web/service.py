"""What each endpoint computes: the workflows the CLI commands call, from request models. Only the
mapping of fields differs (an error names the field of the request body, not the CLI flag)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from trainsizer.errors import InputError
from trainsizer.frameworks import resolve
from trainsizer.models.catalog import find_preset
from trainsizer.scenario import Scenario, scenario_from_dict
from trainsizer.web import schemas as s
from trainsizer.web.errors import FLAG_FIELDS, fields
from trainsizer.workflows import catalogs
from trainsizer.workflows.jobs import job_from_dict
from trainsizer.workflows.plan_job import PlanOutcome, PlanRequest, plan_job, price_hardware

if TYPE_CHECKING:  # the plan document's keys
    from trainsizer.workflows.plan_schema import ExportJSON, HardwareCostJSON, PlanJSON

__all__ = ["FormSaid", "PlanOutcome", "ReadAs", "catalog", "cost", "estimate", "plan", "quotes", "report_data",
           "scale", "scale_curves"]


@dataclass(frozen=True, slots=True)
class ReadAs:
    """A model named as people type it, read as a preset: the name given, the preset, the tuned variant it named."""

    given: str
    preset: str
    variant: str | None


@dataclass(frozen=True, slots=True)
class FormSaid:
    """What the page's answer says of the form: the preset a model name was read as, and the settings the plan's
    layout does not keep as (field, given, used)."""

    model: ReadAs | None
    changed: list[tuple[str, Any, Any]]


def _job_dict(job: s.JobIn) -> dict[str, Any]:  # the job document job_from_dict parses
    model = job.model.model_dump(exclude_none=True)
    if (read := model_read_as(job)) is not None:
        model["preset"] = read.preset
    data = {"data": job.data.model_dump(exclude_unset=True)} if job.data is not None else {}
    return {"model": model, "training": job.training.model_dump(exclude_unset=True), **data}


CHOSEN = ("micro_batch_size", "activation_checkpointing")  # settings the form sends that the planner searches


def settings_changed(job: s.JobIn, out: PlanJSON) -> list[tuple[str, Any, Any]]:
    """The settings the user gave that the recommended (else fastest) layout does not keep: (field, given, used)."""
    rec = out["rankings"].get("recommended") or [0]
    if not out["options"]:
        return []
    used, given = out["options"][rec[0]]["training"], job.training.model_dump(exclude_unset=True)
    return [(key, given[key], used[key]) for key in CHOSEN if key in given and key in used and given[key] != used[key]]


def model_read_as(job: s.JobIn) -> ReadAs | None:
    """A model named as people type it (``Qwen2.5-7B-Instruct``, ``千问2.5-7B``) -> :class:`ReadAs`:
    the preset it was read as, and the tuned variant it named (the base model's architecture); None for a
    preset id as it is, an inline architecture or an unknown name (that one is an error, with the closest ids)."""
    given = job.model.preset
    found = find_preset(given) if given else None
    if found is None or found[0] == given:
        return None
    return ReadAs(given=given, preset=found[0], variant=found[1])


def build_job(job: s.JobIn, gpu: str | None, prefix: str = "job") -> Scenario:
    """A job as the planner takes it (one GPU, layout left to the search), with its framework's profile applied as
    the CLI applies it (``training.framework``, else the one assumed for its method: ``trainsizer.frameworks``)."""
    with fields(job_prefix=prefix):
        return resolve(job_from_dict(_job_dict(job), [gpu] if gpu else None, source=prefix))[0]


def _check_gpu_ids(ids: list[str], field: str, indexed: bool = True) -> tuple[str, ...]:
    cat = catalogs.accelerators_and_links()
    for i, gid in enumerate(ids):
        where = f"{field}[{i}]" if indexed else field
        with fields({"--gpu": where, "hardware.gpu": where}):
            cat.accelerator(gid, "--gpu")
    return tuple(dict.fromkeys(ids))


def estimate(req: s.EstimateIn) -> dict[str, Any]:
    from trainsizer.workflows.estimate_job import estimate_scenario

    data = {"model": req.model.model_dump(exclude_none=True), "training": req.training.model_dump(exclude_unset=True),
            "parallel": req.parallel.model_dump(exclude_unset=True),
            "hardware": req.hardware.model_dump(exclude_unset=True)}
    return estimate_scenario(scenario_from_dict(data)).to_dict()


def plan(req: s.PlanIn) -> PlanOutcome:
    c = req.constraints
    gpus = _check_gpu_ids(c.gpus, "constraints.gpus")
    scenario = build_job(req.job, gpus[0] if gpus else None)
    with fields(FLAG_FIELDS | {"--deadline": "constraints.deadline_days"}, job_prefix="job"):
        request = PlanRequest(gpus=gpus, max_gpus=c.max_gpus, gpus_per_node=c.gpus_per_node, top=c.top,
                              deadline_s=c.deadline_days * 86400 if c.deadline_days else None, site=c.site,
                              budget=c.budget, currency=c.currency, horizon_years=c.horizon_years,
                              utilisation=c.utilisation, market=c.market, objective=c.objective,
                              runs_per_month=c.runs_per_month, time_value=c.time_value, all_options=c.all_options,
                              voucher=c.voucher, max_oom_risk=c.max_oom_risk, setup_minutes=c.setup_minutes)
        if request.deadline_s and not scenario.training.tokens:
            raise InputError("--deadline", "needs job.training.tokens to compute the time to train")
        return plan_job(scenario, request)


def report_data(outcome: PlanOutcome) -> ExportJSON:
    """What the exports read of a report model, from the plan the page computed: the plan, its recommended
    (else fastest) option and the assumptions with their sources (the report's own list)."""
    from trainsizer.workflows.report_model import assumptions, picked

    out, i = outcome.out, picked(outcome)
    pick = None if i is None else outcome.result.options[i]
    return {"plan": out, "recommended": None if i is None else out["options"][i], "assumptions": assumptions(out, pick)}


def scale_curves(scenario: Scenario, gpu: str, max_gpus: int, gpus_per_node: int | None) -> list[Any]:
    from trainsizer.workflows.scale_job import scale_job

    with fields(FLAG_FIELDS | {"--gpu": "gpu", "--max-gpus": "max_gpus", "--gpus-per-node": "gpus_per_node"},
                job_prefix="job"):
        return scale_job(scenario, gpu, max_gpus, gpus_per_node)


def scale(req: s.ScaleIn) -> dict[str, Any]:
    _check_gpu_ids([req.gpu], "gpu", indexed=False)
    curves = scale_curves(build_job(req.job, req.gpu), req.gpu, req.max_gpus, req.gpus_per_node)
    return {"gpu": req.gpu, "curves": [c.to_dict() for c in curves]}


def cost(req: s.CostIn) -> HardwareCostJSON:
    """The fastest layout of the job on exactly this hardware, with its servers, site fit and cost."""
    _check_gpu_ids([req.gpu], "gpu", indexed=False)
    scenario = build_job(req.job, req.gpu)
    flags = {"--max-gpus": "gpus", "--gpus-per-node": "gpus_per_node", "--gpu": "gpu", "--site": "site",
             "--utilisation": "utilisation", "--horizon": "horizon_years", "--currency": "currency"}
    with fields(flags, job_prefix="job"):
        request = PlanRequest(gpus=(req.gpu,), max_gpus=req.gpus, gpus_per_node=req.gpus_per_node, top=1, site=req.site,
                              currency=req.currency, horizon_years=req.horizon_years, utilisation=req.utilisation)
        return price_hardware(scenario, req.gpu, req.gpus, request)


def quotes(req: s.QuotesIn) -> dict[str, Any]:
    from trainsizer.workflows.quotes import compare_offers

    cat = catalogs.accelerators_and_links()
    for i, q in enumerate(req.quotes):
        where = f"quotes[{i}]"
        with fields({"quotes.gpu": f"{where}.gpu", "hardware.gpu": f"{where}.gpu"}):
            cat.accelerator(q.gpu, f"{where}.gpu")
        if q.inter_node is not None:
            with fields({"hardware.inter_node": f"{where}.inter_node"}):
                cat.link(q.inter_node, f"{where}.inter_node")
        if q.servers * q.gpus_per_server > s.MAX_QUOTE_GPUS:
            raise InputError(f"{where}.servers", f"{q.servers} x {q.gpus_per_server} GPUs; accepted: at most "
                             f"{s.MAX_QUOTE_GPUS} GPUs per quote")
        if req.job is not None and q.gpus_per_server not in (1, 2, 4, 8, 16):
            raise InputError(f"{where}.gpus_per_server", f"{q.gpus_per_server}; accepted with a job: 1, 2, 4, 8, 16")
    scenario = build_job(req.job, req.quotes[0].gpu) if req.job is not None else None
    with fields(job_prefix="job"):
        return compare_offers(list(req.quotes), req.currency, scenario, cat)


def catalog(kind: str) -> list[dict[str, Any]]:
    return catalogs.rows(kind)


def job_yaml(outcome: PlanOutcome) -> str:
    """The recommended (else fastest) option as a scenario file, the ``JOB.yaml`` the verification steps' commands
    take (``trainsizer probe memory trainsizer-job.yaml``): the job with the layout and hardware the plan chose."""
    from trainsizer.yaml_text import dump_yaml

    rec = outcome.out["rankings"].get("recommended") or [0]
    if not outcome.result.options:
        raise InputError("job", "no option to write: nothing fits within these limits")
    scenario = outcome.result.options[rec[0]].scenario
    return dump_yaml(scenario.model_dump(mode="json", exclude_none=True, exclude_defaults=True))
