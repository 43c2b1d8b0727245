"""The 80 % ranges: refit from the repository's cases byte for byte, calibrated on held-out publications, wide
where no case shows the regime."""

from __future__ import annotations

import sys
from dataclasses import replace

import pytest
from conftest import REPO

from trainsizer.estimate.ranges import band, shipped_ranges
from trainsizer.estimate.regimes import DIMENSIONS, SPEED_DIMENSIONS, gpu_family, regime
from trainsizer.evidence.ranges_fit import (
    WEIGHTING,
    Residual,
    conformal,
    coverage,
    fit_ranges,
    quantile_kind,
    select_dimensions,
)

FULL = {"memory": DIMENSIONS, "speed": DIMENSIONS}  # the mechanism tests condition both kinds on every dimension


@pytest.fixture(scope="module")
def refit():
    sys.path.insert(0, str(REPO / "tools"))
    try:
        import fit_ranges as tool
    finally:
        sys.path.remove(str(REPO / "tools"))
    return tool


def test_a_refit_from_the_repository_cases_rewrites_ranges_yaml_byte_for_byte(refit):
    data, text = refit.refit()
    assert refit.DATA.read_text(encoding="utf-8") == text, "run tools/fit_ranges.py"
    assert data["fitted_on"]["memory"] >= 100 and data["fitted_on"]["speed"] >= 100
    assert "validation/published/throughput.yaml" in data["source"]


def test_gpu_families_group_the_catalog_ids():
    assert gpu_family("a100-sxm4-40gb") == gpu_family("a100-sxm4-80gb") == gpu_family("a800-sxm4-80gb") == "ampere"
    assert gpu_family("h100-sxm5-96gb-500w") == gpu_family("h800-sxm5-80gb") == "hopper"
    assert gpu_family("rtx-4090-24gb") == "ada" and gpu_family("ascend-910b-64gb") == "davinci"
    assert gpu_family("x200-sxm9-99gb") == "x200"  # not in the catalog: the product line its id names


def test_the_conformal_ranks_widen_with_few_cases():
    assert conformal(list(range(1, 10)), 0.8) == (1.0, 9.0)  # n = 9: ranks 1 and 9
    assert conformal(list(range(1, 101)), 0.8) == (10.0, 91.0)


def test_the_conformal_correction_quantile_covers_the_level_in_expectation_not_more():
    """The calibration quantile sits at the fractional rank (n+1) level: on 15 scores, a new exchangeable score falls
    at or below it about 90 % of the time (normal scores: 90.8 %), where the ceil rank (the 15th, the largest) holds it
    15 / 16 = 93.75 %."""
    import numpy as np

    from trainsizer.evidence.ranges_fit import conformal_upper

    assert conformal_upper(list(range(1, 15)), 0.9) == pytest.approx(13.5)  # rank 13.5 of 14
    assert conformal_upper(list(range(1, 20)), 0.9) == 18.0 and conformal_upper([1.0, 2.0], 0.9) == 2.0
    rng = np.random.default_rng(0)
    draws = rng.standard_normal((40000, 16))
    inside = np.mean([d[15] <= conformal_upper(d[:15], 0.9) for d in draws])
    ceil_rank = np.mean([d[15] <= np.sort(d[:15])[14] for d in draws])
    assert abs(ceil_rank - 15 / 16) < 0.006 and 0.895 < inside < 0.915, (inside, ceil_rank)


def _rows(us, family="a100", source="s"):
    return [Residual(f"{source}{i}", f"{source}{i % 3}", u,
                     {"gpu_family": family, "method": "full", "scale": "1-gpu", "model": "dense"})
            for i, u in enumerate(us)]


