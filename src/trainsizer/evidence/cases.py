"""Measured cases: loading case files, the metrics they state, and per-case errors with their summary."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from trainsizer.datafiles import user_yaml
from trainsizer.errors import InputError
from trainsizer.evidence.validate_json import CaseResultJSON, SummaryJSON
from trainsizer.input_checks import Number, parse_model

if TYPE_CHECKING:
    from trainsizer.estimate.model_params import MemoryModel, PerformanceModel
    from trainsizer.frameworks import FrameworkUse

METRICS_MEMORY = ("allocated", "reserved", "device")
METRICS_SPEED = ("tokens_per_s", "tokens_per_s_per_gpu", "step_time_s", "tflops_per_gpu", "mfu")


class Measured(BaseModel):
    """A case's ``measured`` block (validation/FORMAT.md): a memory figure with its metric, or a speed
    figure; each a finite number above 0, never true/false."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
    memory_gib: Number | None = Field(None, gt=0, le=100_000)
    memory_metric: Literal["allocated", "reserved", "device"] | None = None  # absent: allocated
    tokens_per_s: Number | None = Field(None, gt=0, le=1e12)
    tokens_per_s_per_gpu: Number | None = Field(None, gt=0, le=1e10)
    step_time_s: Number | None = Field(None, gt=0, le=1e7)
    tflops_per_gpu: Number | None = Field(None, gt=0, le=1e6)
    mfu: Number | None = Field(None, gt=0, le=1)

    @model_validator(mode="after")
    def _one_figure(self) -> Measured:
        if self.memory_gib is None and not any(getattr(self, k) is not None for k in METRICS_SPEED):
            raise ValueError(f"needs memory_gib or one of {', '.join(METRICS_SPEED)}")
        return self

    @property
    def is_memory(self) -> bool:
        return self.memory_gib is not None

    @property
    def memory_kind(self) -> str:
        """The memory figure's metric (FORMAT.md: allocated when the case names none)."""
        return self.memory_metric or "allocated"

    def speed_figure(self) -> tuple[str, float] | None:
        """The first speed figure the case states, in METRICS_SPEED order: (metric, value)."""
        for name in METRICS_SPEED:
            value = getattr(self, name)
            if value is not None:
                return name, float(value)
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    """One measured case (validation/FORMAT.md, 'Case file'), read once where its file is loaded. ``scenario`` is
    the scenario as the case file writes it: each prediction reads it with ``scenario_from_dict``, as a user's
    scenario file is read, so a case that cannot be expressed fails where it is predicted and is counted there.
    ``stated``: the dotted keys its source states that were added (``stated_settings.yaml``); ``framework``: in the
    user's view (``user_view``), the framework profile that filled its internals."""

    id: str
    scenario: dict[str, Any]
    measured: Measured
    source: str = ""
    as_of: str = ""
    notes: str = ""
    not_expressible: tuple[str, ...] = ()
    stated: tuple[str, ...] = ()
    framework: FrameworkUse | None = None

    @property
    def is_memory(self) -> bool:
        return self.measured.is_memory


@dataclass(frozen=True, slots=True)
class FitExclusions:
    """Why a case stays out of the parameters' fits (it still counts in every accuracy figure): the data files'
    ``fit.exclude`` by case id, and ``fit.exclude_moe`` for every mixture-of-experts speed run, so a new MoE case is
    left out without a line of its own."""

    by_id: dict[str, str]
    moe_speed: str

    def reason(self, case_id: str, moe_speed_run: bool) -> str | None:
        """The reason ``case_id`` is left out, or None where the fits use it."""
        return self.by_id.get(case_id) or (self.moe_speed if moe_speed_run else "") or None


def fit_exclusions(memory_params: MemoryModel, perf_params: PerformanceModel) -> FitExclusions:
    """The exclusions both data files state (the one read by ``build_case_terms``, ``run_case`` and every tool
    that fits)."""
    return FitExclusions({**memory_params.fit.exclude, **perf_params.fit.exclude}, perf_params.fit.exclude_moe)


def case_from_document(doc: dict[str, Any], path: str | Path, index: int) -> Case:
    """Entry ``index`` of the case file ``path`` as a :class:`Case` (its ``measured`` block checked)."""
    if not isinstance(doc, dict) or "scenario" not in doc or "measured" not in doc:
        raise InputError(f"cases[{index}]", "each case needs id, scenario and measured")
    measured = parse_model(Measured, doc["measured"], f"{path}: cases[{index}].measured")
    blocked = doc.get("not_expressible") or ()
    return Case(id=str(doc.get("id", "?")), scenario=doc["scenario"], measured=measured,
                source=str(doc.get("source") or ""), as_of=str(doc.get("as_of") or ""),
                notes=str(doc.get("notes") or ""),
                not_expressible=tuple(str(b) for b in ([blocked] if isinstance(blocked, str) else blocked)))


