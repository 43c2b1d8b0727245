"""Scenario extension of a pipeline layout: how its layers fall on the stages, the field
``trainsizer.scenario.ParallelSpec`` takes from :class:`PipelineSettings` (docs/guide-scenarios.md, "Extensions";
validation/FORMAT.md). Its effects: ``trainsizer.estimate.pipeline_split`` (the busiest stage of the step time, the
layers each stage keeps in memory)."""

# Annotations stay objects here (no `from __future__ import annotations`), as in scenario_moe.py.

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

PipelineSplit = Literal["even", "embedding", "loss", "embedding-and-loss"]

# Layers the input embedding and the output layer with its loss stand for in a split (Megatron-Core
# account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split: each "treated as a standard
# transformer layer in the context of partition and placement", megatron/core/transformer/transformer_config.py;
# transformer_block.get_num_layers_to_build @ d98e8a64dd builds one layer fewer on the first / last virtual stage)
SPLIT_EXTRA_LAYERS: dict[str, tuple[int, int]] = {"even": (0, 0), "embedding": (1, 0), "loss": (0, 1),
                                                  "embedding-and-loss": (1, 1)}


class PipelineSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True, allow_inf_nan=False)

    pipeline_split: PipelineSplit = Field(
        "even", description="extension (pp > 1): how the layers are split over the pipeline's stages: 'even' = the "
        "same number on each, the output layer on the last besides its share (Megatron-LM's default); 'embedding', "
        "'loss', 'embedding-and-loss' = the input embedding, the output layer and loss, or both counted as one layer "
        "each, so the first / last virtual stage holds one layer fewer (Megatron-LM "
        "--account-for-embedding-in-pipeline-split, --account-for-loss-in-pipeline-split); the layers plus those "
        "must divide by pp x virtual_pp")
