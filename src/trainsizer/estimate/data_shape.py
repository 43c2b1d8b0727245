"""The lengths a data shape (the scenario's ``data`` block, ``trainsizer.scenario_data``) puts in a step: memory takes
the longest micro-batch, step time the expected one, and the throughput counts the dataset's tokens.

Without packing, a micro-batch padded to its longest sample (``padding: longest``: transformers' DataCollatorWithPadding
and DataCollatorForSeq2Seq, ``padding=True`` by default, huggingface/transformers src/transformers/data/data_collator.py
@ 002786aa; LLaMA-Factory's SFT, hiyouga/LLaMA-Factory src/llamafactory/train/sft/workflow.py @ 045eb155; TRL's
DataCollatorForLanguageModeling, huggingface/trl trl/trainer/sft_trainer.py @ 00313f21) holds ``micro_batch_size`` x the
longest of its samples: the peak comes with the batch that holds the longest sample (``max_tokens``, truncated at
``seq_len``), and a step costs, on average, the expected longest of ``micro_batch_size`` draws of the length
distribution. Padded to ``seq_len`` (``max-length``) or packed, every sequence is ``seq_len`` long; with per-document
attention the documents' sum(s^2)/sum(s) is the scenario's ``training.document_tokens``
(``estimate.flops.useful_attention_fraction``). The lengths go through the existing keys (``seq_len``,
``sequence_lengths: variable`` for dynamic padding, ``document_tokens``): one mechanism.

With only a mean and a max, the lengths are assumed spread as ``s = max * U^k`` (U uniform on [0, 1], k = max / mean -
1: the mean is the stated one, the longest is max, short samples are the common ones as in chat data); the expected
longest of b draws is then ``max * b / (b + k)`` (assumed: a stated closed form, not fitted). A histogram replaces the
assumption: each bin's samples are taken at its midpoint.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from trainsizer.estimate.step import Performance, estimate_performance
from trainsizer.messages import Message, msg
from trainsizer.scenario import Scenario
from trainsizer.scenario_data import DataShape

if TYPE_CHECKING:
    from trainsizer.estimate.estimate_json import DataShapeJSON
    from trainsizer.estimate.model_params import MemoryModel, PerformanceModel
    from trainsizer.hardware.catalog import Accelerator, Catalog
    from trainsizer.models.architecture import Architecture


@dataclass(frozen=True)
class _Spread:
    """A length distribution: either (lengths, probabilities) from a histogram, or the power law of (max, k)."""

    lengths: tuple[float, ...] = ()
    probabilities: tuple[float, ...] = ()
    longest: float = 0.0
    k: float = 0.0

    def expected_longest(self, draws: int, cap: float) -> float:
        """E[min(max of ``draws`` samples, cap)]."""
        if self.lengths:
            total, below = 0.0, 0.0
            for length, p in zip(self.lengths, self.probabilities, strict=True):
                reach = min(1.0, below + p)
                total += min(length, cap) * (reach ** draws - below ** draws)
                below = reach
            return total
        if self.k == 0:
            return min(self.longest, cap)
        # the longest of b draws is longest * V^k with V the max of b uniforms (density b v^(b-1)); truncated at cap
        c = min(1.0, cap / self.longest) ** (1.0 / self.k)
        return self.longest * draws * c ** (self.k + draws) / (self.k + draws) + cap * (1.0 - c ** draws)

    def square_over_mean(self, cap: float) -> float:
        """E[min(s, cap)^2] / E[min(s, cap)]: a pack's document length as attention sees it (sum(s^2) / sum(s))."""
        if self.lengths:
            first = sum(min(s, cap) * p for s, p in zip(self.lengths, self.probabilities, strict=True))
            second = sum(min(s, cap) ** 2 * p for s, p in zip(self.lengths, self.probabilities, strict=True))
            return second / first
        if self.k == 0:
            return min(self.longest, cap)
        c = min(1.0, cap / self.longest) ** (1.0 / self.k)
        first = self.longest * c ** (self.k + 1) / (self.k + 1) + cap * (1.0 - c)
        second = self.longest ** 2 * c ** (2 * self.k + 1) / (2 * self.k + 1) + cap ** 2 * (1.0 - c)
        return second / first


def _spread(data: DataShape) -> tuple[_Spread, float]:
    """The distribution of the data's lengths and its longest sample."""
    bins = data.length_histogram
    if bins:
        filled = [b for b in bins if b.samples]
        longest = float(data.max_tokens or filled[-1].up_to)
        edges = [0, *(b.up_to for b in bins)]
        total = sum(b.samples for b in bins)
        lengths = tuple(min((lo + b.up_to) / 2, longest) for lo, b in zip(edges, bins, strict=False))
        return _Spread(lengths, tuple(b.samples / total for b in bins)), longest
    longest = float(data.max_tokens or data.mean_tokens or 0)  # a mean alone: every sample that long
    mean = float(data.mean_tokens or longest)
    return _Spread(longest=longest, k=max(0.0, longest / mean - 1.0)), longest


@dataclass(frozen=True)
class SampleLengths:
    """The lengths an estimate reads of the data shape."""

    memory_seq_len: int  # the longest micro-batch's padded length: what memory is estimated at
    step_seq_len: int  # the expected padded length of a micro-batch: what a step's time is estimated at
    tokens_per_sequence: float  # the dataset's tokens in one sequence, on average: what the throughput counts
    document_tokens: int | None  # packed with per-document attention: sum(s^2) / sum(s)
    varied: bool  # padded to each batch's longest: the allocator sees blocks of varied sizes
    assumed_spread: bool  # from a mean and a max only (the power law above)

    def to_dict(self) -> DataShapeJSON:
        return {"memory_seq_len": self.memory_seq_len, "step_seq_len": self.step_seq_len,
                "tokens_per_sequence": round(self.tokens_per_sequence, 1), "document_tokens": self.document_tokens,
                "padded_to_each_batch": self.varied, "assumed_spread": self.assumed_spread}


