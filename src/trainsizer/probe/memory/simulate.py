"""Per-GPU memory without a GPU: the real model code run on fake tensors.

The workload of the memory probe (``probe/workload/build.py``) runs under PyTorch's ``FakeTensorMode``
(tensors with shapes, dtypes and devices but no storage) while
``torch.distributed._tools.mem_tracker.MemTracker`` attributes every live tensor to parameters,
buffers, gradients, activations, temporaries or optimizer states, per module (PyTorch docs,
"torch.distributed._tools.mem_tracker"). Its peak is what ``torch.cuda.max_memory_allocated`` would
show for the same code, less the CUDA caching allocator's block rounding and the kernels' own
workspaces; the CPU kernels' attention and autocast paths stand in for the GPU's, so it is a
cross-check of the analytic estimator, not a measurement.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypedDict

from trainsizer.estimate.memory_types import GIB
from trainsizer.messages import Message, msg
from trainsizer.scenario import Scenario

# MemTracker's reference types -> the estimator's component groups (FORMAT.md components_gib)
GROUP_OF = {"PARAM": "weights", "BUFFER": "weights", "GRAD": "gradients", "OPT": "optimizer", "ACT": "activations",
            "TEMP": "activations", "OTH": "other"}


class SimulationJSON(TypedDict):
    """A :class:`Simulation` as ``probe memory --simulate --json`` writes it (GiB, rounded)."""

    allocated_gib: float
    components_gib: dict[str, float]  # weights, gradients, optimizer, activations, other
    by_kind_gib: dict[str, float]  # MemTracker kinds at the peak
    modules_peak_gib: dict[str, float]
    layers_simulated: int
    layers_full: int
    trainable_params: int
    total_params: int
    notes: list[str]


class PredictedJSON(TypedDict):
    """The estimate of the simulated scenario: its allocated peak, the components and the phase of the peak."""

    allocated_gib: float
    components_gib: dict[str, float]
    peak_phase: str


class SimulationVsEstimate(TypedDict):
    """``probe memory --simulate``: the simulation, the estimate of the same scenario and the estimate's error."""

    simulation: SimulationJSON
    predicted: PredictedJSON
    error_of_estimate: float


@dataclass
class Simulation:
    scenario: Scenario
    layers: int
    layers_full: int
    peak_bytes_by_kind: dict[str, float]  # MemTracker kinds at the peak
    modules_peak_bytes: dict[str, float]  # the largest modules' own peaks (top level and decoder layers)
    trainable_params: int
    total_params: int
    notes: list[str] = field(default_factory=list)

    @property
    def peak_bytes(self) -> float:
        return sum(self.peak_bytes_by_kind.values())

    @property
    def peak_gib(self) -> float:
        return self.peak_bytes / GIB

    def groups_gib(self) -> dict[str, float]:
        out = dict.fromkeys(("weights", "gradients", "optimizer", "activations", "other"), 0.0)
        for kind, value in self.peak_bytes_by_kind.items():
            out[GROUP_OF.get(kind, "other")] += value / GIB
        return out

    def to_dict(self) -> SimulationJSON:
        return {"allocated_gib": round(self.peak_gib, 4), "components_gib": {k: round(v, 4) for k, v in
                                                                            self.groups_gib().items()},
                "by_kind_gib": {k: round(v / GIB, 4) for k, v in self.peak_bytes_by_kind.items()},
                "modules_peak_gib": {k: round(v / GIB, 4) for k, v in self.modules_peak_bytes.items()},
                "layers_simulated": self.layers, "layers_full": self.layers_full,
                "trainable_params": self.trainable_params, "total_params": self.total_params, "notes": self.notes}


def simulate(scenario: Scenario, layers: int | None = None, steps: int = 2,
             progress: Callable[[Message], None] | None = None) -> Simulation:
    """Run ``steps`` training steps of the scenario on fake tensors and return the tracked peak.

    Two steps are the default: optimizer states appear at the first step, so the second one holds
    them through forward and backward, as every later step does. ``progress`` receives a line per stage."""
    say = progress or (lambda text: None)
    from torch._subclasses.fake_tensor import FakeTensorMode

    from trainsizer.probe.memory.measure import TrackerMeter
    from trainsizer.probe.workload.build import build_workload

    if scenario.parallel.gpus > 1:
        from trainsizer.errors import InputError

        raise InputError("parallel.gpus", f"{scenario.parallel.gpus}: the simulation runs one process; "
                         "accepted: 1 (shard by hand with --layers, or run probe memory under torchrun on GPUs)")
    fake_mode = FakeTensorMode(allow_non_fake_inputs=True)
    say(msg("progress.building_fake_layers", layers=layers) if layers else msg("progress.building_fake"))
    workload = build_workload(scenario, "cpu", layers, fake_mode=fake_mode)
    meter = TrackerMeter()
    with fake_mode:
        meter.start(workload.model, workload.optimizer)
        workload.before_micro_batch = meter.before_micro_batch
        with meter.context():
            for i in range(steps):
                say(msg("progress.simulated_step", i=i + 1, n=steps, layers=workload.layers_built))
                workload.run_step()
        by_kind = meter.peak_by_kind()
        modules = {stats.mod_fqn: float(max(stats.local_peak.values()))
                   for stats in meter.tracker.memory_tracking.values()
                   if stats.local_peak and stats.mod_fqn.count(".") <= 3}
    notes = list(workload.notes)
    notes.append("simulated on fake CPU tensors (FakeTensorMode + MemTracker): no allocator rounding, no CUDA "
                 "workspaces; compare with memory.allocated_gib")
    return Simulation(scenario, workload.layers_built, workload.layers_full, by_kind,
                      dict(sorted(modules.items(), key=lambda kv: -kv[1])[:12]), workload.trainable_params,
                      workload.total_params, notes)
