"""The planner proposes only layouts frameworks accept, on the node shapes and networks the parts ship with, and
never claims an MFU the validation data does not support; its screen prices steps as the estimator does."""

from pathlib import Path

import numpy as np
import pytest

from trainsizer.api import estimate
from trainsizer.datafiles import user_yaml
from trainsizer.estimate.comm import fabric
from trainsizer.estimate.gemm_rows import overhead_scale, reference_share, with_overhead
from trainsizer.estimate.peak import peak_share
from trainsizer.estimate.step import default_performance_model
from trainsizer.estimate.step_terms import mfu_ceiling
from trainsizer.hardware.catalog import default_catalog
from trainsizer.models.catalog import resolve_model
from trainsizer.plan.fast import job_basis, screen_step_time
from trainsizer.plan.search import (
    Constraints,
    _counts,
    _inter_links,
    _node_shapes,
    _scenario_for,
    enumerate_layouts,
    plan,
)
from trainsizer.scenario import Scenario, scenario_from_dict

REPO = Path(__file__).resolve().parents[1]


def job(preset, precision="bf16-mixed", seq=4096, gbs=256):
    sc = scenario_from_dict({"model": {"preset": preset},
                             "training": {"method": "full", "precision": precision, "micro_batch_size": 1,
                                          "seq_len": seq, "global_batch_size": gbs},
                             "parallel": {"gpus": 1}, "hardware": {"gpu": "h100-sxm5-80gb"}})
    return sc, resolve_model(sc.model)


@pytest.mark.parametrize("preset,seq", [("llama-3.1-70b", 4096), ("llama-3.1-405b", 4096), ("llama-3.1-8b", 32768)])
def test_every_enumerated_layout_is_one_frameworks_accept(preset, seq):
    sc, arch = job(preset, seq=seq)
    gpu = default_catalog().accelerator("h100-sxm5-80gb")
    lay = enumerate_layouts(sc, arch, gpu, Constraints(max_gpus=256), 8, 256)
    assert len(lay)
    tp, pp, cp, vpp, zero, dp = lay.tp, lay.pp, lay.cp, lay.vpp, lay.zero, lay.dp
    gas = 256 // (lay.mbs * dp)
    # stages and interleaved chunks split the layers evenly, or, where they do not divide, the layers with the
    # embedding and the loss counted as one layer each (Megatron-Core's account_for_*_in_pipeline_split)
    even = arch.num_layers % (pp * vpp) == 0
    assert (even | (lay.split & ((arch.num_layers + 2) % (pp * vpp) == 0) & (pp > 1))).all()
    assert not (even & lay.split).any()
    if preset == "llama-3.1-405b":  # 126 layers: pipelines of 4 and 8 stages only with the embedding and loss counted
        assert set(pp[lay.split]) >= {4, 8} and set(pp[even]) <= {1, 2}
    assert ((vpp == 1) | ((pp > 1) & (gas % pp == 0))).all()  # interleaving: micro-batches divisible by pp
    assert (tp <= 8).all() and (arch.num_heads % tp == 0).all()  # tensor parallelism inside a node
    assert ((cp == 1) | (seq % (2 * cp) == 0)).all()  # 2*cp load-balanced chunks
    assert ((zero <= 1) | (pp == 1)).all()  # no ZeRO-2/3 with pipeline parallelism
    rng = np.random.default_rng(1)
    for i in rng.choice(len(lay), size=min(30, len(lay)), replace=False):
        s = _scenario_for(sc, gpu, lay, int(i), "ib-ndr-400", 256)
        Scenario.model_validate(s.model_dump())  # the scenario's own rules hold too


def test_networks_and_node_shapes_follow_the_part():
    cat = default_catalog()
    none = Constraints()
    assert _inter_links(cat.accelerator("ascend-910b-64gb")) == ("roce-200",)  # Ascend ships RoCE, not IB
    assert _inter_links(cat.accelerator("ascend-910c-64gb")) == ("roce-400",)
    assert "ib-ndr-400" in _inter_links(cat.accelerator("h100-sxm5-80gb"))
    assert _inter_links(cat.accelerator("ascend-910b-64gb"), Constraints(inter_node="eth-100")) == ("eth-100",)
    assert _node_shapes(cat.accelerator("gb200-186gb"), none) == (72,)  # one NVL72 scale-up domain
    assert _node_shapes(cat.accelerator("ascend-910c-64gb"), none) == (16,)
    assert _node_shapes(cat.accelerator("h100-sxm5-80gb"), none) == (8,)
    assert _node_shapes(cat.accelerator("rtx-4090-24gb"), none) == (4, 8)
    assert _counts(1024, 72) == [1, 2, 4, 8, 16, 32, 64, 72, 144, 288, 576]
    assert _counts(64, 8) == [1, 2, 4, 8, 16, 32, 64]


@pytest.mark.parametrize("gpu,network", [("a800-sxm4-80gb", "ib-hdr-200"), ("v100-sxm2-32gb", "ib-edr-100"),
                                         ("h100-sxm5-80gb", "ib-ndr-400"), ("b300-sxm-288gb", "ib-xdr-800"),
                                         ("gb200-186gb", "ib-ndr-400"), ("ascend-910b-64gb", "roce-200")])
