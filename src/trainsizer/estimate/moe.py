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
  A plain all-to-all sends a copy per routed expert on another GPU; a hierarchical dispatcher (DeepEP's normal
  kernels, DeepSeek-V3 technical report, arXiv:2412.19437, section 3.2.2) sends a token once over the network to each
  other node one of its experts lives on and forwards it over NVLink there, so the network carries one copy per
  destination node: with experts spread evenly over ``n`` nodes and ``k`` picked at random, ``n (1 - (1 - 1/n)^k)``
  nodes a token on average, ``(n - 1)(1 - (1 - 1/n)^k)`` of them other nodes.
- Placement: Megatron-Core orders the expert layers' ranks expert-tensor-parallel innermost, then expert-parallel
  (``parallel_state.py`` RankGenerator order "tp-ep-dp-pp" with ``expert_tensor_parallel_size``; MoE parallel
  folding, Liu et al. 2025, arXiv:2504.14960, section 3.1): an expert-parallel group is ``etp``-strided, so ``ep``
  GPUs of one node exchange tokens over NVLink whatever the attention's tp.
- Grouped GEMM: the experts of a rank run as one grouped GEMM whose rows are the copies routed to one expert and whose
  width is the expert's intermediate size over ``etp``. Its efficiency saturates as any GEMM's does (Calculon, Isaev et
  al. SC'23) but at the per-expert shape, with its own half-way points (``expert_half_tokens``, ``expert_half_width``,
  fitted): the kernel tiles each expert's rows separately and pads each expert's segment to the tile's M (DeepGEMM
  README, "Grouped GEMMs (contiguous layout)", deepseek-ai/DeepGEMM @ 0274ad7b: "each expert segment must be aligned
  to the GEMM M block size"), and the weight gradient of an expert reduces over its own rows only (DeepGEMM's
  k-grouped ``k_grouped_fp8_gemm_tn_contiguous`` for "MoE weight backward"; MegaBlocks, Gale et al. 2022,
  arXiv:2211.15841, section 5: block-sparse GEMMs below the dense ones' throughput at small expert batches).

Every function takes floats or numpy arrays (``trainsizer/arrays.py``).
"""

from __future__ import annotations

from typing import Any

from trainsizer.arrays import is_array, maximum, minimum, safe_div
from trainsizer.estimate.comm import Fabric

PASSES = 4  # dispatch + combine, forward and backward (GShard, section 3.2)


def load_factor(imbalance: Any, capacity_factor: Any = None) -> Any:
    """Tokens of the busiest expert-parallel rank over the mean: the stated imbalance, capped by the capacity a
    token-dropping router keeps (Switch Transformer, section 2.2); dropless where ``capacity_factor`` is None."""
    if capacity_factor is None:
        return imbalance
    if is_array(imbalance) or is_array(capacity_factor):
        import numpy as np

        return np.minimum(imbalance, capacity_factor)
    return min(imbalance, capacity_factor)


def rows_per_expert(local_tokens: Any, experts_per_token: Any, ep: Any, experts: Any, load: Any = 1.0) -> Any:
    """Rows of one local expert's GEMM per micro-batch: the ``k`` copies of ``local_tokens`` tokens on each of ``ep``
    ranks spread over ``E`` experts, ``E / ep`` of them here (GShard, section 2.2), on the busiest rank."""
    return local_tokens * experts_per_token * ep / experts * load


def grouped_gemm_saturation(rows: Any, width: Any, half_rows: Any, half_width: Any) -> Any:
    """Fraction of the dense GEMM ceiling a grouped expert GEMM reaches with ``rows`` rows per expert and ``width``
    columns per expert: saturating in each, half-way at ``half_rows`` / ``half_width`` (module docstring). Fewer rows
    per expert or a narrower expert (Qwen3-30B-A3B's 768) give a lower efficiency; 0 rows give 0."""
    return safe_div(rows, rows + half_rows) * safe_div(width, width + half_width)


def remote_copies(experts_per_token: Any, ep: Any, members_per_node: Any, hierarchical: Any) -> Any:
    """Copies of one token that leave its node per dispatch: ``k (ep - m) / ep`` for a plain all-to-all (each routed
    expert on another node gets one); with a hierarchical dispatcher one per other node hit, ``(n - 1)(1 - (1 -
    1/n)^k)`` for ``n = ep / m`` nodes (DeepSeek-V3 report, section 3.2.2). ``hierarchical`` is 0 or 1."""
    nodes = ep / members_per_node
    plain = experts_per_token * (ep - members_per_node) / ep
    deduplicated = (nodes - 1) * (1 - (1 - 1 / nodes) ** experts_per_token)
    return plain + hierarchical * (deduplicated - plain)


def all_to_all_intra_gbps(fab: Fabric, members: Any, wire_fraction: float) -> Any:
    """Bus bandwidth of an all-to-all inside a node: the link's all-reduce figure, but at most ``wire_fraction`` of
    its per-direction line rate. Every byte of an all-to-all crosses the wire once (nccl-tests PERFORMANCE.md,
    alltoall: busbw = algbw x (n-1)/n), while an all-reduce over NVLink SHARP is reduced in the switch and reports
    more than the wire carries (nccl-tests#212: 480 GB/s on H100's 450 GB/s links). DeepEP's intranode kernels move
    153 GB/s over H800's ~160 GB/s achievable NVLink (deepseek-ai/DeepEP README, normal kernels table)."""
    link = fab.intra
    cap = link.per_direction_gbps * wire_fraction if link is not None and link.per_direction_gbps else float("inf")
    return minimum(fab.intra_for(members), cap)


def dispatch_combine_s(token_bytes: Any, experts_per_token: Any, ep: Any, stride: Any, fab: Fabric,
                       hierarchical: Any = 0.0, wire_fraction: float = 1.0) -> Any:
    """Seconds of one dispatch or combine all-to-all of a micro-batch whose tokens carry ``token_bytes`` each.
    Inside one node the ``k`` copies for the other ``ep - 1`` ranks cross NVLink; a group that spans nodes sends its
    off-node copies through the GPU's share of the node's NICs while the on-node ones cross NVLink, and the slower of
    the two sets the time (DeepSpeed-MoE / Tutel's all-to-all model, Rajbhandari et al. 2022, arXiv:2201.05596,
    section 5); per-step latency ``ep - 1`` times."""
    if not is_array(ep) and ep <= 1:
        return 0.0
    members = _members_per_node(ep, stride, fab.gpus_per_node)
    intra = all_to_all_intra_gbps(fab, members, wire_fraction)
    on_node = token_bytes * experts_per_token * (members - 1) / ep / (intra * 1e9)
    off_node = token_bytes * remote_copies(experts_per_token, ep, members, hierarchical) \
        / (fab.inter_busbw_gbps / fab.gpus_per_node * 1e9)
    latency = fab.intra_latency_s + (members < ep) * (fab.inter_latency_s - fab.intra_latency_s)
    return maximum(on_node, off_node) + latency * (ep - 1)


def _members_per_node(ep: Any, stride: Any, gpus_per_node: int) -> Any:
    """Members of an expert-parallel group (``stride`` ranks apart) on one node."""
    return maximum(1, minimum(ep, gpus_per_node // maximum(1, stride)))
