"""Where a training step's time goes, and whether the seed guide's 20 % rule is broken.

``analyze_trace`` reads a Chrome / Kineto trace (``torch.profiler.profile(...).export_chrome_trace`` or
``tensorboard_trace_handler``; ``.json`` or ``.json.gz``) and splits every step (``ProfilerStep#N``) into
compute, optimizer, communication, memory copies, data loading, host wait and idle. ``verdict`` applies the
rule; ``profile_callable`` runs a step function under torch.profiler and analyzes what it wrote.

How the split works (the categories are data: ``profile_rules.yaml``):

- GPU trace (events of Kineto category ``kernel`` / ``gpu_memcpy`` / ``gpu_memset``): the device timeline
  is the union of kernel intervals per category. Each instant of the step goes to the first category active
  in the order compute, optimizer, communication, memcpy, then (device idle) data loading and host wait on
  the CPU side, then idle. So "communication" is the *exposed* part, not overlapped by compute kernels (its
  total is reported beside it), and "data loading" is the part the device waited for.
- CPU-only trace: the same, on the CPU ops of every profiled thread; an event takes the category of its
  outermost enclosing event that has one, so nested ops are never counted twice.

torch is imported inside ``profile_callable`` only; the analysis needs nothing but the standard library.
"""

from __future__ import annotations

import bisect
import gzip
import json
import re
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, TypedDict

from trainsizer.errors import InputError
from trainsizer.probe import resolve_device
from trainsizer.probe.profile.records import (
    CATEGORIES,
    VERDICTS,
    StepBreakdown,
    StepProfile,
    Verdict,
    profile_rules,
)
from trainsizer.probe.profile.verdict import verdict

# the profile's names are importable from here
# (``from trainsizer.probe.profile.analysis import analyze_trace, verdict``)
__all__ = ["CATEGORIES", "VERDICTS", "StepBreakdown", "StepProfile", "Verdict", "analyze_trace", "export_trace",
           "profile_callable", "profile_rules", "verdict"]

# Kineto `cat` of device-timeline events (lower-cased; torch <= 1.9 wrote "Kernel", "Memcpy", "Memset")
DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset")
COMPUTE_LIKE = ("compute", "optimizer")  # device work that hides communication / data loading behind it
# CPU-side categories Kineto writes; "python_function" (with_stack) and "Trace" are containers, not work
CPU_CATS = ("cpu_op", "user_annotation", "cuda_runtime", "cuda_driver", "operator", "runtime", "")
STEP_NAME = re.compile(r"^ProfilerStep#(\d+)$")

Interval = tuple[float, float]  # (start_us, end_us)

# The Trace Event Format (Chrome's "Trace Event Format" document; what torch.profiler / Kineto write): the
# arguments this analysis reads, and one event.
TraceArgs = TypedDict("TraceArgs", {"correlation": int, "Collective name": str}, total=False)


class TraceEvent(TypedDict, total=False):
    """One event: its name, phase (``X`` complete, ``B``/``E`` begin/end), start and duration in microseconds,
    category (Kineto: ``kernel``, ``cpu_op``, ``user_annotation``, ...), process and thread, arguments."""

    name: str
    ph: str
    ts: float
    dur: float
    cat: str
    pid: int | str
    tid: int | str
    args: TraceArgs


class TraceDocument(TypedDict):
    """The JSON Object Format of a trace (the JSON Array Format is the events' list alone)."""

    traceEvents: list[TraceEvent]


@dataclass(frozen=True)
class _Classifier:
    category_patterns: tuple[tuple[str, re.Pattern[str]], ...]
    kind_patterns: tuple[tuple[str, re.Pattern[str]], ...]

    def category(self, name: str) -> str | None:
        for category, pattern in self.category_patterns:
            if pattern.search(name):
                return category
        return None

    def kind(self, name: str, args: TraceArgs | None = None) -> str:
        text = name
        if args and isinstance(args.get("Collective name"), str):  # record_param_comms carries the kind here
            text = f"{name} {args['Collective name']}"
        for kind, pattern in self.kind_patterns:
            if pattern.search(text):
                return kind
        return "other"


def _joined(patterns: Iterable[str]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)


@cache
def _classifier() -> _Classifier:
    rules = profile_rules()
    # a name matching two categories takes the first here: communication names are the most specific
    order = ("communication", "optimizer", "data_loading", "host_wait", "memcpy")
    return _Classifier(
        tuple((c, _joined(rules.patterns[c])) for c in order),
        tuple((k, _joined(p)) for k, p in rules.kinds.items()))


# --- reading traces ------------------------------------------------------------------------------------

