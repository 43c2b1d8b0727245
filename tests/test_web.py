"""The web planner's JSON API and page through FastAPI's TestClient, and schemathesis over its OpenAPI
schema: every endpoint answers with the documented keys, a user mistake is 422 naming the field, a
body over 64 KB is 413, a busy planner is 503, and no generated input gets a 5xx."""

from __future__ import annotations

import copy
import re
import warnings

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")
pytest.importorskip("jinja2")

with warnings.catch_warnings():  # starlette's TestClient nudges towards httpx2; httpx is what is installed
    warnings.simplefilter("ignore", DeprecationWarning)
    from fastapi.testclient import TestClient

from hypothesis import HealthCheck, settings  # noqa: E402

from trainsizer.report import words as w  # noqa: E402
from trainsizer.report.message_text import text as _text  # noqa: E402
from trainsizer.web.app import create_app  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

APP = create_app(workers=0)  # in the test process: fast; tests/test_web_pool.py runs the worker pool
TRAINING = {"method": "lora", "precision": "bf16-true", "micro_batch_size": 1, "seq_len": 2048,
            "global_batch_size": 16, "activation_checkpointing": "full", "tokens": 1.0e8,
            "lora": {"rank": 16, "targets": "all-linear"}}
JOB = {"model": {"preset": "qwen2.5-1.5b"}, "training": TRAINING}
SCENARIO = {**JOB, "parallel": {"gpus": 1}, "hardware": {"gpu": "rtx-4090-24gb"}}
QUOTE = {"name": "8x RTX 4090, hourly", "gpu": "rtx-4090-24gb", "gpus_per_server": 8, "price": 1.98,
         "unit": "gpu-hour", "currency": "CNY", "billing": "per-second", "topology": "pcie"}
LLAMA_CONFIG = {"model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 32,
                "num_key_value_heads": 8, "intermediate_size": 8192, "vocab_size": 128256,
                "tie_word_embeddings": True, "hidden_act": "silu"}


@pytest.fixture(scope="module")
def client():
    with TestClient(APP) as c:
        yield c


def with_(data: dict, dotted: str, value: object) -> dict:
    out = copy.deepcopy(data)
    *path, key = dotted.split(".")
    target = out
    for p in path:
        target = target.setdefault(p, {})
    if value is None:
        target.pop(key, None)
    else:
        target[key] = value
    return out


def assert_field(resp, field: str, status: int = 422) -> dict:
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert body["field"] == field, body
    assert body["message"], body
    return body


# --- the page -------------------------------------------------------------------------------------------

def test_page_has_the_form_and_offline_assets(client):
    resp = client.get("/")
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/html")
    html = resp.text
    for testid in ("plan-form", "model-preset", "model-config", "micro-batch", "gpus", "max-gpus", "site",
                   "submit", "error-micro-batch", "lang-zh"):
        assert f'data-testid="{testid}"' in html
    assert "qwen2.5-7b" in html and "rtx-4090-24gb" in html  # datalist of presets, GPU multi-select
    assert "http://" not in html and "https://" not in html  # nothing from a CDN
    for asset in ("/static/app.js", "/static/style.css"):
        assert client.get(asset).status_code == 200


def test_the_form_offers_the_clis_choices_with_its_defaults(client):
    """Objective, runs per month, voucher and time value, as `trainsizer plan` has them: the objective the CLI
    defaults to selected; no workload, voucher or time value assumed by the form (empty = the CLI's default)."""
    from trainsizer.workflows.catalogs import voucher_rows
    from trainsizer.workflows.decide import OBJECTIVES
    from trainsizer.workflows.defaults import DEFAULT_OBJECTIVE

    html = client.get("/").text
    objective = re.search(r'<select id="objective".*?</select>', html, re.S).group(0)
    assert re.findall(r'value="([^"]*)"', objective) == list(OBJECTIVES)
    assert re.search(r'value="([^"]*)" selected', objective).group(1) == DEFAULT_OBJECTIVE
    for field in ("runs-per-month", "utilisation", "time-value"):
        assert re.search(rf'<input id="{field}"[^>]* value=""', html), field
    voucher = re.search(r'<select id="voucher".*?</select>', html, re.S).group(0)
    assert re.findall(r'value="([^"]*)"', voucher) == ["", *[v["id"] for v in voucher_rows()]]
    assert " selected" not in voucher  # no voucher unless the user picks one


def test_a_voucher_from_the_form_is_on_the_card_and_a_wrong_one_names_the_field(client):
    body = {"job": JOB, "constraints": {"gpus": ["rtx-4090d-24gb"], "max_gpus": 4, "currency": "CNY",
                                        "voucher": "chengdu-compute-voucher-2025"}}
    html = client.post("/ui/plan", json=body).text
    assert "voucher 成都算力券 (2025)" in html and "upper bound" in html  # the voucher by its name
    bad = {**body, "constraints": {**body["constraints"], "voucher": "no-such-voucher"}}
    assert_field(client.post("/api/plan", json=bad), "constraints.voucher")


