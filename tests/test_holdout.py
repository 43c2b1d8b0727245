"""Fits re-price cases from their terms exactly as a full estimate would, and leave-one-source-out
cross-validation predicts each publication with parameters fitted without it."""

from __future__ import annotations

import json
import random

import pytest
from conftest import REPO, VALIDATION
from typer.testing import CliRunner

from trainsizer.cli import app
from trainsizer.estimate.memory import default_memory_model
from trainsizer.estimate.step import default_performance_model
from trainsizer.estimate.typed_data import value_at, with_value
from trainsizer.evidence.calibrate import (
    MEMORY_FREE,
    NEUTRAL,
    PERFORMANCE_FREE,
    REFINE_ROUNDS,
    coordinate_descent,
    family_prior,
    fit_start,
    neutral_start,
)
from trainsizer.evidence.case_terms import build_case_terms, log_error_loss, source_key
from trainsizer.evidence.cases import Case, CaseResult, load_cases
from trainsizer.evidence.holdout import (
    EFFICIENCY,
    leave_one_family_out,
    leave_one_source_out,
    oriented_error,
    signed_summary,
)
from trainsizer.evidence.holdout import _without_family as without_family
from trainsizer.evidence.validate import validate_cases

PUBLISHED = sorted((REPO / "validation" / "published").glob("*.yaml"))
PUBLISHED_MEMORY = REPO / "validation" / "published" / "memory.yaml"  # several memory sources, compiled runs among them


def _cases() -> list[Case]:
    files = PUBLISHED + sorted(VALIDATION.glob("*.yaml"))
    return [c for f in files for c in load_cases(f)]


def _random_params(base, free, rng: random.Random):
    params = base
    for dotted, key, grid in free:
        params = with_value(params, dotted, key, float(rng.choice(list(grid))))
    return params


@pytest.mark.parametrize("kind", ["memory", "performance"])
def test_terms_reprice_every_case_as_a_full_estimate_does(kind):
    cases = [c for c in _cases() if c.is_memory == (kind == "memory")]
    mp, pp = default_memory_model(), default_performance_model()
    terms, failed = build_case_terms(cases, kind, mp, pp)
    assert not failed and len(terms) == len(cases)
    rng = random.Random(7)
    for _ in range(3):
        if kind == "memory":
            trial_mp, trial_pp = _random_params(mp, MEMORY_FREE, rng), pp
        else:
            trial_mp, trial_pp = mp, _random_params(pp, PERFORMANCE_FREE, rng)
        params = trial_mp if kind == "memory" else trial_pp
        full = {r.id: r.predicted for r in validate_cases(cases, trial_mp, trial_pp)}
        for cid, predicted in zip(terms.ids, terms.predict(params), strict=True):
            assert predicted == pytest.approx(full[cid], rel=1e-9), cid


def test_each_source_is_predicted_with_parameters_fitted_without_it():
    cases = [c for c in load_cases(PUBLISHED_MEMORY) if c.is_memory]
    sources = sorted({source_key(c) for c in cases})
    assert len(sources) >= 2
    held = sources[0]
    out = leave_one_source_out(cases)["memory"]
    mp, pp = default_memory_model(), default_performance_model()
    terms, _ = build_case_terms(cases, "memory", mp, pp)
    train = terms.fit_rows([i for i, s in enumerate(terms.sources) if s != held])
    fitted, _ = coordinate_descent(log_error_loss(terms, train), neutral_start(fit_start(mp)), MEMORY_FREE,
                                   rounds=REFINE_ROUNDS)
    test = [i for i, s in enumerate(terms.sources) if s == held]
    expected = dict(zip([terms.ids[i] for i in test], terms.predict(fitted, test), strict=True))
    got = {r.id: r.predicted for r in out.results if r.id in expected}
    assert got and all(got[k] == pytest.approx(v) for k, v in expected.items())
    assert out.summary.count == len(cases) and not out.excluded_cases


