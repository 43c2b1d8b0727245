"""zh-CN is complete: one message catalog (Babel extracts it, the standard library reads its compiled .mo),
every message translated, the engine's messages rendered through that catalog, the answer
card first in every face, and the Chinese report and page really Chinese: Chinese characters at least three
times the English words (ids, units, numbers, code and quoted data such as sources left out)."""

from __future__ import annotations

import copy
import html as html_lib
import re
import subprocess
import sys
import warnings

import pytest
import yaml
from conftest import REPO

from trainsizer.i18n import LOCALE_DIR, tr, translations
from trainsizer.messages import REGISTRY, Message, msg
from trainsizer.report import words as w
from trainsizer.report.answer import card
from trainsizer.report.message_text import text
from trainsizer.report.write import render_report
from trainsizer.workflows import catalogs
from trainsizer.workflows.jobs import load_job
from trainsizer.workflows.plan_job import PlanRequest
from trainsizer.workflows.report_model import build_report

PO = LOCALE_DIR / "zh_CN" / "LC_MESSAGES" / "trainsizer.po"
JOBS = {  # two jobs: a LoRA on one or two cards and a 70B full fine-tune on a cluster
    "qwen2.5-7b-lora": dict(gpus=("rtx-4090-24gb", "h100-sxm5-80gb"), max_gpus=8, site="chengdu-legacy-colo"),
    "llama-3.1-70b-full-finetune": dict(max_gpus=64, site="chengdu-legacy-colo"),
}
MIN_RATIO = 3.0
WORD = re.compile(r"(?<![\w./@-])[A-Za-z][a-z]{2,}(?![\w/@-])")  # words; ids (with - or digits) and UNITS are not
TERMS = {"token", "tokens"}  # loanwords Chinese ML writing uses as they are


@pytest.fixture(scope="module")
def reports() -> dict[str, dict]:
    out = {}
    for name, kw in JOBS.items():
        path = REPO / "examples" / "jobs" / f"{name}.yaml"
        req = PlanRequest(currency="CNY", lang="en", top=5, **kw)
        out[name] = build_report(load_job(path, list(kw.get("gpus", ())) or None), req, path.name)
    return out


def in_lang(report: dict, lang: str) -> dict:
    return {**copy.deepcopy(report), "lang": lang}


def quoted_data(plan: dict, assumptions: list[dict]) -> list[str]:
    """Text the faces quote as it is in the data files: sources, price notes, offer and provider names, the
    catalog's product names."""
    data = [a["source"] for a in assumptions]
    data += [u[k] or "" for u in plan.get("prices_used", []) for k in ("source", "relay")]
    for o in plan["options"]:
        rent = (o.get("cost") or {}).get("rent") or {}
        data += [rent.get("offer") or "", ((o.get("per_run") or {}).get("rent") or {}).get("provider") or ""]
    data += [w.gpu_name(row["id"]) for row in catalogs.gpu_rows()]
    return [d for d in data if d]


def visible_text(text: str, kind: str, data: list[str]) -> str:
    if kind == "html":
        text = re.sub(r"<(code|script|style)\b.*?</\1>", " ", text, flags=re.S)
        text = html_lib.unescape(re.sub(r"<[^>]+>", " ", text))
    else:
        text = re.sub(r"`[^`]*`", " ", text)
    for d in sorted(set(data), key=len, reverse=True):
        text = text.replace(d, " ")
    return text


def chinese_ratio(text: str) -> tuple[int, list[str], float]:
    chinese = len(re.findall(r"[\u4e00-\u9fff]", text))
    english = [m for m in WORD.findall(text) if m.lower() not in TERMS]
    return chinese, english, chinese / max(1, len(english))


# --- the catalog -------------------------------------------------------------------------------------------

def test_every_message_has_a_chinese_translation_and_the_mo_is_compiled_from_the_po():
    babel = pytest.importorskip("babel.messages.pofile")
    from babel.messages.mofile import read_mo

    with PO.open("rb") as f:
        po = babel.read_po(f)
    with PO.with_suffix(".mo").open("rb") as f:
        mo = read_mo(f)
    messages = [m for m in po if m.id]
    assert len(messages) > 300

    def forms(s):
        return list(s) if isinstance(s, list | tuple) else [s]

    for m in messages:
        ids = forms(m.id)
        strings = forms(m.string)
        assert all(s.strip() for s in strings), f"no translation: {m.id!r}"
        assert not m.fuzzy, m.id
        fields = sorted(re.findall(r"\{[^}]*\}", ids[0]))
        assert all(sorted(re.findall(r"\{[^}]*\}", s)) == fields for s in strings), m.id
        assert forms(mo.get(m.id).string) == strings, f"the .mo is older than the .po: {m.id!r}"
    assert translations("zh-CN").gettext("Answer") == "结论"  # what the package reads at run time


