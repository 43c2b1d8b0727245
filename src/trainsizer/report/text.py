"""Terminal tables (rich) for estimate, validate and the catalogs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from trainsizer.i18n import N_, resolve_lang, t, tr
from trainsizer.workflows.defaults import DEFAULT_MAX_OOM_RISK

if TYPE_CHECKING:  # the plan document's keys (workflows.plan_schema)
    from trainsizer.report.answer import Card
    from trainsizer.workflows.plan_schema import OptionJSON, PlanJSON


def _console() -> Console:
    return Console(highlight=False, emoji=False, width=140)


class _Lines:
    """Prints through a console as ``Console.print`` does, consecutive lines of markup as one text: rich renders a
    text of several lines line by line, as it renders each line printed alone (the same characters and styles), in
    less than half the time of a print per line. A table first prints the lines before it; :meth:`flush` the rest."""

    def __init__(self, con: Console) -> None:
        self.con = con
        self.lines: list[str] = []

    def print(self, item: str | Table = "") -> None:
        if isinstance(item, str):
            self.lines.append(item)
            return
        self.flush()
        self.con.print(item)

    def flush(self) -> None:
        if self.lines:
            self.con.print("\n".join(self.lines))
            self.lines = []


def print_validation(results: list[Any], summary: dict[str, Any], lang: str | None = None,
                     per_case: bool = True) -> None:
    lang = resolve_lang(lang)
    con = _console()
    if per_case:
        _print_case_table(results, con, lang)
    for key in ("holdout", "holdout_family"):
        if summary.get(key):
            _print_holdout(summary[key], con, lang)
    if summary.get("in_sample_note"):  # a message id (workflows.validate.IN_SAMPLE_NOTE)
        con.print(tr(summary["in_sample_note"], lang))
    for name, label in SUMMARY_ROWS.items():
        s = summary[name]
        if not s["count"]:
            continue
        shown = tr(label, lang).rjust(8 if lang == "en" else 0)  # English: the labels aligned as before
        con.print(tr("{label} (in-sample): {count} cases, median |error| {median}, p90 {p90}, max {max}, "
                     "within 15%: {within}/{count}", lang, label=shown, count=s["count"],
                     median=f"{s['median_abs_error']:.1%}", p90=f"{s['p90_abs_error']:.1%}",
                     max=f"{s['max_abs_error']:.1%}", within=s["within_15pct"]))
    if summary.get("skipped"):
        con.print(tr("skipped: {n} (no prediction for that metric yet)", lang, n=summary["skipped"]))
    if summary.get("accuracy"):
        _print_accuracy(summary, con, lang)
    if summary.get("range_coverage"):
        from trainsizer.report.coverage_text import print_coverage

        print_coverage(summary["range_coverage"], con, lang)
        _print_view_coverage(summary, con, lang)


def calibration_lines(summary: dict[str, Any], out: str, lang: str | None = None) -> list[str]:
    """What ``trainsizer calibrate`` says: per kind the cases fitted and the held-out error before and after, then
    the profile written."""
    lang = resolve_lang(lang)
    lines = [tr("{kind}: fitted on {n} cases; held-out median |error| {before} -> {after} ({held} cases)", lang,
                kind=tr(kind, lang), n=s["fitted_cases"], before=_pct(s["held_out_median_before"]),
                after=_pct(s["held_out_median_after"]), held=s["held_out_cases"]) for kind, s in summary.items()]
    return [*lines, tr("wrote {path}; use it with --calibration {path}", lang, path=out)]


SUMMARY_ROWS = {"all": N_("all"), "fitted": N_("fitted"), "excluded": N_("excluded")}  # the in-sample lines
HOLDOUT_TITLES = {"source": N_("Leave-one-source-out: each publication held out"),
                  "family": N_("Leave-one-family-out: each GPU family held out")}
# GPU families as the catalog's architecture ids; product names, shown as they are in every language
FAMILY_NAMES = {"davinci": "Ascend (Da Vinci)", "cdna3": "AMD CDNA 3", "cdna4": "AMD CDNA 4",
                "musa-quyuan": "Moore Threads (MUSA)", "dcu-gfx926": "Hygon DCU", "dcu-gfx936": "Hygon DCU",
                "blackwell-ultra": "Blackwell Ultra"}


def part_label(part: str) -> str:
    """A GPU part (:func:`trainsizer.estimate.regimes.gpu_part`) as its product name: h20 -> H20, ascend-910b ->
    Ascend 910B, rtx-4090d -> RTX 4090D."""
    return " ".join(t.capitalize() if t.isalpha() and len(t) > 3 else t.upper() for t in part.split("-"))


def _pct(x: float | None, signed: bool = False) -> str:
    return "-" if x is None else f"{x:+.1%}" if signed else f"{x:.1%}"


def _print_holdout(held: dict[str, Any], con: Console, lang: str) -> None:
    """One cross-validation pass: its overall line per kind, then per GPU family, China-market part
    (:func:`~trainsizer.evidence.case_terms.china_market_parts`) and training method the cases, median / p90 of
    |error| and the signed median (positive = predicted too fast / too large)."""
    from trainsizer.evidence.case_terms import china_market_parts

    kinds = [k for k in ("memory", "throughput") if held.get(k, {}).get("count")]
    if not kinds:
        return
    by = held[kinds[0]]["holdout"]
    table = Table(title=tr(HOLDOUT_TITLES[by], lang), title_justify="left")
    table.add_column(tr("group", lang), justify="left")
    for kind in kinds:
        table.add_column(tr("{kind}: cases", lang, kind=tr(kind, lang)), justify="right")
        table.add_column(tr("median / p90 |error|", lang), justify="right")
        table.add_column(tr("signed median", lang), justify="right")

    def row(label: str, cells: list[dict[str, Any] | None]) -> None:
        out = [label]
        for c in cells:
            out += ["-", "-", "-"] if not c else [str(c["count"]), f"{_pct(c['median_abs_error'])} / "
                                                  f"{_pct(c['p90_abs_error'])}", _pct(c["signed_median_error"], True)]
        table.add_row(*out)

    row(tr("all", lang), [held[k] for k in kinds])
    for group, title in (("family", N_("GPU family")), ("part", N_("China-market part")), ("method", N_("method"))):
        names = list(dict.fromkeys(n for k in kinds for n in held[k]["signed"][group]))
        for name in china_market_parts(names) if group == "part" else names:
            shown = FAMILY_NAMES.get(name, name.title()) if group == "family" else \
                part_label(name) if group == "part" else name
            row(f"{tr(title, lang)}: {shown}", [held[k]["signed"][group].get(name) for k in kinds])
    con.print(table)
    excluded = sum(held[k]["excluded"] for k in kinds)
    con.print(tr("Signed median: positive = predicted too fast (speed) or too large (memory); cases that could not be "
                 "predicted: {n}", lang, n=excluded))


ACCURACY_ROWS = {
    ("all", "leave-one-source-out"): N_("all {count} shipped cases, each publication held out"),
    ("all", "leave-one-family-out"): N_("all {count} shipped cases, each GPU family held out"),
    ("shared", "leave-one-source-out"): N_("the {count} shared cases (validation/cases/) alone, each publication "
                                           "held out"),
    ("all", "in-sample"): N_("all {count} shipped cases, which the parameters are fitted on, in-sample (flatters the "
                             "model: not its accuracy)"),
}


VIEW_TITLES = {"user": N_("How accurate is it, each case as a user states it (its framework's profile sets the "
                           "internals)? Median / p90 absolute error"),
               "annotated": N_("How accurate is it, each case with every key as annotated? Median / p90 absolute "
                               "error")}
VIEW_NAMES = {"user": N_("as a user states it"), "annotated": N_("as annotated"),
              "unstated": N_("no framework named (the wider ranges)")}


def _print_accuracy(summary: dict[str, Any], con: Console, lang: str) -> None:
    """The accuracy tables of docs/accuracy.md, one per view (the user view first): median / p90 absolute error
    (cases, publications) per row."""
    for view in VIEW_TITLES:
        rows = [r for r in summary["accuracy"] if r.get("view", "annotated") == view]
        if rows:
            _accuracy_table(rows, tr(VIEW_TITLES[view], lang), con, lang)
    folders = dict.fromkeys(f"{f.rsplit('/', 1)[0]}/*.yaml" if "/" in f else f for f in summary.get("files", []))
    con.print(tr("Case by case: trainsizer validate {files} --holdout source (or family)", lang,
                 files=" ".join(folders)))


def _accuracy_table(rows: list[dict[str, Any]], title: str, con: Console, lang: str) -> None:
    table = Table(title=title, title_justify="left")
    for col, just in ((N_("cases"), "left"), (N_("memory"), "right"), (N_("throughput"), "right")):
        table.add_column(tr(col, lang), justify=just, overflow="fold")
    for row in rows:
        cells = []
        for kind in ("memory", "throughput"):
            c = row[kind]
            if not c["count"]:
                cells.append("-")
                continue
            counts = tr("{n} cases", lang, n=c["count"])
            if c["sources"] is not None and row["method"] == "leave-one-family-out":
                counts = tr("{cases}, {n} GPU families", lang, cases=counts, n=c["sources"])
            elif c["sources"] is not None:
                counts = tr("{cases}, {n} publications", lang, cases=counts, n=c["sources"])
            cells.append(f"{c['median_abs_error']:.1%} / {c['p90_abs_error']:.1%} ({counts})")
        table.add_row(tr(ACCURACY_ROWS[(row["cases"], row["method"])], lang, count=row["count"]), *cells)
    con.print(table)


def _print_view_coverage(summary: dict[str, Any], con: Console, lang: str) -> None:
    """The other views' nested coverage of their 80 % ranges, one line each."""
    for view, row in summary.get("views", {}).items():
        cov = row.get("range_coverage")
        if view == summary.get("view") or not cov:
            continue
        con.print(tr("The {level} ranges, {view}: {memory} of the memory cases and {speed} of the speed cases inside",
                     lang, level=f"{cov.get('level', 0.8):.0%}", view=tr(VIEW_NAMES[view], lang),
                     memory=f"{cov['memory']['coverage']:.0%}", speed=f"{cov['speed']['coverage']:.0%}"))


