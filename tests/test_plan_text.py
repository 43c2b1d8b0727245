"""`trainsizer plan` in the terminal: the answer card, then ONE ranking (the objective's, compact, always holding
the answer's row) and a line naming the other rankings; `--all-rankings` prints every ranking in full, as before.
`--json` is the same whatever the terminal shows."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from trainsizer.cli import app
from trainsizer.i18n import tr
from trainsizer.report import words as w
from trainsizer.report.text import COMPACT_COLUMNS, RANKING_COLUMNS, RANKING_TITLES, _shown_rankings

JOB = "examples/jobs/qwen2.5-7b-lora.yaml"
FLAGS = ["--currency", "USD", "--max-gpus", "8"]


def _run(*args: str) -> str:
    result = CliRunner().invoke(app, ["plan", JOB, *FLAGS, *args], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def planned() -> dict[str, object]:
    return {"json": json.loads(_run("--json")), "text": _run(), "all": _run("--all-rankings"),
            "fastest": _run("--objective", "fastest")}


def _titles(text: str) -> list[str]:
    """The ranking tables' titles, in print order (a title is a line of its own above the table's top border)."""
    lines = [line.strip() for line in text.splitlines()]
    return [line for line, below in zip(lines, lines[1:], strict=False) if below.startswith("┏")
            and any(line.startswith(tr(t, "en")) for t in RANKING_TITLES.values())]


def _header(text: str, title: str) -> str:
    lines = [line.strip() for line in text.splitlines()]
    return lines[lines.index(title) + 2]


def test_the_default_shows_the_objectives_ranking_with_the_answer(planned):
    out, text = planned["json"], planned["text"]
    titles = _titles(text)
    assert len(titles) == 1 and titles[0].startswith("Cheapest per run"), titles
    rec = out["recommendation"]
    pick = out["options"][rec["option"]]
    # the answer's row is in the table even when the cheapest runs leave it out (the answer weighs time too)
    assert f"{rec['acquisition']} {w.money(pick['per_run']['cost'], rec['currency'], 'en')}" in text
    added = rec["option"] not in out["rankings"]["cheapest_per_run"]
    assert titles[0] == ("Cheapest per run, and the answer" if added else "Cheapest per run")
    header = _header(text, titles[0])
    assert all(c in header for c in COMPACT_COLUMNS) and "Layout" not in header and "Why" not in header
    others = [tr(t, "en") for k, t in RANKING_TITLES.items() if out["rankings"].get(k) and k != "cheapest_per_run"]
    also = next(line for line in text.splitlines() if line.startswith("Also ranked:"))
    assert all(t in also for t in others) and "--all-rankings" in also


def test_all_rankings_prints_every_ranking_in_full(planned):
    out, text = planned["json"], planned["all"]
    expected = [tr(t, "en") for k, t in RANKING_TITLES.items() if out["rankings"].get(k)]
    assert _titles(text) == expected and "Also ranked:" not in text
    assert all(c in _header(text, expected[0]) for c in RANKING_COLUMNS)


def test_the_objective_picks_the_ranking(planned):
    titles = _titles(planned["fastest"])
    assert len(titles) == 1 and titles[0].startswith("Fastest"), titles


def test_json_is_the_same_with_or_without_all_rankings(planned):
    assert json.loads(_run("--json", "--all-rankings")) == planned["json"]


def test_shown_rankings_add_the_answer_once():
    rankings = {"fastest": [0, 1], "cheapest_per_run": [2, 3], "recommended": [1]}
    out = {"recommendation": {"objective": "cheapest"}}
    assert _shown_rankings(rankings, out, False) == [("cheapest_per_run", [2, 3, 1])]
    assert _shown_rankings({**rankings, "recommended": [3]}, out, False) == [("cheapest_per_run", [2, 3])]
    no_pick = {"fastest": [0, 1], "cheapest_per_run": [], "recommended": []}  # the first ranking the plan has
    assert _shown_rankings(no_pick, {"recommendation": None}, False) == [("fastest", [0, 1])]
    assert [k for k, _ in _shown_rankings(rankings, out, True)] == ["cheapest_per_run", "fastest"]


def test_options_written_when_read_print_the_same_plan(capsys):
    """The table's plan writes each option's JSON when it is read (``plan_job(options_when_read=True)``): the same
    dicts as the list every other face gets, and the same terminal text."""
    from pathlib import Path

    from trainsizer.report.text import print_plan
    from trainsizer.workflows.jobs import load_job
    from trainsizer.workflows.plan_job import PlanRequest, plan_job

    job, req = load_job(Path(JOB)), PlanRequest(currency="USD", max_gpus=8)
    eager, lazy = plan_job(job, req), plan_job(job, req, options_when_read=True)
    assert isinstance(eager.out["options"], list) and not isinstance(lazy.out["options"], list)
    assert len(lazy.out["options"]) == len(eager.out["options"])
    assert lazy.out["options"][-1] == eager.out["options"][-1]
    assert lazy.out["options"][1:3] == eager.out["options"][1:3]
    assert list(lazy.out["options"]) == eager.out["options"]
    print_plan(eager.result, "en", eager.out)
    text = capsys.readouterr().out
    print_plan(lazy.result, "en", lazy.out)
    assert capsys.readouterr().out == text


@pytest.mark.parametrize("width", [40, 140])
def test_lines_printed_in_blocks_read_as_printed_one_by_one(width):
    """``_Lines`` prints consecutive lines as one text: the same characters and styles (a colour terminal's ANSI
    codes) as a print per line, wrapped lines and blank lines included."""
    import io

    from rich.console import Console

    from trainsizer.report.text import _Lines

    lines = ["[bold]A title[/bold]", "  a [red]line[/red] " + "long " * 40, "", "  - an \\[escaped] item"]
    apart, together = (Console(file=io.StringIO(), width=width, force_terminal=True, color_system="truecolor",
                               highlight=False, emoji=False) for _ in range(2))
    for line in lines:
        apart.print(line)
    block = _Lines(together)
    for line in lines:
        block.print(line)
    block.flush()
    assert together.file.getvalue() == apart.file.getvalue()


def test_a_rental_on_a_contract_names_its_term_where_its_cost_is_shown():
    """A lease's cost is the contract's bill, not the run's: the table's cell names the term (option_text.run_cell);
    an on-demand rental's cell is the run's cost alone."""
    from trainsizer.report import option_text as ot

    args = ["plan", "examples/jobs/llama-3.1-70b-full-finetune.yaml", "--currency", "CNY"]
    out = json.loads(CliRunner().invoke(app, [*args, "--json", "--all"]).output)
    rented = [o for o in out["options"] if o["per_run"].get("acquisition") == "rent"]
    leases = [o for o in rented if o["per_run"]["rent"]["term"] == "multi-year"]
    assert leases and leases[0]["per_run"]["rent"]["billed_hours"] == 26280
    for o in rented:
        cell, cost = ot.run_cell(o, "CNY", "en"), w.money(o["per_run"]["cost"], "CNY", "en")
        lease = o["per_run"]["rent"]["term"] not in ("on-demand", "preemptible")
        assert cell.startswith(f"rent, 3-year contract: {cost}" if o in leases else
                               f"rent, {w.word(w.TERMS, o['per_run']['rent']['term'], 'en')}: {cost}" if lease
                               else f"rent {cost}"), cell
    assert ot.run_cell(leases[0], "CNY", "zh-CN").startswith("租用，3 年合约：")
    text = CliRunner().invoke(app, [*args, "--all-rankings"], env={"COLUMNS": "400"}).output
    assert any(f"rent, 3-year contract: {w.money(o['per_run']['cost'], 'CNY', 'en')}" in text for o in leases)
    # the answer card's runner-ups say it the same way
    from trainsizer.report.answer import card

    lease = leases[0]
    rec = {**out["recommendation"], "runner_ups": [
        {"option": out["options"].index(lease), "gpu": lease["hardware"]["gpu"], "gpus": lease["hardware"]["gpus"],
         "acquisition": "rent", "per_run": lease["per_run"]["cost"], "days": None, "trade": None}]}
    runner = card({**out, "recommendation": rec}, "en")["runner_ups"][0]
    billed = w.money(lease["per_run"]["cost"], "CNY", "en")
    assert dict(runner["facts"])["Per run"] == f"rent, 3-year contract: {billed}"


def test_a_rented_answer_is_not_judged_against_the_users_racks():
    """Site fit of a rented answer: the provider's data centre, only that (report.sections.site_fit); no rack verdict
    of the user's site ("does NOT fit", "fits: 4 servers ... per rack") and no 'fits the site' for a rented option."""
    from trainsizer.report import sections
    from trainsizer.workflows.jobs import load_job
    from trainsizer.workflows.plan_job import PlanRequest, plan_job

    args = ["plan", JOB, "--currency", "CNY", "--site", "chengdu-legacy-colo"]
    text = CliRunner().invoke(app, args, env={"COLUMNS": "400"}).output
    lines = text.splitlines()
    at = lines.index("Site fit")
    assert lines[at + 1].strip().startswith("rented: runs in the provider's data centre") and lines[at + 2][0] != " "
    out = plan_job(load_job(JOB), PlanRequest(currency="CNY", site="chengdu-legacy-colo")).out
    pick = out["options"][out["recommendation"]["option"]]
    assert out["recommendation"]["acquisition"] == "rent" and pick["system"]["site_fit"]["verdict"]
    assert [b[0] for b in sections.site_fit(pick, "en").blocks] == ["p"]
    table = sections.alternatives(out, "en").blocks[0]
    shown = sorted({i for idx in out["rankings"].values() for i in idx})[:15]
    for i, row in zip(shown, table[2], strict=True):
        if not out["options"][i].get("site_applies", True):
            assert row[-1] == "-"


