"""The regime of a scenario for the error ranges (``ranges.py``): the things the model's error depends on that a
scenario states before it runs: the GPU family (its architecture), the training method, the scale (one GPU, one
node, many nodes) and, for speed, the model's kind (dense or mixture-of-experts: a MoE step adds routing, the
experts' all-to-all, grouped GEMMs and host synchronisations, whose held-out error is several times a dense
model's, docs/accuracy.md "80 % ranges", so a MoE estimate must not borrow a dense model's range).

Which of them a kind's ranges are conditioned on is the fit's choice (``evidence/ranges_fit.select_dimensions``: for
memory the subset whose ranges score best on held-out publications; speed uses all three and the model's kind). The
framework a run uses also moves the error (the published cases come from Megatron, DeepSpeed, FSDP, LitGPT, Hugging Face
...), but a scenario does not state its framework; what it states of one (the sharding: replicated, ZeRO/FSDP, tensor or
pipeline parallel; variable sequence lengths; torch.compile) was tried as a dimension and scored no better on held-out
publications (docs/accuracy.md: "80 % ranges"), so it is not one. Nor is the model's size (decades of active parameters:
below 1B, 1-10B, 10-100B, above): tried on 380 cases, it left nested speed coverage at 79.5 % and Volta's at 69.6 %, and
put the cases above 100B at 42.9 %."""

from __future__ import annotations

import re
from functools import cache
from typing import Any

DIMENSIONS = ("gpu_family", "method", "scale")
# speed's dimensions: the model's kind too (no shipped memory case is a MoE model: memory cannot be conditioned on it)
SPEED_DIMENSIONS = (*DIMENSIONS, "model")
# a catalog id's tokens after the product name: form factor, memory size, power cap (a100-sxm4-80gb -> a100)
_SUFFIX = re.compile(r"^(sxm\d*|pcie\d*|nvl\d*|oam|\d+gb|\d+w)$")


@cache  # of the shipped catalog, itself read once (a plan asks for the regimes of its layouts hundreds of times)
def gpu_family(gpu_id: str) -> str:
    """The GPU family of a catalog id: its architecture in the accelerator catalog (h800-sxm5-80gb and
    h100-sxm5-80gb are both ``hopper``; the model's error follows the kernels and allocator an architecture runs,
    so the evidence of one Hopper part speaks for a new one), else the product line the id names
    (a100-sxm4-40gb -> ``a100``) for a GPU the catalog does not hold."""
    from trainsizer.hardware.catalog import default_catalog

    acc = default_catalog().accelerators.get(str(gpu_id))
    if acc is not None and acc.architecture:
        return str(acc.architecture)
    return gpu_part(gpu_id)


@cache
def gpu_part(gpu_id: str) -> str:
    """The product a catalog id names, without form factor, memory size or power cap (h100-sxm5-96gb-500w ->
    ``h100``, h20-96gb -> ``h20``): parts of one family share kernels, not the ratios of compute, bandwidth and
    links that set how fast they run."""
    tokens = str(gpu_id).lower().split("-")
    for i, token in enumerate(tokens):
        if i and _SUFFIX.match(token):
            return "-".join(tokens[:i])
    return "-".join(tokens)


def scale(gpus: int, gpus_per_node: int) -> str:
    """``1-gpu``, ``1-node`` (all GPUs in one server) or ``multi-node``."""
    if gpus <= 1:
        return "1-gpu"
    return "1-node" if gpus <= max(gpus_per_node, 1) else "multi-node"


def regime(gpu_id: str | None, method: str, gpus: int, gpus_per_node: int, moe: bool = False) -> dict[str, str]:
    """The regime's value in each dimension (an inline GPU spec, ``gpu_id`` None, has family ``inline``; ``moe``:
    the model routes tokens to experts), and the GPU part (``gpu_part``: not a dimension; ranges.py widens a speed
    range whose part no case measured)."""
    return {"gpu_family": gpu_family(gpu_id) if gpu_id else "inline", "method": str(method),
            "scale": scale(int(gpus), int(gpus_per_node)), "model": "moe" if moe else "dense",
            "gpu_part": gpu_part(gpu_id) if gpu_id else "inline"}


def is_moe(model: Any) -> bool:
    """Whether a scenario's ``model`` (its ``ModelSpec``) routes tokens to experts (a preset's architecture is read
    once: ``models.catalog.preset_architecture``)."""
    from trainsizer.models.catalog import resolve_model

    return resolve_model(model).moe is not None


def scenario_regime(scenario: dict[str, Any]) -> dict[str, str]:
    """The regime of a scenario as a case file writes it (validation/FORMAT.md)."""
    hardware = scenario.get("hardware") or {}
    gpu = hardware.get("gpu")
    par = scenario.get("parallel") or {}
    gpus = int(par.get("gpus", 1) or 1)
    from trainsizer.scenario import ModelSpec

    return regime(gpu if isinstance(gpu, str) else None, str((scenario.get("training") or {}).get("method", "full")),
                  gpus, int(hardware.get("gpus_per_node") or gpus),
                  is_moe(ModelSpec.model_validate(scenario.get("model") or {})))