def test_the_forms_sample_lengths_reach_the_plan_and_a_half_given_pair_names_its_field(client):
    """Mean and longest sample from the form reach the plan: memory at the longest sample, a step at the expected
    one, not seq_len."""
    long = with_(with_(JOB, "training.seq_len", 8192), "training.micro_batch_size", 1)
    body = {"job": long, "constraints": {"gpus": ["rtx-4090-24gb"], "max_gpus": 1}}
    shaped = {**body, "job": {**long, "data": {"mean_tokens": 300, "max_tokens": 1000}}}
    plain, short = (client.post("/api/plan", json=b).json()["options"][0] for b in (body, shaped))
    assert short["memory"]["device_gib"] < plain["memory"]["device_gib"]
    assert short["performance"]["step_time_s"] < plain["performance"]["step_time_s"] / 2  # 16 samples, not 16 x 8192
    html = client.get("/").text
    assert 'data-field="job.data.mean_tokens"' in html and 'data-field="job.data.max_tokens"' in html
    half = {**body, "job": {**long, "data": {"mean_tokens": 300}}}
    assert_field(client.post("/api/plan", json=half), "job.data.mean_tokens")


def test_page_in_chinese(client):
    html = client.get("/?lang=zh-CN").text
    assert 'lang="zh-CN"' in html and "微批大小" in html and "开始规划" in html
    assert "微批大小" in client.get("/", headers={"Accept-Language": "zh-CN,zh;q=0.9"}).text
    assert "Micro-batch size" in client.get("/?lang=fr").text


def test_ui_plan_fragment_has_charts_and_rankings(client):
    # the China SKU: the cost chart needs a buy price, shown only where the market sells the part
    body = {"job": JOB, "constraints": {"gpus": ["rtx-4090d-24gb"], "max_gpus": 4, "currency": "CNY"}, "scale": True}
    resp = client.post("/ui/plan?lang=zh-CN", json=body)
    assert resp.status_code == 200, resp.text
    html = resp.text
    for chart in ("chart-memory", "chart-cost", "chart-pareto", "chart-scale"):
        assert f'data-testid="{chart}"' in html
    assert html.count("<svg") >= 4
    assert 'data-testid="rankings-table"' in html and 'data-testid="ranking-row"' in html
    assert "推荐方案" in html and 'data-testid="compare-pick"' in html


def test_ui_plan_without_tokens_or_options(client):
    html = client.post("/ui/plan", json={"job": with_(JOB, "training.tokens", None)}).text
    assert 'data-testid="recommendation"' in html
    heavy = {"job": {"model": {"preset": "llama-3.1-405b"}, "training": {"method": "full", "micro_batch_size": 1,
                                                                       "seq_len": 8192}},
             "constraints": {"gpus": ["rtx-4090-24gb"], "max_gpus": 2}}
    resp = client.post("/ui/plan", json=heavy)
    assert resp.status_code == 200 and 'data-testid="nothing-fits"' in resp.text


def test_ui_plan_error_is_json_naming_the_field(client):
    body = {"job": with_(JOB, "training.micro_batch_size", 0)}
    assert_field(client.post("/ui/plan", json=body), "job.training.micro_batch_size")


# --- phones, accessibility, the page's wording ------------------------------------------------------------

NOTHING_FITS = {"job": {"model": {"preset": "qwen2.5-32b"},
                        "training": {"method": "full", "precision": "bf16-mixed", "optimizer": "adamw",
                                     "micro_batch_size": 1, "seq_len": 2048, "tokens": 1.0e8}},
                "constraints": {"gpus": ["h100-sxm5-80gb"], "max_gpus": 1, "deadline_days": 1}}


def test_favicon_is_served_and_linked(client):
    resp = client.get("/favicon.ico")
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("image/svg+xml")
    assert resp.text.startswith("<svg")
    assert '<link rel="icon" href="static/favicon.svg"' in client.get("/").text
    assert client.get("/static/favicon.svg").status_code == 200


def test_one_live_region_per_result_section(client):
    import re

    page = client.get("/").text
    result = re.search(r'<section id="result"[^>]*>', page).group(0)
    assert "aria-live" not in result  # not one region for the whole answer
    regions = re.findall(r'<div class="result-part" id="result-(\w+)"[^>]*aria-live="polite"', page)
    assert regions == ["answer", "charts", "rankings", "compare", "details"]
    body = {"job": JOB, "constraints": {"gpus": ["rtx-4090-24gb"], "max_gpus": 4}}
    fragment = client.post("/ui/plan", json=body).text
    assert set(re.findall(r'data-slot="(\w+)"', fragment)) == set(regions)
    assert "aria-live" not in fragment  # the page's regions announce it; no live region nested in another


