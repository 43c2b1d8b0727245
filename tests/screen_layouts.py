"""Planner screen layouts for the screen == estimate tests (tests/ is on sys.path, like web_stubs)."""

from __future__ import annotations

import numpy as np

from trainsizer.plan.fast import CKPT, Layouts


def data_parallel_layouts(zero, tp, gpus) -> Layouts:
    """One layout per (zero, tp, gpus): no pipeline or context parallelism, micro-batch 2, full checkpointing, 8 GPUs a
    node."""
    n = len(zero)

    def arr(*v, dtype=int):
        return np.array(v, dtype=dtype)

    return Layouts(gpus=arr(*gpus), tp=arr(*tp), pp=arr(*[1] * n), cp=arr(*[1] * n), vpp=arr(*[1] * n),
                   zero=arr(*zero), dist_opt=arr(*[False] * n, dtype=bool), sp=arr(*[False] * n, dtype=bool),
                   offload=arr(*[0] * n), mbs=arr(*[2] * n), ckpt=arr(*[CKPT.index("full")] * n),
                   gpus_per_node=arr(*[8] * n))


def one_layout(gpus: int = 1, zero: int = 0, mbs: int = 1, ckpt: str = "none", gpus_per_node: int = 1,
               pp: int = 1, split: bool = False) -> Layouts:
    """A single layout: data parallel (and ``pp`` pipeline stages, ``split`` with the embedding and the loss counted
    as layers), no tensor or context parallelism, no offload."""
    def arr(v, dtype=int):
        return np.array([v], dtype=dtype)

    return Layouts(gpus=arr(gpus), tp=arr(1), pp=arr(pp), cp=arr(1), vpp=arr(1), zero=arr(zero),
                   dist_opt=arr(False, bool), sp=arr(False, bool), offload=arr(0), mbs=arr(mbs),
                   ckpt=arr(CKPT.index(ckpt)), gpus_per_node=arr(gpus_per_node), split=arr(split, bool))


def estimate_and_screen(job: dict, gpu_id: str, layout: Layouts):
    """(scenario, architecture, the estimate's performance, its raw step terms, the planner screen's step time) of
    ``job`` on ``gpu_id``, the screen pricing ``layout`` (the job's own layout) on the job's fabric."""
    from trainsizer.estimate.comm import fabric
    from trainsizer.estimate.step import default_performance_model, estimate_performance, step_context
    from trainsizer.estimate.step_terms import raw_step
    from trainsizer.hardware.catalog import default_catalog
    from trainsizer.models.catalog import resolve_model
    from trainsizer.plan.fast import job_basis, screen_step_time
    from trainsizer.scenario import scenario_from_dict

    cat = default_catalog()
    sc = scenario_from_dict(job)
    arch = resolve_model(sc.model)
    gpu = cat.accelerator(gpu_id)
    perf = estimate_performance(sc, arch, gpu, cat)
    raw = raw_step(step_context(sc, arch, gpu, cat)[0])
    params = default_performance_model()
    gpus, per_node = sc.parallel.gpus, sc.hardware.gpus_per_node
    fab = fabric(cat, gpu, None, None, None, gpus, params, per_node)
    screen = float(screen_step_time(job_basis(sc, arch), layout, sc, gpu, fab, params)[0])
    return sc, arch, perf, raw, screen