def test_validate_holdout_source_json_contract():
    files = [str(p) for p in sorted(VALIDATION.glob("*.yaml"))]
    result = CliRunner().invoke(app, ["validate", *files, "--holdout", "source", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)["summary"]
    assert summary["in_sample"] is True
    n_memory = sum(1 for c in _shared_cases() if c.is_memory)
    for kind in ("memory", "throughput"):
        h = summary["holdout"][kind]
        assert {"count", "median_abs_error", "p90_abs_error", "excluded"} <= set(h)
        assert h["excluded"] == 0 and h["sources"] >= 2
    assert summary["holdout"]["memory"]["count"] == n_memory


def _shared_cases() -> list[Case]:
    return [c for f in sorted(VALIDATION.glob("*.yaml")) for c in load_cases(f)]


@pytest.mark.parametrize("holdout", ["source", "family", "both"])
@pytest.mark.parametrize("cases", [1, 2], ids=["one-case", "one-publication"])
def test_a_file_of_one_publication_validates_under_every_holdout(tmp_path, holdout, cases):
    """Too few publications for the ranges' nested check is a result, not a traceback: the check counts the cases it
    could not reach (a range is fitted on the errors of two other publications at least)."""
    import yaml

    published = yaml.safe_load((REPO / "validation" / "published" / "dle_bert.yaml").read_text())[:cases]
    path = tmp_path / "cases.yaml"
    path.write_text(yaml.safe_dump(published))
    result = CliRunner().invoke(app, ["validate", str(path), "--holdout", holdout, "--json"])
    assert result.exit_code == 0 and result.exception is None, result.output
    summary = json.loads(result.output)["summary"]
    if holdout != "family":
        assert summary["holdout"]["throughput"]["count"] == cases
        assert summary["range_coverage"]["speed"]["unchecked"] == cases
        assert summary["range_coverage"]["speed"]["count"] == 0
    if holdout != "source":
        assert summary["holdout_family"]["throughput"]["count"] == cases
    text = CliRunner().invoke(app, ["validate", str(path), "--holdout", holdout])
    assert text.exit_code == 0 and text.exception is None, text.output


def test_unknown_holdout_is_refused():
    result = CliRunner().invoke(app, ["validate", str(PUBLISHED[0]), "--holdout", "random"])
    assert result.exit_code != 0


def test_a_fold_starts_each_mechanism_at_no_effect():
    """A mechanism no training case shows (torch.compile when its only source is held out) must not keep the value
    the shipped fit learned from the held-out cases."""
    mp, pp = default_memory_model(), default_performance_model()
    for params in (mp, pp):
        start = neutral_start(params)
        for (dotted, key), value in NEUTRAL.items():
            try:
                assert value_at(start, dotted, key) == value
            except KeyError:  # the other model's mechanism
                continue
    compiled = [c for c in load_cases(PUBLISHED_MEMORY) if c.is_memory
                and c.scenario["training"].get("compile")]
    one_source = [c for c in compiled if source_key(c) == source_key(compiled[0])]
    out = leave_one_source_out(one_source)["memory"]  # its only fold has nothing to train on
    terms, _ = build_case_terms(one_source, "memory", mp, pp)
    got = [r.predicted for r in out.results]
    assert got == pytest.approx(list(terms.predict(neutral_start(fit_start(mp)))))
    assert mp.activations.compiled_factor < 1.0  # the shipped fit learned an effect ...
    assert got != pytest.approx(list(terms.predict(mp)))  # ... that the fold does not borrow


def test_signed_error_reads_positive_when_predicted_too_fast_or_too_large():
    faster = CaseResult("a", "tokens_per_s_per_gpu", 120.0, 100.0)
    slower_step = CaseResult("b", "step_time_s", 12.0, 10.0)  # a longer step than measured: predicted too slow
    larger = CaseResult("c", "memory", 30.0, 20.0)
    compared = CaseResult("d", "tflops_per_gpu (as step_time_s)", 8.0, 10.0)  # a shorter step: too fast
    assert oriented_error(faster) == pytest.approx(0.2)
    assert oriented_error(slower_step) == pytest.approx(-0.2)
    assert oriented_error(larger) == pytest.approx(0.5)
    assert oriented_error(compared) == pytest.approx(0.2)
    s = signed_summary([faster, slower_step, larger])
    assert s.count == 3 and s.signed_median_error == pytest.approx(0.2)
    assert s.median_abs_error == pytest.approx(0.2)


def test_a_held_out_family_gets_the_default_efficiency_and_no_ceiling_of_its_own():
    pp = default_performance_model()
    default = value_at(pp, EFFICIENCY, "default")
    assert "hopper" in pp.mfu_ceiling.table and value_at(pp, EFFICIENCY, "hopper") != default
    held = without_family(pp, "hopper", PERFORMANCE_FREE)
    assert value_at(held, EFFICIENCY, "hopper") == default
    assert set(held.mfu_ceiling.table) == set(pp.mfu_ceiling.table) - {"hopper"}
    # a value the data assumes from a source (not fitted) stays: davinci is not among the fitted efficiencies
    davinci = without_family(pp, "davinci", PERFORMANCE_FREE)
    assert value_at(davinci, EFFICIENCY, "davinci") == value_at(pp, EFFICIENCY, "davinci")
    assert without_family(default_memory_model(), "hopper", MEMORY_FREE) == default_memory_model()


def test_each_family_is_predicted_with_none_of_its_cases_in_the_fit():
    cases = load_cases(VALIDATION / "throughput.yaml")
    mp, pp = default_memory_model(), default_performance_model()
    terms, _ = build_case_terms(cases, "performance", mp, pp)
    assert {"ampere", "hopper"} <= set(terms.families)
    out = leave_one_family_out(cases, mp, pp)["throughput"]
    held = "hopper"
    train = terms.fit_rows([i for i, f in enumerate(terms.families) if f != held])
    free = [f for f in PERFORMANCE_FREE if (f[0], f[1]) != (EFFICIENCY, held)]
    start = without_family(neutral_start(fit_start(pp)), held, PERFORMANCE_FREE)
    start = family_prior(start, {f for f in terms.families if f != held})  # the held-out family from physics
    fitted, _ = coordinate_descent(log_error_loss(terms, train), start, free, rounds=REFINE_ROUNDS)
    test = [i for i, f in enumerate(terms.families) if f == held]
    expected = dict(zip([terms.ids[i] for i in test], terms.predict(fitted, test), strict=True))
    got = {r.id: r.predicted for r in out.results if r.id in expected}
    assert got and all(got[k] == pytest.approx(v) for k, v in expected.items())
    assert out.by == "family" and out.groups == len(set(terms.families)) and not out.excluded_cases
    assert set(out.by_group) == set(terms.families)
    assert out.by_group[held].count == len(test)
    signed = out.signed
    assert set(signed["family"]) == set(terms.families) and set(signed["method"]) == set(terms.methods)
    assert sum(g.count for g in signed["method"].values()) == out.summary.count
    assert set(signed["model"]) == set(terms.models) <= {"moe", "dense"}
    assert sum(g.count for g in signed["model"].values()) == out.summary.count
    assert set(signed["part"]) == set(terms.parts)
    assert sum(g.count for g in signed["part"].values()) == out.summary.count


def test_validate_holdout_family_prints_signed_medians_per_family_and_method():
    files = [str(VALIDATION / "throughput.yaml")]
    result = CliRunner().invoke(app, ["validate", *files, "--holdout", "family", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)["summary"]
    assert "holdout" not in summary
    h = summary["holdout_family"]["throughput"]
    assert {"ampere", "hopper"} <= set(h["signed"]["family"]) and "full" in h["signed"]["method"]
    assert all("signed_median_error" in g for g in h["signed"]["family"].values())
    text = CliRunner().invoke(app, ["validate", *files, "--holdout", "family"])
    assert text.exit_code == 0 and "Leave-one-family-out" in text.output and "Hopper" in text.output
    assert "signed median" in text.output


def test_china_market_parts_are_the_catalogs_china_only_parts():
    from trainsizer.evidence.case_terms import china_market_parts
    from trainsizer.report.text import part_label

    assert china_market_parts(["h100", "h20", "a100", "a800", "ascend-910b", "rtx-4090", "rtx-4090d"]) == [
        "h20", "a800", "ascend-910b", "rtx-4090d"]
    assert [part_label(p) for p in ("h20", "ascend-910b", "rtx-4090d")] == ["H20", "Ascend 910B", "RTX 4090D"]


def test_validate_shows_the_china_market_parts_signed_medians():
    files = [str(REPO / "validation" / "published" / f) for f in ("throughput.yaml", "china_parts.yaml")]
    result = CliRunner().invoke(app, ["validate", *files, "--holdout", "source", "--json"])
    assert result.exit_code == 0, result.output
    held = json.loads(result.output)["summary"]["holdout"]["throughput"]
    parts = held["signed"]["part"]
    assert {"h20", "ascend-910b"} <= set(parts) and sum(g["count"] for g in parts.values()) == held["count"]
    text = CliRunner().invoke(app, ["validate", *files, "--holdout", "source"])
    assert text.exit_code == 0 and "H20" in text.output and "Ascend 910B" in text.output
