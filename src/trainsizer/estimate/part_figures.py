"""What a step's terms read of the GPU part, worked out once per part: its HBM and PCIe rates, the share of its peak
its GEMMs sustain (``estimate.peak``), its 16-bit peak (what FP8 experts run at, ``estimate.moe``), and its GEMM
row and overhead scales and ridge point (``estimate.gemm_rows``). Numbers of one part, or arrays with one entry per
layout where the planner's screen prices the layouts of several parts in one pass (:meth:`PartFigures.per_layout`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from trainsizer.estimate.gemm_rows import overhead_scale, ridge_point, row_scale
from trainsizer.estimate.model_params import PerformanceModel
from trainsizer.estimate.peak import peak_share
from trainsizer.hardware.catalog import Accelerator

PCIE_GBPS = {3: 16.0, 4: 32.0, 5: 64.0, 6: 128.0}  # x16 per direction (PCI-SIG); 80 % of it is reached


def pcie_bytes_per_s(gpu: Accelerator) -> float:
    """Host-to-device bytes per second over the card's x16 link (80 % of the PCI-SIG rate; gen 4 if unknown)."""
    return PCIE_GBPS.get(gpu.pcie_gen or 4, 32.0) * 0.8e9


@dataclass(frozen=True)
class PartFigures:
    """The part's figures the step's terms read (the GEMMs' dtype decides the row and overhead scales)."""

    architecture: str
    hbm_bytes_per_s: Any  # the achievable HBM rate (``memory_bound.hbm_efficiency`` of the nominal one)
    pcie_bytes_per_s: Any
    peak_share: Any
    sixteen_bit_peak_tflops: Any  # 0 where the part states no bf16 peak
    row_scale: Any
    overhead_scale: Any
    ridge: Any  # FLOP per HBM byte; 0 where unknown

    @classmethod
    def of(cls, gpu: Accelerator, dtype: str, p: PerformanceModel) -> PartFigures:
        return cls(gpu.architecture or "", (gpu.memory_bandwidth_gbps or 1000.0) * 1e9 * p.memory_bound.hbm_efficiency,
                   pcie_bytes_per_s(gpu), peak_share(gpu, p), gpu.peak_tflops("bf16") or 0.0, row_scale(gpu, dtype),
                   overhead_scale(gpu, dtype, p), ridge_point(gpu) or 0.0)

    @classmethod
    def per_layout(cls, parts: list[PartFigures], which: Any) -> PartFigures:
        """The figures of ``parts[which[i]]`` for layout ``i`` (arrays), of parts of one architecture."""
        import numpy as np

        return cls(parts[0].architecture, *(np.array([getattr(part, f.name) for part in parts], dtype=float)[which]
                                            for f in fields(cls) if f.name != "architecture"))
