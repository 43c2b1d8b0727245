"""Every face in Chinese: the estimate table, the plan table, the report (HTML, Markdown), the spreadsheet, the
catalogs and a web validation error rendered with --lang zh-CN hold no English prose (four English words in a
row) outside quoted data (sources, offers, product names) and ids."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
import warnings

import pytest
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
