"""The published measured cases in validation/published/ (issue 12, item 3) stay loadable and traceable.

Every file there loads through the project's own case loader and every scenario through the scenario
parser; ids are unique, also against the cases the shipped parameters are fitted on (validation/cases/);
every case names its source and the date of the figure; and no published case reuses a source of the
shipped cases (the point of the folder is evidence the shipped cases do not already hold).
"""

from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from conftest import REPO, VALIDATION

from trainsizer.evidence.cases import Case, Measured, case_documents
from trainsizer.evidence.validate import load_cases, validate_cases
from trainsizer.scenario import scenario_from_dict

PUBLISHED = REPO / "validation" / "published"
CASE_FILES = sorted(PUBLISHED.glob("*.yaml"))


def _published() -> list[tuple[Path, Case]]:
    return [(path, case) for path in CASE_FILES for case in load_cases(path)]


def _shipped() -> list[dict]:
    return [case for path in sorted(VALIDATION.glob("*.yaml")) for case in yaml.safe_load(path.read_text()) or []]


def test_there_are_published_case_files():
    assert {p.name for p in CASE_FILES} >= {"memory.yaml", "throughput.yaml"}
    assert len(_published()) >= 40


@pytest.mark.parametrize("path", CASE_FILES, ids=lambda p: p.name)
def test_every_file_loads_through_the_case_loader(path):
    cases = load_cases(path)
    assert cases, f"{path.name} holds no case"
    for case in cases:
        scenario_from_dict(case.scenario, source=case.id)


def test_every_case_replays_without_an_input_error():
    results = validate_cases([case for _, case in _published()])
    assert all(r.predicted is not None and r.predicted > 0 for r in results), \
        [r.id for r in results if not r.predicted]


def test_ids_are_unique_across_published_and_shipped_cases():
    ids = [case.id for _, case in _published()] + [str(case.get("id")) for case in _shipped()]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    assert not duplicates, duplicates


def test_every_case_has_source_as_of_and_notes():
    for path, case in _published():
        where = f"{path.name}: {case.id}"
        assert case.id.strip() and case.id != "?", f"{path.name}: a case without id"
        assert case.source.strip(), f"{where} has no source"
        assert case.as_of.strip(), f"{where} has no as_of"
        assert case.notes.strip(), f"{where} has no notes"


def test_no_published_case_reuses_a_shipped_source():
    shipped = {" ".join(str(case.get("source", "")).split()) for case in _shipped()}
    reused = [case.id for _, case in _published() if " ".join(case.source.split()) in shipped]
    assert not reused, reused


def test_stated_settings_fill_only_the_named_cases_of_their_source(tmp_path):
    from trainsizer.errors import InputError
    from trainsizer.evidence.cases import stated_settings, with_stated_settings

    entries = stated_settings()
    entry = entries[0]
    cid = entry.cases[0]
    doc = {"id": cid, "source": entry.source + " (a table)", "scenario": {"training": {"method": "full"}},
           "measured": {"tokens_per_s": 1.0}}
    case = Case(id=cid, source=doc["source"], scenario=doc["scenario"], measured=Measured(tokens_per_s=1.0))
    filled = with_stated_settings(case, entries)
    assert {k: filled.scenario["training"][k] for k in entry.training} == entry.training
    assert filled.stated and case.scenario["training"] == {"method": "full"}  # the input is kept
    elsewhere = replace(case, source="another source")
    assert with_stated_settings(elsewhere, entries) == elsewhere
    assert with_stated_settings(replace(case, id="another-case"), entries).scenario == case.scenario
    key, value = next(iter(entry.training.items()))
    contradicting = replace(case, scenario={"training": {key: not value if isinstance(value, bool) else "x"}})
    with pytest.raises(InputError, match=key):
        with_stated_settings(contradicting, entries)
    # a file written back (probe --append) keeps its cases as they were
    path = tmp_path / "cases.yaml"
    path.write_text(yaml.safe_dump([doc]), encoding="utf-8")
    assert case_documents(path) == [doc] and load_cases(path, stated=False)[0].scenario == doc["scenario"]
    assert load_cases(path)[0].scenario["training"] != doc["scenario"]["training"]


def test_stated_parallel_settings_fill_a_copy_that_lacks_them():
    """A copy of a case (the file it was first published in, e.g. ../shared/validation) without a parallel key its
    source states gets it, as training keys do; one that says otherwise is refused."""
    from trainsizer.errors import InputError
    from trainsizer.evidence.cases import stated_settings, with_stated_settings

    entries = stated_settings()
    entry = next(e for e in entries if e.parallel)
    case = Case(id=entry.cases[0], source=entry.source, measured=Measured(memory_gib=1.0),
                scenario={"training": {"method": "lora"}, "parallel": {"gpus": 2}})
    filled = with_stated_settings(case, entries)
    assert {k: filled.scenario["parallel"][k] for k in entry.parallel} == entry.parallel
    assert filled.scenario["parallel"]["gpus"] == 2 and case.scenario["parallel"] == {"gpus": 2}
    key = next(iter(entry.parallel))
    with pytest.raises(InputError, match=f"parallel.{key}"):
        with_stated_settings(replace(case, scenario={"parallel": {key: "other"}}), entries)


def test_every_stated_setting_names_a_shipped_case_of_its_source():
    from trainsizer.evidence.cases import stated_settings

    # as the files have them: the repository's cases set what their source states in their own scenario
    shipped = {c.id: c for f in sorted(VALIDATION.glob("*.yaml")) for c in load_cases(f, stated=False)}
    for entry in stated_settings():
        for cid in entry.cases:
            assert cid in shipped, cid
            assert shipped[cid].source.startswith(entry.source), cid
            assert all(shipped[cid].scenario["training"].get(k) == v for k, v in entry.training.items()), cid


# Megatron-LM launch flags a case's notes may quote, and the scenario key each one sets. Megatron turns sequence
# parallelism off at TP 1 (NVIDIA/Megatron-LM megatron/training/arguments.py, validate_args:
# "if args.tensor_model_parallel_size == 1: args.sequence_parallel = False"), so a TP 1 case may quote the flag
# and leave the key off.
MEGATRON_FLAGS = {"--sequence-parallel": "sequence_parallel", "--use-distributed-optimizer": "distributed_optimizer"}


@pytest.mark.parametrize("path", CASE_FILES, ids=lambda p: p.name)
def test_a_quoted_megatron_flag_is_set_in_the_scenario(path):
    """A case whose notes quote a Megatron launch flag of its run states the setting in its scenario: a note that
    reads the launch script and a scenario left at the default contradict each other (FlagPerf's Megatron cases
    once did: their scripts pass both flags)."""
    for case in load_cases(path):
        parallel = case.scenario.get("parallel") or {}
        for flag, key in MEGATRON_FLAGS.items():
            if flag not in case.notes or (key == "sequence_parallel" and parallel.get("tp", 1) == 1):
                continue
            assert parallel.get(key) is True, f"{case.id}: notes quote {flag}, scenario lacks parallel.{key}"
