"""The step profile's results and rules: a step split into categories (``StepBreakdown``), the steps of a trace
(``StepProfile``), the 20 % rule's ``Verdict``, and the thresholds and patterns of ``profile_rules.yaml``.

``profile.py`` (reading traces) and ``profile_verdict.py`` (the rule) import these; this module imports neither."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from functools import cache
from typing import Any

from trainsizer.datafiles import packaged_yaml

# Exclusive categories, in the order an instant of the step is given to them (first active wins).
CATEGORIES = ("compute", "optimizer", "communication", "memcpy", "data_loading", "host_wait", "idle")
VERDICTS = ("storage-bound", "network-bound", "host-bound", "compute-bound")


@dataclass(frozen=True, slots=True)
class Threshold:
    """One threshold of ``rules.yaml``: its value (a fraction of the step) and where it comes from."""

    value: float
    source: str
    quote_zh: str = ""
    quote_en: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ProfileRules:
    """``rules.yaml``: the verdict's thresholds, the patterns that sort trace events into categories (and
    communication into kinds), and the advice per verdict."""

    as_of: str
    data_and_sync: Threshold  # the seed guide's 20 % rule
    host_idle: Threshold  # trainsizer's host-bound rule
    memcpy_note: Threshold  # a side note on host<->device copies
    patterns: dict[str, tuple[str, ...]]  # category -> its name patterns
    kinds: dict[str, tuple[str, ...]]  # communication kind -> its name patterns, first match wins
    advice: dict[str, tuple[str, ...]]  # verdict -> what to change


@cache
def profile_rules() -> ProfileRules:
    """``rules.yaml`` of this package, typed (cached)."""
    data = packaged_yaml("trainsizer.probe.profile", "rules.yaml")
    limits = data["thresholds"]
    patterns: dict[str, tuple[str, ...]] = {}
    kinds: dict[str, tuple[str, ...]] = {}
    for category, body in data["categories"].items():
        patterns[category] = tuple(body["patterns"])
        kinds.update((k, tuple(p)) for k, p in (body.get("kinds") or {}).items())  # communication's kinds
    return ProfileRules(
        as_of=str(data["as_of"]), data_and_sync=Threshold(**limits["data_and_sync_max_fraction"]),
        host_idle=Threshold(**limits["host_idle_max_fraction"]),
        memcpy_note=Threshold(**limits["memcpy_note_fraction"]), patterns=patterns, kinds=kinds,
        advice={v: tuple(lines) for v, lines in data["advice"].items()})


# --- results -------------------------------------------------------------------------------------------

@dataclass
class StepBreakdown:
    """One step (or the mean of the steps). ``category_s`` is exclusive and sums to ``wall_s``."""

    name: str
    wall_s: float
    category_s: dict[str, float]
    communication_total_s: float = 0.0  # union of communication, overlapped by compute or not
    communication_by_kind_s: dict[str, float] = field(default_factory=dict)  # total per kind
    communication_exposed_by_kind_s: dict[str, float] = field(default_factory=dict)  # not under compute
    data_loading_total_s: float = 0.0  # host time in the DataLoader, hidden behind device work or not
    host_wait_total_s: float = 0.0  # host time blocked in syncs / .item()
    device_busy_s: float = 0.0  # union of all device (or, CPU-only, all op) activity

    @property
    def communication_exposed_s(self) -> float:
        return self.category_s.get("communication", 0.0)

    def fraction(self, category: str) -> float:
        return self.category_s.get(category, 0.0) / self.wall_s if self.wall_s > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["communication_exposed_s"] = self.communication_exposed_s
        out["category_fraction"] = {c: self.fraction(c) for c in self.category_s}
        return out


@dataclass
class StepProfile:
    source: str
    trace_kind: str  # "gpu" (device kernels in the trace) | "cpu" (CPU ops only)
    steps: list[StepBreakdown]
    mean: StepBreakdown
    notes: list[str] = field(default_factory=list)

    def fraction(self, category: str) -> float:
        return self.mean.fraction(category)

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "trace_kind": self.trace_kind, "steps_count": len(self.steps),
                "mean": self.mean.to_dict(), "steps": [s.to_dict() for s in self.steps], "notes": self.notes}


@dataclass
class Verdict:
    verdict: str  # one of VERDICTS
    reason: str
    advice: list[str]
    threshold_fraction: float
    rule_fraction: float  # data loading (exposed) + communication (exposed): what the seed's rule compares
    data_loading_fraction: float
    communication_fraction: float
    host_idle_fraction: float  # idle + host wait: device idle with no data loading or communication to explain it
    host_idle_threshold_fraction: float
    source: str
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
