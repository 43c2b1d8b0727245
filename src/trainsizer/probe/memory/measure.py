"""``trainsizer probe memory``: real training steps of a scenario on the local GPU(s), peak memory measured.

Each run records ``torch.cuda.max_memory_allocated`` and ``max_memory_reserved`` (PyTorch CUDA
memory-management docs) after the peaks are reset once the model is built, the device's used memory
as ``nvidia-smi`` shows it (NVML ``nvmlDeviceGetMemoryInfo``, or ``torch.cuda.mem_get_info`` without
nvidia-ml-py), and the time of every step. On a CPU the same steps run and MemTracker counts the live
tensors instead (tests, and a dry run of the probe itself).

A model bigger than the GPU is probed scaled down: the same model with ``k`` and ``2k`` decoder
layers, and every figure extrapolated linearly to the full depth (``m(L) = m(k) + (L - k) * (m(2k) -
m(k)) / k``): model states and saved activations are per-layer sums, the embeddings, output head and
logits are the same at every depth.
"""

from __future__ import annotations

import contextlib
import gc
import time
from dataclasses import dataclass, field
from typing import Any, TypedDict

from trainsizer.estimate.memory_types import GIB
from trainsizer.messages import msg
from trainsizer.scenario import Scenario


class ReadingJSON(TypedDict):
    """A :class:`Reading` as the probe's JSON and case files write it (GiB, rounded)."""

    layers: int
    allocated_gib: float
    reserved_gib: float | None
    device_gib: float | None
    step_times_s: list[float]
    meter: str


class MeasurementJSON(TypedDict):
    """A :class:`Measurement` as the probe's JSON and case files write it: the full-depth figures and each run."""

    allocated_gib: float | None
    reserved_gib: float | None
    device_gib: float | None
    step_time_s: float | None
    meter: str
    world_size: int
    layers_full: int
    extrapolated: bool
    readings: list[ReadingJSON]
    notes: list[str]