@dataclass(frozen=True)
class CaseResult:
    id: str
    metric: str
    predicted: float | None
    measured: float
    excluded_from_fit: str | None = None
    skipped: str | None = None  # why no prediction was made

    @property
    def error(self) -> float | None:
        if self.predicted is None:
            return None
        return (self.predicted - self.measured) / self.measured

    def to_dict(self) -> CaseResultJSON:
        return {"id": self.id, "metric": self.metric, "predicted": self.predicted, "measured": self.measured,
                "error": None if self.error is None else round(self.error, 4),
                "excluded_from_fit": self.excluded_from_fit, "skipped": self.skipped}


@dataclass(frozen=True)
class Summary:
    count: int
    median_abs_error: float | None
    p90_abs_error: float | None
    max_abs_error: float | None
    within_15pct: int

    def to_dict(self) -> SummaryJSON:
        def r(x: float | None) -> float | None:
            return None if x is None else round(x, 4)

        return {"count": self.count, "median_abs_error": r(self.median_abs_error),
                "p90_abs_error": r(self.p90_abs_error), "max_abs_error": r(self.max_abs_error),
                "within_15pct": self.within_15pct}


def summarize(results: list[CaseResult]) -> Summary:
    errs = np.array([abs(r.error) for r in results if r.error is not None])
    if not len(errs):
        return Summary(0, None, None, None, 0)
    return Summary(len(errs), float(np.median(errs)), float(np.percentile(errs, 90)), float(errs.max()),
                   int((errs <= 0.15).sum()))


class StatedSettings(BaseModel):
    """One entry of ``stated_settings.yaml``: training and parallel extension keys that the named cases' source
    states."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    source: str = Field(min_length=1)
    stated: str = Field(min_length=1)
    training: dict[str, Any] = Field(default_factory=dict)
    parallel: dict[str, Any] = Field(default_factory=dict)
    cases: list[str] = Field(min_length=1)

    @model_validator(mode="after")
    def _states_something(self) -> StatedSettings:
        if not (self.training or self.parallel):
            raise ValueError("states no setting; accepted: training and/or parallel keys")
        return self


def stated_settings() -> list[StatedSettings]:
    """The settings the validation cases' sources state beyond FORMAT.md (``stated_settings.yaml``)."""
    from trainsizer.datafiles import packaged_yaml

    data = packaged_yaml("trainsizer.evidence", "stated_settings.yaml")
    return [parse_model(StatedSettings, row, f"stated_settings.yaml: settings[{i}]")
            for i, row in enumerate(data["settings"])]


def with_stated_settings(case: Case, entries: list[StatedSettings]) -> Case:
    """``case`` with the training and parallel keys its source states (for the entries naming it and its source)
    added where the case does not set them; the added keys are listed in ``stated``. A case that sets such a key to
    another value is the data's contradiction: refused, naming the case and the key."""
    rows = [e for e in entries if case.id in e.cases and case.source.startswith(e.source)]
    if not rows:
        return case
    scenario = dict(case.scenario)
    added: list[str] = []
    for section in ("training", "parallel"):
        given = dict(scenario.get(section) or {})
        for row in rows:
            for key, value in getattr(row, section).items():
                if key in given and given[key] != value:
                    raise InputError(f"case {case.id}.scenario.{section}.{key}",
                                     f"{given[key]!r}, but its source states {value!r} ({row.stated})")
                if key not in given:
                    given[key] = value
                    added.append(f"{section}.{key}")
        if given or section in scenario:
            scenario[section] = given
    return replace(case, scenario=scenario, stated=tuple(added))


def case_documents(path: str | Path) -> list[dict[str, Any]]:
    """The entries of a case file as the file has them (for a file that is written back): the YAML edge."""
    data = user_yaml(path, field="cases")
    if not isinstance(data, list):
        raise InputError("cases", f"{path}: a case file is a YAML list of cases")
    return data


def load_cases(path: str | Path, stated: bool = True) -> list[Case]:
    """The cases of a case file, each with the settings its source states beyond FORMAT.md
    (:func:`with_stated_settings`; ``stated=False``: as the file has them)."""
    cases = [case_from_document(doc, path, i) for i, doc in enumerate(case_documents(path))]
    if not stated:
        return cases
    entries = stated_settings()
    return [with_stated_settings(case, entries) for case in cases]


def speed_metric(cid: str, metric: str, perf_params: PerformanceModel) -> tuple[str, str | None]:
    """The predicted quantity a published speed figure is compared with. Some sources define it
    differently (e.g. TFLOPS that count recomputation): the data names them, with the reason."""
    for rule in perf_params.fit.metric_definitions:
        if cid.startswith(rule.id_prefix) and metric == rule.metric:
            return rule.compare_with, rule.reason
    return metric, None


