"""`trainsizer report`: a self-contained HTML file with every chart, Markdown and JSON, en / zh-CN."""

import json
import re
import subprocess
import sys

import pytest

JOB = "examples/jobs/qwen2.5-7b-lora.yaml"
ARGS = ["--gpu", "rtx-4090-24gb", "--gpu", "h100-sxm5-80gb", "--max-gpus", "8", "--site", "chengdu-legacy-colo"]


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
    assert "trainsizer probe memory" in html and "as of" in html


def test_chinese_markdown_and_json(tmp_path):
    zh = report(tmp_path, "plan_zh.html", "--lang", "zh-CN").read_text(encoding="utf-8")
    assert "推荐方案" in zh and "配置清单" in zh
    md = report(tmp_path, "plan.md").read_text(encoding="utf-8")
    assert md.startswith("# Training plan") and "| option |" in md
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