def _read_events(trace: str | Path | TraceDocument | list[TraceEvent]) -> tuple[list[TraceEvent], str]:
    if isinstance(trace, dict | list):
        data, source = trace, "trace (in memory)"
    else:
        path = Path(trace)
        if not path.is_file():
            raise InputError("trace", f"no such file: {path}")
        try:
            if path.name.endswith(".gz"):
                with gzip.open(path, "rt", encoding="utf-8") as fh:
                    data = json.load(fh)
            else:
                data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, EOFError) as exc:
            raise InputError("trace", f"{path} is not a Chrome/Kineto trace JSON (.json or .json.gz): "
                                      f"{str(exc).splitlines()[0]}") from None
        source = str(path)
    events = data.get("traceEvents") if isinstance(data, dict) else data  # JSON Object or JSON Array format
    if not isinstance(events, list):
        raise InputError("trace", f"{source}: no 'traceEvents' list; expected a Chrome/Kineto trace")
    return [e for e in events if isinstance(e, dict)], source


def _complete_events(events: list[TraceEvent]) -> list[TraceEvent]:
    """Complete ('X') events with numeric ts/dur; Begin/End ('B'/'E') pairs are joined per thread."""
    out: list[TraceEvent] = []
    open_: dict[tuple[Any, Any], list[TraceEvent]] = {}
    for e in events:
        ph = e.get("ph")
        if ph not in ("X", "B", "E") or not isinstance(e.get("ts"), int | float):
            continue
        if ph == "X":
            if isinstance(e.get("dur"), int | float) and e["dur"] >= 0:
                out.append(e)
        elif ph == "B":
            open_.setdefault((e.get("pid"), e.get("tid")), []).append(e)
        else:
            stack = open_.get((e.get("pid"), e.get("tid")))
            if stack:
                begin = stack.pop()
                out.append({**begin, "ph": "X", "dur": float(e["ts"]) - float(begin["ts"])})
    return out


def _cat(e: TraceEvent) -> str:
    return str(e.get("cat") or "").lower()


# --- interval arithmetic -------------------------------------------------------------------------------

def _merge(intervals: Iterable[Interval]) -> list[Interval]:
    merged: list[Interval] = []
    for start, end in sorted(i for i in intervals if i[1] > i[0]):
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def _length(merged: list[Interval]) -> float:
    return sum(end - start for start, end in merged)


class _Timeline:
    """A merged interval list that answers 'which part of it lies in [start, end)?' quickly."""

    def __init__(self, intervals: Iterable[Interval]):
        self.intervals = _merge(intervals)
        self._ends = [end for _, end in self.intervals]

    def clip(self, start: float, end: float) -> list[Interval]:
        out = []
        for s, e in self.intervals[bisect.bisect_right(self._ends, start):]:
            if s >= end:
                break
            out.append((max(s, start), min(e, end)))
        return out


# --- classification ------------------------------------------------------------------------------------

def _cpu_categories(cpu_events: list[TraceEvent], clf: _Classifier, gpu: bool
                    ) -> tuple[dict[str, list[Interval]], dict[str, list[Interval]], dict[Any, str]]:
    """Per category and per communication kind, the CPU intervals; and the category of each launch's correlation.

    Per thread, events nest by time; an event's category is that of its outermost ancestor with one, else its
    own pattern match, else compute for a plain CPU op (CPU-only traces), else none (a transparent container)."""
    by_category: dict[str, list[Interval]] = {c: [] for c in CATEGORIES}
    by_kind: dict[str, list[Interval]] = {}
    correlation_category: dict[Any, str] = {}
    threads: dict[tuple[Any, Any], list[TraceEvent]] = {}
    for e in cpu_events:
        threads.setdefault((e.get("pid"), e.get("tid")), []).append(e)
    for thread in threads.values():
        thread.sort(key=lambda e: (float(e["ts"]), -float(e["dur"])))
        stack: list[tuple[float, str | None, str | None]] = []  # (end_us, category, kind), outermost first
        for e in thread:
            name = str(e.get("name", ""))
            if STEP_NAME.match(name):
                continue  # step markers delimit steps; they are not work (and may straddle Optimizer.step)
            start, end = float(e["ts"]), float(e["ts"]) + float(e["dur"])
            while stack and stack[-1][0] <= start:
                stack.pop()
            # the outermost enclosing event with a category gives it; one that merely overlaps does not
            category, kind = next(((c, k) for stack_end, c, k in stack if c is not None and stack_end >= end),
                                  (None, None))
            if category is None:
                category = clf.category(name)
                if category == "communication":
                    kind = clf.kind(name, e.get("args"))
                elif category is None and not gpu and _cat(e) in ("cpu_op", "operator", ""):
                    category = "compute"
            stack.append((end, category, kind))
            if category is not None:
                # on a GPU trace the device timeline says what the device did; the host contributes only the
                # time it spent loading data or blocked in a sync
                if not gpu or category in ("data_loading", "host_wait"):
                    by_category[category].append((start, end))
                    if category == "communication" and kind:
                        by_kind.setdefault(kind, []).append((start, end))
                correlation = (e.get("args") or {}).get("correlation")
                if correlation is not None and category == "optimizer":
                    correlation_category[correlation] = category
    return by_category, by_kind, correlation_category