def test_page_text_names_form_fields_not_cli_flags():
    from trainsizer.web.render import page_text

    assert page_text("more GPUs (--max-gpus 32): fits on 8 x h100") == "more GPUs (“Max GPUs”: 32): fits on 8 x h100"
    assert page_text("try without --deadline to see the fastest option's time") == \
        "try with “Deadline (days)” left empty to see the fastest option's time"
    assert page_text("buy: no rental offer for this GPU in the price data (add one with --prices)") == \
        "buy: no rental offer for this GPU in the price data (the built-in price data has none)"
    assert page_text("no purchase price for x; add one with --prices") == \
        "no purchase price for x; the built-in price data has none"
    assert page_text("use --site a or --gpus-per-node 4", "zh-CN") == "use “机房” a or “每台服务器 GPU 数”: 4"
    assert page_text("--calibration x") == "a calibration profile x"
    assert page_text("cap each GPU at 300 W (nvidia-smi -pl 300)") == "cap each GPU at 300 W (nvidia-smi -pl 300)"
    assert page_text("fits: 2 server(s), 10-12 kW") == "fits: 2 server(s), 10-12 kW"
    assert page_text(None) == ""


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_result_page_has_no_cli_flags(client, lang):
    import re

    from trainsizer.i18n import tr

    raw = client.post("/api/plan", json=NOTHING_FITS).json()
    assert any("--max-gpus" in s["text"] for s in raw["suggestions"]) and any("--deadline" in s["text"]
                                                                           for s in raw["suggestions"])
    fragment = client.post(f"/ui/plan?lang={lang}", json=NOTHING_FITS).text
    text = re.sub(r"<code>.*?</code>", "", fragment)  # commands to run on the machine itself
    assert not re.search(r"(?<![\w-])--[a-z]", text), re.findall(r".{40}--[a-z].{20}", text)
    assert "“" in fragment  # the suggestions name the form's fields instead
    for gpu in ("l40s-48gb",):  # no purchase price and no rental offer: "add one with --prices"
        body = {"job": JOB, "constraints": {"gpus": [gpu], "max_gpus": 2}}
        assert "--prices" in client.post("/api/plan", json=body).json()["options"][0]["verdict"]["text"]
        page = client.post(f"/ui/plan?lang={lang}", json=body).text
        assert not re.search(r"(?<![\w-])--[a-z]", re.sub(r"<code>.*?</code>", "", page))
        assert tr("the built-in price data has none", lang) in page


def test_ui_error_messages_have_no_cli_flags():
    """An input error the page shows names no CLI flag; the JSON API's keeps the library's words."""
    from trainsizer.errors import InputError

    app = create_app(workers=0)
    for path in ("/ui/flagged", "/api/flagged"):
        @app.get(path)
        def flagged() -> None:
            raise InputError("--prices", "no purchase price for x in prices.yaml; add one with --prices")
    with TestClient(app) as c:
        page = c.get("/ui/flagged?lang=zh-CN").json()
        api = c.get("/api/flagged").json()
    assert page == {"field": "", "message": "no purchase price for x in prices.yaml; the built-in price data has none"}
    assert api["field"] == "--prices" and "--prices" in api["message"]


def test_memory_fact_says_tight_or_fits(client):
    html = client.post("/ui/plan", json={"job": JOB, "constraints": {"gpus": ["rtx-4090-24gb"]}}).text
    assert 'data-testid="memory-fit" data-status="fits"' in html or 'data-status="tight"' in html
    assert "data-testid='capacity-line'" in html and "data-testid='recommended-point'" in html


# --- export: the plan as .xlsx and .csv -------------------------------------------------------------------

# the global market: these parts cannot be bought new in China, and the buy rows need a buy price
EXPORT_BODY = {"job": JOB, "constraints": {"gpus": ["rtx-4090-24gb", "h100-sxm5-80gb"], "max_gpus": 8,
                                          "currency": "CNY", "site": "chengdu-legacy-colo", "market": "global"}}


def test_export_xlsx_totals_equal_the_plan(client):
    import io

    openpyxl = pytest.importorskip("openpyxl")
    plan = client.post("/api/plan", json=EXPORT_BODY).json()
    pick = plan["options"][plan["rankings"]["recommended"][0]]
    resp = client.post("/api/export?format=xlsx", json=EXPORT_BODY)
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"] == "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    assert resp.headers["content-disposition"] == 'attachment; filename="trainsizer-plan.xlsx"'
    wb = openpyxl.load_workbook(io.BytesIO(resp.content))
    assert wb.sheetnames == ["Recommendation", "Bill of materials", "Options", "Assumptions"]
    rec = {r[0]: r[1] for r in wb["Recommendation"].iter_rows(min_row=2, values_only=True)}
    cost = pick["cost"]
    assert rec["GPU"] == w.gpu_name(pick["hardware"]["gpu"]) and rec["GPU count"] == pick["hardware"]["gpus"]
    assert rec["buy capex total"] == cost["buy"]["capex_total"] and rec["buy total over the horizon"] == \
        cost["buy"]["total"]
    assert rec["rent total over the horizon"] == cost["rent"]["total"]
    prices = [r[4] for r in wb["Bill of materials"].iter_rows(min_row=2, values_only=True) if r[4] is not None]
    assert sum(prices) == sum(cost["buy"]["capex"].values())
    options = list(wb["Options"].iter_rows(min_row=2, values_only=True))
    assert len(options) == len({i for idx in plan["rankings"].values() for i in idx})
    assert all(isinstance(r[8], float | int) for r in options)  # numbers, not text
    assert wb["Assumptions"].max_row > 5


def test_export_csv_parses(client):
    import csv
    import io

    resp = client.post("/api/export?format=csv", json=EXPORT_BODY)
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/csv")
    assert resp.headers["content-disposition"] == 'attachment; filename="trainsizer-plan.csv"'
    rows = [r for r in csv.reader(io.StringIO(resp.content.decode("utf-8-sig"))) if r]
    assert rows[0] == ["sheet", "item", "value", "unit"]
    assert {r[0] for r in rows} == {"sheet", "Recommendation", "Bill of materials", "Options", "Assumptions"}
    bom = [r for r in rows if r[0] == "Bill of materials"]
    assert sum(float(r[5]) for r in bom if r[5]) > 0


