"""The routed experts' once-a-step gradient sync and weight gather (estimate/dp_sync.expert_sync_s): with expert
parallelism filling a node each GPU syncs its experts in its own expert-data-parallel group, one rank a node, at its
share of the node's NICs; the dense part keeps the dense pricing."""

import pytest

from trainsizer.estimate.comm import all_gather_s
from trainsizer.estimate.dp_sync import data_parallel_gather_s, data_parallel_sync_s
from trainsizer.estimate.step import step_context
from trainsizer.hardware.catalog import default_catalog
from trainsizer.models.catalog import resolve_model
from trainsizer.scenario import scenario_from_dict


def _ctx(ep: int):
    job = {"model": {"preset": "gpt-oss-120b"},
           "training": {"framework": "nemo", "method": "full", "precision": "bf16-mixed", "micro_batch_size": 4,
                        "seq_len": 4096, "global_batch_size": 1280, "attention": "flash"},
           "parallel": {"gpus": 64, "zero": 0, "distributed_optimizer": True, "ep": ep},
           "hardware": {"gpu": "b200-sxm-180gb", "gpus_per_node": 8, "intra_node": "nvlink5",
                        "inter_node": "ib-ndr-400", "nics_per_node": 8}}
    sc = scenario_from_dict(job)
    cat = default_catalog()
    return step_context(sc, resolve_model(sc.model), cat.accelerator(sc.hardware.gpu), cat)[0]


def test_experts_sync_at_a_gpus_nic_share_where_expert_parallelism_fills_the_node():
    ctx = _ctx(8)
    experts = ctx.state.expert_trainable_params  # one EP rank's experts: 1/8 of gpt-oss-120b's
    per_expert = (2880 * 5760 + 5760) + (2880 * 2880 + 2880)  # gate_up and down projections with their biases
    assert experts == pytest.approx(36 * 128 * per_expert / 8, rel=0.02)
    dense = ctx.trainable_local - experts
    w_b, grad_b = ctx.weight_and_grad_bytes
    fab = ctx.fabric
    # eight ranks one a node (64 GPUs / EP 8), each at 1/8 of the node's NICs; the dense part over all 64 at the
    # node's full NIC rate, as dense data parallelism is priced
    own = all_gather_s(experts * grad_b, 8, fab, stride=8, nic_share=True)
    assert own == pytest.approx(all_gather_s(experts * grad_b, 8, fab, stride=8, nic_share=False) * 8, rel=0.05)
    assert data_parallel_sync_s(ctx) == pytest.approx(
        all_gather_s(dense * grad_b, 64, fab, stride=1, nic_share=False) + own, rel=1e-9)
    assert data_parallel_gather_s(ctx) == pytest.approx(
        all_gather_s(dense * w_b, 64, fab, stride=1, nic_share=False)
        + all_gather_s(experts * w_b, 8, fab, stride=8, nic_share=True), rel=1e-9)


def test_without_expert_parallelism_the_experts_sync_with_the_dense_group():
    ctx = _ctx(1)
    _, grad_b = ctx.weight_and_grad_bytes
    assert data_parallel_sync_s(ctx) == pytest.approx(
        all_gather_s(ctx.trainable_local * grad_b, 64, ctx.fabric, stride=1, nic_share=False), rel=1e-3)
