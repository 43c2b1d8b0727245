"""A plan option made from the figures a test states (the recommendation's and the ranges' unit tests): a real
``PlanOption`` whose scenario, memory and step time hold those figures and nothing else."""

from __future__ import annotations

from typing import Any

from conftest import base_scenario

from trainsizer.estimate.memory import MemoryEstimate
from trainsizer.estimate.memory_types import GIB
from trainsizer.estimate.step import Performance
from trainsizer.messages import msg
from trainsizer.plan.option import PlanOption, Pricing
from trainsizer.scenario import scenario_from_dict


def plan_option(gpu: str = "h100-sxm5-80gb", gpus: int = 8, *, gpus_per_node: int = 8, method: str = "full",
                step_time_s: float = 1.0, time_to_train_s: float | None = None, device_gib: float = 40.0,
                capacity_gib: float = 80.0, per_run: dict[str, Any] | None = None, tp: int = 1,
                offload: str = "none", range: dict[str, Any] | None = None) -> PlanOption:
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
    pricing = None if per_run is None else Pricing(system=None, availability={}, cost=None, per_run=per_run,
                                                   site_applies=per_run.get("acquisition") != "rent",
                                                   verdict=msg("cost.no_purchase_price_short"))
    return PlanOption(scenario=scenario_from_dict(data), memory=memory, performance=performance,
                      why=msg("plan.mfu", pct=0.0), pricing=pricing, range=range)