def test_export_of_nothing_fits_and_bad_input(client):
    resp = client.post("/api/export?format=csv", json=NOTHING_FITS)
    assert resp.status_code == 200 and "nothing fits" in resp.content.decode("utf-8-sig")
    assert client.post("/api/export?format=pdf", json=EXPORT_BODY).status_code == 422
    assert_field(client.post("/api/export", json={"job": with_(JOB, "training.micro_batch_size", 0)}),
                 "job.training.micro_batch_size")


# --- JSON API ---------------------------------------------------------------------------------------------

def test_openapi_lists_every_endpoint(client):
    paths = client.get("/openapi.json").json()["paths"]
    for path in ("/api/estimate", "/api/plan", "/api/scale", "/api/cost", "/api/quotes", "/api/catalog/{kind}",
                 "/api/export"):
        assert path in paths


def test_no_cdn_docs_pages(client):
    assert client.get("/docs").status_code == 404 and client.get("/redoc").status_code == 404  # they need a CDN


def test_estimate(client):
    resp = client.post("/api/estimate", json=SCENARIO)
    assert resp.status_code == 200, resp.text
    out = resp.json()
    assert {"memory", "model", "hardware", "training", "rule_of_thumb", "performance", "limits"} <= set(out)
    assert out["memory"]["fits"] is True and out["memory"]["detail_gib"]
    assert out["performance"]["tokens_per_s"] > 0


def test_estimate_inline_architecture(client):
    resp = client.post("/api/estimate", json=with_(SCENARIO, "model", {"architecture": LLAMA_CONFIG}))
    assert resp.status_code == 200, resp.text
    assert resp.json()["model"]["model_type"] == "llama"


@pytest.mark.parametrize(("dotted", "value", "field"), [
    ("training.micro_batch_size", 0, "training.micro_batch_size"),
    ("training.method", "dpo", "training.method"),
    ("hardware.gpu", "rtx-4090", "hardware.gpu"),
    ("model", {"preset": "llama-9"}, "model.preset"),
    ("model", {"hf_config": "/etc/passwd"}, "model.hf_config"),  # no server-side file reads
    ("model", {"architecture": {"model_type": "llama"}}, "model.architecture.hidden_size"),
    ("parallel.tp", 3, "parallel.gpus"),
    ("training.quantization", "nf4", "training.quantization"),
    ("training.seq_len", 10**9, "training.seq_len"),
    ("training.typo", 1, "training.typo"),
    ("model", {"architecture": LLAMA_CONFIG | {"num_hidden_layers": 100_000}},
     "model.architecture.num_hidden_layers"),  # per-layer work: bounded over HTTP
    ("hardware.gpu", {"name": "x", "memory_gib": 24, "bf16_tflops": 1e300}, "hardware.gpu.bf16_tflops"),
    ("training.precision", "fp8-mixed", "training.precision"),  # on an RTX 3090: no fp8 tensor cores
    ("hardware.intra_node", "ib-ndr-400", "hardware.intra_node"),  # InfiniBand is never inside a node
    ("hardware.inter_node", "nvlink4", "hardware.inter_node"),  # NVLink is never between nodes
])
def test_estimate_bad_input_names_the_field(client, dotted, value, field):
    base = with_(SCENARIO, "hardware.gpu", "rtx-3090-24gb") if dotted == "training.precision" else SCENARIO
    assert_field(client.post("/api/estimate", json=with_(base, dotted, value)), field)


def test_plan(client):
    # the China SKU: a plan in CNY (the China market) carries a cost over time only for a part sold there
    body = {"job": JOB, "constraints": {"gpus": ["rtx-4090d-24gb"], "max_gpus": 8, "currency": "CNY"}}
    resp = client.post("/api/plan", json=body)
    assert resp.status_code == 200, resp.text
    out = resp.json()
    assert {"options", "suggestions", "rankings", "candidates_evaluated", "recommended_because", "site", "currency",
            "timeline", "verification", "prices_used"} <= set(out)
    assert out["currency"] == "CNY" and out["options"]
    rec = out["options"][out["rankings"]["recommended"][0]]
    assert {"hardware", "parallel", "memory", "performance", "system", "cost", "verdict"} <= set(rec)
    assert rec["hardware"]["gpu"] == "rtx-4090d-24gb" and rec["hardware"]["gpus"] <= 8
    assert rec["cost"]["series"] and rec["memory"]["detail_gib"]
    assert {"fastest", "fewest_gpus", "best_mfu", "pareto_time_vs_gpus"} <= set(out["rankings"])


def test_plan_deadline_and_budget(client):
    body = {"job": JOB, "constraints": {"gpus": ["rtx-4090-24gb"], "max_gpus": 8, "deadline_days": 30,
                                        "currency": "CNY"}}
    out = client.post("/api/plan", json=body).json()
    assert "deadline" in out["recommended_because"]["text"] and out["recommendation"]["acquisition"] == "rent"
    body["constraints"]["budget"] = 0.01  # less than any run costs: nothing can be had
    out = client.post("/api/plan", json=body).json()
    assert out["options"] == [] and out["recommendation"] is None
    assert any("budget" in s["text"] for s in out["suggestions"])


