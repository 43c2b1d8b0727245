"""No fitted parameter rests on a single publication (issue 23): each grid the fitter frees is constrained by the
shipped cases (every one of which the shipped fit uses) of two or more publications, or its reason to stay free is
written down."""

from __future__ import annotations

import numpy as np
import pytest

from trainsizer.estimate.memory import default_memory_model
from trainsizer.estimate.step import default_performance_model
from trainsizer.evidence.cases import Case, load_cases
from trainsizer.evidence.fit_audit import SINGLE_PUBLICATION, audit, publications_by_parameter
from trainsizer.evidence.shipped_cases import shared_files, shipped_files


def _fitted_cases() -> list[Case]:
    return [c for f in shipped_files() for c in load_cases(f)]


def test_every_fitted_parameter_rests_on_two_publications_or_says_why_not():
    rows = audit(_fitted_cases(), default_memory_model(), default_performance_model())
    bad = [(r.kind, r.parameter, r.publications) for r in rows if not r.ok]
    assert not bad, bad
    # the written exceptions are exactly the parameters one publication constrains: the list cannot go stale
    single = {(r.kind, r.parameter) for r in rows if len(r.publications) == 1}
    assert single == {(k, f"{d}.{key}") for k, d, key in SINGLE_PUBLICATION}


def test_a_parameter_counts_only_the_publications_whose_cases_it_moves():
    cases = [c for f in shared_files() for c in load_cases(f)]
    mp, pp = default_memory_model(), default_performance_model()
    free = [("compute.max_efficiency", "hopper", np.array([0.5, 0.7])),
            ("communication.overlap", "cp", np.array([0.0, 0.5]))]  # no shared case runs context parallelism
    pubs = publications_by_parameter(cases, "performance", free, mp, pp)
    hopper = {c.source.split(" ")[0] for c in cases if c.scenario["hardware"]["gpu"].startswith("h100")
              and not c.is_memory}
    assert pubs[("communication.overlap", "cp")] == {}
    assert pubs[("compute.max_efficiency", "hopper")] and hopper
    assert {s.split(" ")[0] for s in pubs[("compute.max_efficiency", "hopper")]} <= hopper


def test_a_family_without_cases_takes_its_ceiling_from_its_measured_matmul_efficiency():
    from trainsizer.evidence.calibrate import family_prior

    pp = default_performance_model()
    c = pp.compute
    prior = family_prior(pp, {"ampere"})  # only A100-class cases in the fit: Hopper from its matmul efficiency
    ratio = c.max_efficiency["ampere"] / c.mamf_fraction["ampere"]
    assert prior.compute.max_efficiency["hopper"] == pytest.approx(ratio * c.mamf_fraction["hopper"],
                                                                   abs=1e-4)
    assert prior.compute.max_efficiency["ampere"] == c.max_efficiency["ampere"]  # seen families keep the fit
    assert prior.compute.max_efficiency["turing"] == c.max_efficiency["turing"]  # no measured table: unchanged
    assert family_prior(pp, {"turing"}) == pp  # no seen family with a measured matmul efficiency: nothing to scale


def test_ada_and_da_vinci_have_measured_matmul_efficiencies_and_da_vinci_ships_its_prior():
    """Ada (RTX 4090 torch.mm) and Da Vinci (AIBench's Ascend 910 cube rate) have a measured matmul efficiency, so
    a fold without them starts from physics; Da Vinci, with no fitted case, ships that prior as its ceiling."""
    import numpy as np

    from trainsizer.evidence.calibrate import family_prior

    pp = default_performance_model()
    c = pp.compute
    assert 0.8 <= c.mamf_fraction["ada"] <= 1.0 and 0.7 <= c.mamf_fraction["davinci"] <= 0.9
    fitted = ["ampere", "hopper", "volta", "ada"]
    ratio = float(np.median([c.max_efficiency[a] / c.mamf_fraction[a] for a in fitted]))
    assert c.max_efficiency["davinci"] == pytest.approx(ratio * c.mamf_fraction["davinci"], abs=1e-4)
    without_ada = family_prior(pp, {"ampere", "hopper", "volta"})  # leave-one-family-out of Ada
    assert without_ada.compute.max_efficiency["ada"] > c.max_efficiency["default"]


def test_a_prior_only_ceiling_is_settled_from_the_fit_at_hand_and_is_no_evidence_for_another_prior():
    """Da Vinci's ceiling is a prior, not a fit: a fold sets it from the families that fold fits and sees
    (settle_priors), and it never enters the median that gives a held-out family its prior (before, a fold holding
    out Hopper counted Da Vinci's shipped prior and started Hopper 15 % higher once Da Vinci was settled)."""
    import numpy as np

    from trainsizer.evidence.calibrate import PERFORMANCE_FREE, family_prior, settle_priors

    pp = default_performance_model()
    c = pp.compute
    with_davinci = family_prior(pp, {"ampere", "davinci"}).compute.max_efficiency
    assert with_davinci["hopper"] == family_prior(pp, {"ampere"}).compute.max_efficiency["hopper"]
    moved = settle_priors(pp, PERFORMANCE_FREE, {"ampere", "volta", "davinci"})  # a fold without Hopper and Ada
    ratio = float(np.median([c.max_efficiency[a] / c.mamf_fraction[a] for a in ("ampere", "volta")]))
    assert moved.compute.max_efficiency["davinci"] == pytest.approx(ratio * c.mamf_fraction["davinci"], abs=1e-4)
    assert moved.compute.max_efficiency["hopper"] == c.max_efficiency["hopper"]  # only prior-only families move
    assert settle_priors(pp, PERFORMANCE_FREE) == pp  # the shipped file is settled already
