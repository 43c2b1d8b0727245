"""The planner page as a Chinese team lead in Chengdu uses it, in a real browser: Playwright driving Debian's
Chromium (one server and one browser for the module), zh-CN and en, a 1280 x 900 desktop and a 390 x 844 phone.
The jobs go through the form as people type them (20亿 tokens, 千问2.5-7B, Qwen2.5-7B-Instruct), and so do the
impossible job and the bad inputs. Each walk checks the answer is in view, in the page's language (no raw id or
English word outside the brand and unit names below), its confidence at most its chance of running, the phone's
page height and chart labels, and the downloads' language. Screenshots go to artifacts/screenshots/ (git-ignored;
README "Tests")."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest
from test_web_browser import (  # noqa: F401 (fixtures: one server and one browser for this module too)
    DESKTOP,
    PHONE,
    PLAN_TIMEOUT_MS,
    assert_no_horizontal_overflow,
    base_url,
    browser,
    offline_page,
    open_folds,
)

SHOTS = Path(__file__).resolve().parents[1] / "artifacts" / "screenshots"
# brand, product and unit names a Chinese page shows as they are (Latin words of two letters or more)
ALLOWED = {
    "gpu", "gpus", "gib", "gb", "tb", "mb", "kw", "w", "mfu", "cpu", "nvlink", "infiniband", "ndr", "hdr", "roce",
    "rdma", "pcie", "pci", "express", "nvme", "lora", "qlora", "adamw", "bf", "fp", "zero", "token", "tokens", "cny",
    "usd", "sxm", "rtx", "pro", "blackwell", "geforce", "autodl", "nvidia", "tesla", "hccs",
    "logits", "cuda", "nccl", "excel", "xlsx", "csv", "api", "openapi", "gbe", "gb/s", "pue", "ada", "generation",
    "titan", "ecs", "alibaba", "cloud", "smm", "lessor", "guangzhou", "nf", "int", "sgd", "lion",
    "adafactor", "json", "config", "hugging", "face", "dgx", "hgx", "tflops", "ib", "nv", "it", "free", "nvidia-smi",
    "pl", "trainsizer", "probe", "memory", "profile", "burnin", "duration", "job", "yaml", "ecc", "qwen", "llama",
    "instruct", "smi", "tp", "ssd", "ram", "gen", "cn", "id", "ids", "catalog", "models", "pipeline", "peft",
    # training frameworks by their own names (the framework select)
    "factory", "trainer", "accelerate", "fsdp", "litgpt", "megatron", "lm", "nemo", "ms", "swift", "mindspeed", "llm",
    "paddlenlp", "xtuner", "torchtune", "torchtitan", "unsloth", "internevo", "internlm", "automodel",
}
LATIN = re.compile(r"[A-Za-z][A-Za-z\-/]*[A-Za-z]")
LAYOUT_CODES = re.compile(r"\b(tp\d|pp\d|cp\d|dp\d|zero\d|mbs \d|ckpt (?:full|none|selective))\b")


CODE = re.compile(r"[A-Za-z][\w-]*(?:[._][\w-]+)+")  # torch.cuda.max_memory_allocated: a name in code, as typed


def foreign_words(text: str) -> set[str]:
    """Latin-script words outside the allowed names (each part of a hyphenated word checked; code names left)."""
    return {word for word in LATIN.findall(CODE.sub("", text))
            if not all(part.lower() in ALLOWED for part in re.split(r"[-/]", word) if len(part) > 1)}


def shoot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=False)


def open_page(chromium, url: str, lang: str, viewport: dict) -> tuple[object, object, list[str]]:
    context = chromium.new_context(viewport=viewport, locale="zh-CN" if lang == "zh-CN" else "en-US",
                                   accept_downloads=True)
    page, outside, errors = offline_page(context, url, ("data:", "blob:"))
    page.goto(f"{url}?lang={lang}")
    return context, page, outside + errors


def fill(page, *, preset: str, method: str, tokens: str, precision: str = "bf16-true", budget: str = "",
         deadline: str = "", seq_len: str = "4096", global_batch: str = "32") -> None:
    page.fill("#model-preset", preset)
    page.select_option("#method", method)
    page.select_option("#precision", precision)
    page.fill("#seq-len", seq_len)
    page.fill("#global-batch", global_batch)
    page.fill("#tokens", tokens)
    page.fill("#budget", budget)
    page.fill("#deadline-days", deadline)
    page.select_option("#currency", "CNY")


def plan(page) -> object:
    """Submit the form and wait for the whole answer (the state of an earlier answer forgotten first)."""
    page.evaluate("document.getElementById('result').removeAttribute('data-state')")
    page.click("#submit")
    page.wait_for_selector("#result[data-state=done]", timeout=PLAN_TIMEOUT_MS)
    return page.locator("[data-testid=answer-card]")


def assert_in_view(page, card) -> None:
    box, height = card.bounding_box(), page.viewport_size["height"]
    assert box and -2 <= box["y"] < height * 0.5, f"the answer card is not in view: {box}"


def assert_confidence_consistent(card) -> float:
    """The card's confidence is at most 1 − its chance of running out of memory; the chance itself is returned."""
    oom, conf = float(card.get_attribute("data-oom")), float(card.get_attribute("data-confidence"))
    assert 0 <= oom <= 1 and conf <= 1 - oom + 1e-9, (conf, oom)
    return oom