def test_a_regime_of_few_publications_is_pulled_to_the_pooled_range_and_an_unseen_one_is_wide():
    rows = _rows([0.01 * i for i in range(-20, 21)]) + _rows([0.5 + 0.01 * i for i in range(5)], "v100", "t")
    data = fit_ranges({"memory": rows, "speed": rows}, dims=FULL)
    seen = band("memory", {"gpu_family": "v100", "method": "full", "scale": "1-gpu", "model": "dense"}, data)
    fam = data["memory"]["gpu_family"]["v100"]
    assert data["memory"]["pooled"]["lo"] < seen.lo < fam["lo"]  # shrunk: between its own and the pooled range
    assert not seen.no_evidence
    unseen = band("memory", {"gpu_family": "cdna3", "method": "full", "scale": "1-gpu", "model": "dense"}, data)
    assert unseen.no_evidence == ("gpu_family=cdna3",)
    assert unseen.hi - unseen.lo > seen.hi - seen.lo


def test_the_shipped_ranges_cover_the_speed_and_memory_estimates_both_ways():
    b = band("speed", regime("h100-sxm5-80gb", "full", 64, 8))
    lo, hi = b.scale(1000.0)
    assert lo < 1000.0 < hi
    t_lo, t_hi = b.scale_inverse(10.0)
    assert t_lo < 10.0 < t_hi and t_lo == pytest.approx(10.0 * 1000.0 / hi)
    m = band("memory", regime("rtx-4090-24gb", "qlora", 1, 1))
    assert 0.0 < m.p_above(16.0, 24.0) < 0.5 < m.p_above(30.0, 24.0) < 1.0
    assert shipped_ranges()["level"] == 0.8


def test_a_moe_models_speed_range_is_fitted_on_the_moe_runs_and_its_memory_range_is_the_dense_ones():
    """The held-out error of the MoE runs is several times a dense model's: a MoE estimate's speed range is its own
    row's (backed by those runs, not the wide range of an unseen regime), wider than the same hardware's dense one;
    no memory case is a MoE model, so memory is not conditioned on the kind."""
    from trainsizer.estimate.regimes import scenario_regime

    where = ("h100-sxm5-80gb", "full", 256, 8)
    dense, moe = band("speed", regime(*where)), band("speed", regime(*where, moe=True))
    assert not moe.no_evidence and shipped_ranges()["speed"]["model"]["moe"]["cases"] >= 20
    assert moe.hi - moe.lo > 1.5 * (dense.hi - dense.lo)
    assert band("memory", regime(*where, moe=True)) == band("memory", regime(*where))
    case = {"model": {"preset": "qwen3-30b-a3b"}, "training": {"method": "full"},
            "parallel": {"gpus": 8}, "hardware": {"gpu": "h100-sxm5-80gb", "gpus_per_node": 8}}
    assert scenario_regime(case)["model"] == "moe"
    assert scenario_regime({**case, "model": {"preset": "llama-3.1-8b"}})["model"] == "dense"


@pytest.fixture(scope="module")
def shipped_summary(shipped_validation):
    return shipped_validation["summary"]


BAND = (0.75, 0.85)  # issue 24: the 80 % ranges hold 75-85 % of held-out cases, overall and per family
# (kind, GPU family): a family backed by two publications or more whose nested coverage is measured outside two
# binomial standard errors of 80 %, with why. The test asserts each is still outside, so an entry cannot go stale: when
# the family comes back within, the entry must go (issue 24's per-family point does not hold while any is listed;
# docs/accuracy.md, "80 % ranges", says so).
KNOWN_MISCALIBRATED: dict[tuple[str, str], str] = {}
# Emptied 2026-12-04: ("memory", "ampere") read 77 of 111 inside (69.4 %) while each case weighed one in memory's
# quantiles; with each publication weighing one (ranges_fit.WEIGHTING) it reads 81.1 % (docs/accuracy.md,
# "80 % ranges").


