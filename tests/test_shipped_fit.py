"""The evidence behind the shipped parameters is in the repository: every measured case the fits and the MFU
ceilings read lives under validation/ with a public source and its date, a refit from these cases rewrites the
shipped parameter files byte for byte, and `trainsizer validate` alone prints the accuracy docs/accuracy.md tabulates
and README.md quotes."""

from __future__ import annotations

import re
import shutil
import sys
from datetime import date
from pathlib import Path

import pytest
import yaml
from conftest import REPO

from trainsizer.evidence import shipped_cases
from trainsizer.evidence.cases import load_cases

TOOLS = REPO / "tools"
ACCURACY = REPO / "docs" / "accuracy.md"  # the accuracy tables (tools/readme_accuracy.py writes them)
README = REPO / "README.md"  # quotes the tables' first row as its headline
ESTIMATE = REPO / "src" / "trainsizer" / "estimate"
# A reader finds the figure from its source: a URL, an arXiv id or a repository path read at a named commit.
PUBLIC_ADDRESS = re.compile(r"https?://|arXiv \d{4}\.\d{4,5}|(?:commit|@|at)\s+[0-9a-f]{7,40}\b")


@pytest.fixture(scope="module")
def tools():
    sys.path.insert(0, str(TOOLS))
    try:
        import fit_memory
        import fit_performance
        import fitting
        import mfu_ceilings
    finally:
        sys.path.remove(str(TOOLS))
    return fitting, fit_memory, fit_performance, mfu_ceilings


def _all_shipped() -> list[tuple[str, dict]]:
    return [(shipped_cases.label(p), case) for p in shipped_cases.shipped_files()
            for case in yaml.safe_load(p.read_text(encoding="utf-8"))]


def test_the_shipped_case_files_are_in_the_repository_and_the_tools_read_them():
    files = shipped_cases.shipped_files()
    assert all(f.is_relative_to(REPO / "validation") for f in files)
    assert [shipped_cases.label(f) for f in files][:4] == [
        "validation/cases/memory.yaml", "validation/cases/throughput.yaml",
        "validation/published/memory.yaml", "validation/published/throughput.yaml"]
    assert set(files[4:]) == set((REPO / "validation" / "published").glob("*.yaml")) - set(files[2:4])
    assert (REPO / "validation" / "FORMAT.md").is_file()


def test_every_shipped_case_names_a_public_source_and_the_date_of_its_figure():
    cases = _all_shipped()
    assert len(cases) >= 200
    for where, case in cases:
        cid, source = case["id"], str(case.get("source") or "")
        assert PUBLIC_ADDRESS.search(source), f"{where} {cid}: no URL, arXiv id or commit in its source"
        assert "shared/" not in source and "../" not in source, f"{where} {cid}: cites a local folder"
        as_of = date.fromisoformat(str(case.get("as_of")))
        assert date(2015, 1, 1) <= as_of <= date.today(), f"{where} {cid}: as_of {as_of}"
        assert str(case.get("notes") or "").strip(), f"{where} {cid}: no notes"


def test_ids_are_unique_across_the_shipped_files():
    ids = [case["id"] for _, case in _all_shipped()]
    assert len(ids) == len(set(ids))


def test_the_shared_cases_state_their_settings_themselves():
    """Settings the sources state beyond FORMAT.md are in the shared cases' own scenarios: nothing is added at load."""
    shared = [c for p in shipped_cases.shared_files() for c in load_cases(p)]
    assert shared and all(not c.stated for c in shared)


@pytest.mark.parametrize("kind", ["memory", "performance"])
def test_a_refit_from_the_repository_cases_rewrites_the_shipped_parameters_byte_for_byte(tools, kind, tmp_path):
    """The two-stage shipped fit (the shared cases from ``fit.start``, then every shipped case) reproduces both the
    fitted values and the ``fit.start`` block."""
    fitting, fit_memory, fit_performance, _ = tools
    module = fit_memory if kind == "memory" else fit_performance
    assert all(p.is_relative_to(REPO / "validation") for p in [*module.CORE_CASES, *module.EVERY_CASE])
    assert shipped_cases.shipped_files() == module.EVERY_CASE
    shipped = module.DATA.read_bytes()
    start, fitted, _, failed = fitting.fit_shipped(module.CORE_CASES, module.EVERY_CASE,
                                                   module.default_memory_model() if kind == "memory"
                                                   else module.default_performance_model(), module.FREE,
                                                   kind == "memory")
    assert not failed
    copy = tmp_path / module.DATA.name
    shutil.copyfile(module.DATA, copy)
    fitting.write_values(copy, fitted, module.FREE)
    fitting.write_start(copy, start, module.FREE)
    assert copy.read_bytes() == shipped, f"refit of {module.DATA.name} from the repository's cases differs"


def test_the_mfu_ceilings_are_derived_from_the_repository_cases(tools):
    """tools/mfu_ceilings.py on the repository's throughput cases gives the shipped mfu_ceiling block exactly."""
    mfu_ceilings = tools[3]
    assert all(p.is_relative_to(REPO / "validation") for p in mfu_ceilings.DEFAULT_CASES)
    data, text = mfu_ceilings.derive([])
    shipped = (ESTIMATE / "performance_model.yaml").read_text(encoding="utf-8")
    assert text in shipped
    assert yaml.safe_load(shipped)["mfu_ceiling"] == yaml.safe_load(text)["mfu_ceiling"]
    assert mfu_ceilings.EVERY_SHIPPED in text  # every shipped speed case is the evidence


