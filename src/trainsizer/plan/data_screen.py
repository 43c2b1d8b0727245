"""The planner's screen of a job with a data shape (``trainsizer.estimate.data_shape``): memory screened at the
longest micro-batch (``data_shape.peak_scenario``), step time at the expected one, the time to train in the
dataset's tokens. The expected micro-batch is the job's: a layout of another micro-batch size pads to another
expected length, which the exact re-check of each shortlisted layout (``trainsizer estimate`` itself) takes."""

from __future__ import annotations

from typing import Any

from trainsizer.estimate.data_shape import sample_lengths, step_scenario
from trainsizer.estimate.model_params import MemoryModel
from trainsizer.models.architecture import Architecture
from trainsizer.plan.fast import JobBasis, job_basis
from trainsizer.scenario import Scenario


def step_job(job: Scenario, arch: Architecture, mp: MemoryModel, basis: JobBasis) -> tuple[Scenario, Any]:
    """The job as an average step sees it and its screen basis (the job and ``basis`` without a data block)."""
    lengths = sample_lengths(job)
    if lengths is None:
        return job, basis
    step = step_scenario(job, lengths)
    return step, job_basis(step, arch, mp)


def tokens_per_sequence(job: Scenario) -> float:
    """The dataset's tokens in one sequence: ``seq_len`` packed or without a data block, else the mean sample."""
    lengths = sample_lengths(job)
    return float(job.training.seq_len) if lengths is None else lengths.tokens_per_sequence
