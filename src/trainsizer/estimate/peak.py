"""The share of a part's nominal dense peak its training GEMMs run at, before the family's fitted efficiency.

Two facts about a part, both data in ``hardware/accelerators.yaml``: a power-limited card sustains only part of its
nominal peak (``sustained_fraction``), and a part's own matmuls reach a measured share of its nominal peak
(``matmul_fraction``: best torch.mm bf16 TFLOPS over the dense figure). A family's fitted GEMM efficiency
(``compute.max_efficiency``) was learned on its reference parts, whose measured share is
``compute.matmul_reference`` (from the same microbenchmark table); a part of that family that reaches more or less
of its nominal peak than the reference runs its GEMMs that much faster or slower (a GeForce RTX 3090 reaches ~108 %
of its nominal fp32-accumulate figure, an A100 ~85 %). MFU and its ceiling stay against the nominal peak.
"""

from __future__ import annotations

from trainsizer.estimate.model_params import PerformanceModel
from trainsizer.hardware.catalog import Accelerator


def peak_share(gpu: Accelerator, p: PerformanceModel) -> float:
    """Factor on the nominal dense peak for this part's GEMMs: ``sustained_fraction`` x ``matmul_fraction`` over its
    family's ``matmul_reference`` (1 where either is not measured)."""
    share = gpu.sustained_fraction or 1.0
    reference = p.compute.matmul_reference.get(gpu.architecture or "")
    if gpu.matmul_fraction and reference:
        share *= gpu.matmul_fraction / reference
    return share