def assert_chinese(text: str, where: str) -> None:
    assert re.search(r"[\u4e00-\u9fff]", text), where
    assert not LAYOUT_CODES.search(text), f"{where}: layout codes in a Chinese page: {LAYOUT_CODES.search(text)}"
    assert not foreign_words(text), f"{where}: English outside the allowed names: {sorted(foreign_words(text))}"


LLAMA_70B = {"preset": "llama-3.1-70b", "method": "full", "tokens": "20亿", "precision": "bf16-mixed",
             "deadline": "30"}


@pytest.mark.parametrize(("lang", "viewport"), [("zh-CN", "phone"), ("zh-CN", "desktop"), ("en", "desktop")])
def test_the_70b_full_fine_tune_answer_in_view(browser, base_url, lang, viewport):  # noqa: F811
    size = PHONE if viewport == "phone" else DESKTOP
    context, page, problems = open_page(browser, base_url, lang, size)
    if lang == "zh-CN":  # the form's choices in Chinese, their values as the API takes them
        methods = page.locator("#method option")
        assert [methods.nth(i).get_attribute("value") for i in range(methods.count())][:3] == ["full", "lora",
                                                                                                "qlora"]
        for select in ("#method", "#precision", "#optimizer", "#framework", "#checkpointing", "#lora-targets"):
            assert_chinese(page.locator(select).inner_text(), select)
    fill(page, **LLAMA_70B)
    card = plan(page)
    assert card.get_attribute("data-ok") == "true"
    assert_in_view(page, card)
    assert_confidence_consistent(card)
    assert page.locator("[data-testid=oom-rule]").is_visible()
    shoot(page, f"70b-{lang}-{viewport}")
    assert_the_quote_leads(card, lang)
    if lang == "zh-CN":
        assert_chinese(card.inner_text(), "the answer card")
        assert "把握" in card.inner_text() and "10%" in page.locator("[data-testid=oom-rule]").inner_text()
    if viewport == "phone":
        assert page.evaluate("document.documentElement.scrollHeight") < 6000
        assert_no_horizontal_overflow(page)
        open_folds(page)
        assert_phone_rankings_and_charts(page)
        assert_no_horizontal_overflow(page)
        page.locator("[data-testid=rankings]").scroll_into_view_if_needed()
        shoot(page, f"70b-{lang}-phone-rankings")
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.locator("[data-testid=chart-pareto]").screenshot(path=str(SHOTS / f"70b-{lang}-phone-pareto.png"))
    context.close()
    assert not problems, problems


def assert_the_quote_leads(card, lang: str) -> None:
    """Where no known offer rents the job by the hour, the answer is the quote to ask for, the priced pick beside
    it where it is near; else the pick is a rental."""
    if card.get_attribute("data-leads") != "quote":
        assert card.get_attribute("data-acquisition") == "rent"
        return
    first, beside, far = (("向愿意报价的服务商租用", "对照方案", "倍以上") if lang == "zh-CN"
                          else ("Rent ", "Beside it", "times that a run"))
    assert card.locator("dd").first.inner_text().startswith(first)
    why = card.locator("[data-testid=answer-why]").inner_text()
    assert why.startswith(first)
    # the priced answer beside it, unless it costs many times the quote: then only how far it is
    assert (beside in card.locator("dl").inner_text()) != (far in why)


