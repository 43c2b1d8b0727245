"""fp32 GEMMs saturate at fewer rows and a narrower width than 16-bit tensor-core GEMMs (estimate/gemm_rows.py: the
roofline ridge point, bytes x peak), in the estimate and in the planner's screen alike (issue 23, V100 fp32 BERT)."""

import pytest
from screen_layouts import one_layout  # tests/ is on sys.path

from trainsizer.api import estimate
from trainsizer.estimate.comm import fabric
from trainsizer.estimate.gemm_rows import row_scale
from trainsizer.estimate.step import default_performance_model, step_context
from trainsizer.estimate.step_terms import gemm_ceiling, raw_efficiency, raw_step, saturation
from trainsizer.hardware.catalog import default_catalog
from trainsizer.models.catalog import resolve_model
from trainsizer.plan.fast import job_basis, screen_step_time
from trainsizer.scenario import scenario_from_dict

GPU = "v100-sxm2-32gb"


def job(precision: str, mbs: int) -> dict:
    return {"model": {"preset": "bert-large"},
            "training": {"method": "full", "precision": precision, "micro_batch_size": mbs, "seq_len": 512,
                         "global_batch_size": 4, "activation_checkpointing": "none", "attention": "eager"},
            "parallel": {"gpus": 1},
            "hardware": {"gpu": GPU}}


def test_fp32_rows_scale_by_bytes_times_peak_against_the_tensor_cores():
    gpu = default_catalog().accelerator(GPU)
    # V100: 4 B x 15.7 TFLOPS against 2 B x 125 TFLOPS: compute bound at a quarter of the rows
    assert row_scale(gpu, "fp32") == pytest.approx(4 * 15.7 / (2 * 125.0))
    assert row_scale(gpu, "fp16") == 1.0 and row_scale(gpu, "bf16") == 1.0
    a100 = default_catalog().accelerator("a100-sxm4-80gb")
    assert 0 < row_scale(a100, "fp32") < row_scale(gpu, "fp32") < 1  # A100's tensor cores outrun its CUDA cores more


def test_the_estimates_fp32_gemm_efficiency_saturates_at_the_scaled_rows():
    cat = default_catalog()
    params = default_performance_model()
    for precision, mbs in (("fp32", 1), ("fp32", 4), ("fp16-mixed", 1)):
        sc = scenario_from_dict(job(precision, mbs))
        ctx = step_context(sc, resolve_model(sc.model), cat.accelerator(GPU), cat, params)[0]
        raw = raw_step(ctx)
        scale = row_scale(ctx.gpu, ctx.dtype)
        assert raw.row_scale == scale
        ceiling = gemm_ceiling(params, ctx.gpu.architecture, ctx.dtype)
        assert float(raw_efficiency(raw, params)) == pytest.approx(
            ceiling * float(saturation(mbs * 512 / scale, raw.width / scale, params)))
    # four 512-token micro-batches cost fp32 less against one of 2,048 tokens than the tensor-core curve says
    fp32 = [estimate(scenario_from_dict(job("fp32", m)), with_limits=False).performance.breakdown_s["compute"]
            for m in (1, 4)]
    tensor_curve = float(saturation(2048, 1024, params) / saturation(512, 1024, params))
    assert 1.0 < fp32[0] / fp32[1] < tensor_curve


def test_the_planners_screen_scales_fp32_rows_as_the_estimate_does():
    cat = default_catalog()
    gpu = cat.accelerator(GPU)
    params = default_performance_model()
    fab = fabric(cat, gpu, None, None, None, 1, params, 1)
    screened, estimated = [], []
    for mbs in (1, 4):
        lay = one_layout(mbs=mbs)
        sc = scenario_from_dict(job("fp32", mbs))
        screened.append(screen_step_time(job_basis(sc, resolve_model(sc.model)), lay, sc, gpu, fab, params)[0])
        estimated.append(estimate(sc, with_limits=False).performance.step_time_s)
    assert screened[0] / screened[1] == pytest.approx(estimated[0] / estimated[1], rel=0.05)
