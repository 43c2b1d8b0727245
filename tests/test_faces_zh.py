"""Every face in Chinese: the estimate table, the plan table, the report (HTML, Markdown), the spreadsheet, the
catalogs and a web validation error rendered with --lang zh-CN hold no English prose (four English words in a
row) outside quoted data (sources, offers, product names) and ids; the default plan's web result, report and
spreadsheet show no catalog id at all (every GPU, link, site, server, voucher and price item by its name), and
its JSON holds no bare English sentence outside messages and quoted data."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
import warnings
from typing import Any

import pytest
import yaml
from conftest import REPO
from test_i18n import ENGLISH_RUN, quoted_data, visible_text

from trainsizer.report import words as w

JOB = "examples/jobs/qwen2.5-7b-lora.yaml"
PLAN_ARGS = ["--gpu", "rtx-4090-24gb", "--gpu", "h100-sxm5-80gb", "--max-gpus", "8", "--currency", "CNY",
             "--site", "chengdu-legacy-colo", "--lang", "zh-CN"]
CJK = re.compile(r"[\u4e00-\u9fff]")


def cli(*args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "trainsizer.cli", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=600, env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin",
                                            "COLUMNS": "200"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def english(text: str, data: list[str] = ()) -> list[str]:
    for d in sorted(set(data), key=len, reverse=True):
        text = text.replace(d, " ")
    return ENGLISH_RUN.findall(re.sub(r"\s+", " ", text))


def test_estimate_table_in_chinese():
    out = cli("estimate", "--lang", "zh-CN")
    assert CJK.search(out) and "weights" not in out and "logits_and_loss" not in out
    assert "mfu_ceiling" not in out and "leaves activations open" not in out
    assert not english(out), english(out)


def test_scale_table_in_chinese():
    out = cli("scale", JOB, "--gpu", "rtx-4090-24gb", "--max-gpus", "4", "--lang", "zh-CN")
    assert "扩展" in out and "best layout" not in out and not english(out), english(out)


def test_quotes_table_in_chinese():
    out = cli("quotes", "examples/quotes.yaml", "--currency", "CNY", "--lang", "zh-CN")
    data = json.loads(cli("quotes", "examples/quotes.yaml", "--currency", "CNY", "--json"))
    names = [q["name"] for q in data["quotes"]]  # the user's own offer names: quoted data
    assert "租用报价" in out and not english(out, names), english(out, names)


def test_plan_table_in_chinese():
    out = cli("plan", JOB, *PLAN_ARGS)
    assert out.lstrip().startswith("结论") and not english(out), english(out)


@pytest.fixture(scope="module")
def report_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("zh")
    for name in ("plan.json", "plan.md", "plan.html", "plan.csv"):
        cli("report", JOB, "--out", str(d / name), *PLAN_ARGS)
    return d


def _data(report: dict) -> list[str]:
    return quoted_data(report["plan"], report["assumptions"]) + [a["source"] for a in report["assumptions"]]


def test_report_and_spreadsheet_in_chinese(report_files):
    report = json.loads((report_files / "plan.json").read_text(encoding="utf-8"))
    assert report["lang"] == "zh-CN" and CJK.search(report["plan"]["recommendation"]["why"]["text"])
    data = _data(report)
    for name, kind in (("plan.md", "md"), ("plan.html", "html")):
        text = visible_text((report_files / name).read_text(encoding="utf-8"), kind, data)
        assert not english(text), (name, english(text))
    rows = list(csv.reader(io.StringIO((report_files / "plan.csv").read_text(encoding="utf-8-sig"))))
    sheets = {r[0] for r in rows if r}
    assert {"推荐方案", "候选方案", "假设与来源"} <= sheets, sheets
    cells = " | ".join(c for r in rows for c in r[:-2] if c)  # the Assumptions sheet's last two: source, date
    assert "buy capex total" not in cells and not english(cells, data), english(cells, data)


def test_catalogs_in_chinese():
    sites = cli("catalog", "sites", "--lang", "zh-CN")
    assert "机房" in sites and not english(sites), english(sites)
    models = cli("catalog", "models", "--lang", "zh-CN")
    assert "模型预设" in models
    gpus = cli("catalog", "gpus", "--lang", "zh-CN")
    assert "加速卡" in gpus


def test_web_validation_error_in_chinese():
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from fastapi.testclient import TestClient

        from trainsizer.web.app import create_app

        job = {"model": {"preset": "qwen2.5-1.5b"}, "training": {"method": "lora", "micro_batch_size": -5}}
        with TestClient(create_app(workers=0)) as client:
            zh = client.post("/ui/plan?lang=zh-CN", json={"job": job}).json()
            en = client.post("/api/plan", json={"job": job}).json()
    assert zh["field"] == en["field"] == "job.training.micro_batch_size"
    assert en["message"] == "Input should be greater than 0 (got -5)"
    assert CJK.search(zh["message"]) and "-5" in zh["message"] and not english(zh["message"]), zh


def test_large_counts_never_in_exponent_form():
    assert w.big(1e11, "zh-CN") == "1,000 亿" and w.big(7.62e9, "zh-CN") == "76.2 亿"
    assert w.big(2e8, "en") == "200 M" and w.big(1.5e13, "zh-CN") == "15 万亿"
    assert all("e+" not in w.big(10.0 ** k, lang) for k in range(0, 16) for lang in ("en", "zh-CN"))


def _fail(*args: str, env: dict[str, str] | None = None) -> str:
    """A refused command line: exit code 2, one line on stderr, nothing on stdout."""
    proc = subprocess.run([sys.executable, "-m", "trainsizer.cli", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=600, env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin", **(env or {})})
    assert proc.returncode == 2 and not proc.stdout, (proc.returncode, proc.stdout[-500:], proc.stderr[-2000:])
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


BAD_INPUTS = [  # (the command line, data the message quotes as it is: ids, paths, values, flags)
    (["plan", "examples/jobs/nope.yaml"], ["examples/jobs/nope.yaml"]),
    (["plan", JOB, "--deadline", "30"], ["--deadline", "30d, 36h"]),
    (["plan", JOB, "--gpu", "h100"], ["h100-nvl-94gb, h100-pcie-80gb, h100-sxm5-80gb, h100-sxm5-96gb-500w",
                                      "trainsizer catalog gpus"]),
    (["plan", JOB, "--utilisation", "2"], []),
    (["plan", JOB, "--currency", "EUR"], []),
    (["estimate", "--tp", "3", "--gpus", "3"], ["trainsizer catalog models", "config.json"]),
    (["estimate", "--model", "llama-3.1-8b", "--method", "full", "--gpu", "h100-sxm5-80gb", "--tp", "3", "--gpus", "3"],
     ["num_attention_heads"]),
    (["report", JOB, "--out", "/no/such/folder/plan.html"], ["/no/such/folder"]),
    (["validate", "--holdout", "x"], ["none, source, family, both"]),
]


@pytest.mark.parametrize(("args", "data"), BAD_INPUTS)
def test_input_errors_in_chinese(args, data):
    en = _fail(*args, "--lang", "en")
    zh = _fail(*args, "--lang", "zh-CN")
    assert en.startswith("error: ") and not CJK.search(en), en
    assert zh.startswith("错误：") and CJK.search(zh) and not english(zh, data), zh
    field = en.split(": ")[1]  # the field (a flag, a file and key) is data: the same in both languages
    assert f"错误：{field}：" in zh, (en, zh)
    assert _fail(*args, env={"TRAINSIZER_LANG": "zh-CN"}) == zh  # the language from the environment too


def test_validate_and_calibrate_in_chinese(tmp_path):
    out = cli("validate", "validation/cases/memory.yaml", "--lang", "zh-CN")
    assert "样本内" in out and "参与拟合" in out and not english(out), english(out)
    assert "in-sample" in cli("validate", "validation/cases/memory.yaml", "--lang", "en")
    profile = tmp_path / "cal.yaml"
    said = cli("calibrate", "validation/cases/memory.yaml", "--out", str(profile), "--lang", "zh-CN")
    assert profile.is_file() and "已写入" in said and not english(said, [str(profile)]), said


# --- the default plan: no ids, no English sentences, in any face a person reads --------------------------------

DEFAULT_PLAN = ["--currency", "CNY", "--lang", "zh-CN"]  # the plan a newcomer makes first: every GPU of the market


def catalog_ids() -> dict[str, str]:
    """Every id of the catalogs a face could print, with what it names: GPUs, links, sites, vouchers, priced servers,
    price components and running costs (the offers' providers are names in the data already)."""
    from trainsizer.datafiles import packaged_yaml
    from trainsizer.workflows import catalogs

    prices = packaged_yaml("trainsizer.cost", "prices.yaml")
    ids = {r["id"]: "GPU" for r in catalogs.gpu_rows()} | {r["id"]: "link" for r in catalogs.link_rows()}
    ids |= {r["id"]: "site" for r in catalogs.site_rows()} | {r["id"]: "voucher" for r in catalogs.voucher_rows()}
    ids |= {r["id"]: "server" for r in prices["servers"] if r.get("id")}
    return ids | {k: "price component" for k in prices["components"]} | {k: "running cost" for k in prices["opex"]}


IDS = catalog_ids()
RAW_ID = re.compile(r"(?<![\w./-])(" + "|".join(re.escape(i) for i in sorted(IDS, key=len, reverse=True))
                    + r")(?![\w/-])")


def raw_ids(text: str) -> list[str]:
    """The catalog ids ``text`` shows, each with what it names ("link ib-ndr-400")."""
    return sorted({f"{IDS[m]} {m}" for m in RAW_ID.findall(text)})


@pytest.fixture(scope="module")
def default_plan(tmp_path_factory) -> dict[str, Any]:
    """The default plan in zh-CN: its report (HTML), spreadsheet (xlsx, CSV) and report model, and the web
    result of the same job with the plan JSON the page was made from."""
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    d = tmp_path_factory.mktemp("zh-default")
    for name in ("plan.json", "plan.html", "plan.xlsx", "plan.csv"):
        cli("report", JOB, "--out", str(d / name), *DEFAULT_PLAN)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from fastapi.testclient import TestClient

        from trainsizer.web.app import create_app

        body = {"job": yaml.safe_load((REPO / JOB).read_text(encoding="utf-8")), "constraints": {"currency": "CNY"}}
        with TestClient(create_app(workers=0)) as client:
            page = client.post("/ui/plan?lang=zh-CN", json=body)
            plan = client.post("/api/plan", json=body)
    assert page.status_code == 200 and plan.status_code == 200, page.text[-500:]
    return {"dir": d, "report": json.loads((d / "plan.json").read_text(encoding="utf-8")), "page": page.text,
            "plan": plan.json()}


def _sheet_cells(d) -> dict[str, str]:
    """Every text cell of the xlsx and the CSV, one string per file."""
    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.load_workbook(d / "plan.xlsx")
    xlsx = [str(c) for sheet in book for row in sheet.iter_rows(values_only=True) for c in row if isinstance(c, str)]
    rows = csv.reader(io.StringIO((d / "plan.csv").read_text(encoding="utf-8-sig")))
    return {"plan.xlsx": " | ".join(xlsx), "plan.csv": " | ".join(c for r in rows for c in r if c)}


def test_the_default_plan_shows_names_not_ids_and_no_english_sentence(default_plan):
    """The web result, the report and the spreadsheet of the default plan in zh-CN: every GPU, link, site, server,
    voucher and price item by its name (ids stay in the JSON), and no English sentence of the engine; the only
    English left is quoted data (sources, offers, providers) and brand, product and unit names."""
    report, d = default_plan["report"], default_plan["dir"]
    data = _data(report)
    shown = {"web result": visible_text(default_plan["page"], "html", []),
             "report": visible_text((d / "plan.html").read_text(encoding="utf-8"), "html", [])} | _sheet_cells(d)
    web_data = quoted_data(default_plan["plan"], [])
    for name, text in shown.items():
        read = visible_text(text, "sheet", web_data if name == "web result" else data)  # quoted data left out
        assert CJK.search(read), name
        assert not raw_ids(read), (name, raw_ids(read))
        assert not english(read), (name, english(read))
    # they name what the plan rests on: the answer's GPU, its links and site; the servers and NICs it was priced on
    pick = report["plan"]["options"][report["plan"]["recommendation"]["option"]]
    names = {w.gpu_name(pick["hardware"]["gpu"]), w.link_name(pick["hardware"]["intra_node"], "zh-CN"),
             w.site_name(report["plan"]["site"], "zh-CN")}
    assert all(n in shown["plan.xlsx"] and n in shown["report"] for n in names), names
    fabrics = {w.link_name(o["hardware"]["inter_node"], "zh-CN") for o in default_plan["plan"]["options"]
               if o["hardware"]["inter_node"]}  # the page titles a multi-server option with its network
    assert any(f in shown["web result"] for f in fabrics), fabrics
    assert "整机价格：8 × " in shown["plan.csv"] and "网卡" in shown["plan.csv"]


QUOTED_KEYS = {"source", "relay", "detail", "provider", "offer", "derived_from"}  # data as its files state it
COMMAND_KEYS = {"command", "settle_with"}  # a command line to run, not prose


def bare_english(node: Any, path: str = "$", row: bool = False) -> list[tuple[str, str]]:
    """Strings of the plan JSON with an English sentence (four English words in a row) outside messages
    (``{code, args, text}``), quoted data (sources, details, offers, a sourced row's notes) and commands."""
    if isinstance(node, dict):
        if set(node) == {"code", "args", "text"}:
            return []
        sourced = "source" in node  # a row of a data file: its notes are the file's own words
        skip = QUOTED_KEYS | COMMAND_KEYS | ({"notes"} if sourced else set())
        return [hit for k, v in node.items() if k not in skip for hit in bare_english(v, f"{path}.{k}")]
    if isinstance(node, list):
        return [hit for i, v in enumerate(node) for hit in bare_english(v, f"{path}[{i}]")]
    if isinstance(node, str) and ENGLISH_RUN.search(node):
        return [(path, node[:120])]
    return []


@pytest.mark.parametrize("lang", ["zh-CN", "en"])
def test_plan_json_holds_no_bare_english_sentence(lang):
    """Every sentence of ``plan --json --all`` is a message; the rest is figures, ids and quoted data. A part's
    availability says its reason as a message (its kind), the catalog's own line quoted as ``detail``."""
    out = json.loads(cli("plan", JOB, "--currency", "CNY", "--json", "--all", "--lang", lang))
    assert not bare_english(out), bare_english(out)[:10]
    excluded = out["market"]["excluded"]
    assert excluded and all(e["reason"]["code"].startswith("availability.") and e["detail"] for e in excluded)
    reasons = [o["availability"][acq]["reason"] for o in out["options"] for acq in ("buy", "rent")]
    assert all(r["code"].startswith("availability.") for r in reasons)
    if lang == "zh-CN":
        assert all(CJK.search(r["text"]) for r in reasons + [e["reason"] for e in excluded])


def test_the_chinese_spreadsheet_names_each_source_by_kind_and_site_with_its_links(default_plan):
    """The sources sheet of the zh-CN xlsx: each source said by its kind and sites (or its own name), in Chinese,
    never the English original's sentences; every link of the original in the links column, the first clickable."""
    openpyxl = pytest.importorskip("openpyxl")
    from trainsizer.report.source_text import links

    sheet = openpyxl.load_workbook(default_plan["dir"] / "plan.xlsx")["假设与来源"]
    rows = list(sheet.iter_rows(min_row=2))
    sources = [a["source"] for a in default_plan["report"]["assumptions"]]
    assert len(rows) == len(sources) and [c.value for c in next(sheet.iter_rows(max_row=1))][-1] == "原文链接"
    kinds = ("公开资料", "估算", "论文", "假设值", "由验证案例拟合")
    for row, source in zip(rows, sources, strict=True):
        said, urls = row[1].value, links(source)
        assert said.startswith(kinds) and (said not in source or not urls), (said, source)
        assert (row[3].value or "").split("\n") == (urls or [""]), (row[3].value, source)
        assert not urls or row[3].hyperlink.target == urls[0]
    assert any("ESTIMATE" in s for s in sources) and any(r[1].value.startswith("估算") for r in rows)