def assert_phone_rankings_and_charts(page) -> None:
    """On a phone each ranked option is a card (a row of label / value pairs as wide as the screen), and every
    chart label is drawn at 11 px or more."""
    row = page.locator("[data-testid=ranking-row]").first
    box = row.bounding_box()
    assert box and box["width"] > 300, box
    cell = row.locator("td.layout")
    assert cell.bounding_box()["width"] > 300
    smallest = page.evaluate("""() => Math.min(...Array.from(document.querySelectorAll('.chart-box svg text'))
        .filter(t => t.getBoundingClientRect().width > 0)
        .map(t => parseFloat(getComputedStyle(t).fontSize) * t.ownerSVGElement.getBoundingClientRect().width
                  / t.ownerSVGElement.viewBox.baseVal.width))""")
    assert smallest >= 11 - 1e-6, smallest


def test_the_70b_job_at_200000_cny_names_the_budget(browser, base_url):  # noqa: F811
    context, page, problems = open_page(browser, base_url, "zh-CN", DESKTOP)
    fill(page, **{**LLAMA_70B, "budget": "20万"})
    card = plan(page)
    if card.get_attribute("data-ok") == "true":
        assert_confidence_consistent(card)
        assert float(card.get_attribute("data-per-run")) <= 200_000
    else:
        assert card.get_attribute("data-cause") == "budget"
        assert card.locator("li").first.inner_text().startswith("最少需要的预算")
    shoot(page, "70b-zh-CN-200000-cny")
    context.close()
    assert not problems, problems


def test_the_impossible_job_names_the_budget(browser, base_url):  # noqa: F811
    context, page, problems = open_page(browser, base_url, "zh-CN", PHONE)
    fill(page, **{**LLAMA_70B, "budget": "3,000", "deadline": "2"})
    card = plan(page)
    assert card.get_attribute("data-ok") == "false"
    assert card.get_attribute("data-cause") == "budget"
    text = card.inner_text()
    assert "预算是限制因素" in text and "3,000 元" in text
    least = card.locator("li").first.inner_text()  # the least budget that works, first
    assert least.startswith("最少需要的预算") and "万元" in least, least
    assert page.locator("[data-testid=fold-timeline]").count() == 0  # nothing to deploy: no purchase timeline
    assert_in_view(page, card)
    shoot(page, "impossible-zh-CN-phone")
    context.close()
    assert not problems, problems


QWEN_7B = {"method": "lora", "tokens": "2亿"}


def test_names_and_numbers_as_typed_give_the_7b_answer(browser, base_url):  # noqa: F811
    context, page, problems = open_page(browser, base_url, "zh-CN", DESKTOP)
    answers = {}
    for name in ("qwen2.5-7b", "Qwen2.5-7B-Instruct", "千问2.5-7B"):
        fill(page, preset=name, **QWEN_7B)
        card = plan(page)
        answers[name] = tuple(card.get_attribute(f"data-{k}") for k in ("gpu", "gpus", "acquisition", "per-run"))
        assert_confidence_consistent(card)
        read_as = page.locator("[data-testid=model-read-as]")
        assert read_as.count() == (0 if name == "qwen2.5-7b" else 1)
        if name != "qwen2.5-7b":
            assert "qwen2.5-7b" in read_as.inner_text() and "按预设模型" in read_as.inner_text()
    assert len(set(answers.values())) == 1, answers
    # the comparison opens on the answer and its first runner-up, as the card lists them
    compared = page.locator("[data-testid=compare-grid] .option-card")
    runner = card.locator("[data-testid=runner-up]").first
    assert compared.count() == 2 and runner.count() == 1
    assert f"{runner.get_attribute('data-gpus')} × " in compared.nth(1).locator("h4").inner_text()
    # the same job with 200000000 tokens written out: 2亿 was read as 2 x 10^8, not 2
    fill(page, preset="qwen2.5-7b", method="lora", tokens="200,000,000")
    assert plan(page).get_attribute("data-per-run") == answers["qwen2.5-7b"][3]
    assert_chinese(page.locator("[data-testid=rankings-table] tbody").inner_text(), "the rankings")
    shoot(page, "7b-zh-CN-desktop")
    context.close()
    assert not problems, problems