def test_nested_coverage_is_within_75_to_85_percent_overall_and_consistent_with_80_in_every_family(shipped_summary):
    """Each publication's cases against ranges fitted, corrected and shrunk without it, on errors of parameters that
    never saw it (nested): the whole procedure, not numbers tuned to today's residuals."""
    import json

    cov = shipped_summary["range_coverage"]
    assert cov["level"] == 0.8
    for kind in ("memory", "speed"):
        c = cov[kind]
        assert BAND[0] <= c["coverage"] <= BAND[1], json.dumps(c)[:300]
        assert 0 < c["median_half_width"] < 0.6
        families = {v: r for v, r in c["by_regime"]["gpu_family"].items() if r["count"] >= 10}
        assert "ampere" in families and "hopper" in families
        for fam, r in families.items():
            # per family the 75-85 % band is the target (docs/accuracy.md says where it is missed); the test
            # holds each family backed by two publications or more to what 80 % ranges give by chance on its count:
            # within two binomial standard errors of 80 %. A family one publication backs is one draw, not
            # ``count`` independent ones (errors within a publication move together: estimate/ranges.py), so its
            # share inside says nothing about calibration either way and is only reported.
            if _publications(kind, fam) < 2:
                continue
            se = (0.8 * 0.2 / r["count"]) ** 0.5
            within = abs(r["coverage"] - 0.8) <= 2 * se
            assert within != ((kind, fam) in KNOWN_MISCALIBRATED), (kind, fam, r)
        for dim, rows in c["by_regime"].items():  # every regime names its publications and what 75 % would cost
            for value, r in rows.items():
                assert 1 <= r["sources"] <= r["count"], (kind, dim, value, r)
                assert (r["coverage"] < 0.75) == (r["widen_for_75"] > 1.0), (kind, dim, value, r)


def _publications(kind: str, family: str) -> int:
    """How many publications measure ``kind`` on ``family`` among the shipped cases."""
    from trainsizer.estimate.regimes import scenario_regime
    from trainsizer.evidence.case_terms import source_key
    from trainsizer.evidence.cases import load_cases
    from trainsizer.evidence.shipped_cases import shipped_files

    key = "memory_gib" if kind == "memory" else None
    found = set()
    for path in shipped_files():
        for case in load_cases(path):
            m = case.measured
            has = m.is_memory if key else any(v is not None for v in (m.tokens_per_s, m.tokens_per_s_per_gpu,
                                                                       m.step_time_s))
            if has and scenario_regime(case.scenario)["gpu_family"] == family:
                found.add(source_key(case))
    return len(found)


def _two_sources(us, family, source):
    return [Residual(f"{source}{i}", f"{source}{i % 4}", u,
                     {"gpu_family": family, "method": "full", "scale": "1-gpu", "model": "dense"})
            for i, u in enumerate(us)]


def test_a_model_kinds_correction_widens_only_its_own_ranges_and_leaves_the_familys_to_its_dense_cases():
    """MoE runs whose errors spread wider than the dense runs of the same family get a correction of their own on top
    of the family's; the family's correction is fitted on its dense cases alone, so it matches the same fit without
    the MoE runs, and no kind's correction is negative."""
    import numpy as np

    rng = np.random.default_rng(1)
    dense = [replace(r, source=f"p{i // 30}")
             for i, r in enumerate(_two_sources(0.05 * rng.standard_normal(120), "x", "p"))]
    moe = [replace(r, source=f"m{i // 6}", regime={**r.regime, "model": "moe"})
           for i, r in enumerate(_two_sources(0.4 * rng.standard_normal(24), "x", "m"))]
    dims = {"memory": DIMENSIONS, "speed": SPEED_DIMENSIONS}
    fix = fit_ranges({"memory": dense, "speed": dense + moe}, dims=dims)["speed"]["correction"]
    alone = fit_ranges({"memory": dense, "speed": dense}, dims=dims)["speed"]["correction"]
    assert fix["model"]["moe"]["lo"] > 0 and fix["model"]["moe"]["hi"] > 0
    assert 0 <= fix["model"]["dense"]["lo"] < fix["model"]["moe"]["lo"]
    assert 0 <= fix["model"]["dense"]["hi"] < fix["model"]["moe"]["hi"]
    assert fix["gpu_family"]["x"]["cases"] == alone["gpu_family"]["x"]["cases"] == len(dense)


