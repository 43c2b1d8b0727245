"""The burn-in verdict (STABLE / WARN / FAIL with every reason), rebuilt from the run database alone.

Rules and figures are data: ``thresholds.yaml`` beside this file, each with its source.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from statistics import fmean
from typing import Any

from trainsizer.datafiles import packaged_yaml
from trainsizer.probe.burnin.backend import REASON_BITS, REASON_LABELS, THROTTLE_REASONS
from trainsizer.probe.burnin.rows import RunInfo, XidRow
from trainsizer.probe.burnin.store import Store

LEVELS = ("STABLE", "WARN", "FAIL")


def thresholds() -> dict[str, Any]:
    return packaged_yaml("trainsizer.probe.burnin", "thresholds.yaml")


@dataclass(frozen=True, slots=True, kw_only=True)
class Rule:
    """One rule of ``thresholds.yaml``: its level, its source and the limits it has (the others None)."""

    level: str
    source: str = ""
    max_new: float | None = None
    max: float | None = None
    max_percent: float | None = None
    min_c: float | None = None
    min_percent: float | None = None
    window_fraction: float | None = None
    warmup_fraction: float | None = None
    warmup_max_s: float | None = None
    reasons: tuple[str, ...] = ()
    codes: tuple[tuple[int, str], ...] = ()  # XID code -> what it means


def rules_by_name() -> dict[str, Rule]:
    """The verdict's rules by name, typed."""
    out = {}
    for name, entry in thresholds()["rules"].items():
        fields_ = {k: v for k, v in entry.items() if k not in ("reasons", "codes")}
        out[name] = Rule(**fields_, reasons=tuple(entry.get("reasons") or ()),
                         codes=tuple((int(k), str(v)) for k, v in (entry.get("codes") or {}).items()))
    return out


def default_slowdown(vendor: str) -> tuple[float | None, str]:
    entry = thresholds()["slowdown_default_c"].get(vendor)
    if not entry:
        return None, ""
    return float(entry["value"]), f"thresholds.yaml default for {vendor} (NVML did not report it)"


@dataclass
class Reason:
    level: str  # WARN | FAIL
    rule: str
    gpu: int | None
    message: str
    source: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class GpuSummary:
    gpu: int
    name: str
    uuid: str
    samples: int = 0
    temp_max_c: float | None = None
    temp_mean_c: float | None = None
    slowdown_c: float | None = None
    slowdown_source: str = ""
    headroom_c: float | None = None
    power_mean_w: float | None = None
    power_max_w: float | None = None
    throttled_percent: float = 0.0  # HW / thermal reasons (thresholds.yaml rules.throttle.reasons)
    throttle_percent_by_reason: dict[str, float] = field(default_factory=dict)
    ecc_corrected_new: int | None = None
    ecc_uncorrected_new: int | None = None
    ecc_uncorrected_before: int | None = None
    remapped_corrected: int | None = None
    remapped_uncorrected: int | None = None
    remap_pending: bool = False
    remap_failure: bool = False
    pcie_replays_new: int | None = None
    xids: list[int] = field(default_factory=list)
    util_gpu_mean: float | None = None
    tflops_first: float | None = None
    tflops_last: float | None = None
    drift_percent: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Verdict:
    status: str
    reasons: list[Reason]
    gpus: list[GpuSummary]
    run: RunInfo
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.status, "reasons": [r.to_dict() for r in self.reasons],
                "gpus": [g.to_dict() for g in self.gpus], "run": self.run, "notes": self.notes}


def _delta(store: Store, run_id: int, gpu: int, column: str) -> int | None:
    first, last = store.first_last(run_id, gpu, column)
    return max(int(last) - int(first), 0) if first is not None else None


def _max_delta(store: Store, run_id: int, gpu: int, *columns: str) -> int | None:
    deltas = [d for d in (_delta(store, run_id, gpu, c) for c in columns) if d is not None]
    return max(deltas) if deltas else None