def test_a_job_naming_no_network_is_priced_on_the_one_the_planner_would_try_first(gpu, network):
    """The estimate and the planner share one default: a NIC at the rate the host's PCIe generation carries (200 Gb/s
    on Gen4), the tray's own on GB200, RoCE on Ascend."""
    cat, params = default_catalog(), default_performance_model()
    accelerator = cat.accelerator(gpu)
    assert fabric(cat, accelerator, None, None, None, 8, params).inter.id == network == _inter_links(accelerator)[0]


def test_gb200_plans_span_whole_nvl72_domains():
    sc, arch = job("llama-3.1-70b")
    result = plan(sc, arch, Constraints(("gb200-186gb",), max_gpus=300, top=50))
    counts = {o.gpus for o in result.options}
    assert counts and all(n <= 64 or n % 72 == 0 for n in counts)
    assert all(o.gpus_per_node in (72,) or o.gpus < 72 for o in result.options)


SMALL_DENSE_JOB = {"model": {"preset": "llama-3.2-1b"}, "training": {"method": "full", "precision": "bf16-mixed",
                   "micro_batch_size": 8, "seq_len": 4096, "global_batch_size": 256, "tokens": 1.0e10}}


@pytest.mark.parametrize("job", ["llama-3.1-70b-full-finetune", "small-dense", "small-dense-bf16-true"])
def test_no_dense_bf16_option_claims_an_mfu_above_the_evidence(job):
    data = SMALL_DENSE_JOB if job.startswith("small-dense") else \
        user_yaml(REPO / "examples" / "jobs" / f"{job}.yaml")
    if job == "small-dense-bf16-true":
        data = {**data, "training": {**data["training"], "precision": "bf16-true"}}
    sc = scenario_from_dict({**data, "parallel": {"gpus": 1}, "hardware": {"gpu": "h100-sxm5-80gb"}})
    result = plan(sc, resolve_model(sc.model), Constraints(max_gpus=256 if job.startswith("small") else 1024,
                                                           top=1000))
    assert result.options
    cat, params = default_catalog(), default_performance_model()
    for opt in result.options:
        gpu = cat.accelerator(opt.gpu)
        # the MFU over the part's sustained peak (its nominal one times its measured matmul share over its family
        # reference's, estimate/peak.py), read as the family's reference part would run it (its loss against the best
        # matmul at the reference's ridge point, estimate/gemm_rows.py): the ceilings are measured and applied so
        scale = overhead_scale(gpu, "bf16", params)
        mfu = with_overhead(opt.mfu / peak_share(gpu, params), reference_share(params, gpu.architecture or "", "bf16")
                            or 0.0, 1.0 / scale)
        ceiling = mfu_ceiling(gpu.architecture or "", sc.training.precision, params)
        assert mfu <= ceiling + 1e-3, opt.hardware_dict()
        # issue 12: no dense bf16 option above 60 % MFU (model FLOPs with causal attention as its useful half, the
        # convention of trainsizer.estimate.flops; the best measured bf16-mixed runs plus the margin stay below it)
        assert mfu <= 0.60 + 1e-3, opt.hardware_dict()


def test_every_bf16_ceiling_is_at_most_60_percent():
    """Issue 12: the ceilings a plan of a dense bf16 job can reach, for every architecture, eager or compiled."""
    c = default_performance_model().mfu_ceiling
    assert c is not None
    rows = [(arch, q, row.mfu) for arch, table in c.table.items() for q, row in table.items()
            if q.startswith("bf16")]
    assert rows and c.fallback.mfu <= 0.60
    assert all(mfu <= 0.60 for _, _, mfu in rows), rows


@pytest.mark.parametrize("preset,gpu_id,precision", [("llama-3.1-8b", "h100-sxm5-80gb", "bf16-mixed"),
                                                     ("mixtral-8x7b", "h100-sxm5-80gb", "fp8-mixed"),
                                                     ("llama-3.1-70b", "a100-sxm4-80gb", "bf16-mixed"),
                                                     ("qwen2.5-0.5b", "h100-sxm5-80gb", "bf16-mixed")])  # launch bound
def test_screen_prices_steps_as_the_estimator_does(preset, gpu_id, precision):
    sc, arch = job(preset, precision, gbs=64)
    cat, params = default_catalog(), default_performance_model()
    gpu = cat.accelerator(gpu_id)
    lay = enumerate_layouts(sc, arch, gpu, Constraints((gpu_id,), max_gpus=64), 8, 64)
    fab = fabric(cat, gpu, gpu.default_intra_node, "ib-ndr-400", None, 8, params)
    screened = screen_step_time(job_basis(sc, arch), lay, sc, gpu, fab, params)
    rng = np.random.default_rng(0)
    for i in rng.choice(len(lay), size=min(30, len(lay)), replace=False):
        ref = estimate(_scenario_for(sc, gpu, lay, int(i), "ib-ndr-400", 64), with_limits=False).performance
        assert screened[i] == pytest.approx(ref.step_time_s, rel=0.25), (preset, int(i))