def test_a_gpu_the_job_names_is_said_where_the_plan_searched_every_gpu():
    """plan_job: the job's hardware.gpu does not narrow the search (--gpu does); one note says so and how to keep to
    it, and none where --gpu is given or the job names no GPU."""
    from trainsizer.report.message_text import text
    from trainsizer.workflows.jobs import job_from_dict
    from trainsizer.workflows.plan_job import PlanRequest, plan_job

    job = {"model": {"preset": "qwen2.5-7b"}, "hardware": {"gpu": "h100-sxm5-80gb"},
           "training": {"method": "lora", "micro_batch_size": 1, "seq_len": 4096, "tokens": 1.0e+8}}

    def planned(data: dict[str, object], *gpus: str) -> dict[str, object]:
        return plan_job(job_from_dict(data, list(gpus) or None), PlanRequest(currency="CNY", max_gpus=8,
                                                                             gpus=gpus)).out

    out = planned(job)
    notes = [n for n in out["notes"] if n.code == "plan.job_gpu_not_kept"]
    assert len(notes) == 1 and len({o["hardware"]["gpu"] for o in out["options"]}) > 1
    assert text(notes[0], "en") == ("the job names H100 SXM5 80GB (hardware.gpu); the plan searched every GPU the "
                                 "market offers: --gpu h100-sxm5-80gb keeps it to that one")
    kept = planned(job, "h100-sxm5-80gb")
    assert {o["hardware"]["gpu"] for o in kept["options"]} == {"h100-sxm5-80gb"}
    unnamed = {k: v for k, v in job.items() if k != "hardware"}
    for other in (kept, planned(unnamed)):
        assert not [n for n in other["notes"] if n.code == "plan.job_gpu_not_kept"]


