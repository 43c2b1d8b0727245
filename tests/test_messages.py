"""The engine speaks in messages (a code and typed args), the faces render them: every registered code renders
in every language from the catalog, a code or argument the registry does not know fails where the engine
builds it, and the plan's JSON carries each note, reason, suggestion and verdict as {code, args, text}."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from conftest import REPO

from trainsizer.i18n import LANGS, translations
from trainsizer.messages import KINDS, REGISTRY, Message, clauses, msg, sample_args
from trainsizer.report.message_text import FORMATS, as_json, text

COMPOUNDS = {"clauses", "items", "sentences"}
CJK = re.compile(r"[\u4e00-\u9fff]")


def _ids(code: str) -> list[str]:
    spec = REGISTRY[code].msgid
    return list(spec) if isinstance(spec, tuple) else [spec]


@pytest.mark.parametrize("code", sorted(REGISTRY))
def test_every_code_renders_in_every_language_from_the_catalog(code):
    m = msg(code, **sample_args(code))
    rendered = {lang: text(m, lang) for lang in LANGS}
    assert all(rendered.values()) and "{" not in rendered["en"], rendered
    if code in COMPOUNDS:
        return
    zh = translations("zh-CN")
    ids = _ids(code)
    found = [zh.ngettext(ids[0], ids[1], n) for n in (1, 2)] if len(ids) == 2 else [zh.gettext(ids[0])]
    for msgid, string in zip(ids, found, strict=True):
        assert string != msgid or CJK.search(string), f"{code}: no Chinese for {msgid!r}"
    assert CJK.search(rendered["zh-CN"]), f"{code} renders no Chinese: {rendered['zh-CN']!r}"


def test_every_kind_has_a_format_and_a_sample():
    assert set(FORMATS) == set(KINDS)
    for code, spec in REGISTRY.items():
        fields = set(re.findall(r"\{(\w+)", _ids(code)[0])) - {"n"} if isinstance(REGISTRY[code].msgid, tuple) \
            else set(re.findall(r"\{(\w+)", _ids(code)[0]))
        assert fields <= set(spec.kinds), f"{code}: the message names fields it has no kind for"


def test_an_unknown_code_or_argument_fails_where_the_engine_builds_it():
    with pytest.raises(KeyError, match="not registered"):
        msg("plan.no_such_code")
    with pytest.raises(TypeError, match="takes"):
        msg("plan.memory_headroom", gb=2.0)


def test_english_is_a_rendering_of_the_same_message():
    m = clauses([msg("plan.memory_headroom", gib=2.63), msg("plan.mfu", pct=0.38)])
    assert text(m, "en") == "memory has 2.6 GiB headroom; MFU 38%"
    assert text(m, "zh-CN").startswith("显存还剩 2.6 GiB") and "；" in text(m, "zh-CN")
    over = msg("plan.over_budget", n=2, money={"amount": 1.2e6, "currency": "CNY"})
    assert text(over, "en").startswith("2 options left out") and "1.20 M CNY" in text(over, "en")
    assert "120 万元" in text(over, "zh-CN")


def test_as_json_carries_code_args_and_text():
    m = msg("cost.over_budget", money={"amount": 5000.0, "currency": "USD"},
            money2={"amount": 100.0, "currency": "USD"})
    data = as_json({"notes": [clauses([m, msg("site.rented")])]}, "en")
    note = data["notes"][0]
    assert note["code"] == "clauses" and note["args"]["parts"][0]["code"] == "cost.over_budget"
    assert note["args"]["parts"][0]["args"]["money"] == {"amount": 5000.0, "currency": "USD"}
    assert note["text"].startswith("commitment 5,000 USD is over the budget of 100 USD; rented")
    assert json.loads(json.dumps(data)) == data


def _messages(node, path="$"):
    """Every {code, args, text} object of a JSON document, and every string under a key that holds prose."""
    if isinstance(node, dict):
        if set(node) == {"code", "args", "text"}:
            yield path, node
            return
        for k, v in node.items():
            yield from _messages(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _messages(v, f"{path}[{i}]")


PROSE_KEYS = {"why", "verdict", "reason", "notes", "suggestions", "remedies", "seed_rule", "seed_rule_verdict",
              "seed_checks", "workload", "rent_unavailable", "buy_unavailable", "trade", "note", "step", "check",
              "recommended_because", "iops_note", "label", "verdicts", "what", "flags"}


def _prose_strings(node, path="$"):
    """Strings under keys that hold prose (a part's availability in a market too: its reason is a message, the
    line of accelerators.yaml it rests on is its ``detail``, quoted data beside its source)."""
    if isinstance(node, dict):
        if set(node) == {"code", "args", "text"}:
            return
        for k, v in node.items():
            if k in PROSE_KEYS and (isinstance(v, str) or (isinstance(v, list) and any(isinstance(x, str)
                                                                                      for x in v))):
                yield f"{path}.{k}", v
            yield from _prose_strings(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _prose_strings(v, f"{path}[{i}]")


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_plan_json_carries_every_sentence_as_a_message(lang):
    proc = subprocess.run([sys.executable, "-m", "trainsizer.cli", "plan", "examples/jobs/qwen2.5-7b-lora.yaml",
                           "--gpu", "rtx-4090-24gb", "--gpu", "h100-sxm5-80gb", "--max-gpus", "8", "--currency", "CNY",
                           "--site", "chengdu-legacy-colo", "--json", "--all", "--lang", lang],
                          cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert not list(_prose_strings(out)), list(_prose_strings(out))[:5]
    found = list(_messages(out))
    codes = {m["code"] for _, m in found}
    # a rented answer: the rental's timeline and its first-hour check (workflows.next_steps); --all: every option
    # in full, so every message the plan makes is in the JSON
    assert {"plan.memory_headroom", "verdict.rent", "timeline.rent_instance", "verify.first_hour"} <= codes | {
        p["code"] for _, m in found for p in m["args"].get("parts", []) if isinstance(p, dict)}
    assert all(m["code"] in REGISTRY and m["text"] for _, m in found)
    rec = out["recommendation"]["why"]
    assert rec["code"] == "sentences" and (CJK.search(rec["text"]) if lang == "zh-CN" else "binding" in rec["text"])


def test_the_page_names_form_fields_where_the_terminal_names_flags():
    from trainsizer.messages import PAGE
    from trainsizer.report.message_text import face

    m = msg("plan.try_more_gpus", n=32)
    assert text(m, "en") == "more GPUs (--max-gpus 32)"
    with face("page"):
        assert text(clauses([m]), "en") == "more GPUs (“Max GPUs”: 32)" and "--" not in text(m, "zh-CN")
        for code in PAGE:
            rendered = text(msg(code, **sample_args(code)), "zh-CN")
            assert "--" not in rendered and CJK.search(rendered), (code, rendered)
    assert all("--" in _ids(code)[0] for code in PAGE)  # a page wording only where the message names a flag


def test_a_message_is_data_not_text():
    m = msg("plan.mfu", pct=0.4)
    assert isinstance(m, Message) and m.to_dict() == {"code": "plan.mfu", "args": {"pct": 0.4}}
    assert m == msg("plan.mfu", pct=0.4) and hash(m) == hash(msg("plan.mfu", pct=0.4))