def test_plan_time_value_has_the_clis_default(client):
    body = {"job": JOB, "constraints": {"gpus": ["rtx-4090-24gb"], "max_gpus": 8, "currency": "CNY"}}
    default = client.post("/api/plan", json=body).json()["recommendation"]["time_value"]
    from trainsizer.workflows.time_value import default_time_value

    assert default["assumed"] and default["per_hour"] == round(default_time_value("CNY").per_hour, 2)
    body["constraints"]["time_value"] = 0
    chosen = client.post("/api/plan", json=body).json()["recommendation"]["time_value"]
    assert chosen["per_hour"] == 0 and not chosen["assumed"]


def test_the_assumed_time_value_is_said_once(client):
    body = {"job": JOB, "constraints": {"gpus": ["rtx-4090-24gb"], "max_gpus": 8, "currency": "CNY"}}
    out = client.post("/api/plan", json=body).json()
    assert any("time valued at" in m["text"] for m in out["recommendation"]["adjustments"])
    assert not any("time valued at" in m["text"] for m in out["notes"])
    page = client.post("/ui/plan", json=body).text
    assert page.count("ranks by cost alone") == 1


@pytest.mark.parametrize(("constraints", "job", "field"), [
    ({"time_value": -1}, JOB, "constraints.time_value"),
    ({"max_gpus": 2048}, JOB, "constraints.max_gpus"),
    ({"max_gpus": 0}, JOB, "constraints.max_gpus"),
    ({"gpus": ["h100"]}, JOB, "constraints.gpus[0]"),
    ({"gpus": ["rtx-4090-24gb"] * 17}, JOB, "constraints.gpus"),
    ({"site": "the-moon"}, JOB, "constraints.site"),
    ({"gpus_per_node": 3}, JOB, "constraints.gpus_per_node"),
    ({"currency": "EUR"}, JOB, "constraints.currency"),
    ({"utilisation": 1.5}, JOB, "constraints.utilisation"),
    ({"deadline_days": 7}, with_(JOB, "training.tokens", None), "constraints.deadline_days"),
    ({}, with_(JOB, "training.micro_batch_size", 0), "job.training.micro_batch_size"),
    ({}, with_(JOB, "training.quantization", "nf4"), "job.training.quantization"),  # qlora alone defaults to nf4-dq
    ({}, with_(JOB, "model", {"preset": "gpt-5"}), "job.model.preset"),
    ({}, with_(JOB, "model", {}), "job.model"),
    ({}, with_(JOB, "training.global_batch_size", 3) | {}, "job.training.global_batch_size"),
])
def test_plan_bad_input_names_the_field(client, constraints, job, field):
    if field == "job.training.global_batch_size":
        job = with_(job, "training.micro_batch_size", 2)
    assert_field(client.post("/api/plan", json={"job": job, "constraints": constraints}), field)


def test_scale(client):
    resp = client.post("/api/scale", json={"job": JOB, "gpu": "rtx-4090-24gb", "max_gpus": 4})
    assert resp.status_code == 200, resp.text
    out = resp.json()
    assert out["gpu"] == "rtx-4090-24gb" and out["curves"]
    assert [p["gpus"] for p in out["curves"][0]["points"]] == [1, 2, 4]
    assert {"label", "intra_node", "inter_node", "points", "verdicts"} <= set(out["curves"][0])
    assert_field(client.post("/api/scale", json={"job": JOB, "gpu": "rtx-4090-24gb", "max_gpus": 65}), "max_gpus")
    assert_field(client.post("/api/scale", json={"job": JOB, "gpu": "rtx4090"}), "gpu")


def test_cost(client):
    # the China SKU: a buy price only where the market (here the China market) sells the part
    body = {"job": JOB, "gpu": "rtx-4090d-24gb", "gpus": 4, "gpus_per_node": 4, "currency": "CNY",
            "site": "chengdu-legacy-colo"}
    resp = client.post("/api/cost", json=body)
    assert resp.status_code == 200, resp.text
    out = resp.json()
    assert out["currency"] == "CNY" and out["site"] == "chengdu-legacy-colo"
    option = out["option"]
    assert option["hardware"]["gpus"] == 4 and option["system"]["site_fit"]["site"] == "chengdu-legacy-colo"
    assert {"buy", "rent", "series", "verdict"} <= set(option["cost"]) and option["per_run"]["hours"] > 0


def test_cost_bad_input(client):
    huge = with_(JOB, "model", {"preset": "llama-3.1-70b"})
    huge = with_(huge, "training", {"method": "full", "micro_batch_size": 1, "seq_len": 4096})
    assert_field(client.post("/api/cost", json={"job": huge, "gpu": "rtx-4090-24gb", "gpus": 1}), "gpus")
    assert_field(client.post("/api/cost", json={"job": JOB, "gpu": "rtx-4090-24gb", "gpus": 12,
                                                "gpus_per_node": 8}), "gpus")
    assert_field(client.post("/api/cost", json={"job": JOB, "gpu": "rtx-4090-24gb", "horizon_years": 0}),
                 "horizon_years")


