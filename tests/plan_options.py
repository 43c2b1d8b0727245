"""A plan option made from the figures a test states (the recommendation's and the ranges' unit tests): a real
``PlanOption`` whose scenario, memory and step time hold those figures and nothing else."""

from __future__ import annotations

from conftest import base_scenario

from trainsizer.cost.per_run import RentalRun
from trainsizer.cost.prices import RentalOffer
from trainsizer.cost.run_cost import Bought, Rented, RunCost, VoucherClaim
from trainsizer.estimate.memory import MemoryEstimate
from trainsizer.estimate.memory_types import GIB
from trainsizer.estimate.step import Performance
from trainsizer.messages import Message, msg
from trainsizer.plan.option import PlanOption, Pricing
from trainsizer.plan.option_range import OptionRange
from trainsizer.scenario import scenario_from_dict


def plan_option(gpu: str = "h100-sxm5-80gb", gpus: int = 8, *, gpus_per_node: int = 8, method: str = "full",
                step_time_s: float = 1.0, time_to_train_s: float | None = None, device_gib: float = 40.0,
                capacity_gib: float = 80.0, per_run: RunCost | None = None, tp: int = 1,
                offload: str = "none", range: OptionRange | None = None) -> PlanOption:
    """The option; ``per_run`` given: priced (its other pricing parts empty)."""
    data = base_scenario(training__method=method, parallel__gpus=gpus, parallel__tp=tp, hardware__gpu=gpu,
                         hardware__gpus_per_node=gpus_per_node, **({"parallel__offload": offload, "parallel__zero": 3}
                                                                   if offload != "none" else {}))
    memory = MemoryEstimate(components=[], allocated_bytes=device_gib * GIB, reserved_bytes=device_gib * GIB,
                            device_bytes=device_gib * GIB, capacity_bytes=capacity_gib * GIB, peak_phase="backward")
    performance = Performance(step_time_s=step_time_s, tokens_per_s=1.0, tokens_per_s_per_gpu=1.0 / gpus,
                              tflops_per_gpu=0.0, hardware_tflops_per_gpu=0.0, mfu=0.0, hfu=0.0, peak_tflops=0.0,
                              compute_efficiency=0.0, breakdown_s={"compute": step_time_s},
                              time_to_train_s=time_to_train_s)
    pricing = None if per_run is None else Pricing(system=None, availability=None, cost=None, per_run=per_run,
                                                   site_applies=per_run.acquisition != "rent",
                                                   verdict=msg("cost.no_purchase_price_short"))
    return PlanOption(scenario=scenario_from_dict(data), memory=memory, performance=performance,
                      why=msg("plan.mfu", pct=0.0), pricing=pricing, range=range)


def run_cost(acquisition: str, cost: float, commitment: float | None = None, *, rent: Rented | None = None,
             buy: Bought | None = None, workload: Message | None = None) -> RunCost:
    """One run priced as the test states it (its other parts empty)."""
    return RunCost(hours=1.0, currency="CNY", workload=workload or msg("cost.workload_once"), rent=rent, buy=buy,
                   acquisition=acquisition, cost=cost, commitment=commitment)


def rented(cost: int, notes: tuple[Message, ...] = (), voucher: VoucherClaim | None = None) -> Rented:
    """A run on a stated on-demand offer (one GPU-hour at ``cost``), with the notes and voucher the test states."""
    offer = RentalOffer(provider="p", gpu="h100-sxm5-80gb", price_per_gpu_hour=float(cost), currency="CNY", terms=None,
                        quoted_price=float(cost), quoted_currency="CNY", confidence="M", source="s", as_of="2026-01-01")
    run = RentalRun(offer, "on-demand", 1.0, float(cost), float(cost), notes)
    return Rented(run=run, cost=cost, commitment=cost, notes=notes, voucher=voucher)
