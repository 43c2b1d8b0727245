"""The scenario's data shape (``data:``, validation/FORMAT.md "Extensions"): packed or not, how a batch is padded,
and the samples' lengths as a user knows them (mean and max tokens per sample, or a histogram from
``trainsizer data-shape``). The lengths a step's memory and time are estimated at are derived from it in
``trainsizer.estimate.data_shape``; this module only checks the block."""

# Annotations stay objects here (no `from __future__ import annotations`): pydantic reads each field's type as
# is, without compiling its text into a ForwardRef first (~0.1 ms a model class, at every command's import).
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, Strict, model_validator

from trainsizer.errors import N_

MAX_TOKENS_PER_SAMPLE = 16_777_216  # as training.seq_len's bound
MAX_BINS = 4096


def _no_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError(N_("a number, not true/false; accepted: a number > 0"))
    return value


Count = Annotated[int, Strict()]


class _Block(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True, allow_inf_nan=False)


class LengthBin(_Block):
    """One bin of the histogram: ``samples`` samples of more tokens than the bin before's ``up_to`` and at most
    ``up_to``."""

    up_to: Count = Field(gt=0, le=MAX_TOKENS_PER_SAMPLE)
    samples: Count = Field(ge=0, le=10**15)


class DataShape(_Block):
    packing: Annotated[bool, Strict()] = Field(
        False, description="true: samples are concatenated into sequences of exactly seq_len tokens (LLaMA-Factory "
        "packing, TRL packing, Megatron's and torchtitan's pre-training data); false: one sample per sequence, padded")
    per_document_attention: Annotated[bool, Strict()] = Field(
        False, description="with packing: each sample attends only to itself (LLaMA-Factory neat_packing, TRL "
        "padding-free packing, Megatron --reset-attention-mask with THD), so attention work follows the samples' "
        "lengths (training.document_tokens derived from them); false: causal attention over the whole pack")
    padding: Literal["longest", "max-length"] = Field(
        "longest", description="without packing: 'longest' = each micro-batch padded to its longest sample (dynamic "
        "padding: transformers' DataCollatorWithPadding / DataCollatorForSeq2Seq default padding=True, LLaMA-Factory, "
        "TRL); 'max-length' = every sample padded to seq_len")
    mean_tokens: Annotated[float, BeforeValidator(_no_bool)] | None = Field(
        None, gt=0, le=MAX_TOKENS_PER_SAMPLE, description="mean tokens per sample (after the chat template)")
    max_tokens: Count | None = Field(None, gt=0, le=MAX_TOKENS_PER_SAMPLE, description="tokens of the longest sample")
    length_histogram: list[LengthBin] | None = Field(
        None, min_length=1, max_length=MAX_BINS, description="tokens per sample as bins of up_to (ascending) and "
        "samples (trainsizer data-shape --yaml writes it)")

    @model_validator(mode="after")
    def _consistent(self) -> "DataShape":
        if self.per_document_attention and not self.packing:
            raise ValueError("per_document_attention: " + N_("needs packing: true (an unpacked sample is one "
                                                             "document); accepted: true with packing, else false"))
        if self.mean_tokens is not None and self.max_tokens is not None and self.mean_tokens > self.max_tokens:
            raise ValueError("mean_tokens: " + N_("is more than max_tokens; accepted: a mean from 1 to max_tokens"))
        bins = self.length_histogram or []
        if any(b.up_to <= a.up_to for a, b in zip(bins, bins[1:], strict=False)):
            raise ValueError("length_histogram: " + N_("the bins' up_to must increase; accepted: bins of up_to "
                                                       "(ascending tokens per sample) and samples"))
        if bins and not any(b.samples for b in bins):
            raise ValueError("length_histogram: " + N_("every bin is empty; accepted: bins of up_to and samples, "
                                                       "at least one sample"))
        if not self.packing and self.padding == "longest" and not bins and (
                self.mean_tokens is None or self.max_tokens is None):
            raise ValueError("mean_tokens: " + N_("padding to the longest sample needs the lengths; accepted: "
                                                  "mean_tokens and max_tokens, or length_histogram"))
        if self.packing and self.per_document_attention and not bins and self.mean_tokens is None:
            raise ValueError("mean_tokens: " + N_("per-document attention needs the samples' lengths; accepted: "
                                                  "mean_tokens (with max_tokens), or length_histogram"))
        return self


class DataSettings(BaseModel):
    """The ``data`` block of a scenario (``trainsizer.scenario.Scenario`` takes it from here) and its checks against
    the training block."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True, allow_inf_nan=False)

    data: DataShape | None = Field(None, description="extension: the data shape (scenario_data.py)")

    @model_validator(mode="after")
    def _data_against_training(self) -> Any:
        training = getattr(self, "training", None)
        if self.data is None or training is None:
            return self
        stated = training.model_fields_set
        if self.data.per_document_attention and "document_tokens" in stated:
            raise ValueError("data.per_document_attention: " + N_("and training.document_tokens both say the "
                                                                  "documents; accepted: one of them"))
        if not self.data.packing and "document_tokens" in stated:
            raise ValueError("data.packing: " + N_("false, but training.document_tokens says the sequences are "
                                                   "packed; accepted: packing: true, or no document_tokens"))
        if "sequence_lengths" in stated:
            raise ValueError("training.sequence_lengths: " + N_("the data block says how the lengths vary; "
                                                                "accepted: one of them"))
        return self
