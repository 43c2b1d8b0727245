"""`trainsizer report`: a self-contained HTML file with every chart, Markdown and JSON, en / zh-CN."""

import json
import re
import subprocess
import sys

import pytest

from trainsizer.report import words as w

JOB = "examples/jobs/qwen2.5-7b-lora.yaml"
# the global market: these parts cannot be bought new in China, and a buy price is shown only where the market
# sells the part (the report's cost section, chart and sheets need one)
ARGS = ["--gpu", "rtx-4090-24gb", "--gpu", "h100-sxm5-80gb", "--max-gpus", "8", "--site", "chengdu-legacy-colo",
        "--market", "global"]


def report(tmp_path, name, *extra):
    out = tmp_path / name
    proc = subprocess.run([sys.executable, "-m", "trainsizer.cli", "report", JOB, "--out", str(out), *ARGS, *extra],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module")
def html(tmp_path_factory):
    return report(tmp_path_factory.mktemp("r"), "plan.html", "--lang", "en").read_text(encoding="utf-8")


def test_html_is_self_contained_and_has_every_chart(html):
    assert html.count("<svg") == 4
    for key in ("memory", "scaling", "cost", "pareto"):
        assert f"id='chart-{key}'" in html
    # nothing is fetched: no scripts, stylesheets or images from anywhere
    assert not re.search(r"<(script|link|img)\b", html)
    assert not re.search(r"(src|href)\s*=\s*['\"]https?://", html)
    assert "@media print" in html


def test_html_has_bom_site_fit_timeline_verification_and_sources(html):
    for heading in ("Bill of materials", "Site fit", "Cost: rent vs buy", "Timeline", "Verification on hardware",
                    "Assumptions and sources"):
        assert heading in html
    assert "trainsizer probe memory" in html and "As of" in html


def test_chinese_markdown_and_json(tmp_path):
    zh = report(tmp_path, "plan_zh.html", "--lang", "zh-CN").read_text(encoding="utf-8")
    assert "推荐方案" in zh and "物料清单" in zh
    md = report(tmp_path, "plan.md").read_text(encoding="utf-8")
    assert md.startswith("# Training plan") and "| Option |" in md
    data = json.loads(report(tmp_path, "plan.json").read_text(encoding="utf-8"))
    assert data["recommended"]["hardware"]["gpu"] in ("rtx-4090-24gb", "h100-sxm5-80gb")
    assert data["assumptions"] and all(a["source"] for a in data["assumptions"])


def test_existing_output_is_not_overwritten(tmp_path):
    out = tmp_path / "plan.html"
    out.write_text("mine")
    proc = subprocess.run([sys.executable, "-m", "trainsizer.cli", "report", JOB, "--out", str(out), *ARGS],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2 and "--overwrite" in proc.stderr
    assert out.read_text() == "mine"


def test_html_fits_a_phone_and_names_the_job_file_only(tmp_path):
    from pathlib import Path

    from typer.testing import CliRunner

    from trainsizer.cli import app

    job = Path(JOB).resolve()
    out = tmp_path / "plan.html"
    result = CliRunner().invoke(app, ["report", str(job), "--out", str(out), *ARGS])
    assert result.exit_code == 0, result.output
    html = out.read_text(encoding="utf-8")
    assert "<meta name='viewport' content='width=device-width, initial-scale=1'>" in html
    assert str(job.parent) not in html and str(Path.home()) not in html and str(tmp_path) not in html
    assert f"job {job.name};" in html and f"trainsizer probe memory {job.name}" in html
    assert not re.search(r"(?<![\w:/.])/(home|root|tmp|work|usr|Users)/", html)  # no absolute path at all
    assert "class='table-wrap'" in html  # wide tables scroll inside themselves, not the page


def test_html_charts_are_the_honest_specs(html):
    assert "data-testid='capacity-line'" in html and "data-testid='safety-margin'" in html
    assert "allocator cache (reserved − allocated)" in html and "total on the device" in html
    assert html.count("data-testid='recommended-point'") == 1
    assert "log10" not in html  # a log axis is labelled in the data's own unit


@pytest.fixture(scope="module")
def sheets(tmp_path_factory):
    """The same job as .json, .xlsx and .csv through the CLI."""
    from typer.testing import CliRunner

    from trainsizer.cli import app

    d = tmp_path_factory.mktemp("x")
    runner = CliRunner()
    for name in ("plan.json", "plan.xlsx", "plan.csv"):
        result = runner.invoke(app, ["report", JOB, "--out", str(d / name), *ARGS, "--currency", "CNY"])
        assert result.exit_code == 0, result.output
    return d


def test_xlsx_totals_equal_the_plan(sheets):
    openpyxl = pytest.importorskip("openpyxl")
    plan = json.loads((sheets / "plan.json").read_text(encoding="utf-8"))
    cost = plan["recommended"]["cost"]
    wb = openpyxl.load_workbook(sheets / "plan.xlsx")
    assert wb.sheetnames == ["Recommendation", "Bill of materials", "Options", "Assumptions"]
    rec = {row[0]: row[1] for row in wb["Recommendation"].iter_rows(min_row=2, values_only=True)}
    assert rec["buy capex total"] == cost["buy"]["capex_total"]
    assert rec["buy total over the horizon"] == cost["buy"]["total"]
    assert rec["rent total over the horizon"] == cost["rent"]["total"]
    # a sheet is read by people: the GPU by its name (the JSON keeps the id)
    assert rec["GPU"] == w.gpu_name(plan["recommended"]["hardware"]["gpu"]) and rec["GPU count"] == \
        plan["recommended"]["hardware"]["gpus"]
    per_run = plan["recommended"]["per_run"]  # the card's figures (one figure per quantity)
    assert rec["one training run: rent"] == (per_run["rent"] or {}).get("cost")
    assert rec["one training run: cost"] == per_run["cost"] and rec["one training run: commitment"] == \
        per_run["commitment"]
    bom = wb["Bill of materials"]
    headers = [c.value for c in bom[1]]
    assert headers == ["item", "quantity", "unit", "unit price", "total price", "note"]
    items = [row[0] for row in bom.iter_rows(min_row=2, values_only=True)]
    for item in ("GPU servers", "host RAM", "CPU cores", "shared storage", "local NVMe", "network", "power"):
        assert item in items
    prices = [row[4] for row in bom.iter_rows(min_row=2, values_only=True) if row[4] is not None]
    assert all(isinstance(p, int | float) for p in prices)
    assert sum(prices) == sum(cost["buy"]["capex"].values())  # every capex line, once
    # the plan rounds each capex line and the total separately: they agree within that rounding
    assert abs(sum(prices) - cost["buy"]["capex_total"]) <= 0.5 * len(cost["buy"]["capex"])
    money_cells = [c for c in bom["E"][1:] if c.value is not None]
    assert money_cells and all('"CNY"' in c.number_format for c in money_cells)
    options = list(wb["Options"].iter_rows(min_row=2, values_only=True))
    ranked = {i for idx in plan["plan"]["rankings"].values() for i in idx}
    assert sorted(r[0] for r in options) == sorted(ranked)
    assumptions = list(wb["Assumptions"].iter_rows(min_row=2, values_only=True))
    assert len(assumptions) == len(plan["assumptions"]) and all(a[1] for a in assumptions)


def test_csv_parses_and_has_the_same_totals(sheets):
    import csv

    plan = json.loads((sheets / "plan.json").read_text(encoding="utf-8"))
    with open(sheets / "plan.csv", newline="", encoding="utf-8-sig") as f:
        rows = [r for r in csv.reader(f) if r]
    tables: dict[str, list[list[str]]] = {}
    for row in rows:
        if row[0] == "sheet":
            header = row
            continue
        tables.setdefault(row[0], []).append(dict(zip(header, row, strict=True)))
    assert set(tables) == {"Recommendation", "Bill of materials", "Options", "Assumptions"}
    rec = {r["item"]: r["value"] for r in tables["Recommendation"]}
    assert float(rec["buy capex total"]) == plan["recommended"]["cost"]["buy"]["capex_total"]
    total = sum(float(r["total price"]) for r in tables["Bill of materials"] if r["total price"])
    assert total == sum(plan["recommended"]["cost"]["buy"]["capex"].values())
    assert float(rec["rent total over the horizon"]) == plan["recommended"]["cost"]["rent"]["total"]
    assert int(rec["GPU count"]) == plan["recommended"]["hardware"]["gpus"]


def test_spreadsheet_output_is_not_overwritten(tmp_path):
    from typer.testing import CliRunner

    from trainsizer.cli import app
    from trainsizer.errors import InputError

    for name in ("plan.xlsx", "plan.csv"):
        out = tmp_path / name
        out.write_text("mine")
        result = CliRunner().invoke(app, ["report", JOB, "--out", str(out), *ARGS])
        assert isinstance(result.exception, InputError) and "--overwrite" in str(result.exception)
        assert out.read_text() == "mine"
    bad = CliRunner().invoke(app, ["report", JOB, "--out", str(tmp_path / "plan.pdf"), *ARGS])
    assert isinstance(bad.exception, InputError) and ".xlsx" in str(bad.exception)
    assert not (tmp_path / "plan.pdf").exists()


def test_the_assumed_time_value_is_said_once(html):
    # on the answer card ("Adjusted for"), not again among the notes (the assumptions table cites its source)
    flag = "--time-value sets it, 0 ranks by cost alone"
    assert html.count(flag) == 1
    notes = re.search(r'<section[^>]*id="notes".*?</section>', html, re.S)
    assert notes is None or "time valued at" not in notes.group(0)


def test_the_plan_says_the_assumed_time_value_once():
    proc = subprocess.run([sys.executable, "-m", "trainsizer.cli", "plan", JOB, "--currency", "CNY"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert " ".join(proc.stdout.split()).count("ranks by cost alone") == 1