def _print_case_table(results: list[Any], con: Console, lang: str) -> None:
    table = Table(title=t("validation", lang), title_justify="left")
    for col, just in (("case", "left"), ("metric", "left"), ("measured", "right"), ("predicted", "right"),
                      ("error", "right"), ("excluded", "left")):
        table.add_column(t(col, lang), justify=just, overflow="fold")
    for r in results:
        if r.error is None:
            table.add_row(r.id, r.metric, f"{r.measured:g}", "-", "-", r.skipped or "")
            continue
        err = f"{r.error:+.1%}"
        if abs(r.error) > 0.15:
            err = f"[red]{err}[/red]"
        table.add_row(r.id, r.metric, f"{r.measured:.2f}", f"{r.predicted:.2f}", err,
                      "yes" if r.excluded_from_fit else "")
    con.print(table)


RANKING_TITLES = {"cheapest_per_run": N_("Cheapest per run"), "fastest": N_("Fastest"),
                  "fewest_gpus": N_("Fewest GPUs"), "cheapest_to_buy": N_("Cheapest to own"),
                  "best_mfu": N_("Best MFU"),
                  "pareto_time_vs_gpus": N_("Pareto: step time vs GPUs")}
RANKING_COLUMNS = (N_("GPUs"), N_("GPU"), N_("Servers"), N_("Layout"), N_("GiB used"), N_("Tokens/s"), N_("MFU"),
                   N_("Time to train"), N_("One run"), N_("Why"))
