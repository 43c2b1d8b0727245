"""Scenario extensions of a mixture-of-experts layout: the fields ``trainsizer.scenario.ParallelSpec`` takes from
:class:`ExpertSettings` (docs/guide-scenarios.md, "Extensions"; validation/FORMAT.md). Their effects:
``trainsizer.estimate.moe`` (step time)."""

# Annotations stay objects here (no `from __future__ import annotations`): pydantic reads each field's type as
# is, without compiling its text into a ForwardRef first (~0.1 ms a model class, at every command's import).

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, Strict


def expert_grid_fits(tp: Any, cp: Any, dp: Any, ep: Any, expert_tp: Any) -> Any:
    """Whether Megatron-Core can carve the expert layers' grid (etp x ep x expert-dp) out of a pipeline stage's tp x cp
    x dp ranks: ep x etp divides them and etp divides tp (megatron/core/parallel_state.py @ d98e8a64,
    initialize_model_parallel; MoE parallel folding, arXiv:2504.14960, section 3.1). Numbers, or arrays of layouts
    (the planner's EP axis)."""
    return ((tp * cp * dp) % (ep * expert_tp) == 0) & (tp % expert_tp == 0)


def _no_bool(v: object) -> object:
    if isinstance(v, bool):
        raise ValueError("a number, not a boolean")
    return v


class ExpertSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True, allow_inf_nan=False)

    etp: Annotated[int, Strict()] | None = Field(
        None, gt=0, le=1024, description="extension: expert tensor parallelism; default: tp. Below tp the expert "
        "layers are folded onto the tensor x data-parallel ranks (Megatron-Core --expert-tensor-parallel-size, MoE "
        "parallel folding, arXiv:2504.14960): each expert-parallel group is etp-strided, so ep GPUs of one node "
        "exchange tokens over NVLink, and ep*etp must divide tp*cp*dp (the ranks of a pipeline stage)")
    moe_dispatcher: Literal["alltoall", "deepep", "hybridep"] = Field(
        "alltoall", description="extension: how tokens reach their experts across nodes: 'alltoall' = one copy per "
        "routed expert (NCCL all-to-all; Megatron-Core's alltoall dispatcher); 'deepep' = one copy per destination "
        "node, forwarded over NVLink inside it (DeepEP normal kernels, Megatron-Core's flex dispatcher with the "
        "deepep backend); 'hybridep' = the same copies through NVIDIA's HybridEP kernels (the flex dispatcher's "
        "hybridep backend), at their own measured rates")
    moe_a2a_overlap: Annotated[bool, Strict()] = Field(
        False, description="extension: the dispatch and combine all-to-alls of one micro-batch run during another "
        "micro-batch's computation (Megatron-Core --overlap-moe-expert-parallel-comm, 'combined 1F1B'; DeepSeek-V3's "
        "DualPipe), so only the all-to-all time beyond the computation shows; default: not overlapped")
    moe_token_ranks: Annotated[int, Strict()] | None = Field(
        None, gt=0, le=1024, description="extension: the expert-parallel ranks one token's experts sit on, where the "
        "router keeps them together (NeMo Automodel's fake balanced gate gives a token k consecutive experts, one "
        "rank's); DeepEP sends a token once per rank it reaches; default: as k experts drawn at random reach")
    moe_capacity_factor: Annotated[float, BeforeValidator(_no_bool)] | None = Field(
        None, ge=1.0, le=64.0, description="extension: expert capacity as a multiple of the mean tokens per expert; "
        "tokens beyond it are dropped (GShard, Switch Transformer); default: dropless")
    moe_load_imbalance: Annotated[float, BeforeValidator(_no_bool)] = Field(
        1.0, ge=1.0, le=64.0, description="extension: tokens of the busiest expert-parallel rank over the mean (1 = "
        "balanced, as benchmarks that force balance run); the busiest rank sets the pace of the layer")

    @property
    def expert_tp(self) -> int:
        """Tensor parallelism of the expert layers: ``etp``, else the attention's tp."""
        return self.etp or getattr(self, "tp", 1)
