"""An option of the plan as its JSON writes it (``PlanOption.to_dict``; docs/plan-json.md), spelled as types
(TypedDicts: the dicts the writers return, their keys named): the layout, the estimate's figures, the servers, the
horizon view, the run's cost (``cost.run_cost``) and the range (``plan.option_range``). Keys marked
``NotRequired`` are written only where they apply; ``tests/test_plan_schema.py`` checks real plans against them.
The plan around the options: ``workflows.plan_schema``.

Parts the faces show as they come (the system sizing's host, storage, network and power, the horizon view's
buy and rent sides) keep their own writers' shapes (``system.bom``, ``cost.tco``)."""

# no ``from __future__ import annotations``: TypedDict reads NotRequired from evaluated annotations only

from typing import Any, NotRequired, TypedDict

from trainsizer.messages import Message

Interval = list[float]  # [low, high] of an 80 % range


class HardwareJSON(TypedDict):
    gpu: str
    gpus: int
    gpus_per_node: int
    nodes: int
    intra_node: str | None
    inter_node: str | None


class ParallelJSON(TypedDict):
    gpus: int
    tp: int
    pp: int
    cp: int
    virtual_pp: int
    sequence_parallel: bool
    zero: int
    distributed_optimizer: bool
    offload: str
    dp: int
    ep: NotRequired[int]  # expert parallelism: present where the layout splits routed experts over ranks
    zero_shard_gpus: NotRequired[int]  # hybrid sharding: ranks one copy of the sharded states spans, where set


class TrainingJSON(TypedDict):
    micro_batch_size: int
    activation_checkpointing: str
    global_batch_size: int
    precision: str
    optimizer: str
    method: str


class MemoryJSON(TypedDict):
    allocated_gib: float
    reserved_gib: float
    device_gib: float
    capacity_gib: float
    fits: bool
    components_gib: dict[str, float]
    detail_gib: dict[str, float]
    explain: dict[str, Message]
    peak_phase: str
    notes: list[Message]


class PerformanceJSON(TypedDict):
    step_time_s: float
    tokens_per_s: float
    tokens_per_s_per_gpu: float
    tflops_per_gpu: float
    hardware_tflops_per_gpu: float
    tflops_per_gpu_full_attention: float
    mfu: float
    hfu: float
    peak_tflops: float
    compute_efficiency: float
    breakdown_s: dict[str, float]
    dominant: str
    notes: list[Message]
    time_to_train_s: NotRequired[float | None]
    gpu_hours: NotRequired[float | None]


class ServersJSON(TypedDict):
    count: int
    gpu: str
    gpus_per_server: int


class SystemJSON(TypedDict):
    """``system.bom.SystemPlan.to_dict``: the servers, and each sizing's figures as its module writes them."""

    servers: ServersJSON
    host: dict[str, Any]
    storage: dict[str, Any]
    network: dict[str, Any]
    power: dict[str, Any]
    site_fit: dict[str, Any] | None


class BuyCostJSON(TypedDict):
    """``cost.tco.BuyCost.to_dict``: owning the servers over the horizon."""

    capex: dict[str, int]
    capex_total: int
    opex_per_year: dict[str, int]
    opex_total_per_year: int
    residual: int
    horizon_years: float
    total: int
    first_year: int
    notes: list[Message]


class RentCostJSON(TypedDict):
    """``cost.tco.RentCost.to_dict``: renting the same GPUs over the horizon."""

    offer: str
    price_per_gpu_hour: float
    billing: str
    term_contract: bool
    per_year: int
    total: int


class HorizonJSON(TypedDict):
    """``cost.tco.Comparison.to_dict``: buying and renting over the horizon (each side as tco writes it)."""

    currency: str
    buy: BuyCostJSON
    fx_sensitivity: dict[str, float]  # USD/CNY rate -> the buy total
    seed_checks: list[Message]
    rent: RentCostJSON | None
    break_even_months: float | None
    break_even_utilisation: float | None
    seed_first_year_range: list[float]
    verdict: Message
    series: list[dict[str, float]]


