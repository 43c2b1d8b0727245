"""One option of a plan: a GPU type, count, node shape and layout, estimated by the reference estimators
(:class:`PlanOption`); priced by ``workflows.pricing``, given its ranges by ``workflows.robust``. Every stage reads
and returns this type; JSON is written once, at the edge (:meth:`PlanOption.to_dict`, the contract in
docs/plan-json.md).

The figures the plan decides on are those the plan shows (rounded as its JSON writes them): two options that
read alike are alike to the recommendation too."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from trainsizer.estimate.memory import MemoryEstimate
from trainsizer.estimate.step import Performance
from trainsizer.hardware.market import MarketAvailability
from trainsizer.messages import Message
from trainsizer.plan.option_range import OptionRange
from trainsizer.scenario import Scenario

if TYPE_CHECKING:  # higher layers' types, held here and written by their own to_dict
    from trainsizer.cost.run_cost import Bought, Rented, RunCost
    from trainsizer.plan.option_json import (
        AvailabilityJSON,
        HardwareJSON,
        OptionJSON,
        ParallelJSON,
        TrainingJSON,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Availability:
    """Whether the option's part can be bought and rented in the user's market (hardware.market)."""

    market: str
    buy: MarketAvailability
    rent: MarketAvailability

    def to_dict(self) -> AvailabilityJSON:
        return {"market": self.market, "buy": self.buy.to_dict(), "rent": self.rent.to_dict()}


@dataclass(frozen=True, slots=True, kw_only=True)
class Pricing:
    """What ``workflows.pricing`` attaches to an option: its servers, whether its part can be had in the market,
    the horizon view of owning (``cost``, None where it cannot be bought), one run on real terms (``per_run``:
    cost.run_cost), whether the site's limits apply (bought) and the verdict."""

    system: Any  # system.bom.SystemPlan (a lower layer: typed by duck, written by its to_dict)
    availability: Availability | None
    cost: Any  # cost.tco.Comparison | None
    per_run: RunCost
    site_applies: bool
    verdict: Message


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanOption:
    """One option: the job on a GPU type, count, node shape and layout, its estimate, price and ranges."""

    scenario: Scenario  # the job with this option's hardware and layout
    memory: MemoryEstimate
    performance: Performance
    why: Message
    pricing: Pricing | None = None
    range: OptionRange | None = None  # workflows.robust.option_range
    notes: tuple[Message, ...] | None = None  # None until the ranges are attached (with their notes)
    fabric_twin: Message | None = None  # the same option on the other network, merged into this one

    # --- the hardware and layout ------------------------------------------------------------------------------
    @property
    def gpu(self) -> str:
        return self.scenario.hardware.gpu

    @property
    def gpus(self) -> int:
        return self.scenario.parallel.gpus

    @property
    def gpus_per_node(self) -> int:
        return self.scenario.gpus_per_node

    @property
    def nodes(self) -> int:
        return max(1, self.gpus // self.gpus_per_node)

    @property
    def inter_node(self) -> str | None:
        return self.scenario.hardware.inter_node

    @property
    def method(self) -> str:
        return self.scenario.training.method

    def hardware(self) -> tuple[str, int, int, str | None]:
        """Its hardware configuration: GPU type, count, GPUs per node and network (``search._best_per_hardware``'s
        key; ``shortlist.ScreenedLayout.hardware`` gives a shortlisted layout's)."""
        return self.gpu, self.gpus, self.gpus_per_node, self.inter_node

    @property
    def offload(self) -> str:
        return self.scenario.parallel.offload

    def model_split(self) -> int:
        """GPUs one copy of the model spans: tensor x pipeline x context parallel."""
        par = self.scenario.parallel
        return par.tp * par.pp * par.cp

    # --- the figures, as the plan shows them -------------------------------------------------------------------
    @property
    def step_time_s(self) -> float:
        return round(self.performance.step_time_s, 4)

    @property
    def time_to_train_s(self) -> float | None:
        t = self.performance.time_to_train_s
        return None if t is None else round(t, 1)

    @property
    def tokens_per_s(self) -> float:
        return round(self.performance.tokens_per_s, 1)

    @property
    def mfu(self) -> float:
        return round(self.performance.mfu, 4)

    @property
    def device_gib(self) -> float:
        return round(self.memory.device_gib, 3)

    @property
    def capacity_gib(self) -> float:
        return round(self.memory.capacity_gib, 3)

    def seconds(self) -> float:
        """The run's time to train, else one step's time."""
        return float(self.time_to_train_s or self.step_time_s)

    # --- its price ---------------------------------------------------------------------------------------------
    @property
    def per_run(self) -> RunCost | None:
        """One run on real terms (None before pricing)."""
        return self.pricing.per_run if self.pricing else None

    @property
    def run_cost(self) -> float | None:
        return self.per_run.cost if self.per_run else None

    @property
    def acquisition(self) -> str | None:
        return self.per_run.acquisition if self.per_run else None

    @property
    def commitment(self) -> float | None:
        return self.per_run.commitment if self.per_run else None

    @property
    def priced(self) -> bool:
        """Priced with an acquisition: a run's cost, or a million tokens'."""
        return self.per_run is not None and self.per_run.priced

    @property
    def rented(self) -> Rented | None:
        """The run rented, where it is the acquisition."""
        pr = self.per_run
        return pr.rent if pr and pr.acquisition == "rent" else None

    @property
    def bought(self) -> Bought | None:
        """The run bought, where it is the acquisition."""
        pr = self.per_run
        return pr.buy if pr and pr.acquisition == "buy" else None

    @property
    def buy_total(self) -> float | None:
        """The horizon view's cost of owning, where the part can be bought."""
        cost = self.pricing.cost if self.pricing else None
        return cost.buy.total if cost else None

    @property
    def ownership_years_on_one_run(self) -> float | None:
        """The horizon a bought option's one run carries whole (no runs a month or utilisation stated to share it);
        None where it is rented, not bought, or shared."""
        bought, cost = self.bought, self.pricing.cost if self.pricing else None
        if not bought or bought.utilisation is not None or not cost:
            return None
        return cost.buy.horizon_years

    @property
    def at_risk(self) -> bool:
        return self.range is not None and self.range.at_risk

    @property
    def oom_chance(self) -> float:
        """The chance its peak memory exceeds the GPU's (its range; 0 before the ranges are attached)."""
        return float(self.range.p_exceeds_capacity) if self.range else 0.0

    def with_pricing(self, pricing: Pricing) -> PlanOption:
        return replace(self, pricing=pricing)

    # --- the JSON edge -----------------------------------------------------------------------------------------
    def hardware_dict(self) -> HardwareJSON:
        hw = self.scenario.hardware
        return {"gpu": hw.gpu, "gpus": self.gpus, "gpus_per_node": self.gpus_per_node, "nodes": self.nodes,
                "intra_node": hw.intra_node, "inter_node": hw.inter_node}

    def parallel_dict(self) -> ParallelJSON:
        par = self.scenario.parallel
        return {"gpus": par.gpus, "tp": par.tp, "pp": par.pp, "cp": par.cp, "virtual_pp": par.virtual_pp,
                "sequence_parallel": par.sequence_parallel, "zero": par.zero,
                "distributed_optimizer": par.distributed_optimizer, "offload": par.offload, "dp": par.dp,
                **({"ep": par.ep} if par.ep > 1 else {}),
                **({"zero_shard_gpus": par.zero_group} if par.zero_group != par.dp * par.cp else {}),
                **({"pipeline_split": par.pipeline_split} if par.pipeline_split != "even" else {})}

    def training_dict(self) -> TrainingJSON:
        tr = self.scenario.training
        return {"micro_batch_size": tr.micro_batch_size, "activation_checkpointing": tr.activation_checkpointing,
                "global_batch_size": self.scenario.global_batch_size, "precision": tr.precision,
                "optimizer": tr.optimizer, "method": tr.method}

    def to_dict(self) -> OptionJSON:
        """The option as the plan's JSON writes it (docs/plan-json.md)."""
        out: OptionJSON = {"hardware": self.hardware_dict(), "parallel": self.parallel_dict(),
                               "training": self.training_dict(), "memory": self.memory.to_dict(),
                               "performance": self.performance.to_dict(), "why": self.why}
        if self.pricing is not None:
            p = self.pricing
            out.update({"system": p.system.to_dict(),
                        "availability": p.availability.to_dict() if p.availability else {},
                        "cost": p.cost.to_dict() if p.cost else None, "per_run": p.per_run.to_dict(),
                        "site_applies": p.site_applies, "verdict": p.verdict})
        if self.fabric_twin is not None:  # the note comes before the ranges it was made before
            out["notes"] = [self.fabric_twin]
        if self.range is not None:
            out["range"] = self.range.to_dict()
        if self.notes is not None:
            out["notes"] = list(self.notes)
        return out
