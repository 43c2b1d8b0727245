"""Where a GEMM's row count stops limiting its efficiency, by the dtype it runs in.

The compute model's GEMM efficiency saturates in the rows of a micro-batch, half-way at ``half_tokens``
(``performance_model.yaml``), a figure the 16-bit tensor-core runs set. A GEMM whose rows are few is memory
bound: for ``M`` rows against a ``K x N`` weight with ``M`` small against ``K`` and ``N``, it does ``2 M K N``
FLOPs over about ``b K N`` bytes (the weight read dominates; ``b`` bytes an element), so it turns compute bound
once ``2 M / b`` exceeds the ridge point ``peak / bandwidth`` of the roofline (Williams, Waterman & Patterson
2009, "Roofline: an insightful visual performance model for multicore architectures", CACM 52(4)), at
``M = b x peak / (2 x bandwidth)``. An fp32 GEMM runs on the CUDA cores (torch's default matmul precision
"highest", no TF32): on a V100 15.7 TFLOPS at 4 bytes against the tensor cores' 125 TFLOPS at 2 bytes, so it
turns compute bound at a quarter of the rows (35 against 139 on 900 GB/s) and its efficiency saturates that much
sooner. The same HBM feeds both, so the ratio needs no bandwidth: :func:`row_scale`.
"""

from __future__ import annotations

from trainsizer.hardware.catalog import Accelerator

TENSOR_BYTES = 2.0  # the 16-bit tensor-core GEMMs that set ``half_tokens``
FP32_BYTES = 4.0


def row_scale(gpu: Accelerator, dtype: str) -> float:
    """The GEMM's half-saturation row count over ``half_tokens``: for fp32 GEMMs the ratio of their ridge-point
    rows to the 16-bit tensor cores' (bytes x peak of each, :mod:`this module's <trainsizer.estimate.gemm_rows>`
    roofline argument), capped at 1; 1 for every other dtype and where the card states no peak to compare."""
    if dtype != "fp32":
        return 1.0
    fp32 = gpu.peak_tflops("fp32")
    tensor = gpu.peak_tflops("fp16") or gpu.peak_tflops("bf16")
    if not fp32 or not tensor:
        return 1.0
    return min(1.0, FP32_BYTES * fp32 / (TENSOR_BYTES * tensor))