def _accuracy_row(label: str, page: Path = ACCURACY) -> tuple[float, ...]:
    """The eight percentages of one row of the accuracy table on ``page``: per kind, the user view's median and p90,
    then the annotated view's."""
    text = page.read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith(f"| {label}"))
    numbers = re.findall(r"(\d+\.\d) %", row)
    assert len(numbers) == 8, row
    return tuple(float(n) for n in numbers)


def _pct(cell: dict) -> str:
    return f"{100 * cell['median_abs_error']:.1f} % / {100 * cell['p90_abs_error']:.1f} %"


def test_validate_alone_runs_the_shipped_cases_and_reproduces_the_accuracy_tables(shipped_validation):
    summary = shipped_validation["summary"]
    assert summary["files"] == [shipped_cases.label(f) for f in shipped_cases.shipped_files()]
    assert summary["view"] == "user"
    views = {(r["view"], r["cases"], r["method"]): r for r in summary["accuracy"]}
    rows = {(c, m): r for (v, c, m), r in views.items() if v == "user"}
    for key, label in ((("all", "leave-one-source-out"), "all "),
                       (("all", "leave-one-family-out"), "leave-one-family-out, all "),
                       (("shared", "leave-one-source-out"), "validation/cases only"),
                       (("all", "in-sample"), "every case in-sample")):
        computed = tuple(round(100 * views[(view, *key)][k][m], 1) for k in ("memory", "throughput")
                         for view in ("user", "annotated") for m in ("median_abs_error", "p90_abs_error"))
        assert computed == _accuracy_row(label), (key, computed)
    every = rows[("all", "leave-one-source-out")]
    annotated = views[("annotated", "all", "leave-one-source-out")]
    assert every["count"] == len(shipped_validation["cases"])
    page = ACCURACY.read_text(encoding="utf-8")
    headline = (f"| all {every['count']} ({every['memory']['sources']} memory, {every['throughput']['sources']} speed "
                f"publications; {every['memory']['count']} / {every['throughput']['count']} cases) | "
                f"**{_pct(every['memory'])}** | {_pct(annotated['memory'])} | "
                f"**{_pct(every['throughput'])}** | {_pct(annotated['throughput'])} |")
    assert headline in page
    readme = README.read_text(encoding="utf-8")
    assert headline in readme, "README's headline row: run tools/readme_accuracy.py --write"
    sys.path.insert(0, str(TOOLS))  # tools/readme_accuracy.py: the MoE and part rows README shows
    try:
        import readme_accuracy
    finally:
        sys.path.remove(str(TOOLS))
    shown = readme_accuracy.readme_signed_rows(summary)
    assert any(r.startswith("| MoE") for r in shown) and sum(r.startswith("| part ") for r in shown) >= 4
    for row in shown:
        assert row in readme, f"{row}: run tools/readme_accuracy.py --write"
    assert summary["holdout"]["memory"]["excluded"] == summary["holdout"]["throughput"]["excluded"] == 0
    family = rows[("all", "leave-one-family-out")]
    assert family["count"] == every["count"]
    assert (f"| leave-one-family-out, all {family['count']} ({family['memory']['sources']} memory, "
            f"{family['throughput']['sources']} speed GPU families) |") in page
    held = summary["holdout_family"]
    assert held["memory"]["excluded"] == held["throughput"]["excluded"] == 0
    _check_signed_table(page, summary["holdout"], held)


def _signed_cell(cell: dict | None) -> str:
    if not cell:
        return "-"
    sign = f"{100 * cell['signed_median_error']:+.1f} %".replace("-", "\u2212")
    return f"{100 * cell['median_abs_error']:.1f} % / {100 * cell['p90_abs_error']:.1f} %, {sign}"


def _check_signed_table(page: str, source: dict, family: dict) -> None:
    """Each family's, China-market part's and method's row of docs/accuracy.md's signed table holds the figures both
    holdouts compute."""
    from trainsizer.evidence.case_terms import china_market_parts
    from trainsizer.report.text import FAMILY_NAMES, part_label

    lines = page.splitlines()
    for group, label in (("family", lambda n: FAMILY_NAMES.get(n, n.title())), ("method", lambda n: f"method {n}"),
                         ("model", lambda n: "MoE (routed experts)"), ("part", lambda n: f"part {part_label(n)}")):
        names = set(source["memory"]["signed"][group]) | set(source["throughput"]["signed"][group])
        names -= {"dense"} if group == "model" else set()  # the MoE row alone: dense is nearly "all"
        names = set(china_market_parts(names)) if group == "part" else names  # the parts a team in China trains on
        for name in names:
            row = next(line for line in lines if line.startswith(f"| {label(name)} |"))
            cells = [c.strip() for c in row.strip("|").split("|")][1:]
            expected = []
            for kind in ("memory", "throughput"):
                cell = source[kind]["signed"][group].get(name)
                expected += [str(cell["count"]) if cell else "-", _signed_cell(cell),
                             _signed_cell(family[kind]["signed"][group].get(name))]
            assert cells == expected, (row, expected)


def test_validate_without_the_cases_says_where_they_live_in_one_line(monkeypatch, tmp_path, capsys):
    from trainsizer import cli

    monkeypatch.setattr(shipped_cases, "VALIDATION_DIR", tmp_path / "validation")
    monkeypatch.setattr(sys, "argv", ["trainsizer", "validate"])
    with pytest.raises(SystemExit) as exit_:
        cli.main()
    assert exit_.value.code == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and "validation/" in err[0] and "Traceback" not in err[0]
