"""The routed-expert part of a mixture-of-experts step: how many token copies each GPU's experts receive, what the
dispatch and combine all-to-alls move inside and between nodes, and how the expert GEMMs are shaped.

- Routing: each token goes to ``k`` of ``E`` experts (Shazeer et al. 2017, arXiv:1701.06538); an expert-parallel rank
  holds ``E / ep`` of them and receives ``ep`` ranks' copies for them (GShard, Lepikhin et al. 2020,
  arXiv:2006.16668, section 2.2). The busiest rank sets the pace of the layer, since the combine waits for it:
  ``moe_load_imbalance`` (tokens of the busiest rank over the mean; 1 where a benchmark forces balance) capped by a
  capacity factor, beyond which tokens are dropped (Switch Transformer, Fedus et al. 2021, arXiv:2101.03961,
  section 2.2: capacity = factor x tokens / experts).
- Shared experts and the router are ordinary linears every token runs (DeepSeekMoE, arXiv:2401.06066, section 3.2;
  counted in ``estimate/flops.py``), not routed.
- Dispatch and combine: one all-to-all each way in forward and again in backward, per MoE layer (GShard, section 3.2).
  A plain all-to-all sends a copy per routed expert on another GPU (Megatron-Core's alltoall dispatcher permutes the
  ``k`` copies first). DeepEP's normal kernels (DeepSeek-V3 technical report, arXiv:2412.19437, section 3.2.2) send a
  token once to each destination rank inside a node (``is_token_in_rank``) and once over the network to each
  destination node, forwarding it over NVLink there; its authors' measured rates count exactly those copies, so they
  price them (``communication.deepep``, :func:`deepep_dispatch_s`). With the ``k`` distinct experts of a token drawn
  at random (Megatron-Core's forced balancing draws random logits), a token reaches
  ``g (1 - C(E - E/g, k) / C(E, k))`` of ``g`` equal groups of experts on average (:func:`destinations`); a router
  that keeps a token's experts together states its ranks (``parallel.moe_token_ranks``).
- Placement: Megatron-Core orders the expert layers' ranks expert-tensor-parallel innermost, then expert-parallel
  (``parallel_state.py`` RankGenerator order "tp-ep-dp-pp" with ``expert_tensor_parallel_size``; MoE parallel
  folding, Liu et al. 2025, arXiv:2504.14960, section 3.1): an expert-parallel group is ``etp``-strided, so ``ep``
  GPUs of one node exchange tokens over NVLink whatever the attention's tp.
- Grouped GEMM: the experts of a rank run as one grouped GEMM whose rows are the copies routed to one expert, against
  a weight of the model's width by the expert's intermediate size over ``etp``. Each expert's segment is its own GEMM
  (DeepGEMM README, "Grouped GEMMs (contiguous layout)", deepseek-ai/DeepGEMM @ 0274ad7b: "each expert segment must be
  aligned to the GEMM M block size"; the weight gradient reduces over the expert's own rows only, MegaBlocks, Gale et
  al. 2022, arXiv:2211.15841, section 5), so its arithmetic intensity is that of the per-expert shape: ``r h w / (h w
  + r h + r w)`` FLOPs per byte for ``r`` rows, width ``h`` and expert width ``w`` in 16-bit operands, which for the
  few rows and narrow experts of fine-grained MoE falls near or below the part's ridge point (peak over HBM
  bandwidth; Williams et al. 2009, roofline). Its time is the FLOPs at the GEMM ceiling plus the operands' traffic
  at the HBM's rate, ``expert_traffic`` times the least they need (assumed 1: each operand once, the roofline's least).
- Precision: the routed experts' GEMMs are priced at the 16-bit rate under FP8 training (``estimate/flops.py``: "FP8
  covers the linears only"): FP8 adds a quantisation of every dispatched token copy per expert, and the published
  same-layout pairs gain little from it (Megatron-Bridge performance archive, 25.11 DGX-GB300: DeepSeek-V3 3,848
  tokens/s/GPU in BF16 against 4,357 in MXFP8, +13 % for the whole model; Megatron-MoE-ModelZoo's BF16 Qwen3-235B-A22B
  at TP 2 PP 8 EP 32 on 256 H100, 17.6 s a 2,048-sequence step with all-to-all overlap, against Megatron-Bridge's
  FP8 one at the same layout, 19.1 s (26.04.01) and 20.8 s (25.11)).

Every function takes floats or numpy arrays (``trainsizer/arrays.py``).
"""

from __future__ import annotations

from typing import Any

from trainsizer.arrays import any_nonzero, exp, is_array, maximum, minimum, safe_div, where
from trainsizer.estimate.comm import Fabric
from trainsizer.estimate.model_params import DeepEP

