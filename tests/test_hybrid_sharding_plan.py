"""The planner searches hybrid sharding (ZeRO-3 / FSDP states sharded within a node and replicated across nodes,
``parallel.zero_shard_gpus``) for layouts that span nodes: each such layout is a legal twin of a fully sharded one, the
screen prices it as the estimate does, and where its per-layer gathers on the node's links outweigh the gradients'
all-reduce between the replicas the search finds it."""

from __future__ import annotations

import numpy as np
from conftest import REPO
from test_screen_agreement import MEMORY_TOLERANCE, STEP_TOLERANCE

import trainsizer.plan.search as search
from trainsizer.estimate.comm import fabric
from trainsizer.estimate.estimator import estimate
from trainsizer.estimate.step import default_performance_model
from trainsizer.hardware.catalog import default_catalog
from trainsizer.models.catalog import resolve_model
from trainsizer.plan.constraints import Constraints
from trainsizer.plan.fast import job_basis, memory_screen, screen_step_time
from trainsizer.workflows.jobs import load_job

LLAMA_70B = str(REPO / "examples/jobs/llama-3.1-70b-full-finetune.yaml")
QWEN_LORA = str(REPO / "examples/jobs/qwen2.5-7b-lora.yaml")
FIELDS = ("gpus", "tp", "pp", "cp", "vpp", "zero", "offload", "mbs", "ckpt", "ep")


def _enumerated(path: str, gpu: str = "h100-sxm5-80gb", max_gpus: int = 64):
    job = load_job(path)
    gb = job.training.global_batch_size
    job = job.model_copy(update={"training": job.training.model_copy(update={"global_batch_size": gb})})
    arch = resolve_model(job.model)
    acc = default_catalog().accelerator(gpu)
    return job, arch, acc, search.enumerate_layouts(job, arch, acc, Constraints((), max_gpus), 8, gb)


def test_every_hybrid_layout_shards_zero3_within_one_node_and_has_its_fully_sharded_twin() -> None:
    _, _, _, lay = _enumerated(LLAMA_70B)
    hybrid = np.nonzero(lay.zero_shard > 0)[0]
    assert len(hybrid)
    assert (lay.zero[hybrid] == 3).all() and (lay.gpus[hybrid] > lay.gpus_per_node[hybrid]).all()
    assert (lay.zero_shard[hybrid] == lay.gpus_per_node[hybrid]).all()
    assert ((lay.dp * lay.cp)[hybrid] % lay.zero_shard[hybrid] == 0).all()
    full = {tuple(getattr(lay, f)[i].item() for f in FIELDS) for i in np.nonzero(lay.zero_shard == 0)[0]}
    assert all(tuple(getattr(lay, f)[i].item() for f in FIELDS) in full for i in hybrid)
    assert not (lay.zero_shard[lay.gpus <= lay.gpus_per_node] > 0).any()


def test_the_screen_prices_hybrid_layouts_as_the_estimate_does() -> None:
    job, arch, gpu, lay = _enumerated(LLAMA_70B)
    hybrid = np.nonzero(lay.zero_shard > 0)[0]
    sample = lay.take(hybrid[:: max(1, len(hybrid) // 20)])
    pp = default_performance_model()
    fab = fabric(default_catalog(), gpu, gpu.default_intra_node, "ib-ndr-400", None, 8, pp)
    times = screen_step_time(job_basis(job, arch), sample, job, gpu, fab, pp)
    device = memory_screen(job_basis(job, arch), sample, job).on(gpu)[0]
    for i in range(len(sample)):
        sc = search._scenario_for(job, gpu, sample, i, "ib-ndr-400", job.training.global_batch_size)
        assert sc.parallel.zero_shard_gpus == 8 and sc.parallel.zero_group == 8
        exact = estimate(sc, with_limits=False)
        assert abs(times[i] / exact.performance.step_time_s - 1) <= STEP_TOLERANCE, sc.parallel
        assert abs(device[i] / exact.memory.device_bytes - 1) <= MEMORY_TOLERANCE, sc.parallel


def test_hybrid_sharding_is_faster_where_the_gradients_are_small() -> None:
    """A LoRA job's gradients are the adapters' (a fraction of a percent of the weights): all-reducing them between
    nodes costs little, while the gathers of the frozen weights stay on NVLink, so the hybrid twin of a multi-node
    ZeRO-3 layout is faster on a scale-out network (FSDP HYBRID_SHARD, ZeRO++ hpZ)."""
    job, arch, gpu, lay = _enumerated(QWEN_LORA)
    hybrid = np.nonzero(lay.zero_shard > 0)[0]
    twins = lay.take(np.concatenate([hybrid, hybrid]))
    twins.zero_shard[: len(hybrid)] = 0
    pp = default_performance_model()
    fab = fabric(default_catalog(), gpu, gpu.default_intra_node, "roce-400", None, 8, pp)
    times = screen_step_time(job_basis(job, arch), twins, job, gpu, fab, pp)
    assert (times[len(hybrid):] < times[: len(hybrid)]).mean() > 0.5