FIGURE_COLUMNS = (RANKING_COLUMNS[4], RANKING_COLUMNS[5], RANKING_COLUMNS[7], RANKING_COLUMNS[8])
# the default table: the figures to compare, two lines a row (the layout and the reasons: --all-rankings, and the
# answer's in "Recommendation in detail")
COMPACT_COLUMNS = tuple(c for c in RANKING_COLUMNS if c not in (RANKING_COLUMNS[3], RANKING_COLUMNS[9]))


def print_plan(result: Any, lang: str | None = None, extra: PlanJSON | None = None,
               all_rankings: bool = False) -> None:
    """The answer card first (what to rent or buy, per run, commitment, time, why, the runner-ups), then the
    notes, the ranking of the plan's objective (every ranking with ``all_rankings``) and the recommended option in
    detail; every word through the message catalog."""
    lang = resolve_lang(lang)
    con = _Lines(_console())
    try:
        _print_plan(con, result, lang, extra, all_rankings)
    finally:
        con.flush()


def _print_plan(con: _Lines, result: Any, lang: str, extra: PlanJSON | None, all_rankings: bool) -> None:
    from trainsizer.report.answer import card
    from trainsizer.report.message_text import texts

    out = extra or {**result.to_dict(), "suggestions": result.suggestions, "notes": result.notes}
    answer = card(out, lang)
    _print_answer(con, answer, lang)
    if not result.options:
        return
    for note in texts(result.notes, lang) if answer["ok"] else []:  # else the card lists them
        con.print(f"  - {escape(note)}")
    shown = _shown_rankings(result.rankings, out, all_rankings)
    marked = False  # a row with its chance of running out of memory: said once below the tables
    for key, idx in shown:
        title = tr(RANKING_TITLES[key], lang)
        if not set(idx) <= set(result.rankings[key]):  # the answer's row added (_shown_rankings)
            title = tr("{ranking}, and the answer", lang, ranking=title)
        marked |= _print_ranking(con, out["options"], idx, title, out.get("currency", ""), lang,
                                 RANKING_COLUMNS if all_rankings else COMPACT_COLUMNS)
    if marked:
        con.print(escape(tr("OOM: the layout's chance of running out of GPU memory, where it is a real risk; the "
                            "answer is never a layout above --max-oom-risk (default {limit})", lang,
                            limit=f"{DEFAULT_MAX_OOM_RISK:.0%}")))
    con.print(tr("{candidates} candidate layouts screened; {options} hardware options re-checked with the reference "
                 "estimators.", lang, candidates=f"{result.evaluated:,}", options=len(result.options)))
    others = [tr(title, lang) for key, title in RANKING_TITLES.items()
              if result.rankings.get(key) and key not in dict(shown)]
    if others:
        from trainsizer.report.words import listing

        con.print(escape(tr("Also ranked: {rankings} (--all-rankings prints them, with each option's layout and "
                            "reasons; --json holds every ranking)", lang, rankings=listing(others, lang))))
    if extra:
        _print_detail(con, extra, lang)