PASSES = 4  # dispatch + combine, forward and backward (GShard, section 3.2)


def all_to_all_passes(recomputed: Any) -> Any:
    """Dispatch and combine all-to-alls per MoE layer and micro-batch: :data:`PASSES`, and the forward's two again in
    its recomputation (``recomputed``: the share of the forward run twice). Full recomputation re-runs the whole
    layer, its token dispatcher included (Megatron-Core ``--recompute-granularity full`` checkpoints each
    TransformerLayer, MoE layer and all; NeMo Automodel wraps each block in ``checkpoint_wrapper``,
    nemo_automodel/components/moe/parallelizer.py apply_ac @ 8d9bfb90e), as :func:`host_syncs` counts its host
    synchronisation again."""
    return PASSES + 2 * recomputed


def load_factor(imbalance: Any, capacity_factor: Any = None) -> Any:
    """Tokens of the busiest expert-parallel rank over the mean: the stated imbalance, capped by the capacity a
    token-dropping router keeps (Switch Transformer, section 2.2); dropless where ``capacity_factor`` is None."""
    if capacity_factor is None:
        return imbalance
    if is_array(imbalance) or is_array(capacity_factor):
        import numpy as np

        return np.minimum(imbalance, capacity_factor)
    return min(imbalance, capacity_factor)


def dispatched_tokens(local_tokens: Any, tp: Any) -> Any:
    """Tokens one rank routes per micro-batch: its ``1 / tp`` sequence shard of the micro-batch's ``local_tokens``.
    Megatron-Core runs an MoE layer under tensor parallelism only with sequence parallelism (``arguments.py``: "When
    using MoE and tensor parallelism, sequence parallelism must be used"), so each tensor-parallel rank permutes and
    dispatches its own shard (``MoEAlltoAllTokenDispatcher``, hidden states ``[S/TP, B, H]``)."""
    return local_tokens / tp


def rows_per_expert(tokens: Any, experts_per_token: Any, ep: Any, experts: Any, load: Any = 1.0,
                    gathered: Any = 1) -> Any:
    """Rows of one local expert's GEMM per micro-batch: the ``k`` copies of the ``tokens`` each of ``ep`` ranks
    dispatches (:func:`dispatched_tokens`), spread over ``E`` experts, ``E / ep`` of them here (GShard, section 2.2),
    on the busiest rank; an expert split ``gathered`` ways (``etp``) runs the tokens of all ``etp`` ranks of its
    group, which the dispatcher all-gathers after the all-to-all (Megatron-Core ``MoEAlltoAllTokenDispatcher``:
    all-to-all over EP, then all-gather over the expert-tensor-parallel group)."""
    return tokens * gathered * experts_per_token * ep / experts * load


def expert_gemm_intensity(rows: Any, width: Any, expert_width: Any) -> Any:
    """FLOPs per byte of one expert's GEMM in 16-bit operands: ``2 r h w`` FLOPs over ``2 (h w + r h + r w)`` bytes
    (its weight, input and output once) for ``r`` rows, model width ``h`` and expert width ``w``; 0 for no rows."""
    return safe_div(rows * width * expert_width, width * expert_width + rows * width + rows * expert_width)


def grouped_gemm_saturation(intensity: Any, ridge: Any, traffic: Any) -> Any:
    """Fraction of the GEMM ceiling a grouped expert GEMM of arithmetic ``intensity`` reaches on a part whose ridge
    point is ``ridge`` (FLOP per byte, :func:`trainsizer.estimate.gemm_rows.ridge_point`): its FLOPs at the ceiling
    plus ``traffic`` times its least operand traffic at the HBM's rate (module docstring), so ``I / (I + traffic x
    ridge)``: rising with rows per expert and with the expert's width, lower on a part with more FLOPs per byte of
    bandwidth; 0 for no rows."""
    return safe_div(intensity, intensity + traffic * ridge)


def expert_peak(peak: Any, dtype: str, sixteen_bit_peak: Any) -> tuple[Any, str]:
    """(peak TFLOPS, dtype) the routed experts' GEMMs run at: the linears' own, except under FP8, where they run at
    the part's 16-bit peak (module docstring, 'Precision'); numbers, or arrays of parts that all state a 16-bit peak
    or all do not."""
    return (sixteen_bit_peak, "bf16") if dtype == "fp8" and any_nonzero(sixteen_bit_peak) else (peak, dtype)


def remote_copies(experts_per_token: Any, ep: Any, members_per_node: Any) -> Any:
    """Copies of one token that leave its node per plain all-to-all: ``k (ep - m) / ep``, one for each routed expert
    on another node."""
    return experts_per_token * (ep - members_per_node) / ep