def test_the_conformal_correction_widens_ranges_that_a_new_publication_breaks_and_narrows_loose_ones():
    import numpy as np

    rng = np.random.default_rng(0)
    # each publication of family x shifted as a whole (between-publication spread): quantiles of the cases alone are
    # too narrow for a new publication, the correction moves both ends out
    shifted = [u for shift in (-0.3, -0.1, 0.1, 0.3) for u in shift + 0.05 * rng.standard_normal(30)]
    rows = [replace(r, source=f"p{i // 30}") for i, r in enumerate(_two_sources(shifted, "x", "p"))]
    fix = fit_ranges({"memory": rows, "speed": rows}, dims=FULL)["memory"]["correction"]
    assert fix["pooled"]["lo"] > 0 and fix["pooled"]["hi"] > 0
    # publications that agree (no shift) and a heavy tail in one: the central ranges need no widening
    calm = [replace(r, source=f"q{i % 5}") for i, r in enumerate(_two_sources(list(0.1 * rng.standard_normal(200)),
                                                                               "y", "q"))]
    fix = fit_ranges({"memory": calm, "speed": calm}, dims=FULL)["memory"]["correction"]
    assert abs(fix["pooled"]["lo"]) < 0.05 and abs(fix["pooled"]["hi"]) < 0.05


def test_an_unseen_family_range_is_not_narrowed_by_the_corrections_of_the_seen_families():
    """A negative pooled correction (the seen families' ranges were wider than their new publications needed)
    narrows a seen family's range, never the wide range of a family no case shows: that one is moved only by the
    ``unseen`` correction, calibrated where a family was unseen and never negative (ranges_fit.corrections)."""
    import copy

    rows = _two_sources([0.01 * i for i in range(-20, 21)], "y", "q")
    data = copy.deepcopy(fit_ranges({"memory": rows, "speed": rows}, dims=FULL))
    fix = data["memory"]["correction"]
    assert fix["unseen"] == {"cases": 0, "sources": 0, "lo": 0.0, "hi": 0.0}  # no family was ever unseen
    fix["pooled"].update(lo=-0.05, hi=-0.05)
    fix["gpu_family"]["y"].update(lo=-0.05, hi=-0.05)  # synthetic: loose ranges for the seen family
    where = {"gpu_family": "cdna3", "method": "full", "scale": "1-gpu", "model": "dense"}
    assert band("memory", where, data) == band("memory", where, data, corrected=False)
    seen, loose = band("memory", {**where, "gpu_family": "y"}, data), band("memory", {**where, "gpu_family": "y"},
                                                                            data, corrected=False)
    assert seen.hi - seen.lo == pytest.approx(loose.hi - loose.lo - 0.1)
    del fix["unseen"]  # a file fitted before the unseen correction: the pooled one, never narrowing
    assert band("memory", where, data) == band("memory", where, data, corrected=False)


def test_the_unseen_range_counts_every_family_once_and_is_widened_by_families_it_missed():
    """A family of few cases far from the many cases of another still sets the wide range (each family weighs one,
    Dunn, Wasserman & Ramdas 2023); and when the only publication of a family fell outside the wide range of the
    others, the unseen correction moves that end out."""
    many = _two_sources([0.01 * i for i in range(-20, 21)], "a", "a")
    few = [replace(r, source="b") for r in _two_sources([0.6 + 0.01 * i for i in range(5)], "b", "b")]
    data = fit_ranges({"memory": many + few, "speed": many + few}, dims=FULL)
    wide = data["memory"]["no_evidence"]
    assert wide["hi"] >= 0.6  # unweighted, 5 of 46 cases would sit beyond the 80 % half-width
    fix = data["memory"]["correction"]["unseen"]
    assert fix["sources"] == 1 and fix["cases"] == 5 and fix["hi"] > 0 and fix["lo"] == 0.0
    where = {"gpu_family": "cdna3", "method": "full", "scale": "1-gpu", "model": "dense"}
    assert band("memory", where, data).hi > band("memory", where, data, corrected=False).hi