@dataclass
class Reading:
    """Peaks of one run at one depth (bytes; device is what nvidia-smi shows) and how they were read."""

    layers: int
    allocated_bytes: float
    reserved_bytes: float | None
    device_bytes: float | None
    step_times_s: list[float]
    meter: str = "cuda"

    @property
    def step_time_s(self) -> float:
        """Median step time without the first step (allocator warm-up, lazy optimizer state); 0 if none."""
        times = sorted(self.step_times_s[1:] or self.step_times_s)
        return times[len(times) // 2] if times else 0.0

    def to_dict(self) -> ReadingJSON:
        return {"layers": self.layers, "allocated_gib": _gib(self.allocated_bytes),
                "reserved_gib": _gib(self.reserved_bytes), "device_gib": _gib(self.device_bytes),
                "step_times_s": [round(t, 5) for t in self.step_times_s], "meter": self.meter}

    @classmethod
    def from_dict(cls, data: ReadingJSON) -> Reading:
        def raw(x: float | None) -> float | None:
            return None if x is None else x * GIB

        return cls(data["layers"], data["allocated_gib"] * GIB, raw(data["reserved_gib"]), raw(data["device_gib"]),
                   list(data["step_times_s"]), data["meter"])


def _gib(x: float | None, digits: int = 4) -> float | None:
    return None if x is None else round(x / GIB, digits)


@dataclass
class Measurement:
    """The scenario's peaks at full depth: one full-depth reading, or two scaled-down ones extrapolated."""

    readings: list[Reading]
    layers_full: int
    world_size: int = 1
    notes: list[str] = field(default_factory=list)

    @property
    def extrapolated(self) -> bool:
        return len(self.readings) > 1

    @property
    def meter(self) -> str:
        return self.readings[0].meter

    def _full_depth(self) -> dict[str, float | None]:
        if self.extrapolated:
            return extrapolate(self.readings[0], self.readings[1], self.layers_full)
        only = self.readings[0]
        return {"allocated": only.allocated_bytes, "reserved": only.reserved_bytes, "device": only.device_bytes,
                "step_time": only.step_time_s}

    @property
    def allocated_gib(self) -> float:
        return (self._full_depth()["allocated"] or 0.0) / GIB

    @property
    def reserved_gib(self) -> float | None:
        value = self._full_depth()["reserved"]
        return None if value is None else value / GIB

    @property
    def device_gib(self) -> float | None:
        value = self._full_depth()["device"]
        return None if value is None else value / GIB

    @property
    def step_time_s(self) -> float:
        return float(self._full_depth()["step_time"] or 0.0)

    def to_dict(self) -> MeasurementJSON:
        def r(x: float | None) -> float | None:
            return None if x is None else round(x, 4)

        return {"allocated_gib": r(self.allocated_gib), "reserved_gib": r(self.reserved_gib),
                "device_gib": r(self.device_gib), "step_time_s": r(self.step_time_s), "meter": self.meter,
                "world_size": self.world_size, "layers_full": self.layers_full, "extrapolated": self.extrapolated,
                "readings": [x.to_dict() for x in self.readings], "notes": self.notes}

    @classmethod
    def from_dict(cls, data: MeasurementJSON) -> Measurement:
        return cls([Reading.from_dict(x) for x in data["readings"]], data["layers_full"], data["world_size"],
                   list(data["notes"]))


class Meter:
    """Peak memory of a run on one device."""

    name = "meter"

    def start(self, model: Any, optimizer: Any) -> None: ...

    def stop(self) -> tuple[float, float | None, float | None]:
        raise NotImplementedError

    def synchronize(self) -> None: ...

    def before_micro_batch(self) -> None: ...

    def context(self) -> contextlib.AbstractContextManager[Any]:
        return contextlib.nullcontext()


class CudaMeter(Meter):
    """torch.cuda peak statistics, and the device's used memory from NVML as nvidia-smi reports it."""

    name = "cuda"

    def __init__(self, device: Any):
        import torch

        self.torch, self.device = torch, torch.device(device)
        self._nvml_handle: Any = None
        self._device_peak = 0.0
        with contextlib.suppress(Exception):  # nvidia-ml-py is optional ([burnin] extra)
            import pynvml

            pynvml.nvmlInit()
            index = self.device.index if self.device.index is not None else torch.cuda.current_device()
            self._nvml_handle = pynvml.nvmlDeviceGetHandleByIndex(index)

    def _device_used(self) -> float:
        if self._nvml_handle is not None:
            import pynvml

            return float(pynvml.nvmlDeviceGetMemoryInfo(self._nvml_handle).used)
        free, total = self.torch.cuda.mem_get_info(self.device)
        return float(total - free)

    def start(self, model: Any, optimizer: Any) -> None:
        self.torch.cuda.synchronize(self.device)
        self.torch.cuda.reset_peak_memory_stats(self.device)
        self._device_peak = self._device_used()

    def synchronize(self) -> None:
        self.torch.cuda.synchronize(self.device)
        self._device_peak = max(self._device_peak, self._device_used())

    def stop(self) -> tuple[float, float | None, float | None]:
        self.synchronize()
        cuda = self.torch.cuda
        return (float(cuda.max_memory_allocated(self.device)), float(cuda.max_memory_reserved(self.device)),
                self._device_peak)


class _NoHook:
    """Stands in for a gradient-hook handle on a frozen parameter."""

    def remove(self) -> None:
        pass


class TrackerMeter(Meter):
    """MemTracker counts the live tensors of the run by kind (parameters, gradients, optimizer states,
    activations, temporaries): real CPU steps, or fake tensors in the simulation. No allocator, so no
    reserved or device figure."""

    name = "memtracker-cpu"

    def __init__(self) -> None:
        from torch.distributed._tools.mem_tracker import MemTracker

        self.tracker = MemTracker()

    def start(self, model: Any, optimizer: Any) -> None:
        for param in model.parameters():
            if not param.requires_grad:  # MemTracker would hook gradients on frozen weights, which fails
                self.tracker._param_to_grad_hook_handles[param] = (_NoHook(), _NoHook())  # type: ignore[assignment]
        self.tracker.track_external(model, None if isinstance(optimizer, dict) else optimizer)

    def context(self) -> contextlib.AbstractContextManager[Any]:
        return self.tracker

    def before_micro_batch(self) -> None:
        self.tracker.reset_mod_stats()  # module stats are per forward/backward pass; the global peak is kept

    def peak_by_kind(self) -> dict[str, float]:
        """Bytes at the peak per MemTracker kind (PARAM, BUFFER, GRAD, OPT, ACT, TEMP, OTH), all devices."""
        by_kind: dict[str, float] = {}
        for kinds in self.tracker.get_tracker_snapshot("peak").values():
            for kind, value in kinds.items():
                name = getattr(kind, "name", str(kind))
                if name != "Total":
                    by_kind[name] = by_kind.get(name, 0.0) + float(value)
        return by_kind

    def stop(self) -> tuple[float, float | None, float | None]:
        return sum(self.peak_by_kind().values()), None, None


def make_meter(device: Any) -> Meter:
    import torch

    return CudaMeter(device) if torch.device(device).type == "cuda" else TrackerMeter()


def run_at_depth(scenario: Scenario, device: Any, layers: int | None, steps: int,
                 wrap: Any = None, multi_process: bool = False, progress: Any = None) -> Reading:
    """Build the workload with ``layers`` decoder layers, run ``steps`` steps, read the peaks; ``progress``
    receives a line per stage."""
    import torch

    from trainsizer.probe.workload.build import build_workload

    say = progress or (lambda text: None)
    say(msg("progress.building_model_layers", layers=layers) if layers else msg("progress.building_model"))
    workload = build_workload(scenario, device, layers, wrap=wrap, multi_process=multi_process)
    meter = make_meter(device)
    meter.start(workload.model, workload.optimizer)
    workload.before_micro_batch = meter.before_micro_batch
    times = []
    with meter.context():
        for i in range(steps):
            say(msg("progress.step", i=i + 1, n=steps, layers=workload.layers_built))
            begin = time.perf_counter()
            workload.run_step()
            meter.synchronize()
            times.append(time.perf_counter() - begin)
    allocated, reserved, device_used = meter.stop()
    reading = Reading(workload.layers_built, allocated, reserved, device_used, times, meter.name)
    del workload, meter
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return reading


def extrapolate(low: Reading, high: Reading, layers_full: int) -> dict[str, float | None]:
    """Linear in depth through two runs (module docstring)."""
    span = high.layers - low.layers

    def line(a: float | None, b: float | None) -> float | None:
        if a is None or b is None:
            return None
        return a + (layers_full - low.layers) * (b - a) / span

    return {"allocated": line(low.allocated_bytes, high.allocated_bytes),
            "reserved": line(low.reserved_bytes, high.reserved_bytes),
            "device": line(low.device_bytes, high.device_bytes),
            "step_time": line(low.step_time_s, high.step_time_s)}


def scaled_depth(scenario: Scenario, capacity_gib: float, headroom: float = 0.8) -> int | None:
    """The largest ``k`` whose ``2k``-layer model the estimator expects to fit in ``headroom`` of the GPU;
    None when the full model is expected to fit."""
    from trainsizer.estimate.estimator import estimate
    from trainsizer.models.catalog import resolve_model
    from trainsizer.probe.workload.config import scaled_scenario

    arch = resolve_model(scenario.model)

    def predicted_gib(layers: int) -> float:
        return estimate(scaled_scenario(scenario, layers), with_limits=False,
                        with_performance=False).memory.device_gib

    if predicted_gib(arch.num_layers) <= headroom * capacity_gib:
        return None
    k = max(1, arch.num_layers // 4)
    while k > 1 and predicted_gib(2 * k) > headroom * capacity_gib:
        k //= 2
    return k


def measure(scenario: Scenario, device: Any = "cuda", layers: int | None = None, steps: int = 4,
            capacity_gib: float | None = None, wrap: Any = None, multi_process: bool = False,
            world_size: int = 1, progress: Any = None) -> Measurement:
    """Peak memory and step time of the scenario at full depth: run directly, or at ``layers`` and
    ``2 * layers`` and extrapolated. ``layers=None`` picks the scaled-down depth when the estimator
    expects the full model not to fit ``capacity_gib``."""
    from trainsizer.models.catalog import resolve_model

    full = resolve_model(scenario.model).num_layers
    if layers is None and capacity_gib is not None:
        layers = scaled_depth(scenario, capacity_gib)
    notes: list[str] = []
    if layers is not None and layers >= full:
        layers = None
    elif layers is not None and 2 * layers > full:
        layers = full // 2 or None  # k and 2k must both fit in the model's depth
    if layers is None:
        return Measurement([run_at_depth(scenario, device, None, steps, wrap, multi_process, progress)], full,
                           world_size, notes)
    low = run_at_depth(scenario, device, layers, steps, wrap, multi_process, progress)
    high = run_at_depth(scenario, device, 2 * layers, steps, wrap, multi_process, progress)
    notes.append(f"scaled down: ran {layers} and {2 * layers} of {full} layers, extrapolated linearly per layer")
    return Measurement([low, high], full, world_size, notes)
