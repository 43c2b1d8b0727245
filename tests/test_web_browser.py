"""The planner page in a real browser: Playwright driving Debian's Chromium against the app served by
uvicorn on loopback. Fill the form, plan, check the charts rendered, compare two options, switch to
Chinese, and see a bad micro-batch's message beside its input. Skipped without Chromium or playwright."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip(f"{CHROMIUM} not installed (apt-get install chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed (pip install playwright)")
uvicorn = pytest.importorskip("uvicorn")
pytest.importorskip("fastapi")

from trainsizer.web.app import create_app  # noqa: E402

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
PLAN_TIMEOUT_MS = 90_000
LLAMA_CONFIG = {"model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 32,
                "num_key_value_heads": 8, "intermediate_size": 8192, "vocab_size": 128256,
                "tie_word_embeddings": True, "hidden_act": "silu", "torch_dtype": "bfloat16"}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, name="trainsizer-web-test", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            pytest.fail("uvicorn did not start")
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/"
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        yield b
        b.close()


def offline_page(context, base_url: str, also: tuple[str, ...]) -> tuple[object, list[str], list[str]]:
    """A page that must work offline: requests to anything but this server (and ``also``) are aborted and
    listed; JavaScript errors are listed too."""
    outside: list[str] = []
    errors: list[str] = []

    def only_local(route) -> None:
        if route.request.url.startswith((base_url, *also)):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    context.route("**/*", only_local)
    pg = context.new_page()
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    return pg, outside, errors


@pytest.fixture
def page(browser, base_url):
    context = browser.new_context(locale="en-US")
    pg, outside, errors = offline_page(context, base_url, ("data:",))
    pg.goto(base_url)
    yield pg
    context.close()
    assert not outside, f"the page fetched from outside: {outside}"
    assert not errors, f"JavaScript errors: {errors}"


def form_gpu(page) -> tuple[str, str]:
    """(id, product name) of the GPU the job is planned on: one sold in the market of the page's default site, the
    China SKU of the RTX 4090 on a Chinese page (a Chengdu hall, CNY), an H100 on an English one (a US hall, USD:
    rented and bought there, so the page draws its buy-vs-rent chart)."""
    if page.locator("html").get_attribute("lang") == "zh-CN":
        return "rtx-4090d-24gb", "RTX 4090 D"
    return "h100-sxm5-80gb", "H100 SXM5 80GB"


def fill_job(page, *, micro_batch: str = "1", scale: bool = True) -> None:
    page.fill("#model-preset", "qwen2.5-7b")
    page.select_option("#method", "lora")
    page.select_option("#precision", "bf16-true")
    page.fill("#micro-batch", micro_batch)
    page.fill("#seq-len", "2048")
    page.fill("#global-batch", "16")
    page.fill("#tokens", "100000000")
    page.select_option("#checkpointing", "full")
    page.fill("#lora-rank", "16")
    page.select_option("#gpus", [form_gpu(page)[0]])
    page.fill("#max-gpus", "4")
    page.set_checked("#want-scale", scale)


def wait_for_plan(page) -> None:
    page.wait_for_selector("[data-testid=recommendation]", timeout=PLAN_TIMEOUT_MS)


# --- the answer first: the card the page shows is the CLI's recommendation for the same job ---------------

DESKTOP = {"width": 1280, "height": 900}
_CLI_PLANS: dict[tuple[str, ...], dict] = {}


def cli_recommendation(page, tmp_path) -> dict:
    """`trainsizer plan --json` for the job and constraints the form holds (fill_job's values)."""
    import yaml
    from typer.testing import CliRunner

    from trainsizer.cli import app

    fields = {"--gpu": "#gpus", "--max-gpus": "#max-gpus", "--currency": "#currency", "--site": "#site",
              "--horizon": "#horizon", "--utilisation": "#utilisation", "--runs-per-month": "#runs-per-month",
              "--objective": "#objective", "--voucher": "#voucher", "--time-value": "#time-value"}
    # the form's fields as the CLI's flags; an empty field is a flag left out (the same default on both)
    flags = tuple(x for flag, sel in fields.items() if (value := page.input_value(sel)) for x in (flag, value))
    if flags not in _CLI_PLANS:
        job = {"model": {"preset": page.input_value("#model-preset")},
               "training": {"method": page.input_value("#method"), "precision": page.input_value("#precision"),
                            "optimizer": page.input_value("#optimizer"),
                            "micro_batch_size": int(page.input_value("#micro-batch")),
                            "seq_len": int(page.input_value("#seq-len")),
                            "global_batch_size": int(page.input_value("#global-batch")),
                            "tokens": float(page.input_value("#tokens")),
                            "activation_checkpointing": page.input_value("#checkpointing"),
                            "lora": {"rank": int(page.input_value("#lora-rank")),
                                     "targets": page.input_value("#lora-targets")}}}
        path = tmp_path / "job.yaml"
        path.write_text(yaml.safe_dump(job), encoding="utf-8")
        result = CliRunner().invoke(app, ["plan", str(path), *flags, "--json"])
        assert result.exit_code == 0, result.output
        _CLI_PLANS[flags] = json.loads(result.output)["recommendation"]
    return _CLI_PLANS[flags]


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_answer_card_comes_first_and_matches_the_cli(browser, base_url, tmp_path, lang, viewport):
    context = browser.new_context(viewport=PHONE if viewport == "phone" else DESKTOP, locale="en-US")
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.goto(f"{base_url}?lang={lang}")
    fill_job(pg, scale=False)
    pg.click("#submit")
    wait_for_plan(pg)
    # the first section of the result, and the first thing on screen below the form
    first = pg.locator("[data-testid=result] section").first
    assert first.get_attribute("data-testid") == "answer-card"
    card = pg.locator("[data-testid=answer-card]")
    assert card.get_attribute("data-ok") == "true"
    rec = cli_recommendation(pg, tmp_path)
    assert card.get_attribute("data-gpu") == rec["gpu"]
    assert card.get_attribute("data-gpus") == str(rec["gpus"])
    assert card.get_attribute("data-acquisition") == rec["acquisition"]
    assert card.get_attribute("data-per-run") == str(rec["per_run"])
    text = card.inner_text()
    assert form_gpu(pg)[1] in text  # the product's name, not its id
    if lang == "en":
        assert ("Rent" if rec["acquisition"] == "rent" else "Buy") in text
    else:
        assert ("租用" if rec["acquisition"] == "rent" else "购买") in text and "元" in text
    runners = card.locator("[data-testid=runner-up]")
    assert runners.count() == len(rec["runner_ups"])  # none where no other layout is safe enough to recommend
    for i, r in enumerate(rec["runner_ups"]):
        assert runners.nth(i).get_attribute("data-gpus") == str(r["gpus"])
        assert runners.nth(i).get_attribute("data-gpu") == r["gpu"]
    box, rest = card.bounding_box(), pg.locator("[data-testid=recommendation]").bounding_box()
    assert box and rest and box["y"] < rest["y"]  # the answer above the details
    if viewport == "phone":
        assert_no_horizontal_overflow(pg)
    context.close()
    assert not errors, errors


def assert_chart(page, name: str) -> None:
    svg = page.locator(f"[data-testid=chart-{name}] svg").first
    svg.wait_for(state="visible")
    box = svg.bounding_box()
    assert box and box["width"] > 50 and box["height"] > 20, (name, box)
    assert page.locator(f"[data-testid=chart-{name}] svg *").count() > 3  # drawn, not an empty frame


def test_plan_shows_recommendation_charts_and_comparison(page):
    fill_job(page)
    page.click("#submit")
    wait_for_plan(page)
    rec = page.locator("[data-testid=recommendation]")
    assert form_gpu(page)[1] in rec.inner_text()  # the product's name (the id is the row's data-gpu)
    for part in ("bom", "site-fit", "verdict"):
        assert page.locator(f"[data-testid={part}]").inner_text().strip()
    for chart in ("memory", "cost", "pareto", "scale"):
        assert_chart(page, chart)
    rows = page.locator("[data-testid=ranking-row]")
    assert rows.count() >= 2
    grid = page.locator("[data-testid=compare-grid]")
    assert grid.locator(".option-card").count() == 2
    # pick another row: the newest two picks are compared
    last = rows.nth(rows.count() - 1)
    index = last.get_attribute("data-index")
    last.locator("[data-testid=compare-pick]").check()
    assert grid.locator(".option-card").count() == 2
    assert grid.locator(f'.option-card[data-index="{index}"]').count() == 1
    assert page.locator("[data-testid=compare-pick]:checked").count() == 2


def test_language_switch_rerenders_labels(page):
    fill_job(page, scale=False)
    page.click("#submit")
    wait_for_plan(page)
    assert "Recommendation" in page.locator("[data-testid=recommendation]").inner_text()
    page.click("[data-testid=lang-zh]")
    page.wait_for_url("**lang=zh-CN**")
    wait_for_plan(page)  # the form is restored and planned again, in Chinese
    assert "推荐方案" in page.locator("[data-testid=recommendation]").inner_text()
    assert "微批大小" in page.locator("label[for=micro-batch]").inner_text()
    assert page.input_value("#max-gpus") == "4"
    assert page.locator("html").get_attribute("lang") == "zh-CN"
    page.click("[data-testid=lang-en]")
    page.wait_for_url("**lang=en**")
    wait_for_plan(page)
    assert "Recommendation" in page.locator("[data-testid=recommendation]").inner_text()


def test_bad_micro_batch_message_beside_its_input(page):
    fill_job(page, micro_batch="0", scale=False)
    page.click("#submit")
    error = page.locator("[data-testid=error-micro-batch]")
    error.wait_for(state="visible", timeout=PLAN_TIMEOUT_MS)
    assert "greater than 0" in error.inner_text()
    beside = page.evaluate("document.getElementById('error-micro-batch').closest('.field') === "
                           "document.getElementById('micro-batch').closest('.field')")
    assert beside
    assert page.get_attribute("#micro-batch", "aria-invalid") == "true"
    assert page.locator("[data-testid=recommendation]").count() == 0
    # fixing it clears the message and plans
    page.fill("#micro-batch", "1")
    page.click("#submit")
    wait_for_plan(page)
    assert not error.is_visible()


def test_server_side_error_lands_beside_other_fields(page):
    fill_job(page, scale=False)
    page.select_option("#quantization", "nf4")  # a quantized base without qlora (qlora alone defaults to nf4-dq)
    page.click("#submit")
    error = page.locator("[data-testid=error-quantization]")
    error.wait_for(state="visible", timeout=PLAN_TIMEOUT_MS)
    assert "qlora" in error.inner_text()
    page.fill("#model-preset", "qwen2.5-7bx")
    page.select_option("#quantization", "")
    page.click("#submit")
    preset_error = page.locator("[data-testid=error-model-preset]")
    preset_error.wait_for(state="visible", timeout=PLAN_TIMEOUT_MS)
    assert "did you mean" in preset_error.inner_text()


def test_pasted_config_json(page):
    fill_job(page, scale=False)
    page.fill("#model-config", "{not json")
    page.click("#submit")
    error = page.locator("[data-testid=error-model-config]")
    error.wait_for(state="visible")
    page.fill("#model-config", json.dumps(LLAMA_CONFIG, indent=2))
    page.click("#submit")
    wait_for_plan(page)
    assert not error.is_visible()
    assert_chart(page, "memory")


# --- phones: nothing wider than the screen; the charts' honest parts are there ----------------------------

PHONE = {"width": 390, "height": 844}
NO_FLAGS_JS = """() => {
  const body = document.body.cloneNode(true);
  body.querySelectorAll('script, code').forEach(el => el.remove());  // commands run on the machine itself
  return (body.textContent.match(/(^|[^\\w-])--[a-z][\\w-]*/g) || []);
}"""


@pytest.fixture
def phone(browser, base_url):
    # not is_mobile: Chromium's mobile mode widens the layout viewport to the content, hiding any overflow
    context = browser.new_context(viewport=PHONE, device_scale_factor=2, locale="en-US", accept_downloads=True)
    pg, outside, errors = offline_page(context, base_url, ("data:", "blob:"))
    failed: list[str] = []
    pg.on("response", lambda resp: failed.append(f"{resp.status} {resp.url}") if resp.status >= 400 else None)
    yield pg
    context.close()
    assert not outside, f"the page fetched from outside: {outside}"
    assert not errors, f"JavaScript errors: {errors}"
    assert not failed, f"requests that failed (a missing favicon is one): {failed}"


def assert_no_horizontal_overflow(page) -> None:
    width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width[1] == PHONE["width"]
    assert width[0] <= width[1], f"scrollWidth {width[0]} > innerWidth {width[1]}: " + str(page.evaluate(
        "Array.from(document.querySelectorAll('body *')).filter(e => e.getBoundingClientRect().right > "
        "window.innerWidth + 1 && !e.closest('.rankings, .table-wrap')).slice(0, 5).map(e => e.tagName + '#' + "
        "e.id + '.' + e.className)"))


def open_folds(page) -> None:
    """Tap each folded section of the result open."""
    closed = page.locator("[data-testid=result] details.fold:not([open]) > summary")
    for _ in range(closed.count()):
        closed.first.click()
    assert closed.count() == 0


PHONE_PAGE_MAX_PX = 5000


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_the_default_plan_is_short_on_a_phone_and_open_on_a_wide_screen(browser, base_url, lang):
    """The form's default job planned as it comes: on a 390 px phone the answer card, its runner-ups and reasons
    are on the first screens and every detail (bill of materials, cost, charts, rankings, timeline, sources) is
    folded, the page under 5,000 px; on a wide screen the same sections are open."""
    heights = {}
    for name, viewport in (("phone", PHONE), ("wide", DESKTOP)):
        context = browser.new_context(viewport=viewport, locale="en-US")
        pg, outside, errors = offline_page(context, base_url, ("data:",))
        pg.goto(f"{base_url}?lang={lang}")
        pg.click("#submit")
        wait_for_plan(pg)
        folds = pg.locator("[data-testid=result] details.fold")
        assert folds.count() >= 7
        for part in ("bom", "cost", "charts", "rankings", "timeline", "sources"):
            assert pg.locator(f"[data-testid=fold-{part}]").count() == 1, part
        opened = pg.locator("[data-testid=result] details.fold[open]").count()
        card = pg.locator("[data-testid=answer-card]")
        assert card.is_visible() and pg.locator("[data-testid=answer-why]").is_visible()
        assert card.locator("[data-testid=runner-up]").count() >= 1
        heights[name] = pg.evaluate("document.documentElement.scrollHeight")
        if name == "phone":
            assert opened == 0
            assert heights[name] < PHONE_PAGE_MAX_PX, heights[name]
            assert_no_horizontal_overflow(pg)
            assert not pg.locator("[data-testid=bom]").is_visible()
            pg.locator("[data-testid=fold-bom] > summary").click()  # a tap opens a section
            assert pg.locator("[data-testid=bom]").is_visible()
            open_folds(pg)
            assert pg.evaluate("document.documentElement.scrollHeight") > 2 * heights[name]  # what was folded
        else:
            assert opened == folds.count() and pg.locator("[data-testid=bom]").is_visible()
        context.close()
        assert not outside and not errors, (outside, errors)


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_plan_page_fits_a_phone(phone, base_url, lang):
    phone.goto(f"{base_url}?lang={lang}")
    assert_no_horizontal_overflow(phone)
    fill_job(phone, scale=True)
    phone.click("#submit")
    wait_for_plan(phone)
    open_folds(phone)  # a phone shows the details folded: open them as a reader would
    for chart in ("memory", "cost", "pareto", "scale"):
        assert_chart(phone, chart)
    assert_no_horizontal_overflow(phone)
    memory = phone.locator("[data-testid=chart-memory]")
    assert memory.locator("[data-testid=capacity-line]").count() == 1
    assert memory.locator("[data-testid=safety-margin]").count() == 1
    assert memory.locator("[data-testid=memory-status]").get_attribute("data-status") in ("fits", "tight")
    point = phone.locator("[data-testid=chart-pareto] [data-testid=recommended-point]")
    assert point.count() == 1 and form_gpu(phone)[1] in point.text_content()
    assert phone.evaluate(NO_FLAGS_JS) == []
    # each section of the answer landed in its own live region
    for slot in ("answer", "charts", "rankings", "compare", "details"):
        region = phone.locator(f"[data-testid=live-{slot}]")
        assert region.get_attribute("aria-live") == "polite" and region.locator("section").count() >= 1
    assert phone.locator("[data-testid=result]").get_attribute("aria-live") is None


def test_download_the_plan_as_xlsx_and_csv(phone, base_url, tmp_path):
    openpyxl = pytest.importorskip("openpyxl")
    phone.goto(base_url)
    fill_job(phone, scale=False)
    phone.click("#submit")
    wait_for_plan(phone)
    with phone.expect_download(timeout=PLAN_TIMEOUT_MS) as info:
        phone.click("[data-testid=export-xlsx]")
    download = info.value
    assert download.suggested_filename == "trainsizer-plan.xlsx"
    path = tmp_path / "plan.xlsx"
    download.save_as(path)
    wb = openpyxl.load_workbook(path)
    assert wb.sheetnames == ["Recommendation", "Bill of materials", "Options", "Assumptions"]
    rec = {r[0]: r[1] for r in wb["Recommendation"].iter_rows(min_row=2, values_only=True)}
    assert rec["GPU"] == "H100 SXM5 80GB"  # the product's name (the id is in the JSON)
    with phone.expect_download(timeout=PLAN_TIMEOUT_MS) as info:
        phone.click("[data-testid=export-csv]")
    assert info.value.suggested_filename == "trainsizer-plan.csv"


def test_html_report_fits_a_phone(browser, tmp_path):
    from typer.testing import CliRunner

    from trainsizer.cli import app

    out = tmp_path / "plan.html"
    args = ["report", "examples/jobs/qwen2.5-7b-lora.yaml", "--out", str(out), "--gpu", "rtx-4090-24gb", "--gpu",
            "h100-sxm5-80gb", "--max-gpus", "8", "--site", "chengdu-legacy-colo"]
    for lang in ("en", "zh-CN"):
        out.unlink(missing_ok=True)
        result = CliRunner().invoke(app, [*args, "--lang", lang])
        assert result.exit_code == 0, result.output
        context = browser.new_context(viewport=PHONE)
        pg = context.new_page()
        pg.goto(out.as_uri())
        assert_no_horizontal_overflow(pg)
        assert pg.locator("#chart-memory [data-testid=capacity-line]").count() == 1
        assert pg.locator("#chart-pareto [data-testid=recommended-point]").count() == 1
        context.close()


def test_the_site_follows_the_currency_until_the_user_picks_one(page):
    """An English page plans in US dollars at a US hall; switching to yuan plans in the China market, so the site
    moves to the Chinese hall that market defaults to (and back), until the user chooses a site themselves."""
    from trainsizer.workflows.catalogs import default_site

    abroad, china = default_site(market="global"), default_site(market="cn")
    assert abroad != china
    assert page.input_value("#site") == abroad
    page.select_option("#currency", "CNY")
    assert page.input_value("#site") == china
    page.select_option("#currency", "USD")
    assert page.input_value("#site") == abroad
    chosen = next(v for v in page.eval_on_selector_all("#site option", "os => os.map(o => o.value)")
                  if v not in (abroad, china))
    page.select_option("#site", chosen)
    page.select_option("#currency", "CNY")
    assert page.input_value("#site") == chosen
