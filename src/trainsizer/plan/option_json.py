"""An option of the plan as its JSON writes it (``PlanOption.to_dict``; docs/plan-json.md), spelled as types
(TypedDicts: the dicts the writers return, their keys named): the layout, the estimate's figures, the servers, the
horizon view, the run's cost (``cost.run_cost``) and the range (``plan.option_range``). Keys marked
``NotRequired`` are written only where they apply; ``tests/test_plan_schema.py`` checks real plans against them.
The plan around the options: ``workflows.plan_schema``.

Parts the faces show as they come (the horizon view's buy and rent sides) keep their own writers' shapes
(``cost.tco``)."""

# no ``from __future__ import annotations``: TypedDict reads NotRequired from evaluated annotations only

from typing import NotRequired, TypedDict

from trainsizer.estimate.estimate_json import MemoryJSON, PerformanceJSON
from trainsizer.hardware.market import MarketAvailabilityJSON
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
    pipeline_split: NotRequired[str]  # where not even: the embedding and the loss counted as layers


class TrainingJSON(TypedDict):
    micro_batch_size: int
    activation_checkpointing: str
    global_batch_size: int
    precision: str
    optimizer: str
    method: str


class ServersJSON(TypedDict):
    count: int
    gpu: str
    gpus_per_server: int


class HostJSON(TypedDict):
    """``system.host.HostSizing.to_dict``: host RAM and CPU cores per server and per rented instance."""

    ram_gib_per_node: float
    ram_needed_gib: float
    instance_ram_gib: float
    instance_cores: int
    ram_breakdown_gib: dict[str, float]
    cpu_cores_per_node: int
    cpu_cores_needed: int
    seed_rule_ram_gib: float
    seed_rule: Message


class StorageJSON(TypedDict):
    """``system.storage.StorageSizing.to_dict``: capacity, read and checkpoint bandwidth, IOPS."""

    dataset_tb: float
    checkpoint_tb: float
    shared_capacity_tb: float
    read_gbps: float
    checkpoint_write_gbps: float
    local_nvme_tb_per_node: float
    seed_rule_gbps: float
    seed_rule_verdict: Message
    iops_needed: int
    iops_note: Message | None
    iops_breakdown: dict[str, int]


class NetworkJSON(TypedDict):
    """``system.network.NetworkSizing.to_dict``: the scale-out fabric and its switches."""

    fabric: str | None
    reason: Message
    nics_per_node: int
    leaf_switches: int
    spine_switches: int
    cables: int


class PowerJSON(TypedDict):
    """``system.power.PowerSizing.to_dict``."""

    server_max_kw: float
    total_it_max_kw: float
    typical_it_kw: float
    facility_kw: float
    heat_btu_per_h: int


class SiteFitJSON(TypedDict):
    """``system.power.SiteFit.to_dict``: whether the servers fit the site, and what would make them fit."""

    site: str
    fits: bool
    servers_per_rack: int
    racks: int
    verdict: Message
    remedies: list[Message]
    power_cap_w: float | None
    power_cap_throughput: float | None


class SystemJSON(TypedDict):
    """``system.bom.SystemPlan.to_dict``: the servers, and each sizing's figures."""

    servers: ServersJSON
    host: HostJSON
    storage: StorageJSON
    network: NetworkJSON
    power: PowerJSON
    site_fit: SiteFitJSON | None


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


class OfferMachineJSON(TypedDict, total=False):
    """What a rental offer's machine states (``cost.price_rows.OfferMachine``'s fields that are set, ``notes`` left
    out: ``cost.per_run``)."""

    ram_gb_per_gpu: float
    ram_gb_per_instance: float
    vcpus_per_gpu: float
    vcpus_per_instance: float
    disk_gb: float
    intra_node: str
    fabric: str
    rdma: bool
    fabric_gbps: float
    instance: str
    source: str
    as_of: str


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
    machine: OfferMachineJSON | None  # what the offer's machine states
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
    reference: NotRequired[bool]  # a quoted answer's: the price its floor is worked out at, not an offer of the layout


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
