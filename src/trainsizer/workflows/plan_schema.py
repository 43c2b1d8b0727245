"""The plan as its faces read it: ``PlanOutcome.out`` (what ``plan --json`` writes, messages still objects) and the
report model around it, spelled as types (TypedDicts: the same dicts, their keys named); its options' types are
``plan.option_json`` (re-exported here for the faces). The contract in words is docs/plan-json.md; the values are
written once, by ``PlanOption.to_dict`` and the workflows' own ``to_dict``s (the confidence: ``workflows.robust``).
A face reads these keys, never anything else; keys marked ``NotRequired`` are written only where they apply
(``tests/test_plan_schema.py`` checks real plans against them)."""

# no ``from __future__ import annotations``: TypedDict reads NotRequired from evaluated annotations only

from typing import Any, NotRequired, TypedDict

# the option's types, for the faces (which read the plan through workflows only)
from trainsizer.cost.price_rows import CitationJSON as CitationJSON
from trainsizer.messages import Message
from trainsizer.plan.option_json import HorizonJSON as HorizonJSON
from trainsizer.plan.option_json import MemoryJSON as MemoryJSON
from trainsizer.plan.option_json import OfferJSON, OptionJSON
from trainsizer.plan.option_json import PerRunJSON as PerRunJSON
from trainsizer.plan.option_json import RentJSON as RentJSON


class ContenderJSON(TypedDict):
    option: int
    best_on_objective: float


class ConfidenceJSON(TypedDict):
    """``workflows.robust.Confidence.to_dict``."""

    samples: int
    seed: int
    best_on_objective: float
    meets_deadline: NotRequired[float]
    within_budget: NotRequired[float]
    share: float
    contender: ContenderJSON | None
    close: bool
    runs: NotRequired[float]
    settle_with: NotRequired[str]


class RunnerUpJSON(TypedDict):
    option: int
    gpu: str
    gpus: int
    acquisition: str | None
    per_run: float | None
    days: float | None
    trade: Message


class BindingJSON(TypedDict):
    """The constraint that decided the pick (``workflows.decide``), with its figures."""

    code: str
    deadline_days: float | None
    tight_fraction: NotRequired[float]
    p_exceeds_capacity: NotRequired[float]
    device_gib: NotRequired[float]
    capacity_gib: NotRequired[float]


class TimeValueJSON(TypedDict):
    """``workflows.time_value.TimeValue.to_dict``: what an hour of the run's wall-clock time is worth."""

    per_hour: float
    currency: str
    assumed: bool
    source: str
    as_of: str


class DeadlineRiskJSON(TypedDict):
    """``workflows.robust.deadline_risk``: the answer's chance of running past ``--deadline``."""

    deadline_days: float
    p_misses: float
    message: Message


class RecommendationJSON(TypedDict):
    """``workflows.decide.recommendation``: the answer."""

    option: int
    acquisition: str
    offer: OfferJSON | None
    gpu: str
    gpus: int
    servers: int
    per_run: int | None
    cost_per_million_tokens: float | None
    commitment: int | None
    currency: str
    time_to_train_days: float | None
    objective: str
    site_applies: bool
    binding: BindingJSON
    why: Message
    runner_ups: list[RunnerUpJSON]
    time_value: TimeValueJSON | None
    adjustments: list[Message]
    confidence: NotRequired[ConfidenceJSON | None]
    deadline_risk: NotRequired[DeadlineRiskJSON]  # with --deadline: the chance the answer's run misses it
    priced: NotRequired["RecommendationJSON"]  # where acquisition is "quote": the answer of the priced options alone


class TimelineStepJSON(TypedDict):
    step: Message
    days: list[float]  # [fewest, most]


class TimelineJSON(TypedDict):
    """``workflows.next_steps.timeline``: the steps to a running job and their days."""

    steps: list[TimelineStepJSON]
    total_days: list[float]
    note: Message
    source: str


class VerificationStepJSON(TypedDict):
    """One of ``workflows.next_steps.verification_steps``: a command to run and what to check."""

    step: Message
    command: str
    check: Message


class ExcludedGpuJSON(TypedDict):
    gpu: str
    buy: str
    rent: str
    reason: Message
    detail: str | None


class MarketJSON(TypedDict):
    """The market planned for and the GPU types it cannot supply (``workflows.plan_job``)."""

    market: str
    excluded: list[ExcludedGpuJSON]
    note: Message | None


class PaybackJSON(TypedDict):
    """``workflows.offer_gap.Payback.to_dict``: a purchase beside the quote, in runs at the compute floor."""

    runs: int
    runs_possible: int
    horizon_years: float
    message: Message


class OfferGapJSON(TypedDict):
    """``workflows.offer_gap.OfferGap.to_dict``: the compute floor where no known offer rents the job by the hour;
    where the answer leads with the quote to ask for (``lead_with_quote``), that line, what would hold the job and
    the priced pick's payback."""

    floor: int
    floor_range: list[int] | None  # the floor's 80 % range (the quoted layout's time range moves it)
    currency: str
    gpu: str
    gpus: int
    servers: int
    gpu_hours: float
    hours: float
    setup_hours: float
    price_per_gpu_hour: float
    provider: str
    host_ram_gib: float | None
    message: Message
    leads: NotRequired[bool]
    lead: NotRequired[Message]
    hold: NotRequired[Message]
    payback: NotRequired[PaybackJSON | None]
    priced_far: NotRequired[bool]


class NextStepsJSON(TypedDict):
    """``workflows.plan_job._next_steps``: the answer's deployment timeline and verification steps."""

    timeline: TimelineJSON
    verification: list[VerificationStepJSON]


class HardwareCostJSON(TypedDict):
    """``workflows.plan_job.price_hardware``: the job's fastest layout on one hardware option (within the request's
    --max-oom-risk where one is), priced."""

    option: OptionJSON
    site: str
    currency: str
    prices_used: list[CitationJSON]


class PlanJSON(TypedDict):
    """``PlanOutcome.out``: the plan."""

    options: list[OptionJSON]
    suggestions: list[Message]
    rankings: dict[str, list[int]]
    candidates_evaluated: int
    notes: list[Message]
    blocked: NotRequired[str]
    recommendation: RecommendationJSON | None
    offer_gap: OfferGapJSON | None
    recommended_because: Message | None
    site: str
    currency: str
    market: MarketJSON
    timeline: TimelineJSON
    verification: list[VerificationStepJSON]
    prices_used: list[CitationJSON]


class JobJSON(TypedDict):
    model: str
    params: int
    active_params: int
    method: str
    precision: str
    optimizer: str
    seq_len: int
    tokens: float | None
    source: str


class AssumptionJSON(TypedDict):
    """A figure the report rests on, with its source (``workflows.report_model.assumptions``)."""

    what: Message
    source: str
    as_of: str


class ExportJSON(TypedDict):
    """``web.service.report_data``: what the page's exports read (the plan, its recommended option, the report's
    assumptions)."""

    plan: PlanJSON
    recommended: OptionJSON | None
    assumptions: list[AssumptionJSON]


class ReportJSON(TypedDict):
    """``workflows.report_model.build_report``: the plan with its job, charts and sources."""

    title: str
    generated: str
    lang: str
    job: JobJSON
    plan: PlanJSON
    recommended: OptionJSON | None
    charts: dict[str, dict[str, Any]]
    assumptions: list[AssumptionJSON]
