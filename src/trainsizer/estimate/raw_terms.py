"""A step's terms before the fitted parameters act on them: what ``estimate/step_terms.raw_step`` reads from a
scenario and ``step_terms.combine_step`` prices, for one layout (numbers) or many cases or layouts (arrays)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RawStep:
    """A step's terms before the fitted parameters act on them (``calibrate`` and ``validate --holdout``
    re-price a case from these in microseconds; :func:`combine_step` is also how every estimate is priced)."""

    micro_batches: int
    architecture: str  # the GPU's, for its compute-efficiency ceiling
    dtype: str  # of the linear (and expert) GEMMs
    attention_dtype: str
    local_tokens: float
    width: float
    linear_s: float  # one micro-batch's linear-GEMM FLOPs at the dense peak of ``dtype``
    expert_s: float  # routed-expert GEMMs, same peak
    expert_tokens: float  # rows of one expert's GEMM (tokens routed to one local expert per micro-batch)
    expert_width: float
    attention_s: float  # the attention core at the dense peak of ``attention_dtype``
    attention_kernel: str  # flash | sdpa (fused kernels) | eager (batched GEMMs and a softmax)
    saved_traffic_s: float  # element-wise seconds per unit of elementwise_bytes_per_saved_byte
    dequantization_mb: float
    tp_mb: float  # tensor-parallel collectives on the critical path (estimate/tp_schedule.py)
    tp_hideable_mb: float  # those that can run beside the column-parallel GEMMs
    tp_window_s: float  # the GEMMs they run beside, at the dense peak of ``dtype``
    cp_mb: float
    moe_mb: float
    pp_mb: float
    zero3_mb: float
    dp_sync_s: float
    dp_gather_s: float
    optimizer_s: float
    offload_s: float
    layers_per_stage: float
    pp: int
    virtual_pp: int
    model_step_at_peak_s: float  # model FLOPs per GPU at the part's sustained peak of ``dtype`` (peak.peak_share)
    precision: str  # the scenario's training precision (the MFU ceiling's key with the architecture)
    compiled: float = 0.0  # 1 under torch.compile (a number, so that many cases stack into one array)
    gather_overlapped: float = 1.0  # 1 where the sharded optimizer's weight gather hides behind the next forward
    row_scale: float = 1.0  # GEMM half-saturation rows over half_tokens for its dtype (estimate/gemm_rows.py)
    activation_ops_mb: float = 0.0  # an unfused activation's traffic beyond the element-wise term (activation_ops.py)
    reduce_overlapped: float = 1.0  # 1 where the gradient reduction hides behind backward (grad_overlap.py)
    overhead_scale: float = 1.0  # the part's ridge point over its family reference's (gemm_rows.overhead_scale)
    expert_hidden: float = 0.0  # the model's width: the other side of the routed experts' GEMMs
    ridge: float = 0.0  # FLOP per HBM byte where the part's 16-bit GEMMs turn compute bound (gemm_rows.ridge_point)
    expert_dtype: str = ""  # of the routed experts' GEMMs (moe.expert_peak)
    moe_syncs: float = 0.0  # host waits for the GPU per micro-batch: one per MoE layer forward (moe.host_syncs)
    moe_overlapped: float = 0.0  # 1 where the all-to-alls run against another micro-batch's compute (moe.py)
