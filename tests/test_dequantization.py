"""QLoRA dequantisation traffic by the base's storage format (estimate/dequantization.py): bitsandbytes' fused kernel
on every pass, auto-gptq's unfused PyTorch path (GPTQ int4 / int8) on the forward and the recomputation only."""

import pytest

from trainsizer.estimate.dequantization import dequant_traffic
from trainsizer.estimate.estimator import estimate
from trainsizer.estimate.step import default_performance_model
from trainsizer.scenario import scenario_from_dict


def qlora(quantization, checkpointing="full"):
    return scenario_from_dict({"model": {"preset": "llama-2-7b"},
                               "training": {"method": "qlora", "precision": "bf16-mixed", "micro_batch_size": 1,
                                            "seq_len": 2048, "global_batch_size": 8, "quantization": quantization,
                                            "activation_checkpointing": checkpointing,
                                            "lora": {"rank": 64, "alpha": 16, "targets": "all-linear"}},
                               "parallel": {"gpus": 1}, "hardware": {"gpu": "a100-sxm4-80gb"}})


def test_bitsandbytes_dequantises_on_every_pass():
    p = default_performance_model()
    assert dequant_traffic(p, "nf4-dq", 1.0) == (p.memory_bound.dequant_bytes_per_param_per_pass, 3.0)
    assert dequant_traffic(p, "nf4", 0.0)[1] == 2.0


def test_gptq_dequantises_unfused_in_the_forward_and_the_recomputation():
    p = default_performance_model()
    # auto-gptq qlinear_cuda_old: shift (int32 out), cast, mask, minus zeros, times scales, the matmul's read
    assert dequant_traffic(p, "int4", 1.0) == (0.5 + 4 + 5 + 2 + 2 + 3 + 2, 2.0)
    assert dequant_traffic(p, "int8", 0.0) == (1 + 4 + 6 + 4 + 4 + 4 + 2, 1.0)


@pytest.mark.parametrize("checkpointing,passes", [("full", 2 / 3), ("none", 1 / 2)])
def test_the_estimate_prices_a_gptq_base_by_its_path(checkpointing, passes):
    mb = default_performance_model().memory_bound
    # the same stored weights (both formats' codes are 4-bit), so only the bytes per pass and the passes differ
    ratio = mb.dequant_unfused_bytes_per_param["int4"] / mb.dequant_bytes_per_param_per_pass * passes
    gptq = estimate(qlora("int4", checkpointing), with_limits=False).performance.breakdown_s["dequantization"]
    bnb = estimate(qlora("nf4", checkpointing), with_limits=False).performance.breakdown_s["dequantization"]
    assert gptq / bnb == pytest.approx(ratio, rel=1e-9)