def _device_categories(device_events: list[TraceEvent], clf: _Classifier, correlation_category: dict[Any, str],
                       by_category: dict[str, list[Interval]], by_kind: dict[str, list[Interval]]) -> None:
    for e in device_events:
        name = str(e.get("name", ""))
        start, end = float(e["ts"]), float(e["ts"]) + float(e["dur"])
        category = clf.category(name)
        if category == "communication":
            by_kind.setdefault(clf.kind(name, e.get("args")), []).append((start, end))
        elif _cat(e) != "kernel" or category == "memcpy":  # gpu_memcpy / gpu_memset, or a copy kernel
            category = "memcpy"
        elif correlation_category.get((e.get("args") or {}).get("correlation")) == "optimizer":
            category = "optimizer"  # launched from inside Optimizer.step (Kineto correlation id)
        else:
            category = "compute"  # data-loading / host-wait names mean nothing on the device timeline
        by_category[category].append((start, end))


def _steps(cpu_events: list[TraceEvent], all_events: list[TraceEvent]) -> list[tuple[str, float, float]]:
    marks = [e for e in cpu_events if STEP_NAME.match(str(e.get("name", "")))]
    if marks:
        marks.sort(key=lambda e: float(e["ts"]))
        return [(str(e["name"]), float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in marks if e["dur"] > 0]
    spans = [e for e in all_events if _cat(e) != "trace"] or all_events
    return [("whole trace", min(float(e["ts"]) for e in spans), max(float(e["ts"]) + float(e["dur"]) for e in spans))]


def _breakdown(name: str, start: float, end: float, timelines: dict[str, _Timeline],
               kinds: dict[str, _Timeline], all_activity: _Timeline) -> StepBreakdown:
    clipped = {c: timelines[c].clip(start, end) for c in CATEGORIES if c != "idle"}
    covered: list[Interval] = []
    exclusive_us: dict[str, float] = {}
    for category in CATEGORIES[:-1]:
        union = _merge(covered + clipped[category])
        exclusive_us[category] = _length(union) - _length(covered)
        covered = union
    wall_us = end - start
    exclusive_us["idle"] = max(0.0, wall_us - _length(covered))
    compute_like = _merge(i for c in COMPUTE_LIKE for i in clipped[c])
    compute_like_us = _length(compute_like)
    by_kind: dict[str, float] = {}
    exposed_by_kind: dict[str, float] = {}
    for kind, timeline in sorted(kinds.items()):
        part = timeline.clip(start, end)
        if part:
            by_kind[kind] = _length(part) * 1e-6
            exposed_by_kind[kind] = (_length(_merge(compute_like + part)) - compute_like_us) * 1e-6
    return StepBreakdown(
        name=name, wall_s=wall_us * 1e-6, category_s={c: exclusive_us[c] * 1e-6 for c in CATEGORIES},
        communication_total_s=_length(clipped["communication"]) * 1e-6, communication_by_kind_s=by_kind,
        communication_exposed_by_kind_s=exposed_by_kind,
        data_loading_total_s=_length(clipped["data_loading"]) * 1e-6,
        host_wait_total_s=_length(clipped["host_wait"]) * 1e-6,
        device_busy_s=_length(all_activity.clip(start, end)) * 1e-6)


def _mean(steps: list[StepBreakdown]) -> StepBreakdown:
    n = len(steps)

    def avg(dicts: list[dict[str, float]]) -> dict[str, float]:
        keys = list(dict.fromkeys(k for d in dicts for k in d))
        return {k: sum(d.get(k, 0.0) for d in dicts) / n for k in keys}

    return StepBreakdown(
        name="mean", wall_s=sum(s.wall_s for s in steps) / n, category_s=avg([s.category_s for s in steps]),
        communication_total_s=sum(s.communication_total_s for s in steps) / n,
        communication_by_kind_s=avg([s.communication_by_kind_s for s in steps]),
        communication_exposed_by_kind_s=avg([s.communication_exposed_by_kind_s for s in steps]),
        data_loading_total_s=sum(s.data_loading_total_s for s in steps) / n,
        host_wait_total_s=sum(s.host_wait_total_s for s in steps) / n,
        device_busy_s=sum(s.device_busy_s for s in steps) / n)


def analyze_trace(trace: str | Path | TraceDocument | list[TraceEvent]) -> StepProfile:
    """Step-time breakdown of a Chrome/Kineto trace: a path (.json, .json.gz) or the parsed JSON."""
    events, source = _read_events(trace)
    complete = _complete_events(events)
    if not complete:
        raise InputError("trace", f"{source}: no complete ('X') events with ts and dur; expected a trace "
                                  "written by torch.profiler (export_chrome_trace / tensorboard_trace_handler)")
    clf = _classifier()
    device_events = [e for e in complete if _cat(e) in DEVICE_CATS]
    gpu = bool(device_events)
    cpu_events = [e for e in complete if _cat(e) in CPU_CATS]
    by_category, by_kind, correlation_category = _cpu_categories(cpu_events, clf, gpu)
    if gpu:
        _device_categories(device_events, clf, correlation_category, by_category, by_kind)
    timelines = {c: _Timeline(by_category[c]) for c in CATEGORIES if c != "idle"}
    kinds = {k: _Timeline(v) for k, v in by_kind.items()}
    work = ("compute", "optimizer", "communication", "memcpy")
    activity = _Timeline([i for c in work for i in by_category[c]] if gpu
                         else [i for c in CATEGORIES if c != "idle" for i in by_category[c]])
    windows = _steps([e for e in complete if _cat(e) != "gpu_user_annotation"], complete)
    steps = [_breakdown(name, start, end, timelines, kinds, activity) for name, start, end in windows]
    steps = [s for s in steps if s.wall_s > 0]
    if not steps:
        raise InputError("trace", f"{source}: every step has zero duration")
    notes = []
    if windows[0][0] == "whole trace":
        notes.append("no ProfilerStep#N annotations: the whole trace is taken as one step")
    if gpu and len({e.get("pid") for e in device_events}) > 1:
        notes.append("device events of more than one device: their activity is merged (profile one rank)")
    return StepProfile(source=source, trace_kind="gpu" if gpu else "cpu", steps=steps, mean=_mean(steps),
                       notes=notes)


# --- running a step under torch.profiler ---------------------------------------------------------------

def export_trace(prof: Any, path: Path) -> None:
    """Write the profiler's Chrome trace to ``path`` (gzipped when it ends with .gz)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.name.endswith(".gz"):
        prof.export_chrome_trace(str(path))
        return
    with tempfile.TemporaryDirectory() as tmp:
        plain = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(plain))
        with plain.open("rb") as src, gzip.open(path, "wb") as dst:
            dst.write(src.read())


def profile_callable(step: Callable[[], Any], steps: int = 5, warmup: int = 2, trace_out: str | Path | None = None,
                     device: str = "auto", wait: int = 1) -> tuple[StepProfile, Path]:
    """Run ``step()`` (one training step, its data fetch included) wait + warmup + steps times under
    torch.profiler; the last ``steps`` are recorded as ProfilerStep#N, exported to ``trace_out`` (a temporary
    file when None) and analyzed. CUDA activity is recorded when the device is (or auto-resolves to) cuda."""
    if not 1 <= steps <= 1000:
        raise InputError("--steps", f"{steps}; accepted: 1 to 1000")
    if not 0 <= warmup <= 100:
        raise InputError("--warmup", f"{warmup}; accepted: 0 to 100")
    import torch
    from torch.profiler import ProfilerActivity, schedule

    dev = resolve_device(device)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev == "cuda" else [])
    path = Path(trace_out) if trace_out is not None else \
        Path(tempfile.mkdtemp(prefix="trainsizer-profile-")) / f"trace-{time.strftime('%Y%m%d-%H%M%S')}.json"
    written: list[Path] = []

    def ready(prof: Any) -> None:
        export_trace(prof, path)
        written.append(path)

    # schedule: `wait` untraced steps (lazy init, allocator growth), `warmup` traced but discarded, `steps` kept
    with torch.profiler.profile(activities=activities, on_trace_ready=ready,
                                schedule=schedule(wait=wait, warmup=warmup, active=steps, repeat=1)) as prof:
        for _ in range(wait + warmup + steps):
            step()
            prof.step()
    if not written:
        raise RuntimeError("torch.profiler wrote no trace")  # not reachable with the schedule above
    return analyze_trace(path), path
