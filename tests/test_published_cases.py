"""The published measured cases in validation/published/ (issue 12, item 3) stay loadable and traceable.

Every file there loads through the project's own case loader and every scenario through the scenario
parser; ids are unique, also against the shipped cases in shared/validation when that folder exists;
every case names its source and the date of the figure; and no published case reuses a source of the
shipped cases (the point of the folder is evidence the shipped cases do not already hold).
"""

from pathlib import Path

import pytest
import yaml
from conftest import REPO, VALIDATION

from trainsizer.scenario import scenario_from_dict
from trainsizer.workflows.validate import load_cases, validate_cases

PUBLISHED = REPO / "validation" / "published"
CASE_FILES = sorted(PUBLISHED.glob("*.yaml"))


def _published() -> list[tuple[Path, dict]]:
    return [(path, case) for path in CASE_FILES for case in load_cases(path)]


def _shipped() -> list[dict]:
    if not VALIDATION.is_dir():
        return []
    return [case for path in sorted(VALIDATION.glob("*.yaml")) for case in yaml.safe_load(path.read_text()) or []]


def test_there_are_published_case_files():
    assert {p.name for p in CASE_FILES} >= {"memory.yaml", "throughput.yaml"}
    assert len(_published()) >= 40


@pytest.mark.parametrize("path", CASE_FILES, ids=lambda p: p.name)
def test_every_file_loads_through_the_case_loader(path):
    cases = load_cases(path)
    assert cases, f"{path.name} holds no case"
    for case in cases:
        scenario_from_dict(case["scenario"], source=str(case.get("id")))


def test_every_case_replays_without_an_input_error():
    results = validate_cases([case for _, case in _published()])
    assert all(r.predicted is not None and r.predicted > 0 for r in results), \
        [r.id for r in results if not r.predicted]


def test_ids_are_unique_across_published_and_shipped_cases():
    ids = [str(case.get("id")) for _, case in _published()] + [str(case.get("id")) for case in _shipped()]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    assert not duplicates, duplicates


def test_every_case_has_source_as_of_and_notes():
    for path, case in _published():
        where = f"{path.name}: {case.get('id')}"
        assert str(case.get("id") or "").strip(), f"{path.name}: a case without id"
        assert str(case.get("source") or "").strip(), f"{where} has no source"
        assert str(case.get("as_of") or "").strip(), f"{where} has no as_of"
        assert str(case.get("notes") or "").strip(), f"{where} has no notes"


def test_no_published_case_reuses_a_shipped_source():
    shipped = {" ".join(str(case.get("source", "")).split()) for case in _shipped()}
    reused = [case["id"] for _, case in _published() if " ".join(str(case["source"]).split()) in shipped]
    assert not reused, reused