def test_a_gpu_part_no_case_measured_gets_the_wide_speed_range_inside_a_measured_family():
    """An H20 is a Hopper, but no Hopper case shows its ratio of compute to bandwidth: its speed range is the wide
    one and says so; its memory range is its family's (the family's kernels and allocator)."""
    from trainsizer.estimate.regimes import gpu_part

    assert gpu_part("h100-sxm5-96gb-500w") == "h100" and gpu_part("h20-96gb") == "h20"
    assert regime("h20-96gb", "full", 8, 8)["gpu_part"] == "h20"
    rows = [replace(r, regime={**r.regime, "gpu_family": "hopper", "gpu_part": "h100"})
            for r in _two_sources([0.01 * i for i in range(-20, 21)], "hopper", "p")]
    data = fit_ranges({"memory": rows, "speed": rows}, dims=FULL)
    assert data["speed"]["gpu_parts"] == ["h100"] and "gpu_parts" not in data["memory"]
    where = {"gpu_family": "hopper", "method": "full", "scale": "1-gpu", "model": "dense"}
    measured, new = (band("speed", {**where, "gpu_part": p}, data) for p in ("h100", "h20"))
    assert not measured.no_evidence and new.no_evidence == ("gpu_part=h20",)
    assert new.lo <= measured.lo and new.hi >= measured.hi and new.hi - new.lo > measured.hi - measured.lo
    assert band("memory", {**where, "gpu_part": "h20"}, data) == band("memory", {**where, "gpu_part": "h100"}, data)
    assert band("speed", where, data) == measured  # a regime without its part: the family's range


def test_coverage_builds_each_publications_range_from_the_inner_errors_alone():
    """A publication whose errors the others do not show is not inside a range fitted without it: coverage reads
    the inner errors (ranges_fit.coverage's ``inner``), not the held-out publication's own."""
    near = _two_sources([0.01 * i for i in range(-20, 21)], "x", "a")
    far = [replace(r, source="far", id=f"far{i}") for i, r in enumerate(_two_sources([2.0] * 10, "x", "b"))]
    res = {"memory": near + far, "speed": near + far}
    inner = {s: {k: [r for r in near + far if r.source != s] for k in ("memory", "speed")}
             for s in {r.source for r in near + far}}
    cov = coverage(res, inner)
    assert cov["memory"].by_regime["gpu_family"]["x"].count == 51
    assert cov["memory"].overall.coverage < 0.85  # the far publication falls outside: its own errors built nothing


def test_coverage_leaves_out_and_counts_a_publication_with_too_few_others_to_fit_its_range():
    """Two publications: each one's range would be fitted on the other's errors alone, whose correction has nothing
    to score against; those cases are counted as unchecked, the check of a third publication's cases still runs."""
    a = _two_sources([0.01 * i for i in range(-10, 11)], "x", "a")
    rows = [replace(r, source=("p", "q")[i % 2]) for i, r in enumerate(a)]
    inner = {s: {k: [r for r in rows if r.source != s] for k in ("memory", "speed")} for s in ("p", "q")}
    cov = coverage({"memory": rows, "speed": rows}, inner)["memory"]
    assert cov.overall.count == 0 and cov.unchecked == len(rows)
    third = [replace(r, source="t", id=f"t{i}") for i, r in enumerate(a)]
    inner["t"] = {k: rows for k in ("memory", "speed")}
    cov = coverage({"memory": rows + third, "speed": rows + third}, inner)["memory"]
    assert cov.overall.count == len(third) and cov.unchecked == len(rows)
    with pytest.raises(ValueError):
        fit_ranges({"memory": [r for r in rows if r.source == "p"], "speed": rows}, dims=FULL)


