"""Safe defaults for the probes that run real work: a probe that measures a GPU refuses to fall back to the CPU
silently (``--cpu`` says so explicitly), and on the CPU a model too big for this machine's memory is refused with
the ``--layers`` that would fit, instead of swapping the machine to a halt or being killed by the OOM killer."""

from __future__ import annotations

import os
from typing import Any

from trainsizer.errors import InputError

DEVICES = ("auto", "cuda", "cpu")
# Share of this machine's physical memory a CPU probe may plan to use: the rest is for the OS, Python, torch's
# own buffers and the allocator's slack, which the estimate (the GPU's max_memory_allocated) does not count.
CPU_MEMORY_FRACTION = 0.5
GIB = 2**30


def cuda_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def pick_device(device: str, cpu: bool, what: str, no_gpu_hint: str = "") -> str:
    """cuda or cpu for a probe that measures a GPU. ``--cpu`` (or its alias ``--device cpu``) runs on the CPU;
    otherwise a machine without a CUDA GPU is refused rather than measured silently on the CPU."""
    if device not in DEVICES:
        raise InputError("--device", f"{device!r} is not accepted; accepted: {', '.join(DEVICES)}")
    if cpu and device == "cuda":
        raise InputError("--cpu", "conflicts with --device cuda; give one of them")
    if cpu or device == "cpu":
        return "cpu"
    if cuda_available():
        return "cuda"
    if device == "cuda":
        raise InputError("--device", "cuda requested but torch sees no CUDA GPU; accepted here: auto, cpu (or --cpu)")
    raise InputError("--device", f"no CUDA GPU here: {what} measures a GPU; pass --cpu to run it on this CPU "
                                 f"(a dry run: host memory and timings, not a GPU's){no_gpu_hint}")


def machine_memory_bytes() -> float | None:
    """Physical memory of this machine (POSIX sysconf), or None where it cannot be read."""
    try:
        pages, page_size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None
    return float(pages * page_size) if pages > 0 and page_size > 0 else None


def cpu_memory_bound_bytes() -> float | None:
    total = machine_memory_bytes()
    return None if total is None else CPU_MEMORY_FRACTION * total


def run_depths(layers: int | None, full: int, extrapolate: bool) -> list[int]:
    """Depths a CPU run builds: the full model, or ``layers`` (and ``2 * layers`` when the memory probe
    extrapolates; the same clamping as ``probe.memory.measure``)."""
    if layers is None or layers >= full:
        return [full]
    if not extrapolate:
        return [layers]
    if 2 * layers > full:
        layers = full // 2 or 1
    return [layers, 2 * layers]


def estimated_cpu_bytes(scenario: Any, depth: int) -> float:
    """The estimator's allocated memory of the scenario at ``depth`` layers, times the processes run here."""
    from trainsizer.estimate.estimator import estimate
    from trainsizer.models.catalog import resolve_model
    from trainsizer.probe.workload.config import scaled_scenario

    full = resolve_model(scenario.model).num_layers
    sized = scaled_scenario(scenario, depth) if depth < full else scenario
    memory = estimate(sized, with_limits=False, with_performance=False).memory
    return float(memory.allocated_bytes) * scenario.parallel.gpus


def check_cpu_size(scenario: Any, layers: int | None, extrapolate: bool, bound_bytes: float | None = None,
                   otherwise: str = "a smaller micro-batch or sequence, or a bigger machine") -> None:
    """Refuse a CPU run whose largest depth the estimator expects above the bound (``CPU_MEMORY_FRACTION`` of
    this machine's memory), suggesting the ``--layers`` that fits (or ``otherwise`` when no depth does)."""
    from trainsizer.models.catalog import resolve_model

    bound = cpu_memory_bound_bytes() if bound_bytes is None else bound_bytes
    if bound is None:
        return
    full = resolve_model(scenario.model).num_layers
    depth = max(run_depths(layers, full, extrapolate))
    need = estimated_cpu_bytes(scenario, depth)
    if need <= bound:
        return
    fits = _largest_fitting_layers(scenario, full, extrapolate, bound)
    where = f"{CPU_MEMORY_FRACTION:.0%} of this machine's {bound / CPU_MEMORY_FRACTION / GIB:,.1f} GiB" \
        if bound_bytes is None else f"the bound of {bound / GIB:,.1f} GiB"
    runs = f" (runs {fits} and {2 * fits} layers and extrapolates)" if extrapolate and fits else ""
    if fits:
        remedy = f"scale it down with --layers {fits}{runs}"
    else:
        least = max(run_depths(1, full, extrapolate))
        least_gib = estimated_cpu_bytes(scenario, least) / GIB
        remedy = f"even {least} layer(s) need about {least_gib:,.1f} GiB (embeddings, output head, logits): {otherwise}"
    raise InputError("--layers", f"the model needs about {need / GIB:,.1f} GiB on the CPU at {depth} of {full} "
                                 f"layers, above {where}; {remedy}")


def _largest_fitting_layers(scenario: Any, full: int, extrapolate: bool, bound: float) -> int | None:
    """The largest power-of-two layer count whose run fits the bound (None when one layer does not)."""
    k = 1
    while 2 * k < full:
        k *= 2
    k = max(1, k // 2) if extrapolate else k
    while k >= 1:
        if estimated_cpu_bytes(scenario, max(run_depths(k, full, extrapolate))) <= bound:
            return k
        k //= 2
    return None
