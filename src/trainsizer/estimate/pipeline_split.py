"""How a pipeline's layers fall on its stages (``parallel.pipeline_split``) and which stage sets the step's pace.

- Even (Megatron-LM's default): ``num_layers / pp`` layers a stage, the output layer on the last besides its share
  (Narayanan et al. 2021, arXiv:2104.04473, section 2.2), which makes the last stage the busiest.
- Embedding and/or loss counted as layers (Megatron-Core ``account_for_embedding_in_pipeline_split`` /
  ``account_for_loss_in_pipeline_split``, megatron/core/transformer/transformer_block.py ``get_num_layers_to_build``
  @ d98e8a64dd): ``(num_layers + extra) / (pp x vp)`` slots per virtual stage, one layer fewer built on the first
  virtual stage of the first rank and on the last virtual stage of the last; virtual stage ``c`` runs on rank
  ``c mod pp`` (interleaved schedule, Narayanan et al. 2021, section 2.2.1). The head's cost is why Llama 3 moved a
  layer off the first and last stages (Dubey et al. 2024, arXiv:2407.21783, section 3.3.2).

Every stage waits for the slowest in the steady state and in the bubble, so the step is priced on the rank whose
layers and output layer cost the most FLOPs (:func:`busiest_stage`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainsizer.arrays import is_array, where
from trainsizer.messages import Message, msg
from trainsizer.scenario_pipeline import SPLIT_EXTRA_LAYERS


@dataclass(frozen=True)
class BusiestStage:
    """The pipeline rank that sets the pace: its layers (a fraction under an even split of layers ``pp`` does not
    divide), those over the mean ``num_layers / pp`` (``share``: 1 under an even split) and whether it holds the
    output layer; numbers, or arrays of the planner's layouts."""

    layers: Any
    share: Any
    holds_head: Any


def virtual_stage_layers(num_layers: int, pp: int, virtual_pp: int, split: str) -> list[int]:
    """Layers built on each virtual stage, in model order, under a split that counts the embedding and / or loss
    (module docstring); ``ValueError`` where the layers and those do not divide by ``pp x virtual_pp``."""
    before, after = SPLIT_EXTRA_LAYERS[split]
    stages = pp * virtual_pp
    if (num_layers + before + after) % stages:
        raise ValueError(f"{num_layers} layers + {before + after} must divide by pp x virtual_pp = {stages}")
    counts = [(num_layers + before + after) // stages] * stages
    counts[0] -= before
    counts[-1] -= after
    if min(counts) < 0:
        raise ValueError(f"{num_layers} layers leave a virtual stage with fewer than none")
    return counts


def stage_layer_indices(num_layers: int, pp: int, virtual_pp: int, split: str, stage: int) -> list[int]:
    """Indices of the layers pipeline rank ``stage`` holds: its virtual stages ``stage``, ``stage + pp``, ... under a
    split that counts the embedding or loss; the ``stage``-th contiguous share under an even one."""
    if split == "even" or pp <= 1:
        return list(range(stage * num_layers // pp, (stage + 1) * num_layers // pp))
    indices, start = [], 0
    for chunk, count in enumerate(virtual_stage_layers(num_layers, pp, virtual_pp, split)):
        if chunk % pp == stage:
            indices.extend(range(start, start + count))
        start += count
    return indices


def busiest_stage(num_layers: int, pp: Any, virtual_pp: Any, split: str, layer_flops: Any, head_flops: Any,
                  layouts_split: Any = False) -> BusiestStage:
    """The rank whose layers (``layer_flops`` per token each) and output layer (``head_flops``, on the last rank)
    cost the most; ``pp`` may be an array of layouts (the planner's screen), each split evenly or, where
    ``layouts_split``, with the embedding and the loss counted as layers (:func:`_busiest_of_layouts`)."""
    if is_array(layouts_split) and layouts_split.any():
        return _busiest_of_layouts(num_layers, pp, virtual_pp, layouts_split, layer_flops, head_flops)
    if split == "even" or not isinstance(pp, int) or pp <= 1:
        return BusiestStage(num_layers / pp, 1.0, True)
    chunks = virtual_stage_layers(num_layers, pp, virtual_pp, split)
    counts = [sum(chunks[s::pp]) for s in range(pp)]  # rank s runs virtual stages s, s + pp, ...
    costs = [n * layer_flops + (head_flops if s == pp - 1 else 0.0) for s, n in enumerate(counts)]
    busiest = max(range(pp), key=lambda s: (costs[s], s))
    return BusiestStage(float(counts[busiest]), counts[busiest] * pp / num_layers, busiest == pp - 1)


def _busiest_of_layouts(num_layers: int, pp: Any, virtual_pp: Any, split: Any, layer_flops: Any,
                        head_flops: Any) -> BusiestStage:
    """:func:`busiest_stage` of many layouts at once (arrays): under the embedding-and-loss split the first and last
    ranks hold ``(num_layers + 2) / pp - 1`` layers, the last the output layer besides, and a middle rank (``pp > 2``)
    one more; an even split as :func:`busiest_stage`'s."""
    full = (num_layers + 2) / pp  # a rank's slots: its virtual stages' layers, the embedding or the loss among them
    last = (full - 1) * layer_flops + head_flops
    middle_busier = (pp > 2) & (full * layer_flops > last)
    layers = where(split, where(middle_busier, full, full - 1), num_layers / pp)
    share = where(split, layers * pp / num_layers, 1.0)
    return BusiestStage(layers, share, where(split, ~middle_busier, True))


def uneven_split_note(num_layers: int, pp: int, virtual_pp: int, split: str) -> Message | None:
    """That an even split was priced over stages the layers do not divide into (a fraction of a layer a stage, the
    average of the uneven split a framework would build); Megatron-LM refuses it (``get_num_layers_to_build`` asserts
    the layers divide), its recipes count the embedding and the loss as layers instead. None where they divide."""
    stages = pp * virtual_pp
    if split != "even" or pp <= 1 or num_layers % stages == 0:
        return None
    return msg("step.pipeline_uneven", layers=num_layers, stages=stages, per=num_layers / pp)
