"""Several GPU types through the step-time screen in one pass: their layouts one after another, each part's figures
(``estimate.part_figures``) and peaks as per-layout arrays. Only parts alike in everything the step's terms branch on
or read as one number (:func:`screen_key`) share a pass, so each layout's step time is the one its own part's pass
gives, to the bit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from trainsizer.estimate.model_params import PerformanceModel
from trainsizer.estimate.part_figures import PartFigures
from trainsizer.estimate.step import peaks_for
from trainsizer.hardware.catalog import Accelerator
from trainsizer.scenario import TrainingSpec


@dataclass(frozen=True)
class PartsPerLayout:
    """GPU types screened together: ``gpus[which[i]]`` is layout ``i``'s."""

    gpus: list[Accelerator]
    which: np.ndarray


@dataclass(frozen=True)
class ScreenPeaks:
    """What the step's context takes of the part(s): a part to stand for them, the GEMMs' and the attention core's
    peaks and dtypes, and the parts' figures (None: the part's own, ``StepContext`` works them out)."""

    gpu: Accelerator
    peak: Any
    dtype: str
    attention_peak: Any
    attention_dtype: str
    part: PartFigures | None


def screen_key(gpu: Accelerator, training: TrainingSpec) -> tuple[Any, ...]:
    """What the step's terms branch on of a part: its architecture, the dtypes of its GEMMs, attention core and
    experts (``estimate.moe.expert_peak``) and whether it states each peak (its figures and its links' rates are
    read per layout: ``estimate.part_figures``, ``Fabric.per_layout``). GPU types with equal keys share a pass."""
    (peak, dtype, _), (attention_peak, attention_dtype) = peaks_for(gpu, training)
    return (gpu.architecture or "", dtype, attention_dtype, bool(peak), bool(attention_peak),
            bool(gpu.peak_tflops("bf16")))


def screen_peaks(gpu: Accelerator | PartsPerLayout, training: TrainingSpec, p: PerformanceModel) -> ScreenPeaks:
    """The peaks and figures of one part (numbers), or of each layout's part (arrays)."""
    if isinstance(gpu, Accelerator):
        (peak, dtype, _), (attention_peak, attention_dtype) = peaks_for(gpu, training)
        return ScreenPeaks(gpu, peak, dtype, attention_peak, attention_dtype, None)
    peaks = [peaks_for(g, training) for g in gpu.gpus]
    (_, dtype, _), (_, attention_dtype) = peaks[0]

    def per_layout(values: list[float]) -> np.ndarray:
        return np.array(values, dtype=float)[gpu.which]

    return ScreenPeaks(gpu.gpus[0], per_layout([pk[0][0] for pk in peaks]), dtype,
                       per_layout([pk[1][0] for pk in peaks]), attention_dtype,
                       PartFigures.per_layout([PartFigures.of(g, dtype, p) for g in gpu.gpus], gpu.which))