def test_quotes(client):
    second = QUOTE | {"name": "8x H100, monthly", "gpu": "h100-sxm5-80gb", "price": 90000, "unit": "server-month",
                      "billing": "monthly", "topology": "nvswitch", "replacement_sla_hours": 24}
    resp = client.post("/api/quotes", json={"quotes": [QUOTE, second], "currency": "CNY"})
    assert resp.status_code == 200, resp.text
    out = resp.json()
    assert out["currency"] == "CNY" and len(out["quotes"]) == 2 and "0.35" in out["mfu_basis"]["text"]
    assert {"name", "price_per_gpu_hour", "delivered_pflops", "cost_per_delivered_pflop_hour", "flags"} <= set(
        out["quotes"][0])
    with_job = client.post("/api/quotes", json={"quotes": [QUOTE], "job": JOB}).json()
    assert with_job["quotes"][0]["run_cost"] is not None and "best layout" in with_job["mfu_basis"]["text"]


@pytest.mark.parametrize(("quotes", "field"), [
    ([], "quotes"),
    ([QUOTE] * 21, "quotes"),
    ([QUOTE | {"gpu": "a100"}], "quotes[0].gpu"),
    ([QUOTE, QUOTE | {"price": 0}], "quotes[1].price"),
    ([QUOTE | {"inter_node": "carrier-pigeon"}], "quotes[0].inter_node"),
    ([QUOTE | {"servers": 1000}], "quotes[0].servers"),
    ([QUOTE | {"colour": "red"}], "quotes[0].colour"),
    ([QUOTE | {"price": True}], "quotes[0].price"),  # the same model as a quotes file: never true/false
    ([QUOTE | {"servers": 2.5}], "quotes[0].servers"),
    ([QUOTE | {"onsite_staff": "maybe"}], "quotes[0].onsite_staff"),
    ([QUOTE | {"inter_node": "nvlink4"}], "quotes[0].inter_node"),  # a link between servers: IB, RoCE, Ethernet
])
def test_quotes_bad_input(client, quotes, field):
    assert_field(client.post("/api/quotes", json={"quotes": quotes}), field)


@pytest.mark.parametrize(("method", "path", "body"), [
    ("post", "/api/estimate", SCENARIO),
    ("post", "/api/plan", {"job": JOB, "constraints": {"gpus": ["rtx-4090-24gb"], "max_gpus": 4}}),
    ("post", "/api/quotes", {"quotes": [QUOTE], "job": JOB}),
    ("get", "/api/catalog/gpus", None),
    ("get", "/api/catalog/links", None),
    ("get", "/api/catalog/sites", None),
])
def test_responses_parse_with_a_strict_json_parser(client, method, path, body):
    import json

    resp = client.post(path, json=body) if method == "post" else client.get(path)
    assert resp.status_code == 200, resp.text
    json.loads(resp.text, parse_constant=lambda c: pytest.fail(f"{c} in the response of {path}"))


@pytest.mark.parametrize(("kind", "key"), [("models", "params"), ("gpus", "memory_gib"), ("links", "scope"),
                                           ("sites", "rack_power_kw")])
def test_catalog(client, kind, key):
    resp = client.get(f"/api/catalog/{kind}")
    assert resp.status_code == 200
    rows = resp.json()
    assert rows and all("id" in r and key in r for r in rows)


def test_catalog_unknown_kind(client):
    assert client.get("/api/catalog/cars").status_code == 422


# --- limits ----------------------------------------------------------------------------------------------

def test_body_over_64kb_is_413(client):
    big = {"job": with_(JOB, "model", {"architecture": {f"k{i}": "x" * 200 for i in range(400)}})}
    assert_field(client.post("/api/plan", json=big), "body", 413)

    def chunks():  # no Content-Length: counted as it arrives
        yield b'{"job": "'
        for _ in range(70):
            yield b"x" * 1024
        yield b'"}'

    resp = client.post("/api/estimate", content=chunks(), headers={"content-type": "application/json"})
    assert resp.status_code == 413


@pytest.mark.parametrize("raw", [b'{"quotes": [{"price": NaN}]}', b'{"budget": Infinity}', b'{"x": 1e999}',
                                 b"[" * 5000 + b"]" * 5000])
def test_non_finite_or_deep_json_is_422(client, raw):
    resp = client.post("/api/quotes", content=raw, headers={"content-type": "application/json"})
    assert_field(resp, "body")


def test_malformed_json_is_422(client):
    resp = client.post("/api/plan", content=b'{"job": ', headers={"content-type": "application/json"})
    assert_field(resp, "body")


def test_busy_planner_is_503():
    app = create_app(planner_slots=1, busy_wait_s=0.05, workers=0)
    with TestClient(app) as c, app.state.limiter.slot():
        resp = c.post("/api/estimate", json=SCENARIO)
    assert resp.status_code == 503 and resp.headers["retry-after"]
    assert "busy" in resp.json()["message"]


def test_limiter_is_first_come_first_served():
    import threading
    import time

    from trainsizer.web.errors import Limiter

    limiter, order, threads = Limiter(slots=1, wait_s=5), [], []
    with limiter.slot():
        for i in range(3):
            def take(i: int = i) -> None:
                with limiter.slot():
                    order.append(i)
            threads.append(threading.Thread(target=take))
            threads[-1].start()
            deadline = time.monotonic() + 5
            while len(limiter._waiting) < i + 1 and time.monotonic() < deadline:  # queued in order 0, 1, 2
                time.sleep(0.005)
    for t in threads:
        t.join(5)
    assert order == [0, 1, 2]


# --- schemathesis: no 5xx for anything the schema allows (or nearly allows) ------------------------------

