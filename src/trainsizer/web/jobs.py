"""What a planner worker runs for each endpoint: from the validated request model to a picklable answer
(the JSON API's answer as its encoded bytes, an HTML fragment or a file's bytes). Each calls ``web/service.py``,
the workflows the CLI calls, so the page, the CLI and the report keep one pipeline; ``web/pool.py`` runs them in worker
processes (or in the server's threads), ``web/app.py`` only routes requests to them.

No FastAPI here: a worker process imports this module, the service and the workflows, nothing else.
"""

from __future__ import annotations

import json
from typing import Any

from trainsizer.report.message_text import as_json, face
from trainsizer.web import schemas as s
from trainsizer.web import service
from trainsizer.workflows.plan_json import plan_json

NAMES = ("estimate", "plan", "ui_plan", "ui_answer", "ui_rest", "scale", "cost", "quotes", "export")


def json_bytes(data: Any) -> bytes:
    """An answer of the JSON API as the server sends it, encoded here in the worker: the server passes the bytes on
    instead of validating and re-encoding a 50-300 KB answer in its own process (and pickling it as objects). The
    text is what FastAPI's encoding of a ``dict[str, Any]`` answer gives: plain JSON data as it is (compact, UTF-8),
    anything else through pydantic's JSON mode (dates as ISO text, NaN and infinity as null)."""
    try:
        text = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError):
        from pydantic import TypeAdapter

        plain = TypeAdapter(dict[str, Any]).dump_python(data, mode="json")
        text = json.dumps(plain, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return text.encode("utf-8")


def estimate(req: s.EstimateIn) -> bytes:
    return json_bytes(as_json(service.estimate(req)))


def plan(req: s.PlanIn) -> bytes:
    """The plan as its JSON carries it (``workflows.plan_json``; every message as {code, args, text})."""
    return json_bytes(as_json(plan_json(service.plan(req).out, req.constraints.all_options)))


def scale(req: s.ScaleIn) -> bytes:
    return json_bytes(as_json(service.scale(req)))


def cost(req: s.CostIn) -> bytes:
    return json_bytes(as_json(service.cost(req)))


def quotes(req: s.QuotesIn) -> bytes:
    return json_bytes(as_json(service.quotes(req)))


def ui_answer(req: s.UiPlanIn, lang: str) -> tuple[str, tuple[Any, ...]]:
    """The page's result, first part: the plan made, its start up to the answer card as HTML (sent at once), and
    what :func:`ui_rest` needs for the rest (the plan's data, the job)."""
    from trainsizer.web.render import plan_fragment_head
    from trainsizer.workflows.report_model import picked

    outcome = service.plan(req)
    read_as = service.FormSaid(model=service.model_read_as(req.job),
                               changed=service.settings_changed(req.job, outcome.out))
    head = plan_fragment_head(outcome.out, lang, read_as)
    i = picked(outcome)  # the recommended option, else the fastest: the GPU the scaling curves are drawn for
    gpu = None if i is None else outcome.result.options[i].gpu
    return head, (outcome.out, outcome.scenario, head, read_as, gpu)


def ui_rest(req: s.UiPlanIn, lang: str, state: tuple[Any, ...]) -> str:
    """The page's result after its answer card: the recommended GPU's scaling curves if asked, the charts, the
    rankings and the details (the whole fragment less the part :func:`ui_answer` sent)."""
    from trainsizer.web.render import plan_fragment

    out, scenario, head, read_as, picked_gpu = state
    curves, gpu = None, None
    if req.scale:
        gpu = picked_gpu or (req.constraints.gpus[0] if req.constraints.gpus else None)
        if gpu:
            curves = service.scale_curves(scenario, gpu, min(req.constraints.max_gpus, s.MAX_SCALE_GPUS),
                                          req.constraints.gpus_per_node)
    whole = plan_fragment(out, lang, curves, gpu, read_as)
    if not whole.startswith(head):  # result.html includes result_head.html first: a template edit broke that
        raise RuntimeError("the page's result does not start with its answer card (web/templates/result.html)")
    return whole[len(head):]


def ui_plan(req: s.UiPlanIn, lang: str) -> str:
    """The page's result: the plan as an HTML fragment, with the recommended GPU's scaling curves if asked (the
    two parts the page receives, joined)."""
    head, state = ui_answer(req, lang)
    return head + ui_rest(req, lang, state)


def export(req: s.PlanIn, fmt: str, lang: str = "en") -> tuple[bytes, str]:
    """The plan's sheets (bill of materials and cost) as an .xlsx or .csv file in ``lang``, or the recommended
    option as a job file (``yaml``): its bytes and media type."""
    from trainsizer.report.export import CSV_MEDIA_TYPE, XLSX_MEDIA_TYPE, csv_text, xlsx_bytes
    from trainsizer.report.tables import export_sheets

    outcome = service.plan(req)
    if fmt == "yaml":
        return service.job_yaml(outcome).encode("utf-8"), "application/yaml"
    with face("page"):  # the page's download: its form's fields, not the CLI's flags
        sheets = export_sheets({**service.report_data(outcome), "lang": lang})
    if fmt == "csv":
        return csv_text(sheets).encode("utf-8"), CSV_MEDIA_TYPE
    return xlsx_bytes(sheets, outcome.out["currency"]), XLSX_MEDIA_TYPE


def warm() -> None:
    """A worker's start: parse the catalogs, presets, sites and prices and import the planner's code once,
    by planning a small job, so the first request it takes costs what every later one does."""
    from trainsizer.web.render import environment
    from trainsizer.workflows import catalogs

    catalogs.model_rows()
    catalogs.gpu_rows()
    catalogs.site_rows()
    environment()
    for currency in ("USD", "CNY"):
        example = {"job": s.EXAMPLE_JOB, "constraints": {"gpus": ["rtx-4090-24gb"], "max_gpus": 2,
                                                         "currency": currency}}
        plan(s.PlanIn.model_validate(example))