# the ranking printed by default for each objective (workflows.decide.OBJECTIVES); the others on request
OBJECTIVE_RANKINGS = {"cheapest": "cheapest_per_run", "fastest": "fastest", "fewest-gpus": "fewest_gpus"}


def _shown_rankings(rankings: dict[str, list[int]], out: PlanJSON, every: bool) -> list[tuple[str, list[int]]]:
    """The rankings to print, with their option indices: every non-empty one with ``every``; else the one of the
    plan's objective (the first non-empty one without a recommendation), the recommended option's row added at
    its end when that ranking leaves it out (the answer weighs time too), so the table always shows the answer."""
    present = [(key, rankings[key]) for key in RANKING_TITLES if rankings.get(key)]
    if every or not present:
        return present
    rec = out.get("recommendation") or {}
    key = OBJECTIVE_RANKINGS.get(rec.get("objective", ""), "")
    idx = rankings.get(key) or []
    if not idx:
        key, idx = present[0]
    pick = rankings.get("recommended") or []
    return [(key, idx + [i for i in pick if i not in idx])]


def _print_ranking(con: _Lines, options: list[OptionJSON], idx: list[int], title: str, cur: str,
                   lang: str, columns: tuple[str, ...]) -> bool:
    """One ranking as a table: a row per option, the ``columns`` of RANKING_COLUMNS (servers, layout, memory, speed,
    time, cost and why); whether a row shows its chance of running out of memory (option_text.oom_mark)."""
    from trainsizer.report import option_text as ot
    from trainsizer.report import words as w

    table = Table(title=title, title_justify="left")
    for col in columns:  # a figure and its range each keep to one line; words wrap around them
        table.add_column(tr(col, lang), overflow="fold", no_wrap=col in FIGURE_COLUMNS)
    for i in idx:
        o = options[i]
        hw, perf = o["hardware"], o["performance"]
        run = ot.run_cell(o, cur, lang, "\n") if (o.get("per_run") or {}).get("cost") is not None else "-"
        cells = dict(zip(RANKING_COLUMNS, (
            str(hw["gpus"]), w.gpu_name(hw["gpu"], lang), ot.servers_text(o, lang), ot.layout(o, lang),
            ot.memory_cell(o, "/", "\n", lang), ot.tokens_cell(o, "\n"), f"{perf['mfu']:.0%}",
            ot.time_cell(o, lang, "\n"), run, escape(ot.why(o, lang))), strict=True))
        table.add_row(*(cells[col] for col in columns))
    con.print(table)
    return any(ot.oom_mark(options[i], lang) for i in idx)


