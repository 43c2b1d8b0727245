"""The step profile's results and rules: a step split into categories (``StepBreakdown``), the steps of a trace
(``StepProfile``), the 20 % rule's ``Verdict``, and the thresholds and patterns of ``profile_rules.yaml``.

``profile.py`` (reading traces) and ``profile_verdict.py`` (the rule) import these; this module imports neither."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from trainsizer.datafiles import packaged_yaml

# Exclusive categories, in the order an instant of the step is given to them (first active wins).
CATEGORIES = ("compute", "optimizer", "communication", "memcpy", "data_loading", "host_wait", "idle")
VERDICTS = ("storage-bound", "network-bound", "host-bound", "compute-bound")


def profile_rules() -> dict[str, Any]:
    """The thresholds, patterns and advice of ``profile_rules.yaml`` (cached; do not mutate)."""
    return packaged_yaml("trainsizer.probe.profile", "rules.yaml")


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
