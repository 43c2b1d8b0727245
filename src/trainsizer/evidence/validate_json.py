"""``trainsizer validate --json``'s summary spelled as types (TypedDicts: the dicts the evidence types' ``to_dict``
write, their keys named): the in-sample errors, the held-out ones by publication and by GPU family, the 80 %
ranges' nested coverage, each view's figures and the accuracy tables of docs/accuracy.md. Keys marked
``NotRequired`` are written only where they apply."""

# no ``from __future__ import annotations``: TypedDict reads NotRequired from evaluated annotations only

from typing import NotRequired, TypedDict


class CaseResultJSON(TypedDict):
    """``cases.CaseResult.to_dict``: one case predicted."""

    id: str
    metric: str
    predicted: float | None
    measured: float
    error: float | None
    excluded_from_fit: str | None
    skipped: str | None


class SummaryJSON(TypedDict):
    """``cases.Summary.to_dict``: |error| over some cases."""

    count: int
    median_abs_error: float | None
    p90_abs_error: float | None
    max_abs_error: float | None
    within_15pct: int


class SignedSummaryJSON(TypedDict):
    """``holdout.SignedSummary.to_dict``."""

    count: int
    median_abs_error: float | None
    p90_abs_error: float | None
    signed_median_error: float | None


class ExcludedCaseJSON(TypedDict):
    id: str
    reason: str


class KindHoldoutJSON(TypedDict):
    """``holdout.KindHoldout.to_dict``: one kind held out by publication (``sources``, ``by_source``) or by GPU
    family (``families``, ``by_family``)."""

    holdout: str
    count: int
    median_abs_error: float | None
    p90_abs_error: float | None
    within_15pct: int
    signed_median_error: float | None
    excluded: int
    excluded_cases: list[ExcludedCaseJSON]
    sources: NotRequired[int]
    by_source: NotRequired[dict[str, SignedSummaryJSON]]
    families: NotRequired[int]
    by_family: NotRequired[dict[str, SignedSummaryJSON]]
    signed: dict[str, dict[str, SignedSummaryJSON]]  # family, method, model: each value's signed summary
    cases: list[CaseResultJSON]


class CoverageRowJSON(TypedDict):
    """``ranges_fit.CoverageRow.to_dict``."""

    count: int
    sources: int
    coverage: float
    median_half_width: float | None
    widen_for_75: float | None


class KindCoverageJSON(CoverageRowJSON):
    """``ranges_fit.KindCoverage.to_dict``: overall, then per regime dimension and value."""

    by_regime: dict[str, dict[str, CoverageRowJSON]]
    unchecked: int  # held-out cases whose publication left too few others to fit a range from


class RangeCoverageJSON(TypedDict):
    level: float
    memory: KindCoverageJSON
    speed: KindCoverageJSON


class CellJSON(TypedDict):
    """``validate.Cell.to_dict``: one kind's figures in an accuracy table."""

    count: int
    sources: int | None
    median_abs_error: float | None
    p90_abs_error: float | None
    signed_median_error: float | None


class CoverageCellJSON(TypedDict):
    coverage: float
    count: int
    median_half_width: float | None


class ViewSummaryJSON(TypedDict):
    """``validate.ViewSummary.to_dict``."""

    in_sample: dict[str, CellJSON]
    holdout: NotRequired[dict[str, CellJSON]]
    holdout_family: NotRequired[dict[str, CellJSON]]
    range_coverage: NotRequired[dict[str, CoverageCellJSON]]


class AccuracyRowJSON(TypedDict):
    """``validate.AccuracyRow.to_dict``: a row of docs/accuracy.md's table."""

    cases: str
    count: int
    method: str
    memory: CellJSON
    throughput: CellJSON
    files: NotRequired[list[str]]
    view: NotRequired[str]


class CrossValidationJSON(TypedDict):
    """``validate.CrossValidation.summary_of``: the passes run, for one view."""

    holdout: NotRequired[dict[str, KindHoldoutJSON]]
    range_coverage: NotRequired[RangeCoverageJSON]
    holdout_family: NotRequired[dict[str, KindHoldoutJSON]]


class InSampleJSON(TypedDict):
    """The summary's in-sample part: all cases, those the shipped fit used, those it left out, how many had no
    prediction, and the view predicted."""

    all: SummaryJSON
    fitted: SummaryJSON
    excluded: SummaryJSON
    skipped: int
    in_sample: bool
    in_sample_note: str
    view: str


class ValidationSummaryJSON(InSampleJSON, CrossValidationJSON):
    """``validate.validate_files``' summary: in-sample first, then the cross-validated passes, and for the shipped
    cases the files, every view's figures and the accuracy tables."""

    files: NotRequired[list[str]]
    views: NotRequired[dict[str, ViewSummaryJSON]]
    accuracy: NotRequired[list[AccuracyRowJSON]]
