"""What a telemetry backend gives the burn-in loop: GPU descriptions, one sample per GPU, XID events.

Throttle (clock-event) reason bits are NVML's ``nvmlClocksEventReason*`` / older ``nvmlClocksThrottleReason*``
constants (the same values under both names; NVML API reference, "Clock Event Reasons").
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from typing import Any

# bit -> (name, description); nvml.h / pynvml nvmlClocksEventReason* (alias nvmlClocksThrottleReason*)
THROTTLE_REASONS: dict[int, tuple[str, str]] = {
    0x0000000000000001: ("gpu_idle", "idle"),
    0x0000000000000002: ("applications_clocks_setting", "applications clocks"),
    0x0000000000000004: ("sw_power_cap", "SW power cap"),
    0x0000000000000008: ("hw_slowdown", "HW slowdown"),
    0x0000000000000010: ("sync_boost", "sync boost"),
    0x0000000000000020: ("sw_thermal_slowdown", "SW thermal slowdown"),
    0x0000000000000040: ("hw_thermal_slowdown", "HW thermal slowdown"),
    0x0000000000000080: ("hw_power_brake_slowdown", "HW power brake"),
    0x0000000000000100: ("display_clock_setting", "display clocks"),
}
REASON_BITS: dict[str, int] = {name: bit for bit, (name, _) in THROTTLE_REASONS.items()}
REASON_LABELS: dict[str, str] = {name: label for _, (name, label) in THROTTLE_REASONS.items()}


def decode_reasons(mask: int | None) -> list[str]:
    """Names of the reason bits set in ``mask`` (unknown bits as ``bit_0x...``)."""
    if not mask:
        return []
    names = [name for bit, (name, _) in THROTTLE_REASONS.items() if mask & bit]
    unknown = mask & ~sum(THROTTLE_REASONS)
    if unknown:
        names += [f"bit_{1 << i:#x}" for i in range(64) if unknown & (1 << i)]
    return names


@dataclass
class GpuInfo:
    """One GPU as the backend sees it; ``slowdown_c`` is the temperature where the GPU starts slowing down."""

    index: int
    name: str
    uuid: str
    vendor: str
    slowdown_c: float | None = None
    slowdown_source: str = ""
    pci_bus_id: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class GpuSample:
    """One reading of one GPU. Counters are absolute (as NVML reports them); None = not supported."""

    gpu: int
    temperature_c: float | None = None
    power_w: float | None = None
    sm_clock_mhz: float | None = None
    mem_clock_mhz: float | None = None
    throttle_mask: int | None = None
    ecc_volatile_corrected: int | None = None
    ecc_volatile_uncorrected: int | None = None
    ecc_aggregate_corrected: int | None = None
    ecc_aggregate_uncorrected: int | None = None
    remapped_corrected: int | None = None
    remapped_uncorrected: int | None = None
    remap_pending: int | None = None
    remap_failure: int | None = None
    pcie_replays: int | None = None
    util_gpu: float | None = None
    util_mem: float | None = None
    tflops: float | None = None  # filled by the load, not the backend


SAMPLE_FIELDS: tuple[str, ...] = tuple(f for f in GpuSample.__dataclass_fields__ if f != "gpu")


@dataclass
class XidEvent:
    """An XID (driver-reported GPU error) seen during the run."""

    gpu: int | None
    code: int
    source: str  # "nvml" | "kmsg" | "dmesg" | "fake"
    message: str = ""
    elapsed: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


class Backend(ABC):
    """A source of GPU telemetry."""

    name: str = "backend"

    @abstractmethod
    def devices(self) -> list[GpuInfo]:
        """The GPUs, in index order."""

    @abstractmethod
    def sample(self, elapsed: float) -> list[GpuSample]:
        """One reading per GPU; ``elapsed`` is the run's elapsed load time in seconds."""

    def poll_xids(self, elapsed: float) -> list[XidEvent]:
        """XID events since the previous call (never blocks)."""
        return []

    def simulated_tflops(self, gpu: int, elapsed: float) -> float | None:
        """Throughput a simulated GPU would deliver (fake backends only)."""
        return None

    @property
    def notes(self) -> list[str]:
        """What this backend could not read here (shown with the verdict)."""
        return []

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release the library / event sets."""