def test_the_catalog_holds_every_message_of_the_code():
    pytest.importorskip("babel")
    proc = subprocess.run([sys.executable, "tools/i18n.py", "--check"], cwd=REPO, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]


def test_the_catalog_ships_as_package_data():
    data = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert '"locale/*/LC_MESSAGES/*.mo"' in data
    assert PO.with_suffix(".mo").is_file() and (REPO / "babel.cfg").is_file()


def test_estimate_does_not_import_babel():
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "trainsizer.cli", "estimate"], cwd=REPO,
                          capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert not re.search(r"\|\s*babel\b", proc.stderr)


# --- words: money, counts, names -----------------------------------------------------------------------------

def test_money_in_wan_and_yi_for_cny_in_chinese():
    zh = "zh-CN"
    assert [w.money(x, "CNY", zh) for x in (37, 5259, 123_000, 1.2e8)] == ["37 元", "5,259 元", "12.3 万元", "1.2 亿元"]
    assert w.money(1_234_567, "CNY", "en") == "1.23 M CNY" and w.money(5259, "USD", "en") == "5,259 USD"
    assert w.money(25_600, "USD", zh) == "2.6 万美元"


def test_plurals_units_and_names():
    assert [w.servers(n, "en") for n in (1, 2)] == ["1 server", "2 servers"]
    assert w.servers(2, "zh-CN") == "2 台服务器"
    assert w.days(0.04, "en") == "< 1 day" and w.days(0.04, "zh-CN") == "不到 1 天"
    assert w.days(1, "en") == "1 day" and w.days(2.5, "en") == "2.5 days"
    assert w.duration(3.6 * 3600, "en") == "3.6 hours" and w.duration(3.6 * 3600, "zh-CN") == "3.6 小时"
    assert w.gpu_name("h800-sxm5-80gb") == "H800 SXM5 80GB" and w.gpu_name("not-a-gpu") == "not-a-gpu"
    assert w.site_name("chengdu-legacy-colo", "zh-CN").startswith("老式城区托管机房")


def test_engine_sentences_of_the_examples_are_messages_rendered_in_chinese(reports):
    for report in reports.values():
        plan = report["plan"]
        texts = list(plan["notes"]) + list(plan["suggestions"]) + [plan["timeline"]["note"]]
        texts += [s["step"] for s in plan["timeline"]["steps"]]
        texts += [v[k] for v in plan["verification"] for k in ("step", "check")]
        texts += [a["what"] for a in report["assumptions"]]
        for o in plan["options"]:
            sysd, cost = o["system"], o.get("cost") or {}
            texts += [o["why"], o["verdict"], sysd["host"]["seed_rule"], sysd["storage"]["seed_rule_verdict"],
                      sysd["network"]["reason"], o["per_run"]["workload"], cost.get("verdict")]
            texts += list(cost.get("seed_checks", [])) + list(cost.get("buy", {}).get("notes", []))
            if sysd.get("site_fit"):
                texts += [sysd["site_fit"]["verdict"], *sysd["site_fit"]["remedies"]]
        texts += [plan["recommendation"]["why"]] + [r["trade"] for r in plan["recommendation"]["runner_ups"]]
        texts = [t for t in texts if t is not None]
        assert all(isinstance(t, Message) and t.code in REGISTRY for t in texts), [t for t in texts
                                                                                  if not isinstance(t, Message)]
        no_chinese = {text(t, "en") for t in texts if not re.search(r"[\u4e00-\u9fff]", text(t, "zh-CN"))}
        assert not no_chinese, no_chinese


# --- the answer first ----------------------------------------------------------------------------------------

def test_recommendation_carries_its_binding_constraint(reports):
    for report in reports.values():
        binding = report["plan"]["recommendation"]["binding"]
        assert f"binding.{binding['code']}" in REGISTRY and "deadline_days" in binding  # a code the faces word


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_the_report_opens_with_the_answer_card(reports, lang):
    for report in reports.values():
        rec = report["plan"]["recommendation"]
        page = render_report(in_lang(report, lang), ".html")
        body = page[page.index("<body>"):]
        first = re.search(r"<section[^>]*>", body).group(0)
        assert "data-testid='answer-card'" in first and body.index(first) < body.index("<h2>", body.index(first) + 1)
        assert f"data-gpu='{rec['gpu']}'" in first and f"data-gpus='{rec['gpus']}'" in first
        assert f"data-acquisition='{rec['acquisition']}'" in first and f"data-per-run='{rec['per_run']}'" in first
        assert body.count("data-testid='runner-up'") == len(rec["runner_ups"])
        md = render_report(in_lang(report, lang), ".md")
        assert md.split("\n## ")[1].startswith(tr("Answer", lang))
        answer = card(report["plan"], lang)
        assert answer["why"] in html_lib.unescape(page) and answer["why"] in md
        assert w.gpu_name(rec["gpu"], lang) in answer["why"] and rec["gpu"] not in answer["why"]


