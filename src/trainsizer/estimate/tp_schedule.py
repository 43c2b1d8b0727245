"""Megatron's tensor-parallel collectives, and which of them can run behind a GEMM.

Each transformer layer has two tensor-parallel blocks (attention, MLP), each a column-parallel linear followed by a
row-parallel one (Shoeybi et al. 2019, arXiv:1909.08053, section 3). Counted in one all-reduce of the layer's
activation (an all-gather or a reduce-scatter is half of one: ring traffic ``(n-1)/n`` against ``2(n-1)/n``):

- forward: the row-parallel all-reduce (under sequence parallelism an all-gather before the column-parallel linear
  and a reduce-scatter after the row-parallel one) of each block: 2, on the critical path; 2 more where the forward
  is recomputed;
- backward: the column-parallel linear's input-gradient all-reduce (sequence parallelism: reduce-scatter) is issued
  asynchronously and runs while the weight-gradient GEMM computes; under sequence parallelism the re-gather of the
  layer's input runs while the input-gradient GEMM computes, and the row-parallel linear's output-gradient all-gather
  waits on the critical path. NVIDIA/Megatron-LM megatron/core/tensor_parallel/layers.py @ d98e8a64
  (``LinearWithGradAccumulationAndAsyncCommunication.backward``: ``dist_all_gather_func(..., async_op=True)`` before
  ``grad_input = grad_output.matmul(weight)``; ``all_reduce`` / ``dist_reduce_scatter_func(..., async_op=True)``
  "scheduled before the weight gradient computation"; ``mappings.py`` ``_ReduceScatterToSequenceParallelRegion``
  backward is a synchronous all-gather);
- ``parallel.tp_comm_overlap`` (Megatron ``--tp-comm-overlap``, Transformer Engine userbuffers): every collective is
  split into chunks pipelined with the GEMM that produces or consumes it (megatron/core/model_parallel_config.py
  @ d98e8a64, ``tp_comm_overlap``: "allows overlapping of Linear layer execution with tensor parallel communication
  collectives like AllGather/ReduceScatter ... during the forward and the backward pass"; Ascend/MindSpeed
  docs/features/mc2.md @ 24b341f7 for MC2), so each hides behind the layer's GEMMs.

What hides is bounded by the GEMM it runs beside: the exposed time is the critical-path collectives plus what of the
others outlasts their GEMMs (:func:`exposed_tp_s`). No fitted parameter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainsizer.arrays import is_array, positive_part, safe_div, where
from trainsizer.estimate.comm import all_gather_s, all_reduce_s
from trainsizer.estimate.flops import pipeline_stage_linear
from trainsizer.models.architecture import Architecture

FORWARD_UNITS = 2.0  # the two blocks' forward collectives (all-reduce, or all-gather + reduce-scatter)
BACKWARD_UNITS = 2.0  # the column-parallel input-gradient all-reduces (or reduce-scatters)
SP_REGATHER_UNITS = 1.0  # sequence parallelism: the two blocks' input re-gathers (all-gathers, half a unit each)
SP_OUTPUT_GRAD_UNITS = 1.0  # sequence parallelism: the two row-parallel output-gradient all-gathers


@dataclass(frozen=True)
class TensorParallelSplit:
    """One layer's tensor-parallel traffic in all-reduce units: on the critical path, and able to run beside the
    column-parallel GEMMs (``window``: how many of the column-parallel linears' forward-size GEMMs it runs beside; -1
    where every linear GEMM of the layer is its window, under ``tp_comm_overlap``)."""

    exposed_units: Any
    hideable_units: Any
    window_gemms: Any


def split_units(sequence_parallel: Any, recomputed: Any, tp_comm_overlap: Any) -> TensorParallelSplit:
    """:class:`TensorParallelSplit` of one layer; numbers or arrays of many layouts. ``recomputed``: the share of
    the forward run again in backward (its collectives again on the critical path)."""
    sp = where(sequence_parallel, 1.0, 0.0)
    total = FORWARD_UNITS + BACKWARD_UNITS + sp * (SP_REGATHER_UNITS + SP_OUTPUT_GRAD_UNITS) + 2.0 * recomputed
    exposed = FORWARD_UNITS + sp * SP_OUTPUT_GRAD_UNITS + 2.0 * recomputed
    hideable = BACKWARD_UNITS + sp * SP_REGATHER_UNITS
    window = 1.0 + sp  # the weight-gradient GEMMs; under sequence parallelism the input-gradient ones too
    overlap = where(tp_comm_overlap, 1.0, 0.0)
    return TensorParallelSplit(exposed * (1 - overlap), where(tp_comm_overlap, total, hideable),
                               where(tp_comm_overlap, -1.0, window))


def column_parallel_width(arch: Architecture) -> float:
    """Output width (before the tp split) of a layer's column-parallel linears, averaged over the layers: the
    query/key/value projection and the MLP's first linear (both halves where gated; on an MoE layer only the shared
    experts', the routed experts' GEMMs are the expert-parallel term's)."""
    gate = 2 if arch.gated_mlp else 1
    moe_layers = arch.moe_layers if arch.moe else 0
    shared = arch.moe.shared_intermediate_size if arch.moe else 0
    dense_mlp = arch.intermediate_size * (arch.num_layers - moe_layers) + shared * moe_layers
    return arch.q_dim + 2 * arch.kv_dim + gate * dense_mlp / arch.num_layers