def destinations(picked: int, items: int, groups: Any) -> Any:
    """Expected groups, of ``groups`` equal ones holding ``items`` between them, that ``picked`` distinct items drawn
    at random fall in: ``g (1 - C(N - N/g, p) / C(N, p))``, the chance that a group holds none of them being
    hypergeometric (a token's ``k`` experts among ``E``: the expert-parallel ranks or nodes it reaches)."""
    miss = 1.0
    for i in range(int(picked)):
        miss = miss * safe_div(maximum(0.0, items - items / groups - i), items - i)
    return groups * (1 - miss)


def deepep_dispatch_s(token_bytes: Any, ranks: Any, nodes: Any, ep: Any, members: Any, fab: Fabric,
                      deepep: DeepEP, architecture: str = "") -> Any:
    """Seconds of one DeepEP (or HybridEP) dispatch or combine of a micro-batch whose tokens carry ``token_bytes``
    each and reach ``ranks`` expert-parallel ranks on ``nodes`` nodes on average (own rank and node included where
    reached), as its authors' microbenchmark counts them (``communication.deepep``, ``hybridep``): NVLink at its
    measured share of the line rate per direction, at most what the kernels' SMs move on the GPU's ``architecture``
    (:meth:`DeepEP.nvlink_cap_gbps`), and where the group spans nodes (``members < ep``) the GPU's NIC share at the
    rate measured for that many nodes (the nearest measured count), the slower of the two setting the time; one
    latency of the widest link (the kernels send to every peer at once, so no per-peer step)."""
    stated = fab.intra_line_rate_gbps
    line = where(stated > 0, stated, fab.intra_for(members))
    nvlink = token_bytes * ranks / (minimum(line * deepep.nvlink_fraction, deepep.nvlink_cap_gbps(architecture)) * 1e9)
    count = ep / members
    fraction = _nearest(count, deepep.rdma_nodes, deepep.rdma_fraction)
    rdma = token_bytes * nodes / (fab.inter_busbw_gbps / fab.gpus_per_node * fraction * 1e9)
    return maximum(nvlink, (members < ep) * rdma) + _link_latency_s(fab, members, ep)


def _link_latency_s(fab: Fabric, members: Any, ep: Any) -> Any:
    """One message's latency on the widest link an expert-parallel group of ``ep`` ranks, ``members`` per node,
    crosses: NVLink's inside a node, the network's where it spans nodes."""
    return fab.intra_latency_s + (members < ep) * (fab.inter_latency_s - fab.intra_latency_s)


def _nearest(value: Any, keys: tuple[int, ...], values: tuple[float, ...]) -> Any:
    """The entry of ``values`` whose key is nearest ``value`` on a log scale (numbers or arrays)."""
    import numpy as np

    distance = np.abs(np.log2(np.maximum(np.asarray(value, dtype=float), 1.0))[..., None] - np.log2(keys))
    picked = np.asarray(values)[np.argmin(distance, axis=-1)]
    return picked if is_array(value) else float(picked)


def all_to_all_intra_gbps(fab: Fabric, members: Any, wire_fraction: float) -> Any:
    """Bus bandwidth of an all-to-all inside a node: the link's all-reduce figure, but at most ``wire_fraction`` of
    its per-direction line rate. Every byte of an all-to-all crosses the wire once (nccl-tests PERFORMANCE.md,
    alltoall: busbw = algbw x (n-1)/n), while an all-reduce over NVLink SHARP is reduced in the switch and reports
    more than the wire carries (nccl-tests#212: 480 GB/s on H100's 450 GB/s links). DeepEP's intranode kernels move
    153 GB/s over H800's ~160 GB/s achievable NVLink (deepseek-ai/DeepEP README, normal kernels table)."""
    stated = fab.intra_line_rate_gbps
    cap = where(stated > 0, stated * wire_fraction, float("inf"))
    return minimum(fab.intra_for(members), cap)