def test_a_row_at_risk_of_running_out_of_memory_says_its_chance(capsys):
    """The ranking lists layouts the answer may not take (their chance of running out of memory above --max-oom-risk)
    beside the others: each such row says its chance (option_text.oom_mark), and a line under the tables says what it
    means; a safe row has no mark."""
    from pathlib import Path

    from trainsizer.report import option_text as ot
    from trainsizer.report.text import print_plan
    from trainsizer.workflows.defaults import DEFAULT_MAX_OOM_RISK
    from trainsizer.workflows.jobs import load_job
    from trainsizer.workflows.plan_job import PlanRequest, plan_job

    planned = plan_job(load_job(Path(JOB)), PlanRequest(currency="CNY"))
    out = planned.out
    shown = [out["options"][i] for i in dict.fromkeys(out["rankings"]["cheapest_per_run"]
                                                      + out["rankings"]["recommended"])]
    risky = [o for o in shown if o["range"]["at_risk"]]
    assert any(o["range"]["p_exceeds_capacity"] > DEFAULT_MAX_OOM_RISK for o in risky)
    assert any(not o["range"]["at_risk"] for o in shown)
    print_plan(planned.result, "en", out)
    text = capsys.readouterr().out
    table = text[text.index("Cheapest per run"):text.index("candidate layouts screened")]
    assert table.count("OOM ") == len(risky)
    for o in shown:
        assert ("OOM " in ot.memory_cell(o)) == o["range"]["at_risk"]
        if o["range"]["at_risk"]:
            assert f"OOM {o['range']['p_exceeds_capacity']:.0%}" in table
    assert "OOM: the layout's chance of running out of GPU memory" in table