def exposed_tp_s(exposed_s: Any, hideable_s: Any, window_s: Any, efficiency: Any) -> Any:
    """Seconds of tensor-parallel traffic a micro-batch waits for: the critical-path collectives, and what of the
    others outlasts the GEMMs they run beside (``window_s`` at the dense peak, over their ``efficiency``)."""
    return exposed_s + positive_part(hideable_s - safe_div(window_s, efficiency))


def tensor_parallel_mb(ctx: Any) -> tuple[Any, Any, Any]:
    """Tensor parallelism per micro-batch of ``ctx``, a ``step_terms.StepContext`` (not imported: step_terms imports
    this module): (seconds of the collectives on the critical path, seconds of those that can
    run beside a GEMM, the seconds of those GEMMs at the dense peak); numbers, or arrays of many layouts."""
    lay = ctx.layout
    if not ((lay.tp > 1).any() if is_array(lay.tp) else lay.tp > 1):
        return 0.0, 0.0, 0.0
    split = split_units(lay.sequence_parallel, lay.recomputed, ctx.scenario.parallel.tp_comm_overlap)
    # one unit: an all-reduce, or under sequence parallelism an all-gather and a reduce-scatter (the ring's bandwidth)
    layer_bytes = ctx.local_tokens * ctx.arch.hidden_size * ctx.act_bytes
    unit = ctx.layers_per_stage * where(lay.sequence_parallel, 2 * all_gather_s(layer_bytes, lay.tp, ctx.fabric),
                                        all_reduce_s(layer_bytes, lay.tp, ctx.fabric))
    per_s = ctx.peak_tflops * ctx.part.peak_share * 1e12  # FLOP/s at the dense peak, as raw_step's GEMMs
    column_s = ctx.layers_per_stage * 2 * ctx.local_tokens * ctx.arch.hidden_size * column_parallel_width(ctx.arch) \
        / lay.tp / per_s
    # under tp_comm_overlap every linear GEMM of the micro-batch is the window (split.window_gemms < 0)
    linear_s = pipeline_stage_linear(ctx.flops.linear_per_token, ctx.flops.head_per_token, lay.pp,
                                     ctx.stage.share, ctx.stage.holds_head) \
        * ctx.tokens_mb / (lay.tp * lay.cp * lay.pp) / per_s
    return split.exposed_units * unit, split.hideable_units * unit, \
        where(split.window_gemms < 0, linear_s, split.window_gemms * column_s)