def _drift(series: list[tuple[float, float]], rule: Rule) -> tuple[float | None, float | None, float | None]:
    """Mean TFLOPS of the first and last ``window_fraction`` of the samples after warm-up, and the change in %."""
    if not series:
        return None, None, None
    warmup = min(float(rule.warmup_max_s or 0.0), float(rule.warmup_fraction or 0.0) * series[-1][0])
    values = [v for t, v in series if t >= warmup]
    w = max(1, round(float(rule.window_fraction or 0.0) * len(values)))
    if len(values) < max(2 * w, 4):
        return None, None, None
    first, last = fmean(values[:w]), fmean(values[-w:])
    return first, last, (last / first - 1.0) * 100.0 if first > 0 else None


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def _summarise(store: Store, run_id: int, gpu: Any, rules: dict[str, Rule]) -> GpuSummary:
    """One GPU's figures, with SQL aggregates so that a 3-day run at 1 s is summarised without loading it."""
    g = gpu.index
    bad = sum(REASON_BITS[r] for r in rules["throttle"].reasons)
    exprs = {"n": "COUNT(*)", "temp_max": "MAX(temperature_c)", "temp_mean": "AVG(temperature_c)",
             "power_mean": "AVG(power_w)", "power_max": "MAX(power_w)", "util": "AVG(util_gpu)",
             "masks": "COUNT(throttle_mask)", "bad": f"SUM((throttle_mask & {bad}) != 0)",
             "remap_failure": "MAX(remap_failure)"}
    exprs.update({f"bit_{bit}": f"SUM((throttle_mask & {bit}) != 0)" for bit in THROTTLE_REASONS})
    a = store.aggregate(run_id, g, exprs)
    s = GpuSummary(gpu=g, name=gpu.name, uuid=gpu.uuid, samples=a["n"], slowdown_c=gpu.slowdown_c,
                   slowdown_source=gpu.slowdown_source, temp_max_c=a["temp_max"],
                   temp_mean_c=_round(a["temp_mean"], 2), power_mean_w=_round(a["power_mean"], 1),
                   power_max_w=a["power_max"], util_gpu_mean=_round(a["util"], 1))
    if s.temp_max_c is not None and gpu.slowdown_c is not None:
        s.headroom_c = round(gpu.slowdown_c - s.temp_max_c, 2)
    if a["masks"]:
        s.throttled_percent = round(100.0 * a["bad"] / a["masks"], 2)
        for bit, (name, _) in THROTTLE_REASONS.items():
            if a[f"bit_{bit}"]:
                s.throttle_percent_by_reason[name] = round(100.0 * a[f"bit_{bit}"] / a["masks"], 2)
    s.ecc_corrected_new = _max_delta(store, run_id, g, "ecc_volatile_corrected", "ecc_aggregate_corrected")
    s.ecc_uncorrected_new = _max_delta(store, run_id, g, "ecc_volatile_uncorrected", "ecc_aggregate_uncorrected")
    before, _ = store.first_last(run_id, g, "ecc_aggregate_uncorrected")
    s.ecc_uncorrected_before = int(before) if before is not None else None
    for key in ("remapped_corrected", "remapped_uncorrected"):
        last = store.first_last(run_id, g, key)[1]
        setattr(s, key, int(last) if last is not None else None)
    s.remap_pending = store.first_last(run_id, g, "remap_pending")[1] == 1
    s.remap_failure = a["remap_failure"] == 1
    s.pcie_replays_new = _delta(store, run_id, g, "pcie_replays")
    first, last, drift = _drift(store.series(run_id, g, "tflops"), rules["throughput_drift"])
    s.tflops_first, s.tflops_last, s.drift_percent = _round(first, 2), _round(last, 2), _round(drift, 2)
    return s