class MarketAvailabilityJSON(TypedDict):
    """``hardware.market.MarketAvailability.to_dict``: whether the part can be had one way in the market."""

    gpu: str
    market: str
    acquisition: str
    available: bool
    status: str
    reason: Message
    detail: str | None
    source: str
    as_of: str
    confidence: str | None


class AvailabilityJSON(TypedDict):
    market: str
    buy: MarketAvailabilityJSON
    rent: MarketAvailabilityJSON


class VoucherJSON(TypedDict):
    id: str
    saved: int
    fraction: float
    confidence: str
    eligibility: str
    cap: float | None
    cap_period: str
    upper_bound: bool
    possible: NotRequired[bool]


class VoucherRefusalJSON(TypedDict):
    id: str
    reason: Message


class RentJSON(TypedDict):
    """``cost.run_cost.Rented.to_dict``: the run on its rental offer."""

    provider: str
    term: str
    billing: str | None
    min_term_hours: float | None
    price_per_gpu_hour: float
    billed_hours: float
    cost: int
    commitment: int
    confidence: str | None
    source: str
    as_of: str
    stale: bool
    notes: list[Message]
    machine: dict[str, Any] | None  # what the offer's machine states (cost.prices.OfferMachine's fields)
    voucher_not_applied: NotRequired[VoucherRefusalJSON]
    cost_before_voucher: NotRequired[int]
    voucher: NotRequired[VoucherJSON]


class BuyJSON(TypedDict):
    cost: int
    commitment: int
    sets: int
    utilisation: float | None
    note: NotRequired[Message]


class OfferJSON(TypedDict):
    """A rental offer alone (``per_run.rent_offer``); ``recommendation.offer`` adds its date."""

    provider: str
    term: str
    billing: str | None
    price_per_gpu_hour: float
    as_of: NotRequired[str | None]
    stale: NotRequired[bool | None]


class SetupJSON(TypedDict):
    """``workflows.setup_time.SetupTime.to_dict``: start to first step of a rented run."""

    minutes: float
    assumed: bool


class PerRunJSON(TypedDict):
    """``cost.run_cost.RunCost.to_dict``: one run on real terms."""

    hours: float | None
    currency: str
    workload: Message
    rent: RentJSON | None
    buy: BuyJSON | None
    rent_unavailable: Message | None
    buy_unavailable: Message | None
    over_budget: NotRequired[bool]
    acquisition: NotRequired[str]
    cost: NotRequired[int | None]
    commitment: NotRequired[int | None]
    time_cost: NotRequired[int]
    setup: NotRequired[SetupJSON]
    objective: NotRequired[float]
    reason: NotRequired[Message | None]
    rent_offer: NotRequired[OfferJSON]
    cost_per_million_tokens: NotRequired[float | None]


class RangeJSON(TypedDict):
    """``plan.option_range.OptionRange.to_dict``."""

    level: float
    p_exceeds_capacity: float
    at_risk: bool
    fits_unless_above: float | None
    device_gib: Interval
    step_time_s: Interval
    time_to_train_s: NotRequired[Interval]
    per_run_cost: NotRequired[Interval]
    notes: list[Message]


class OptionJSON(TypedDict):
    """``plan.option.PlanOption.to_dict``: an option; priced ones carry system to verdict, ranged ones ``range``
    (``plan --json`` adds ``detail``, and a summary keeps only some keys: workflows.plan_json)."""

    hardware: HardwareJSON
    parallel: ParallelJSON
    training: TrainingJSON
    memory: MemoryJSON
    performance: PerformanceJSON
    why: Message
    system: NotRequired[SystemJSON]
    availability: NotRequired[AvailabilityJSON]
    cost: NotRequired[HorizonJSON | None]
    per_run: NotRequired[PerRunJSON]
    site_applies: NotRequired[bool]
    verdict: NotRequired[Message]
    notes: NotRequired[list[Message]]
    range: NotRequired[RangeJSON]
    detail: NotRequired[str]