try:
    import schemathesis
    from schemathesis.checks import not_a_server_error

    if int(schemathesis.__version__.split(".")[0]) < 4:  # the loaders and call(app=...) below are 4.x API
        schemathesis = None
except ImportError:  # pragma: no cover - the test extra installs it
    schemathesis = None

def bounded_schema() -> dict:
    """The app's own OpenAPI schema with the planner's search kept small (one GPU type, at most 4 GPUs, a
    deadline of at least a day, so the nothing-fits relaxations stay rare: they are tested above), so that a
    run takes seconds, not minutes; every other bound is the app's."""
    spec = copy.deepcopy(APP.openapi())
    parts = spec["components"]["schemas"]
    cons = parts["PlanConstraintsIn"]
    cons["properties"]["gpus"] = {
        "type": "array", "minItems": 1, "maxItems": 1,
        "items": {"type": "string", "enum": ["rtx-4090-24gb", "h100-sxm5-80gb"]}}
    cons["required"] = ["gpus"]
    cons["properties"]["deadline_days"]["anyOf"][0] = {"type": "number", "minimum": 1, "maximum": 3650}
    for name in ("PlanIn", "UiPlanIn"):
        parts[name]["required"] = ["job", "constraints"]
    for name in ("PlanConstraintsIn", "ScaleIn"):
        parts[name]["properties"]["max_gpus"]["maximum"] = 4
    return spec


if schemathesis is not None:
    schema = schemathesis.openapi.from_dict(bounded_schema())

    @schema.parametrize()
    @settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    def test_no_server_errors(case):
        case.call_and_validate(app=APP, checks=[not_a_server_error])
else:
    @pytest.mark.skip(reason="schemathesis >= 4 not installed (pip install -e '.[test]')")
    def test_no_server_errors():
        pass


def en(message):
    """An engine message in English."""
    return _text(message, "en")


# --- every error in one shape; the server's connections -------------------------------------------------------

@pytest.mark.parametrize("path", ["/api/estimate", "/ui/plan?lang=zh-CN"])
@pytest.mark.parametrize("raw", [b'{"model": "\xff\xfe"}', '{"model": {"preset": "x"}}'.encode("utf-16")])
def test_a_body_that_is_not_utf8_is_422_field_and_message(client, path, raw):
    """JSON is UTF-8 (RFC 8259 §8.1): other bytes get the documented 422 {field, message} (FastAPI alone answers
    400 {"detail"}), with or without a content type, on the page in its language."""
    for headers in ({"content-type": "application/json"}, {}):
        body = assert_field(client.post(path, content=raw, headers=headers), "body")
        assert set(body) == {"field", "message"}
        assert "UTF-8" in body["message"]


@pytest.mark.parametrize("content_type", ["application/JSON", "Application/Json; charset=UTF-8",
                                          "application/vnd.trainsizer+JSON"])
def test_the_json_guard_reads_the_content_type_in_any_case(client, content_type):
    """Media types are case-insensitive (RFC 9110 §8.3.1) and FastAPI parses all of these as JSON: so does the
    guard, and NaN or deep nesting never reach the models."""
    for raw in (b'{"quotes": [{"price": NaN}]}', b"[" * 5000 + b"]" * 5000):
        body = assert_field(client.post("/api/quotes", content=raw, headers={"content-type": content_type}), "body")
        assert "detail" not in body


def test_the_frameworks_own_errors_are_field_and_message(client):
    assert assert_field(client.get("/no/such/page"), "path", 404)["message"] == "Not Found"
    resp = client.get("/api/estimate")
    assert assert_field(resp, "method", 405) and resp.headers["allow"] == "POST"


def test_serve_runs_uvicorn_with_the_head_timeout(monkeypatch):
    uvicorn = pytest.importorskip("uvicorn")
    from trainsizer.web import app as web_app
    from trainsizer.web.head_timeout import HEAD_TIMEOUT_S, HeadTimeoutH11

    seen = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: seen.update(kw))
    monkeypatch.setattr(web_app, "create_app", lambda **kw: None)
    web_app.serve(port=0)
    assert seen["http"] is HeadTimeoutH11 and seen["timeout_keep_alive"] == 5 and HEAD_TIMEOUT_S <= 30


