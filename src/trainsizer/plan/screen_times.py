"""The step-time screen of every GPU type's candidate layouts: per node shape, the layouts that fit the part and
the networks each is priced over (:func:`node_shape_screen`); then one pass of the estimate's terms
(``fast.screen_step_time``) over every node shape and network of all the GPU types alike in what those terms branch
on (``plan.screen_parts.screen_key``), each layout on its own part, so a layout's step time is the one a pass of
its GPU type alone gives, to the bit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from trainsizer.estimate.comm import Fabric, fabric, roce_derate
from trainsizer.estimate.model_params import MemoryModel, PerformanceModel
from trainsizer.hardware.catalog import Accelerator, Catalog
from trainsizer.plan.constraints import Constraints
from trainsizer.plan.fast import ScreenedMemory, screen_step_time
from trainsizer.plan.layouts import Layouts, concatenated
from trainsizer.plan.screen_parts import PartsPerLayout, screen_key
from trainsizer.scenario import Scenario


@dataclass(frozen=True)
class NodeShapeScreen:
    """One node shape's layouts on one GPU type before their step time: ``every``, the indices (in ``lay``) of the
    layouts screened, network after network (``subs``: those of each network of ``networks``, over ``fabrics``)."""

    per_node: int
    lay: Layouts
    device: np.ndarray
    host: np.ndarray
    networks: tuple[str, ...]
    subs: list[np.ndarray]
    every: np.ndarray
    fabrics: list[Fabric]
    derate: np.ndarray


def node_shape_screen(gpu: Accelerator, per_node: int, lay: Layouts, memory: ScreenedMemory, networks: tuple[str, ...],
                      cat: Catalog, constraints: Constraints, pp_: PerformanceModel,
                      host_limit: float) -> NodeShapeScreen | None:
    """The layouts of one node shape that fit ``gpu`` (past the first of ``networks``, those that span nodes) over
    each network; None where none fits."""
    device, host = memory.on(gpu)
    held = (host <= host_limit) if constraints.host is None else constraints.host.holds(
        gpu.id, np.minimum(lay.gpus, per_node), host)
    fits = (device <= gpu.memory_gib * 2**30) & held
    intra = constraints.intra_node or gpu.default_intra_node
    subs = [np.nonzero(fits if k == 0 else fits & (lay.gpus > per_node))[0] for k in range(len(networks))]
    every = np.concatenate(subs)
    if not len(every):
        return None
    which = np.repeat(np.arange(len(networks)), [len(sub) for sub in subs])
    large = lay.gpus[every] > pp_.communication.roce_at_scale.gpus_threshold  # the reference's RoCE derating
    derate = np.where(large, np.array([roce_derate(inter, 1 << 30, pp_) for inter in networks])[which], 1.0)
    return NodeShapeScreen(per_node, lay, device, host, networks, subs, every,
                           [fabric(cat, gpu, intra, inter, None, per_node, pp_) for inter in networks], derate)


ShapeTimes = list[list[np.ndarray]]  # per node shape, per network: the step time of each layout screened


def screen_times(screens: list[tuple[Accelerator, list[NodeShapeScreen]]], pp_: PerformanceModel, mp: MemoryModel,
                 step: tuple[Scenario, Any]) -> list[ShapeTimes]:
    """The screened step times of each GPU type's node shapes (each GPU type with at least one), the GPU types
    alike (``screen_key``) in one pass; ``step``: the job and basis the step time is screened at."""
    groups: dict[tuple[Any, ...], list[int]] = {}
    for k, (gpu, _) in enumerate(screens):
        groups.setdefault(screen_key(gpu, step[0].training), []).append(k)
    out: list[ShapeTimes] = [[] for _ in screens]
    for members in groups.values():
        for k, times in zip(members, _pass([screens[k] for k in members], pp_, mp, step), strict=True):
            out[k] = times
    return out


def _pass(screens: list[tuple[Accelerator, list[NodeShapeScreen]]], pp_: PerformanceModel, mp: MemoryModel,
          step: tuple[Scenario, Any]) -> list[ShapeTimes]:
    """One pass of the estimate's terms over every node shape and network of ``screens``' GPU types, one after
    another."""
    shapes = [(g, shape) for g, (_, gpu_shapes) in enumerate(screens) for shape in gpu_shapes]
    fabrics = [f for _, shape in shapes for f in shape.fabrics]
    first = np.cumsum([0, *(len(shape.networks) for _, shape in shapes)])
    which = np.concatenate([np.repeat(np.arange(len(shape.networks)) + first[k], [len(sub) for sub in shape.subs])
                            for k, (_, shape) in enumerate(shapes)])
    lay = concatenated([shape.lay.take(shape.every) for _, shape in shapes])
    gpu: Accelerator | PartsPerLayout = screens[0][0]
    if len(screens) > 1:
        gpu = PartsPerLayout([g for g, _ in screens], np.repeat([g for g, _ in shapes],
                                                                [len(shape.every) for _, shape in shapes]))
    times = screen_step_time(step[1], lay, step[0], gpu, fabrics[0].per_layout(
        fabrics, which, np.concatenate([shape.derate for _, shape in shapes])), pp_, mp)
    lengths = [len(sub) for _, shape in shapes for sub in shape.subs]
    parts = iter(np.split(times, np.cumsum(lengths)[:-1]))
    return [[[next(parts) for _ in shape.subs] for shape in gpu_shapes] for _, gpu_shapes in screens]
