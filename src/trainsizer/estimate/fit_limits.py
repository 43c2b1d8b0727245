"""The largest micro-batch and sequence length that still fit (memory grows with both)."""

from __future__ import annotations

from dataclasses import dataclass

from trainsizer.estimate.memory import default_memory_model, estimate_memory
from trainsizer.estimate.model_params import MemoryModel
from trainsizer.estimate.training_state import TrainingState, training_state
from trainsizer.hardware.catalog import Accelerator
from trainsizer.models.architecture import Architecture
from trainsizer.scenario import Scenario

MAX_MICRO_BATCH = 1024
MAX_SEQ_LEN = 1 << 21  # 2M tokens: beyond any training run the catalog can hold


@dataclass(frozen=True)
class FitLimits:
    """The largest micro-batch and sequence length that fit the GPU."""

    max_micro_batch_size: int  # 0 = not even one sequence of seq_len fits
    max_seq_len: int  # at the scenario's micro-batch; 0 = nothing fits

    def to_dict(self) -> dict[str, int]:
        return {"max_micro_batch_size": self.max_micro_batch_size, "max_seq_len": self.max_seq_len}


def _fits(scenario: Scenario, arch: Architecture, gpu: Accelerator, params: MemoryModel | None,
          state: TrainingState, **training: int) -> bool:
    # keep the number of micro-batches per step (pipeline in-flight count, accumulation) unchanged
    mbs = training.get("micro_batch_size", scenario.training.micro_batch_size)
    gbs = mbs * scenario.parallel.dp * scenario.grad_accumulation_steps
    tr = scenario.training.model_copy(update={**training, "global_batch_size": gbs})
    return estimate_memory(scenario.model_copy(update={"training": tr}), arch, gpu, params, state).fits


def _largest(ok, lo: int, hi: int) -> int:
    """Largest n in [lo, hi] with ok(n), assuming ok is monotone (True then False); lo-1 if none."""
    if not ok(lo):
        return lo - 1
    step = lo
    while step * 2 <= hi and ok(step * 2):
        step *= 2
    lo, hi = step, min(hi, step * 2 - 1)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def largest_fitting(scenario: Scenario, arch: Architecture, gpu: Accelerator,
                    params: MemoryModel | None = None, state: TrainingState | None = None) -> FitLimits:
    cp = scenario.parallel.cp
    state = state or training_state(scenario, arch, params or default_memory_model())
    mb = _largest(lambda n: _fits(scenario, arch, gpu, params, state, micro_batch_size=n), 1, MAX_MICRO_BATCH)
    seq_units = _largest(lambda n: _fits(scenario, arch, gpu, params, state, seq_len=n * cp), 1,
                         MAX_SEQ_LEN // cp)
    return FitLimits(max(mb, 0), max(seq_units, 0) * cp)