def test_bad_inputs_are_answered_in_chinese(browser, base_url):  # noqa: F811
    context, page, problems = open_page(browser, base_url, "zh-CN", PHONE)
    fill(page, preset="qwen2.5-7b", **{**QWEN_7B, "tokens": "2亿个"})
    page.click("#submit")
    error = page.locator("[data-testid=error-tokens]")
    error.wait_for(state="visible")
    assert "不是数字" in error.inner_text() and page.locator("[data-testid=answer-card]").count() == 0
    page.fill("#tokens", "2e8")
    page.fill("#model-preset", "千问2.5-7bx")
    page.click("#submit")
    preset_error = page.locator("[data-testid=error-model-preset]")
    preset_error.wait_for(state="visible", timeout=PLAN_TIMEOUT_MS)
    assert "未知" in preset_error.inner_text()
    choices = preset_error.locator("[data-testid=preset-choices] button")
    assert choices.count() >= 1 and choices.first.inner_text() == "qwen2.5-7b"
    shoot(page, "bad-inputs-zh-CN-phone")
    page.evaluate("document.getElementById('result').removeAttribute('data-state')")
    choices.first.click()  # one click plans with the closest preset
    page.wait_for_selector("#result[data-state=done]", timeout=PLAN_TIMEOUT_MS)
    assert page.input_value("#model-preset") == "qwen2.5-7b"
    assert page.locator("[data-testid=answer-card]").get_attribute("data-ok") == "true"
    context.close()
    assert not problems, problems


def test_the_8b_qlora_job_and_the_downloads_in_chinese(browser, base_url, tmp_path):  # noqa: F811
    openpyxl = pytest.importorskip("openpyxl")
    context, page, problems = open_page(browser, base_url, "zh-CN", DESKTOP)
    fill(page, preset="llama-3.1-8b", method="qlora", tokens="1亿", seq_len="2048", global_batch="16")
    card = plan(page)
    assert card.get_attribute("data-ok") == "true"
    assert_confidence_consistent(card)
    assert_chinese(card.inner_text(), "the 8B QLoRA answer")
    with page.expect_download(timeout=PLAN_TIMEOUT_MS) as info:
        page.click("[data-testid=export-xlsx]")
    path = tmp_path / "plan.xlsx"
    info.value.save_as(path)
    wb = openpyxl.load_workbook(path)
    assert wb.sheetnames == ["推荐方案", "物料清单", "候选方案", "假设与来源"]
    for sheet in wb.sheetnames[:3]:  # the sources sheet quotes its sources as they are
        for row in wb[sheet].iter_rows(values_only=True):
            for cell in row:
                if isinstance(cell, str):
                    assert not LAYOUT_CODES.search(cell) and not foreign_words(cell), (sheet, cell)
    headers = [c.value for c in wb["候选方案"][1]]
    assert all(re.search(r"[\u4e00-\u9fff]", h) or h.lower() in ALLOWED for h in headers), headers
    with page.expect_download(timeout=PLAN_TIMEOUT_MS) as info:
        page.click("[data-testid=export-csv]")
    text = Path(info.value.path()).read_text(encoding="utf-8-sig")
    first = next(csv.reader(io.StringIO(text)))
    assert any(re.search(r"[\u4e00-\u9fff]", c) for c in first), first
    assert_job_file_and_its_commands(page, card, tmp_path)
    context.close()
    assert not problems, problems


def assert_job_file_and_its_commands(page, card, tmp_path) -> None:
    """The job as trainsizer-job.yaml (the plan's layout and hardware: a scenario the probes take), the verification
    commands naming that file, and the settings the plan did not keep said on the card."""
    from trainsizer.scenario import scenario_from_dict
    from trainsizer.yaml_text import load_yaml_text

    with page.expect_download(timeout=PLAN_TIMEOUT_MS) as info:
        page.click("[data-testid=export-yaml]")
    assert info.value.suggested_filename == "trainsizer-job.yaml"
    job = scenario_from_dict(load_yaml_text(Path(info.value.path()).read_text(encoding="utf-8")))
    assert job.hardware.gpu == card.get_attribute("data-gpu")
    assert job.parallel.gpus == int(card.get_attribute("data-gpus"))
    steps = page.locator("[data-testid=verification-step] code")
    assert steps.count() >= 2 and "trainsizer probe memory trainsizer-job.yaml" in steps.all_inner_texts()
    words = page.evaluate("""() => { const f = document.querySelector('[data-testid=fold-verification]')
        .cloneNode(true); f.querySelectorAll('code, button').forEach(c => c.remove()); return f.textContent; }""")
    assert_chinese(words, "the verification steps (their commands as typed)")
    kept = (job.training.micro_batch_size, job.training.activation_checkpointing) == (1, "full")
    changed = page.locator("[data-testid=settings-changed]")
    assert changed.count() == (0 if kept else 1)
    if not kept:
        assert "方案没有完全沿用你的设置" in changed.inner_text()
