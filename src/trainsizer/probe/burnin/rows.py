"""The run database's rows as types (``store.SCHEMA``: one TypedDict per table the verdict reads, with the run's
``config`` column parsed from its JSON), and the run as the verdict reports it."""

# no ``from __future__ import annotations``: TypedDict reads NotRequired from evaluated annotations only

from typing import Any, NotRequired, TypedDict


class LoadDescription(TypedDict):
    """What loaded the GPUs (``Load.describe``): its kind, and the built-in load's sizes or a command's argv."""

    kind: str
    matmul_size: NotRequired[int]
    dtype: NotRequired[str]
    copy_mib: NotRequired[int]
    matmuls_per_batch: NotRequired[int]
    copies_per_batch: NotRequired[int]
    argv: NotRequired[list[str]]


class RunConfig(TypedDict):
    """``runs.config``: what the run was started with (a resumed run starts again from it)."""

    duration_s: float
    interval_s: float
    backend_requested: str
    command: list[str] | None
    matmul_size: int
    copy_mib: int
    load: LoadDescription
    fake: dict[str, Any] | None  # FakeConfig.to_dict, the simulated machine (the fake backend only)
    gpus: list[dict[str, Any]]  # GpuInfo.to_dict of each GPU


class RunRow(TypedDict):
    """A row of ``runs``."""

    id: int
    started_at: float
    duration_s: float
    interval_s: float
    backend: str
    load: str
    config: RunConfig
    hostname: str | None
    status: str
    elapsed_s: float
    ended_at: float | None
    load_exit_code: int | None
    load_error: str | None


class SegmentRow(TypedDict):
    """A row of ``segments``: one stretch of sampling (a resumed run has several)."""

    run_id: int
    segment: int
    started_at: float
    start_elapsed: float
    ended_at: float | None
    status: str | None


class XidRow(TypedDict):
    """A row of ``xids``: an XID event read from the kernel log (``gpu`` None: not mapped to a GPU)."""

    run_id: int
    gpu: int | None
    t: float
    elapsed: float
    code: int
    source: str | None
    message: str | None


class RunInfo(RunRow):
    """The run as the verdict reports it: its row's figures, the seconds sampled, the samples, the database, the
    segments and its config."""

    samples: int
    db: str
    segments: int


class SampledRound(TypedDict):
    """What ``run_burnin``'s ``on_sample`` hears after each committed round: the seconds sampled, the samples
    written so far and the round's number."""

    elapsed: float
    samples: int
    round: int