def _print_answer(con: _Lines, answer: Card, lang: str) -> None:
    """The answer card as terminal lines."""
    from trainsizer.report.words import labelled

    if not answer["ok"]:
        con.print(f"[bold red]{escape(labelled(answer['title'], answer['reason'], lang))}[/bold red]")
        for item in answer["advice"]:
            con.print(f"  - {escape(item)}")
        return
    con.print(escape(labelled(answer["title"], answer["why"], lang)))
    for label, value in answer["facts"]:
        con.print(f"  {escape(labelled(label, value, lang))}")
    if answer["runner_ups"]:
        con.print(f"  [bold]{escape(answer['runner_ups_title'])}[/bold]")
    for r in answer["runner_ups"]:
        con.print(f"  - {escape(r['title'])} — {escape(r['summary'])} — {escape(r['trade'])}")


def _print_detail(con: _Lines, out: PlanJSON, lang: str) -> None:
    """The recommended (else the fastest) option: bill of materials, site fit, cost, timeline, verification."""
    from trainsizer.report import sections as sec
    from trainsizer.report.specs import pick_index

    idx = pick_index(out)
    if idx is None:
        return
    pick = out["options"][idx]
    con.print()
    for section in (sec.recommended(pick, lang, sec.quoted(out)), *sec.detail(out, pick, lang),
                    sec.timeline(out, lang) if out.get("recommendation") else None, sec.verification(out, lang)):
        if section:
            _print_section(con, section)


def _print_section(con: _Lines, section: Any) -> None:
    con.print(f"[bold]{escape(section.title)}[/bold]")
    for block in section.blocks:
        if block[0] in ("p", "verdict"):
            con.print(f"  {escape(block[1])}")
        elif block[0] == "list":
            for item in block[1]:
                con.print(f"  - {escape(item)}")
        elif block[0] == "table":
            table = Table()
            for head in block[1]:
                table.add_column(str(head), overflow="fold")
            for row in block[2]:
                table.add_row(*(escape(getattr(c, "text", str(c))) for c in row))
            con.print(table)


def _money(x: float, cur: str) -> str:
    return f"{x / 1e6:,.2f} M {cur}" if abs(x) >= 1e6 else f"{x:,.0f} {cur}"


SPLIT = {"compute": N_("compute"), "storage": N_("storage"), "network": N_("network"), "service": N_("service")}


def print_quotes(data: dict[str, Any], lang: str | None = None) -> None:
    """Rental quotes side by side: price, delivered compute, the run's cost, the cost split and the risk flags."""
    from trainsizer.report import words as w
    from trainsizer.report.message_text import text, texts

    lang = resolve_lang(lang)
    con = _console()
    cur = data["currency"]
    title = tr("Rental quotes ({currency}; MFU basis: {basis})", lang, currency=cur,
               basis=text(data["mfu_basis"], lang))
    table = Table(title=title, title_justify="left")
    for col in (tr("offer", lang), tr("GPUs", lang), f"{cur}/GPU-h", tr("delivered PFLOPS", lang), f"{cur}/PFLOP-h",
                tr("run cost", lang), tr("split", lang), tr("flags", lang)):
        table.add_column(col, overflow="fold")
    for q in data["quotes"]:
        split = w.listing([f"{w.word(SPLIT, k, lang)} {v:.0%}" for k, v in q["split"].items()], lang) + (
            tr(" (estimated)", lang) if q["split_estimated"] else "")
        table.add_row(escape(q["name"]), str(q["gpus"]), f"{q['price_per_gpu_hour']:.2f}",
                      f"{q['delivered_pflops']:.2f}", f"{q['cost_per_delivered_pflop_hour']:.1f}",
                      "-" if q["run_cost"] is None else _money(q["run_cost"], cur), split,
                      escape(w.join(texts(q["flags"], lang), lang)))
    con.print(table)


def print_scale(gpu: str, curves: list[Any], lang: str | None = None) -> None:
    """Throughput (and scaling efficiency) per GPU count for each link option, then the curves' verdicts."""
    from trainsizer.report import words as w
    from trainsizer.report.message_text import text

    lang = resolve_lang(lang)
    con = _console()
    counts = [p.gpus for p in curves[0].points] if curves else []
    table = Table(title=tr("Scaling {gpu}: tokens/s (efficiency)", lang, gpu=w.gpu_name(gpu, lang)),
                  title_justify="left")
    table.add_column(tr("links", lang))
    for n in counts:
        table.add_column(str(n), justify="right")
    for c in curves:
        cells = []
        for p in c.points:
            cells.append("-" if p.tokens_per_s is None else f"{p.tokens_per_s:,.0f} ({p.efficiency:.0%})")
        table.add_row(escape(text(c.label, lang)), *cells)
    con.print(table)
    for c in curves:
        for v in c.verdicts():
            con.print(f"  - {escape(text(v, lang))}")