def test_coverage_counts_the_publications_of_each_regime_and_the_widening_it_would_need_for_75_percent():
    """Each regime's row names its publications (the independent draws) and ``widen_for_75``: the factor on both sides
    of its ranges at which 75 % of its cases fall inside, above 1 exactly where fewer do."""
    from trainsizer.estimate.ranges import Band
    from trainsizer.evidence.ranges_fit import reach

    b = Band("speed", -0.2, 0.4, 0.8, 10, mid=0.1)
    assert reach(b, 0.1) == 0.0 and reach(b, 0.4) == pytest.approx(1.0) and reach(b, -0.5) == pytest.approx(2.0)
    assert reach(b, 0.25) == pytest.approx(0.5)
    near = _two_sources([0.01 * i for i in range(-20, 21)], "x", "a")
    far = [replace(r, source=f"far{i % 2}", id=f"far{i}", u=(2.0, -2.0)[i % 2])  # two far publications, apart
           for i, r in enumerate(_two_sources([0.0] * 16, "x", "b"))]
    res = {"memory": near + far, "speed": near + far}
    inner = {s: {k: [r for r in near + far if r.source != s] for k in ("memory", "speed")}
             for s in {r.source for r in near + far}}
    row = coverage(res, inner)["memory"].by_regime["gpu_family"]["x"]
    assert row.count == 57 and row.sources == 6
    assert row.coverage < 0.75 < row.widen_for_75, row  # the far publications fall outside
    alone = {s: {k: [r for r in near if r.source != s] for k in ("memory", "speed")}
             for s in {r.source for r in near}}
    calm = coverage({"memory": near, "speed": near}, alone)["memory"].overall
    assert calm.coverage >= 0.75 and calm.widen_for_75 <= 1.0 and calm.sources == 4


def test_a_regime_range_is_as_wide_as_its_widest_dimension_about_their_mean_median():
    """A GPU family whose publications disagree keeps its (shrunk) spread: the method ``full``, which pools every
    family, does not narrow it a second time by averaging ends (estimate/ranges.combine)."""
    from trainsizer.estimate.ranges import combine

    lo, mid, hi = combine([-0.6, -0.2], [0.1, 0.0], [0.5, 0.2], {"lo": -0.2, "mid": 0.0, "hi": 0.2})
    assert mid == pytest.approx(0.05) and lo == pytest.approx(0.05 - 0.7) and hi == pytest.approx(0.05 + 0.4)
    assert combine([], [], [], {"lo": -0.2, "mid": 0.01, "hi": 0.2}) == (-0.2, 0.01, 0.2)
    rng = __import__("numpy").random.default_rng(3)
    rows = [Residual(f"{f}{p}-{i}", f"{f}{p}", float(shift + s * rng.standard_normal()),
                     {"gpu_family": f, "method": "full", "scale": "1-gpu", "model": "dense"})
            for f, s, shifts in (("calm", 0.05, (-0.02, 0.0, 0.02, 0.01, -0.01, 0.0)), ("wild", 0.05, (-0.4, 0.0, 0.4)))
            for p, shift in enumerate(shifts) for i in range(10)]
    data = fit_ranges({"memory": rows, "speed": rows}, dims=FULL)
    wild = band("speed", {"gpu_family": "wild", "method": "full", "scale": "1-gpu", "model": "dense"}, data,
                corrected=False)
    row, pooled, k = data["speed"]["gpu_family"]["wild"], data["speed"]["pooled"], data["shrinkage_sources"]
    w = row["sources"] / (row["sources"] + k)
    assert wild.hi - wild.center >= w * (row["hi"] - row["mid"]) + (1 - w) * (pooled["hi"] - pooled["mid"]) - 1e-9


def test_ranges_fitted_on_no_dimension_give_every_regime_the_pooled_range_not_the_wide_one():
    """A memory fit that keeps no regime dimension (``dimensions: []``, what select_dimensions may pick) is the pooled
    range for every scenario, seen family or not: no dimension it was not conditioned on marks it 'no evidence'."""
    rng = __import__("numpy").random.default_rng(5)
    rows = [Residual(f"{f}{p}-{i}", f"{f}{p}", float(0.05 * rng.standard_normal()),
                     {"gpu_family": f, "method": "lora", "scale": "1-gpu", "model": "dense"})
            for f in ("ampere", "hopper") for p in range(4) for i in range(10)]
    data = fit_ranges({"memory": rows, "speed": rows}, dims={"memory": (), "speed": ("gpu_family",)})
    assert data["memory"]["dimensions"] == []
    pooled = data["memory"]["pooled"]
    for fam in ("ampere", "cdna3"):
        b = band("memory", {"gpu_family": fam, "method": "full", "scale": "multi-node", "model": "dense"}, data,
                 corrected=False)
        assert not b.no_evidence and (b.lo, b.hi) == (pooled["lo"], pooled["hi"]), fam