def test_a_half_sent_request_head_is_timed_out():
    """A connection that sends half a request head, or nothing, is closed once the head timeout passes (uvicorn
    alone keeps it open for ever); a whole request is answered, and the same connection's next head is held to
    the timeout too. The server is real (uvicorn on a loopback port), its timeout cut to 0.3 s for the test."""
    import socket
    import threading
    import time

    uvicorn = pytest.importorskip("uvicorn")
    from trainsizer.web.head_timeout import HeadTimeoutH11, server_settings

    class Quick(HeadTimeoutH11):
        head_timeout_s = 0.3

    async def hello(scope, receive, send):
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(hello, log_level="warning", lifespan="off",
                                           **{**server_settings(), "http": Quick, "timeout_keep_alive": 60}))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.time() + 30
        while not server.started:
            assert time.time() < deadline
            time.sleep(0.05)

        def closed_by_server(first: bytes, then: bytes = b"") -> bytes:
            """Everything the server sends until it closes the connection (a read that waits 10 s fails)."""
            with socket.create_connection(("127.0.0.1", port), timeout=10) as c:
                c.sendall(first)
                got = b""
                if then:
                    got += c.recv(4096)
                    c.sendall(then)
                while chunk := c.recv(4096):
                    got += chunk
                return got

        assert closed_by_server(b"GET / HTTP/1.1\r\nHost: x\r\n") == b""  # half a head
        assert closed_by_server(b"") == b""  # nothing at all
        answered = closed_by_server(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", b"GET / HTTP/1.1\r\nHo")
        assert answered.startswith(b"HTTP/1.1 200") and answered.endswith(b"ok")
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@pytest.mark.parametrize("preset,method", [("qwen2.5-7b", "lora"), ("llama-3.1-70b", "full")])
def test_every_precision_of_the_form_gets_an_answer_whose_confidence_is_at_most_its_chance_of_running(
        client, preset, method):
    """Each precision the form offers: an answer card (its confidence at most 1 − its chance of running out of
    memory) or a card that names the binding cause; never an error."""
    from trainsizer.web.render import FORM_CHOICES

    for precision in FORM_CHOICES["precisions"]:
        training = {"method": method, "precision": precision, "micro_batch_size": 1, "seq_len": 4096,
                    "global_batch_size": 32, "tokens": 2e8, "activation_checkpointing": "full"}
        body = {"job": {"model": {"preset": preset}, "training": training}, "constraints": {"currency": "CNY"}}
        resp = client.post("/ui/plan?lang=zh-CN", json=body)
        assert resp.status_code == 200, (precision, resp.text)
        head = re.search(r'<section class="answer[^>]*>', resp.text).group(0)
        if 'data-ok="true"' in head:
            oom = float(re.search(r'data-oom="([^"]+)"', head).group(1))
            assert float(re.search(r'data-confidence="([^"]+)"', head).group(1)) <= 1 - oom + 1e-9, precision
            assert oom <= 0.10, precision  # the planner's rule, said on the card
        else:
            assert re.search(r'data-cause="(budget|limits|memory)"', head), precision


def test_names_and_numbers_as_people_type_them(client):
    """千问2.5-7B and Qwen2.5-7B-Instruct plan as qwen2.5-7b, said on the card; an unknown name is answered in the
    page's language with the closest presets as choices."""
    constraints = {"currency": "CNY", "max_gpus": 8}
    plain = client.post("/api/plan", json={"job": with_(JOB, "model.preset", "qwen2.5-7b"), "constraints": constraints})
    assert plain.json()["recommendation"]["per_run"]
    for name in ("千问2.5-7B", "Qwen2.5-7B-Instruct", "QWEN2.5-7B", "Qwen/Qwen2.5-7B"):
        job = with_(JOB, "model.preset", name)
        body = {"job": job, "constraints": constraints}
        assert client.post("/api/plan", json=body).json()["recommendation"] == plain.json()["recommendation"], name
        html = client.post("/ui/plan?lang=zh-CN", json=body).text
        assert "按预设模型 qwen2.5-7b 计算" in html, name
    unknown = client.post("/ui/plan?lang=zh-CN", json={"job": with_(JOB, "model.preset", "千问2.5-7bx"),
                                                       "constraints": {"max_gpus": 4}})
    assert unknown.status_code == 422 and unknown.json()["field"] == "job.model.preset"
    assert "未知" in unknown.json()["message"] and unknown.json()["choices"][0] == "qwen2.5-7b"


def test_a_voucher_not_yet_confirmed_is_beside_the_price_not_in_it(client):
    """A voucher whose eligibility is not confirmed: the plan prices the run without it, and the card says beside the
    price what it would take off if approved."""
    training = {**TRAINING, "seq_len": 4096, "global_batch_size": 32}
    body = {"job": {"model": {"preset": "qwen2.5-7b"}, "training": training},
            "constraints": {"currency": "CNY", "voucher": "chengdu-compute-voucher-2025"}}
    plan = client.post("/api/plan", json=body).json()
    rent = plan["options"][plan["recommendation"]["option"]]["per_run"]["rent"]
    assert rent["voucher"]["eligibility"] == "unknown"
    card = re.search(r'<section class="answer.*?</section>', client.post("/ui/plan?lang=zh-CN", json=body).text,
                     re.S).group(0)
    assert rent["voucher"]["possible"] and "cost_before_voucher" not in rent  # the plan's price is without it
    assert f"单次训练费用</dt><dd>{rent['cost']} 元（若成都算力券（2025）获批，可再省" in card


def test_the_form_offers_each_framework_profile_and_the_plan_takes_it(client):
    """The framework select (training.framework): blank for the one the method usually runs with (named), then each
    shipped profile by its own name; a chosen one reaches the plan, an unknown one names its field."""
    from trainsizer.frameworks import families, load_profile

    html = client.get("/?lang=zh-CN").text
    select = re.search(r'<select id="framework".*?</select>', html, re.S).group(0)
    assert re.findall(r'value="([^"]*)"', select) == ["", *families()]
    assert "训练框架" in html and "按训练方式的常用框架" in select
    assert all(load_profile(f).name in select for f in families())
    body = {"job": with_(JOB, "training.framework", "ms-swift-megatron"),
            "constraints": {"gpus": ["rtx-4090d-24gb"], "max_gpus": 4, "currency": "CNY"}}
    assert client.post("/api/plan", json=body).status_code == 200
    assert_field(client.post("/api/plan", json={**body, "job": with_(JOB, "training.framework", "no-such")}),
                 "job.training.framework")