def _multiple(value: float, unit: int, cap: int) -> int:
    """``value`` rounded to a whole token, then up to a multiple of ``unit`` (context parallelism splits a
    sequence evenly), at most ``cap``."""
    whole = max(1, round(value))
    return min(cap, -(-whole // unit) * unit)


def sample_lengths(scenario: Scenario) -> SampleLengths | None:
    """The lengths of ``scenario``'s data shape; None without a ``data`` block (every sequence ``seq_len``)."""
    data = scenario.data
    if data is None:
        return None
    seq_len, cp = scenario.training.seq_len, scenario.parallel.cp
    known = bool(data.length_histogram) or data.mean_tokens is not None
    documents_known = data.packing and data.per_document_attention
    assumed = not data.length_histogram and data.mean_tokens is not None and data.max_tokens is not None and (
        documents_known or (not data.packing and data.padding == "longest"))
    spread, longest = _spread(data) if known else (_Spread(longest=seq_len), float(seq_len))
    documents = None
    if documents_known:
        documents = min(seq_len, max(1, round(spread.square_over_mean(seq_len))))
    if data.packing or data.padding == "max-length":
        mean = float(seq_len) if data.packing else _mean(data, spread, longest, seq_len)
        return SampleLengths(seq_len, seq_len, mean, documents, False, assumed)
    mean = _mean(data, spread, longest, seq_len)
    step = max(mean, spread.expected_longest(scenario.training.micro_batch_size, seq_len))
    return SampleLengths(_multiple(min(longest, seq_len), cp, seq_len), _multiple(step, cp, seq_len), mean, None,
                         True, assumed)


def _mean(data: DataShape, spread: _Spread, longest: float, seq_len: int) -> float:
    """Tokens of a sample as trained (truncated at seq_len): the stated mean where nothing is cut."""
    if data.mean_tokens is not None and longest <= seq_len:
        return float(data.mean_tokens)
    return spread.expected_longest(1, seq_len)


def _with_lengths(scenario: Scenario, seq_len: int, lengths: SampleLengths) -> Scenario:
    tr = scenario.training
    update: dict[str, Any] = {"seq_len": seq_len, "sequence_lengths": "variable" if lengths.varied else "fixed"}
    if lengths.document_tokens is not None:
        update["document_tokens"] = min(lengths.document_tokens, seq_len)
    return scenario.model_copy(update={"training": tr.model_copy(update=update)})


def memory_scenario(scenario: Scenario, lengths: SampleLengths) -> Scenario:
    """The scenario as its memory peak sees it: every sequence of the longest micro-batch's length."""
    return _with_lengths(scenario, lengths.memory_seq_len, lengths)


def peak_scenario(scenario: Scenario) -> Scenario:
    """The scenario as its memory peak sees it: :func:`memory_scenario` of its data shape, the scenario itself
    without a data block."""
    lengths = sample_lengths(scenario)
    return scenario if lengths is None else memory_scenario(scenario, lengths)


def step_scenario(scenario: Scenario, lengths: SampleLengths) -> Scenario:
    """The scenario as an average step sees it: every sequence of the expected padded length."""
    return _with_lengths(scenario, lengths.step_seq_len, lengths)


def dataset_token_share(lengths: SampleLengths) -> float:
    """The dataset's tokens over the tokens a step processes (1 when nothing is padded)."""
    return min(1.0, lengths.tokens_per_sequence / lengths.step_seq_len)


def shaped_performance(scenario: Scenario, lengths: SampleLengths, arch: Architecture, gpu: Accelerator,
                       catalog: Catalog | None, params: PerformanceModel | None,
                       memory_params: MemoryModel | None) -> Performance:
    """A step at the expected padded length; its throughput (and the time to train on ``training.tokens``) in the
    dataset's tokens, the padding left out; TFLOPS and MFU of what the GPUs process, the padding included."""
    perf = estimate_performance(step_scenario(scenario, lengths), arch, gpu, catalog, params, memory_params)
    share = dataset_token_share(lengths)
    perf.tokens_per_s *= share
    perf.tokens_per_s_per_gpu *= share
    if scenario.training.tokens:
        perf.time_to_train_s = scenario.training.tokens / perf.tokens_per_s if perf.tokens_per_s else None
        perf.gpu_hours = (perf.time_to_train_s or 0.0) * scenario.parallel.gpus / 3600
    perf.notes.extend(data_notes(scenario, lengths))
    return perf


def data_notes(scenario: Scenario, lengths: SampleLengths) -> list[Message]:
    """What the data shape put in the estimate, in words."""
    notes = []
    if lengths.varied or lengths.step_seq_len < scenario.training.seq_len or lengths.tokens_per_sequence < \
            lengths.step_seq_len:
        notes.append(msg("data.lengths", memory=lengths.memory_seq_len, step=lengths.step_seq_len,
                         share=dataset_token_share(lengths)))
        notes.append(msg("data.throughput"))
    else:
        notes.append(msg("data.packed", seq=lengths.step_seq_len))
    if lengths.document_tokens is not None:
        notes.append(msg("data.documents", documents=lengths.document_tokens))
    if lengths.assumed_spread:
        notes.append(msg("data.assumed_spread"))
    return notes
