"""A part's share of its family's efficiency loss scales with its roofline ridge point against the family's reference
part (estimate/gemm_rows.overhead_scale, with_overhead), in the estimate and in the planner's screen alike (issue 37:
an H20 has a seventh of an H800's tensor peak on full-speed HBM)."""

import numpy as np
import pytest
from screen_layouts import one_layout  # tests/ is on sys.path

from trainsizer.api import estimate
from trainsizer.estimate.comm import fabric
from trainsizer.estimate.gemm_rows import overhead_scale, ridge_point, with_overhead
from trainsizer.estimate.step import default_performance_model, step_context
from trainsizer.estimate.step_terms import raw_step
from trainsizer.hardware.catalog import default_catalog
from trainsizer.models.catalog import resolve_model
from trainsizer.plan.fast import job_basis, screen_step_time
from trainsizer.scenario import scenario_from_dict


def job(gpu: str, tp: int = 1) -> dict:
    return {"model": {"preset": "llama-2-7b"},
            "training": {"method": "full", "precision": "bf16-mixed", "micro_batch_size": 1, "seq_len": 4096,
                         "global_batch_size": 8, "activation_checkpointing": "full", "attention": "flash"},
            "parallel": {"gpus": 8, "tp": tp, "zero": 1},
            "hardware": {"gpu": gpu, "gpus_per_node": 8}}


def test_the_overhead_scale_is_the_ridge_point_over_the_family_references():
    cat, p = default_catalog(), default_performance_model()
    h20, h100 = cat.accelerator("h20-96gb"), cat.accelerator(p.compute.reference_part["hopper"])
    assert overhead_scale(h100, "bf16", p) == 1.0
    assert overhead_scale(h20, "bf16", p) == pytest.approx(ridge_point(h20) / ridge_point(h100))
    assert overhead_scale(h20, "bf16", p) < 0.5  # 148 TFLOPS on 4.0 TB/s against 989 on 3.35
    assert overhead_scale(h20, "fp32", p) == 1.0  # CUDA-core GEMMs: row_scale's business
    davinci = next(a for a in cat.accelerators.values() if a.architecture == "davinci")
    assert "davinci" not in p.compute.reference_part and overhead_scale(davinci, "bf16", p) == 1.0


def test_with_overhead_keeps_the_reference_and_shrinks_the_loss():
    assert with_overhead(0.6, 0.8, 1.0) == pytest.approx(0.6)
    assert with_overhead(0.6, 0.8, 0.0) == pytest.approx(0.8)
    assert 0.6 < with_overhead(0.6, 0.8, 0.5) < 0.8 and with_overhead(0.6, 0.8, 2.0) < 0.6
    assert with_overhead(0.9, 0.8, 0.1) == 0.9 and with_overhead(0.6, 0.0, 0.1) == 0.6  # above it / not measured
    out = with_overhead(np.array([0.6, 0.6]), np.array([0.8, 0.0]), np.array([0.5, 0.5]))
    assert out[0] == pytest.approx(with_overhead(0.6, 0.8, 0.5)) and out[1] == 0.6


def test_an_h20_runs_its_gemms_nearer_its_sustained_peak_than_an_h100():
    cat, p = default_catalog(), default_performance_model()
    shares = {}
    for gpu in ("h100-sxm5-80gb", "h20-96gb"):
        sc = scenario_from_dict(job(gpu, tp=2))
        raw = raw_step(step_context(sc, resolve_model(sc.model), cat.accelerator(gpu), cat, p)[0])
        assert raw.overhead_scale == overhead_scale(cat.accelerator(gpu), "bf16", p)
        perf = estimate(sc, with_limits=False).performance
        shares[gpu] = (raw.linear_s + raw.attention_s) * raw.micro_batches / perf.breakdown_s["compute"]
    assert shares["h20-96gb"] > shares["h100-sxm5-80gb"] * 1.1


def test_the_planners_screen_prices_the_part_as_the_estimate_does():
    cat, p = default_catalog(), default_performance_model()
    for gpu in ("h20-96gb", "h100-sxm5-80gb"):
        acc = cat.accelerator(gpu)
        sc = scenario_from_dict(job(gpu))
        fab = fabric(cat, acc, None, None, None, 8, p, 8)
        layout = one_layout(gpus=8, zero=1, ckpt="full", gpus_per_node=8)
        screened = screen_step_time(job_basis(sc, resolve_model(sc.model)), layout, sc, acc, fab, p)[0]
        assert screened == pytest.approx(estimate(sc, with_limits=False).performance.step_time_s, rel=0.05)


def test_a_parts_measured_mfu_bounds_its_family_as_the_reference_part_would_run():
    from conftest import REPO

    from trainsizer.estimate.memory import default_memory_model
    from trainsizer.estimate.step_terms import combine_step
    from trainsizer.evidence.case_terms import build_case_terms
    from trainsizer.evidence.cases import load_cases
    from trainsizer.evidence.mfu_evidence import measured_mfu
    from trainsizer.evidence.refit import speed_predictions

    p = default_performance_model()
    cases = load_cases(REPO / "validation" / "published" / "china_parts.yaml")
    terms, _ = build_case_terms(cases, "performance", default_memory_model(), p)
    raw = terms.speed.raw
    step = sum(np.asarray(v, dtype=float) for v in combine_step(raw, p).values())
    predicted = speed_predictions(terms.speed, p)
    slower = np.array([m == "step_time_s" for m in terms.speed.metrics])
    plain = raw.model_step_at_peak_s / step * np.where(slower, predicted / terms.measured, terms.measured / predicted)
    mapped = measured_mfu(terms, p)
    h20 = np.array([part == "h20" for part in terms.parts])
    assert h20.any() and (~h20).any()
    assert np.all(mapped[h20] < plain[h20]) and mapped[~h20] == pytest.approx(plain[~h20])