def test_no_recommendation_says_why():
    out = {"options": [], "recommendation": None, "notes": [], "site": "x",
           "suggestions": [msg("plan.deadline_binds")]}
    answer = card(out, "zh-CN")
    assert not answer["ok"] and answer["reason"] and answer["advice"][0].startswith("卡住的可能是工期")


def test_cli_prints_the_answer_first(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "trainsizer.cli", "plan", "examples/jobs/qwen2.5-7b-lora.yaml",
                           "--gpu", "rtx-4090-24gb", "--max-gpus", "4", "--currency", "CNY", "--lang", "zh-CN"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    first = proc.stdout.lstrip().splitlines()[0]
    assert first.startswith("结论") and "RTX 4090" in first and "元" in first
    assert "server(s)" not in proc.stdout and "(s)" not in proc.stdout


# --- really Chinese --------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def web_results() -> dict[str, tuple[str, dict]]:
    """The web page's result for each job in Chinese, and the plan it shows."""
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from fastapi.testclient import TestClient

        from trainsizer.web.app import create_app

        out = {}
        with TestClient(create_app()) as client:
            for name, kw in JOBS.items():
                job = yaml.safe_load((REPO / "examples" / "jobs" / f"{name}.yaml").read_text(encoding="utf-8"))
                constraints = {"currency": "CNY", "max_gpus": kw["max_gpus"], "site": kw["site"],
                               "gpus": list(kw.get("gpus", ()))}
                body = {"job": job, "constraints": constraints}
                page = client.post("/ui/plan?lang=zh-CN", json=body)
                plan = client.post("/api/plan", json=body)
                assert page.status_code == 200 and plan.status_code == 200, page.text[-500:]
                out[name] = (page.text, plan.json())
    return out


def test_chinese_report_and_page_are_chinese(reports, web_results, capsys):
    figures = []
    for name, report in reports.items():
        data = quoted_data(report["plan"], report["assumptions"])
        zh = in_lang(report, "zh-CN")
        for kind, suffix in (("html", ".html"), ("md", ".md")):
            chinese, english, ratio = chinese_ratio(visible_text(render_report(zh, suffix), kind, data))
            figures.append((name, f"report{suffix}", chinese, len(english), ratio, english))
    for name, (page, plan) in web_results.items():
        chinese, english, ratio = chinese_ratio(visible_text(page, "html", quoted_data(plan, [])))
        figures.append((name, "web result", chinese, len(english), ratio, english))
    with capsys.disabled():
        for name, face, chinese, n_english, ratio, _ in figures:
            print(f"\n  zh-CN {name} {face}: {chinese} Chinese characters, {n_english} English words, {ratio:.1f}x")
    low = [(f[0], f[1], round(f[4], 1), sorted(set(f[5]))[:40]) for f in figures if f[4] < MIN_RATIO]
    assert not low, low


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_no_server_s_and_no_ids_in_the_answer(reports, lang):
    for report in reports.values():
        text = render_report(in_lang(report, lang), ".md")
        assert "(s)" not in text.split("## " + tr("Assumptions and sources", lang))[0]


def test_translations_keep_their_fields():
    assert tr("{lo}-{hi} days", "zh-CN", lo=2, hi=3) == "2-3 天"


ENGLISH_RUN = re.compile(r"(?<![\w-])(?:[A-Za-z][a-z]+[ ,;:]+){3}[A-Za-z][a-z]+(?![\w-])")  # four words running


def test_no_english_sentence_is_left_in_the_chinese_faces(reports, web_results):
    """Any four English words in a row, outside code and quoted data, is a string the catalog misses."""
    for report in reports.values():
        zh = in_lang(report, "zh-CN")
        data = quoted_data(report["plan"], report["assumptions"])
        for kind, suffix in (("html", ".html"), ("md", ".md")):
            found = ENGLISH_RUN.findall(visible_text(render_report(zh, suffix), kind, data))
            assert not found, found
    for page, plan in web_results.values():
        found = ENGLISH_RUN.findall(visible_text(page, "html", quoted_data(plan, [])))
        assert not found, found