def test_estimate_json_carries_the_80_percent_ranges_of_memory_speed_and_time(tmp_path):
    import json
    import os
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.run([sys.executable, "-m", "trainsizer.cli", "estimate",
                           str(REPO / "examples" / "llama-3.1-8b-full-8xa100-fsdp.yaml"), "--tokens", "1e9", "--json"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    mem, perf = out["memory"], out["performance"]
    mi, pi = mem["interval"], perf["interval"]
    assert mi["level"] == pi["level"] == 0.8
    for key in ("allocated_gib", "reserved_gib", "device_gib"):
        lo, hi = mi[key]
        assert lo < mem[key] < hi, key
    for key in ("step_time_s", "tokens_per_s", "tokens_per_s_per_gpu", "tflops_per_gpu", "mfu",
                "time_to_train_s", "gpu_hours"):
        lo, hi = pi[key]
        assert lo < perf[key] < hi, key
    # step time and tokens per second are one range read two ways
    assert pi["step_time_s"][0] * pi["tokens_per_s"][1] == pytest.approx(perf["step_time_s"] * perf["tokens_per_s"],
                                                                          rel=2e-3)
    assert 0.0 <= mi["p_exceeds_capacity"] <= 1.0
    assert mi["fits_unless_above"] == pytest.approx(mem["capacity_gib"] / mem["device_gib"] - 1, abs=1e-3)


def test_an_unmeasured_gpu_family_gets_the_wide_range_and_says_so():
    """Speed always: its ranges are conditioned on the family. Memory where its fitted ranges are (the held-out
    interval score decides, ranges_fit.select_dimensions); where they are not, the family does not move memory's
    range at all, measured or not."""
    from trainsizer.estimate.intervals import scenario_bands

    mem, speed = scenario_bands("mi300x-192gb", "full", 8, 8)
    known_mem, known_speed = scenario_bands("a100-sxm4-80gb", "full", 8, 8)
    assert speed.no_evidence == ("gpu_family=cdna3",)
    assert speed.hi - speed.lo > known_speed.hi - known_speed.lo
    if "gpu_family" in shipped_ranges()["memory"]["dimensions"]:
        assert mem.no_evidence == ("gpu_family=cdna3",)
    else:
        assert not mem.no_evidence and (mem.lo, mem.hi) == (known_mem.lo, known_mem.hi)


def _shifted(by_family: dict[str, float], spread: float = 0.05, seed: int = 1):
    """Four publications per family, each family's errors centred on its shift, each publication moved a little."""
    import numpy as np

    rng = np.random.default_rng(seed)
    rows = []
    for fam, shift in by_family.items():
        for p in range(4):
            offset = shift + 0.02 * rng.standard_normal()
            rows += [Residual(f"{fam}{p}-{i}", f"{fam}{p}", float(offset + spread * rng.standard_normal()),
                              {"gpu_family": fam, "method": ("full", "lora")[i % 2], "scale": "1-gpu",
                               "model": "dense"})
                     for i in range(12)]
    return rows


def test_the_dimensions_are_chosen_by_the_held_out_interval_score():
    """Families whose errors sit apart keep the family in memory's ranges; families whose errors agree drop it (a
    dimension that does not move the error only costs its shrinkage); speed keeps its fixed dimensions."""
    apart = _shifted({"a": -0.3, "b": 0.0, "c": 0.3})
    dims, chosen = select_dimensions("memory", apart)
    assert "gpu_family" in dims
    scores = {tuple(c["dimensions"]): c["interval_score"] for c in chosen["selection"]["candidates"]}
    assert scores[dims] == min(scores.values()) and scores[dims] < scores[("method", "scale")]
    alike = _shifted({"a": 0.0, "b": 0.0, "c": 0.0})
    assert "gpu_family" not in select_dimensions("memory", alike)[0]
    data = fit_ranges({"memory": alike, "speed": alike})
    assert data["speed"]["dimensions"] == list(SPEED_DIMENSIONS) and "selection" not in data["speed"]
    assert "gpu_family" not in data["memory"]["dimensions"] and data["memory"]["correction"]["gpu_family"] == {}
    where = {"gpu_family": "never-measured", "method": "full", "scale": "1-gpu", "model": "dense"}
    assert not band("memory", where, data).no_evidence and band("speed", where, data).no_evidence


def test_the_shipped_memory_dimensions_are_the_best_scored_candidate():
    fit = shipped_ranges()["memory"]
    scores = {tuple(c["dimensions"]): c["interval_score"] for c in fit["selection"]["candidates"]}
    assert scores[tuple(fit["dimensions"])] == min(scores.values())


def test_each_kinds_weighting_is_the_one_its_held_out_publications_score_best():
    """WEIGHTING is fixed in the code (the nested folds do not choose it again); the shipped fit scores both
    weightings on all publications, so a refit whose data come to prefer the other one fails here."""
    for kind in ("memory", "speed"):
        fit = shipped_ranges()[kind]
        scores = fit["weighting_selection"]["scores"]
        assert fit["weighting"] == WEIGHTING[kind] == min(scores, key=scores.get), (kind, scores)


def test_a_publication_of_many_cases_weighs_one_in_publication_weighted_quantiles():
    """Ten publications of two cases near 0 and one of forty cases at +0.5: weighing cases, the big publication
    sets the upper quantile; weighing publications, it is one draw of eleven and the upper end stays near 0."""
    where = {"gpu_family": "ampere", "method": "lora", "scale": "1-gpu", "model": "dense"}
    small = [Residual(f"p{p}-{i}", f"p{p}", 0.01 * (p - 5) + 0.002 * i, where)
             for p in range(10) for i in range(2)]
    big = [Residual(f"big-{i}", "big", 0.5 + 0.001 * i, where) for i in range(40)]
    by_case = quantile_kind(small + big, 0.8, "memory", (), "case")["pooled"]
    by_publication = quantile_kind(small + big, 0.8, "memory", (), "publication")["pooled"]
    assert by_case["hi"] >= 0.5 and by_case["mid"] >= 0.5
    assert by_publication["hi"] < 0.1 and abs(by_publication["mid"]) < 0.05
    assert by_publication["cases"] == 60 and by_publication["sources"] == 11


def test_validate_reports_the_ranges_coverage_and_the_accuracy_page_quotes_it(shipped_summary):
    import re

    sys.path.insert(0, str(REPO / "tools"))
    try:
        import readme_accuracy
    finally:
        sys.path.remove(str(REPO / "tools"))
    summary = shipped_summary
    cov = summary["range_coverage"]
    assert cov["level"] == 0.8
    page = (REPO / "docs" / "accuracy.md").read_text(encoding="utf-8")  # tools/readme_accuracy.py writes its tables
    row = next(line for line in page.splitlines() if line.startswith("| held-out cases inside their range"))
    assert re.findall(r"\*\*(\d+\.\d) %\*\* \((\d+) cases\)", row) == [
        (f"{100 * cov[k]['coverage']:.1f}", str(cov[k]["count"])) for k in ("memory", "speed")]
    widths = next(line for line in page.splitlines() if line.startswith("| median half-width"))
    assert re.findall(r"\| (\d\.\d\d)", widths) == [f"{cov[k]['median_half_width']:.2f}" for k in ("memory", "speed")]
    for kind in ("memory", "speed"):
        assert cov[kind]["by_regime"]["gpu_family"]["ampere"]["count"] >= 10
    lines = page.splitlines()
    for row in readme_accuracy.coverage_rows(summary):  # every regime's row, with its half-width
        assert row in lines, f"{row} (run tools/readme_accuracy.py --write)"


def test_widen_for_75_rounds_a_need_above_one_up_so_it_never_reads_as_already_inside():
    from trainsizer.evidence.ranges_fit import _up_to_hundredths

    assert _up_to_hundredths(1.003) == 1.01
    assert _up_to_hundredths(1.0) == 1.0
    assert _up_to_hundredths(0.1 * 3) == 0.3  # 0.30000000000000004: float noise, not a need above 0.30
    assert _up_to_hundredths(0.301) == 0.31