def dispatch_combine_s(token_bytes: Any, experts_per_token: Any, ep: Any, stride: Any, fab: Fabric,
                       wire_fraction: float = 1.0, deepep: DeepEP | None = None, experts: int = 0,
                       token_ranks: int | None = None, architecture: str = "") -> Any:
    """Seconds of one dispatch or combine all-to-all of a micro-batch whose tokens carry ``token_bytes`` each.
    Plain (``deepep`` None): inside one node the ``k`` copies for the other ``ep - 1`` ranks cross NVLink; a group
    that spans nodes sends its off-node copies through the GPU's share of the node's NICs while the on-node ones cross
    NVLink, and the slower of the two sets the time (DeepSpeed-MoE / Tutel's all-to-all model, Rajbhandari et al.
    2022, arXiv:2201.05596, section 5); per-step latency ``ep - 1`` times. DeepEP: :func:`deepep_dispatch_s` over the
    ranks and nodes a token of ``k`` random experts among ``experts`` reaches (:func:`destinations`), or over the
    ``token_ranks`` its router keeps it to, spread at random over the group's nodes."""
    if not is_array(ep) and ep <= 1:
        return 0.0
    members = _members_per_node(ep, stride, fab.gpus_per_node)
    if deepep is not None:
        ranks = token_ranks if token_ranks else destinations(experts_per_token, experts, ep)
        nodes = destinations(token_ranks, ep, ep / members) if token_ranks \
            else destinations(experts_per_token, experts, ep / members)
        return deepep_dispatch_s(token_bytes, ranks, nodes, ep, members, fab, deepep, architecture)
    intra = all_to_all_intra_gbps(fab, members, wire_fraction)
    on_node = token_bytes * experts_per_token * (members - 1) / ep / (intra * 1e9)
    off_node = token_bytes * remote_copies(experts_per_token, ep, members) \
        / (fab.inter_busbw_gbps / fab.gpus_per_node * 1e9)
    return maximum(on_node, off_node) + _link_latency_s(fab, members, ep) * (ep - 1)


def exposed_all_to_all_s(all_to_all: Any, compute: Any, overlapped: Any) -> Any:
    """Seconds of a micro-batch's dispatch and combine all-to-alls that show. Without overlap all of them (the combine
    waits for the experts, the next layer for the combine). With the all-to-alls of one micro-batch scheduled against
    the independent computation of another (``overlapped`` 1: Megatron-Core's combined 1F1B, which pairs one
    micro-batch's forward with another's backward, docs "Combined 1F1B: Expert-Parallel All-to-All Overlap",
    ``--overlap-moe-expert-parallel-comm``; DeepSeek-V3's DualPipe, arXiv:2412.19437 section 3.2.1) only what exceeds
    that computation. ``overlapped`` is 0 or 1 (or arrays of them)."""
    return all_to_all - overlapped * minimum(all_to_all, compute)


def host_syncs(moe_layers: Any, recomputed: Any) -> Any:
    """Times per micro-batch the host waits for the GPU in a stage of ``moe_layers`` MoE layers: once in each MoE
    layer's forward, again in its recomputation (``recomputed``: the share of the forward run twice). A dropless
    layer learns how many rows each local expert received only on the GPU, and the grouped GEMM is sized on the host
    (Transformer Engine ``GroupedLinear`` takes ``m_splits`` as a host list; Megatron-Core's token dispatchers copy
    ``tokens_per_expert`` to the host at their ``cuda_sync_point``); the backward reuses the forward's counts. AMD's
    Primus MoE guide (rocm.docs.amd.com/projects/primus, "MoE training deep-dive", sync-free MoE) names the same
    host synchronisation between the dispatch and the grouped GEMM."""
    return moe_layers * (1 + recomputed)


def sync_exposed_s(syncs: Any, issue_s: Any, busy_per_layer_s: Any) -> Any:
    """Seconds per micro-batch the GPU waits on the host after its MoE layers' synchronisations. A synchronisation
    empties the queue (CUDA semantics: the host blocks until the device is done), so the host then issues the
    layer's kernels (``issue_s``, ``overhead.moe_sync_issue_s``) while the GPU runs each as it arrives. A kernel the
    GPU runs for ``d`` after an issue time ``t`` leaves it idle for ``max(0, t - d)``; with a layer's kernel times
    spread exponentially about their mean (assumed: a few long GEMMs among many short kernels), the idle summed over
    the layer is ``h - g (1 - exp(-h / g))`` for issue time ``h`` and GPU work ``g`` (``busy_per_layer_s``): nearly
    ``h - g`` where the host is much the slower (the launch-bound limit, H. He, "Making deep learning go brrrr", 2022),
    and ``h^2 / 2g``, vanishing, where the GPU is (long kernels let the host regain its lead). All of ``h`` with
    no GPU work."""
    idle = issue_s - busy_per_layer_s * (1 - exp(-safe_div(issue_s, busy_per_layer_s)))
    return syncs * idle


def _members_per_node(ep: Any, stride: Any, gpus_per_node: int) -> Any:
    """Members of an expert-parallel group (``stride`` ranks apart) on one node."""
    return maximum(1, minimum(ep, gpus_per_node // maximum(1, stride)))