def _judge(s: GpuSummary, rules: dict[str, Rule]) -> list[Reason]:
    out: list[Reason] = []

    def add(rule: str, message: str) -> None:
        out.append(Reason(rules[rule].level, rule, s.gpu, f"GPU {s.gpu}: {message}", rules[rule].source))

    if s.ecc_uncorrected_new and s.ecc_uncorrected_new > rules["ecc_uncorrected_new"].max_new:
        add("ecc_uncorrected_new", f"{s.ecc_uncorrected_new} new uncorrected ECC error(s) during the run")
    if s.ecc_uncorrected_before and s.ecc_uncorrected_before > rules["ecc_uncorrected_history"].max:
        add("ecc_uncorrected_history", f"{s.ecc_uncorrected_before} uncorrected ECC error(s) in the board's "
                                       f"lifetime before this run")
    if s.ecc_corrected_new and s.ecc_corrected_new > rules["ecc_corrected_new"].max_new:
        add("ecc_corrected_new", f"{s.ecc_corrected_new} new corrected ECC error(s) during the run")
    if s.remap_failure:
        add("remap_failure", "row remapping failed")
    if s.remap_pending:
        add("remap_pending", "a row remap is pending (reset the GPU to apply it)")
    critical = dict(rules["xid_critical"].codes)
    for code in sorted(set(s.xids)):
        n = s.xids.count(code)
        if code in critical:
            add("xid_critical", f"XID {code} ({critical[code]}) x{n}")
        else:
            add("xid_other", f"XID {code} x{n}")
    lim = rules["throttle"].max_percent
    if s.throttled_percent > lim:
        by = ", ".join(f"{REASON_LABELS.get(r, r)} {p:g} %" for r, p in s.throttle_percent_by_reason.items()
                       if r in rules["throttle"].reasons)
        add("throttle", f"throttled {s.throttled_percent:g} % of the time (> {lim} %): {by}")
    if s.headroom_c is not None and s.headroom_c < rules["thermal_headroom"].min_c:
        add("thermal_headroom", f"max {s.temp_max_c:g} C is {s.headroom_c:g} C from the slowdown threshold "
                                f"{s.slowdown_c:g} C (< {rules['thermal_headroom'].min_c} C)")
    if s.drift_percent is not None and s.drift_percent < rules["throughput_drift"].min_percent:
        add("throughput_drift", f"throughput drifted {s.drift_percent:+.1f} % ({s.tflops_first:g} -> "
                                f"{s.tflops_last:g} TFLOPS; limit {rules['throughput_drift'].min_percent} %)")
    if s.pcie_replays_new is not None and s.pcie_replays_new > rules["pcie_replays"].max_new:
        add("pcie_replays", f"{s.pcie_replays_new} PCIe replays during the run (> {rules['pcie_replays'].max_new})")
    return out


def build_verdict(store: Store, run_id: int | None = None) -> Verdict:
    """The verdict of the (latest) run in ``store``, from the stored rows only."""
    rules = rules_by_name()
    run = store.run(run_id)
    assert run is not None
    rid = run["id"]
    gpus = store.gpus(rid)
    summaries = [_summarise(store, rid, g, rules) for g in gpus]
    by_gpu = {s.gpu: s for s in summaries}
    reasons: list[Reason] = []
    stray: list[XidRow] = []
    for x in store.xids(rid):
        if x["gpu"] in by_gpu:
            by_gpu[x["gpu"]].xids.append(int(x["code"]))
        else:
            stray.append(x)
    for s in summaries:
        reasons += _judge(s, rules)
    critical = {code for code, _ in rules["xid_critical"].codes}
    for x in stray:
        rule = "xid_critical" if x["code"] in critical else "xid_other"
        reasons.append(Reason(rules[rule].level, rule, None, f"XID {x['code']} on an unmapped GPU: {x['message']}",
                              rules[rule].source))
    last = store.last_sample(rid)
    elapsed = (last[1] + run["interval_s"]) if last else 0.0
    status = run["status"]
    if status == "load-failed":
        reasons.append(Reason(rules["load_failed"].level, "load_failed", None,
                              f"the load failed: {run['load_error'] or 'exit code ' + str(run['load_exit_code'])}",
                              rules["load_failed"].source))
    if status != "completed" and elapsed < run["duration_s"] - 1e-6:
        why = {"running": "stopped without a clean end (crash or kill)", "interrupted": "interrupted",
               "load-ended": "the load command finished early",
               "load-failed": "the load failed"}.get(status, status)
        reasons.append(Reason(rules["run_incomplete"].level, "run_incomplete", None,
                              f"ran {elapsed:.1f} s of {run['duration_s']:.1f} s: {why}",
                              rules["run_incomplete"].source))
    if not any(s.samples for s in summaries):
        reasons.append(Reason("WARN", "run_incomplete", None, "no samples were recorded",
                              rules["run_incomplete"].source))
    level = max((LEVELS.index(r.level) for r in reasons), default=0)
    reasons.sort(key=lambda r: (-LEVELS.index(r.level), r.gpu if r.gpu is not None else -1, r.rule))
    info = RunInfo(id=run["id"], started_at=run["started_at"], duration_s=run["duration_s"],
                   interval_s=run["interval_s"], backend=run["backend"], load=run["load"], status=run["status"],
                   hostname=run["hostname"], load_exit_code=run["load_exit_code"], load_error=run["load_error"],
                   ended_at=run["ended_at"], elapsed_s=round(elapsed, 3), samples=store.count_samples(rid),
                   db=str(store.path), segments=len(store.segments(rid)), config=run["config"])
    return Verdict(LEVELS[level], reasons, summaries, info, store.notes(rid))
