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

The same roofline sets how much of a family's fitted efficiency loss a part of that family carries
(:func:`overhead_scale`): what a training GEMM or attention kernel loses against the part's best matmul (prologue
and epilogue traffic, softmax, wave tails, the element-wise work between kernels) runs at the HBM's and the CUDA
cores' pace, not the tensor cores', so on a part whose tensor peak is small against its bandwidth (an H20: 148
TFLOPS on 4.0 TB/s, ridge 37 FLOP/byte, against the H100 SXM's 989 on 3.35 TB/s, 295) it is that much smaller a
share of the step.
"""

from __future__ import annotations

import math
from typing import Any

from trainsizer.arrays import is_array
from trainsizer.estimate.model_params import PerformanceModel
from trainsizer.hardware.catalog import Accelerator, default_catalog

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


def ridge_point(gpu: Accelerator) -> float | None:
    """FLOP per HBM byte at which the part's 16-bit GEMMs turn compute bound: its dense 16-bit peak over its memory
    bandwidth (Williams et al. 2009); None where the catalog gives either figure as unknown."""
    tensor = gpu.peak_tflops("bf16") or gpu.peak_tflops("fp16")
    bandwidth = gpu.memory_bandwidth_gbps
    return tensor * 1e3 / float(bandwidth) if tensor and bandwidth else None


def overhead_scale(gpu: Accelerator, dtype: str, p: PerformanceModel) -> float:
    """The part's ridge point over that of its family's reference part (``compute.reference_part``, the part the
    family's efficiency was fitted on): the factor on the family's efficiency loss against its best matmul
    (:func:`trainsizer.estimate.step_terms.with_overhead`). 1 for fp32 GEMMs (CUDA cores), for a family without a
    reference part, and where a ridge point is unknown."""
    reference_id = p.compute.reference_part.get(gpu.architecture or "")
    if dtype == "fp32" or not reference_id:
        return 1.0
    reference = default_catalog().accelerators.get(reference_id)
    mine, theirs = ridge_point(gpu), ridge_point(reference) if reference else None
    return mine / theirs if mine and theirs else 1.0


def gemm_ceiling(p: PerformanceModel, architecture: str, dtype: str) -> float:
    """The per-architecture ceiling of the GEMM efficiency (``max_efficiency``); fp32 runs on the CUDA cores
    (``max_efficiency_fp32``); FP8 GEMMs at the family's measured FP8-over-BF16 matmul efficiency
    (``fp8_matmul_relative``: stas00/ml-engineering's maximum achievable matmul FLOPS tables)."""
    c = p.compute
    if dtype == "fp32":
        return c.max_efficiency_fp32
    ceiling = c.max_efficiency.get(architecture, c.max_efficiency["default"])
    return ceiling * c.fp8_matmul_relative.get(architecture, 1.0) if dtype == "fp8" else ceiling


def reference_share(p: PerformanceModel, architecture: str, dtype: str) -> float | None:
    """The measured matmul share of the nominal peak of ``dtype`` on the family's reference part
    (``matmul_reference``, FP8 at ``fp8_matmul_relative`` of it); None where not measured or for fp32."""
    c = p.compute
    share = c.matmul_reference.get(architecture)
    if share is None or dtype == "fp32":
        return None
    return share * c.fp8_matmul_relative.get(architecture, 1.0) if dtype == "fp8" else share


def with_overhead(efficiency: Any, reference: Any, scale: Any) -> Any:
    """``efficiency`` (a fraction of the sustained peak, fitted or measured on the family's reference part) on a part
    whose overhead is ``scale`` times the reference's: of its time, the best matmul's (``reference``: that matmul's
    share of the peak) runs at the tensor cores' pace and the rest, ``reference / efficiency - 1`` of it, is overhead
    at the HBM's (this module's :func:`overhead_scale`). Unchanged where ``efficiency`` reaches ``reference`` or
    ``scale`` is 1; ``reference`` 0 or nan (not measured) leaves it as it is. Floats or arrays."""
    if not (is_array(efficiency) or is_array(reference) or is_array(scale)):  # one estimate: no numpy
        ref, eff = (0.0 if reference is None or math.isnan(reference) else float(reference)), float(efficiency)
        return ref / (1.0 + (ref / eff - 1.0) * scale) if ref > eff > 0 else eff
    import numpy as np

    ref = np.nan_to_num(np.asarray(reference, dtype=float))
    eff = np.asarray(efficiency, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):  # the cases ``np.where`` leaves as they are
        scaled = ref / (1.0 + (ref / np.where(eff > 0, eff, 1.0) - 1.0) * scale)
    out = np.where((ref > eff) & (eff > 0), scaled, eff)
    return float(out) if out.ndim == 0 else out
