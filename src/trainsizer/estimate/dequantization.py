"""QLoRA's base weights are dequantised on every pass that needs them: HBM bytes per weight and passes per step.

bitsandbytes (nf4 / fp4 / int8 bases) dequantises each 4-bit weight with a fused kernel in forward and again in
backward, and once more in the recomputed forward (``memory_bound.dequant_bytes_per_param_per_pass``: read the codes,
write and read the bf16 copy). GPTQ bases (``int4`` / ``int8``) train through auto-gptq's QuantLinear, which for a
training micro-batch dequantises in unfused PyTorch element-wise ops and multiplies with ``torch.matmul``; autograd
keeps the dequantised fp16 weight for the backward matmul, so the weight is dequantised in the forward and the
recomputed forward only (AutoGPTQ/AutoGPTQ ``auto_gptq/nn_modules/qlinear/qlinear_cuda_old.py`` @ v0.5.1:
``QuantLinear.forward``; bytes per op in ``performance_model.yaml`` ``dequant_unfused_bytes_per_param``).
"""

from __future__ import annotations

from trainsizer.estimate.model_params import PerformanceModel


def dequant_traffic(params: PerformanceModel, quantization: str | None, recomputed: float) -> tuple[float, float]:
    """(HBM bytes per base weight per pass, passes per micro-batch) for a QLoRA base stored as ``quantization``;
    ``recomputed`` is the share of the forward that backward runs again (0 to 1)."""
    mb = params.memory_bound
    unfused = mb.dequant_unfused_bytes_per_param.get(quantization or "")
    if unfused is not None:
        return float(unfused), 1.0 + recomputed  # forward and recomputation; backward reads the kept fp16 weight
    return mb.dequant_bytes_per_param_per_pass, 2.0 + recomputed  # forward, backward and recomputation
