"""What a chart spec holds (:mod:`trainsizer.report.specs` builds them, :func:`trainsizer.report.charts.render_chart`
draws them): one TypedDict per kind of chart, the same dicts with their keys named."""

# no ``from __future__ import annotations``: TypedDict reads NotRequired from evaluated annotations only

from typing import Literal, NotRequired, TypedDict


class Mark(TypedDict):
    """A point ringed and labelled on a line chart, with its 80 % range as an error bar."""

    x: float
    y: float
    label: NotRequired[str]
    y_range: NotRequired[list[float]]
    testid: NotRequired[str]


class MemoryText(TypedDict):
    """The memory chart's words: the headline bar, the capacity, the safety margin, the fit and its range."""

    total: str
    capacity: str
    margin: str
    status: str
    reason: str
    range: str


class MemorySpec(TypedDict):
    """Memory per GPU: named parts adding up to ``total``, against ``capacity``."""

    kind: Literal["memory"]
    title: str
    labels: list[str]
    values: list[float]
    unit: str
    total: float
    capacity: float
    status: str
    total_range: list[float] | None
    text: MemoryText


class LineSpec(TypedDict):
    """Lines over ``x``, one per series (None: no point), with marks."""

    kind: Literal["line"]
    title: str
    x: list[float]
    series: dict[str, list[float | None]]
    x_label: str
    y_label: str
    log_note: str
    marks: NotRequired[list[Mark]]
    log_x: NotRequired[bool]


class ParetoSpec(TypedDict):
    """Every option as a point (GPUs, time, GPU name), the Pareto front's indices, the recommended one marked."""

    kind: Literal["pareto"]
    title: str
    points: list[tuple[float, float, str]]
    front: list[int]
    x_label: str
    y_label: str
    recommended: int | None
    front_label: str
    log_note: str
    recommended_label: str
    recommended_range: list[float] | None


class BarSpec(TypedDict):
    """Horizontal bars from zero."""

    kind: Literal["bar"]
    title: str
    labels: list[str]
    values: list[float]
    unit: NotRequired[str]


ChartSpec = MemorySpec | LineSpec | ParetoSpec | BarSpec
