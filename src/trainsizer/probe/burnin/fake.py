"""Simulated GPUs for tests and CPU-only machines: a temperature ramp, seeded power noise, and injected
throttle episodes, ECC errors and XIDs at given times. Deterministic: the same config and elapsed time
give the same reading, also after a resume.
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from trainsizer.errors import InputError
from trainsizer.probe.burnin.backend import REASON_BITS, Backend, GpuInfo, GpuSample, XidEvent

EVENT_KINDS = ("throttle", "ecc", "ecc-corrected", "xid", "remap-pending")
EVENT_HELP = ("KIND@START[-END][:gpu=N][:reason=NAME], KIND one of throttle, ecc (uncorrected), ecc-corrected, "
              "remap-pending, xidCODE (e.g. xid79@10s:gpu=1, throttle@5s-20s:reason=hw_thermal_slowdown)")


@dataclass
class FakeEvent:
    """Something that happens to a simulated GPU at ``start`` s (until ``end`` s for a throttle episode)."""

    kind: str
    start: float
    end: float | None = None
    gpu: int = 0
    code: int = 0  # XID code
    reason: str = "hw_thermal_slowdown"  # throttle reason

    def active(self, elapsed: float) -> bool:
        return self.start <= elapsed < (self.end if self.end is not None else math.inf)


@dataclass
class FakeConfig:
    """The simulated machine."""

    gpus: int = 2
    seed: int = 0
    name: str = "Fake GPU 80GB"
    temp_idle_c: float = 35.0
    temp_load_c: float = 72.0
    temp_tau_s: float = 120.0
    slowdown_c: float = 90.0
    power_w: float = 650.0
    power_noise_w: float = 12.0
    sm_clock_mhz: float = 1980.0
    mem_clock_mhz: float = 2619.0
    tflops: float = 700.0
    tflops_noise: float = 0.005
    events: list[FakeEvent] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FakeConfig:
        data = dict(data)
        events = [FakeEvent(**e) for e in data.pop("events", [])]
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(events=events, **known)


_EVENT_RE = re.compile(r"^(?P<kind>[a-z-]+?)(?P<code>\d+)?@(?P<start>[^-:]+)(?:-(?P<end>[^:]+))?(?P<opts>(?::[^:]+)*)$")


def parse_fake_event(text: str, parse_time) -> FakeEvent:
    """``xid79@10s:gpu=1`` -> FakeEvent; ``parse_time`` turns ``10s`` into seconds."""
    m = _EVENT_RE.match(text.strip().lower())
    if not m or m["kind"] not in EVENT_KINDS or (m["kind"] == "xid") != bool(m["code"]):
        raise InputError("--fake-event", f"{text!r}: expected {EVENT_HELP}")
    ev = FakeEvent(kind=m["kind"], start=parse_time(m["start"], "--fake-event"),
                   end=parse_time(m["end"], "--fake-event") if m["end"] else None, code=int(m["code"] or 0))
    for opt in filter(None, m["opts"].split(":")):
        key, _, value = opt.partition("=")
        if key == "gpu" and value.isdigit():
            ev.gpu = int(value)
        elif key == "reason" and value in REASON_BITS:
            ev.reason = value
        else:
            raise InputError("--fake-event", f"{text!r}: unknown option {opt!r}; accepted gpu=N, "
                                             f"reason={'|'.join(REASON_BITS)}")
    if ev.kind == "throttle" and ev.end is None:
        raise InputError("--fake-event", f"{text!r}: a throttle episode needs START-END, e.g. throttle@5s-20s")
    if ev.end is not None and ev.end <= ev.start:
        raise InputError("--fake-event", f"{text!r}: END must be after START")
    return ev


class FakeBackend(Backend):
    """Deterministic simulated GPUs (see FakeConfig)."""

    name = "fake"

    def __init__(self, config: FakeConfig | None = None, start_elapsed: float = 0.0):
        self.config = config or FakeConfig()
        for ev in self.config.events:
            if not 0 <= ev.gpu < self.config.gpus:
                raise InputError("--fake-event", f"gpu={ev.gpu} does not exist; accepted 0..{self.config.gpus - 1}")
        self._xid_seen_until = start_elapsed

    def devices(self) -> list[GpuInfo]:
        c = self.config
        return [GpuInfo(index=i, name=c.name, uuid=f"GPU-fake-{c.seed:04d}-{i:04d}", vendor="fake",
                        slowdown_c=c.slowdown_c, slowdown_source="fake backend", pci_bus_id=f"0000:{i + 1:02x}:00.0")
                for i in range(c.gpus)]

    def _rng(self, gpu: int, elapsed: float) -> random.Random:
        return random.Random(f"{self.config.seed}:{gpu}:{round(elapsed * 1000)}")

    def _events(self, gpu: int, kind: str) -> list[FakeEvent]:
        return [e for e in self.config.events if e.gpu == gpu and e.kind == kind]

    def _throttle(self, gpu: int, elapsed: float) -> int:
        mask = 0
        for ev in self._events(gpu, "throttle"):
            if ev.active(elapsed):
                mask |= REASON_BITS[ev.reason]
        return mask

    def sample(self, elapsed: float) -> list[GpuSample]:
        c = self.config
        out = []
        for gpu in range(c.gpus):
            rng = self._rng(gpu, elapsed)
            ramp = 1.0 - math.exp(-max(elapsed, 0.0) / c.temp_tau_s) if c.temp_tau_s > 0 else 1.0
            temp = c.temp_idle_c + (c.temp_load_c - c.temp_idle_c) * ramp + gpu * 1.5 + rng.gauss(0, 0.3)
            mask = self._throttle(gpu, elapsed) | REASON_BITS["sw_power_cap"] * (rng.random() < 0.3)
            slow = mask & (REASON_BITS["hw_slowdown"] | REASON_BITS["hw_thermal_slowdown"]
                           | REASON_BITS["hw_power_brake_slowdown"] | REASON_BITS["sw_thermal_slowdown"])
            if slow:
                temp = max(temp, c.slowdown_c - 1.0 + rng.gauss(0, 0.3))
            unc = sum(1 for e in self._events(gpu, "ecc") if e.start <= elapsed)
            corr = sum(1 for e in self._events(gpu, "ecc-corrected") if e.start <= elapsed) + unc
            pending = int(any(e.start <= elapsed for e in self._events(gpu, "remap-pending")))
            out.append(GpuSample(
                gpu=gpu, temperature_c=round(temp, 1),
                power_w=round(c.power_w * (0.6 if slow else 1.0) + rng.gauss(0, c.power_noise_w), 1),
                sm_clock_mhz=c.sm_clock_mhz * (0.5 if slow else 1.0) - rng.randrange(0, 30),
                mem_clock_mhz=c.mem_clock_mhz, throttle_mask=mask,
                ecc_volatile_corrected=corr, ecc_volatile_uncorrected=unc,
                ecc_aggregate_corrected=corr, ecc_aggregate_uncorrected=unc,
                remapped_corrected=0, remapped_uncorrected=unc, remap_pending=int(pending or unc > 0), remap_failure=0,
                pcie_replays=0, util_gpu=100.0, util_mem=round(55 + rng.random() * 10, 1)))
        return out

    def poll_xids(self, elapsed: float) -> list[XidEvent]:
        out = []
        for ev in self.config.events:
            if ev.kind == "xid" and self._xid_seen_until <= ev.start < elapsed:
                out.append(XidEvent(gpu=ev.gpu, code=ev.code, source="fake", elapsed=ev.start,
                                    message=f"NVRM: Xid (PCI:0000:{ev.gpu + 1:02x}:00): {ev.code}, simulated"))
        self._xid_seen_until = max(self._xid_seen_until, elapsed)
        return out

    def simulated_tflops(self, gpu: int, elapsed: float) -> float | None:
        c = self.config
        rng = self._rng(gpu + 1000, elapsed)
        factor = 0.5 if self._throttle(gpu, elapsed) else 1.0
        return round(c.tflops * factor * (1 + rng.gauss(0, c.tflops_noise)), 2)
