"""``trainsizer burnin``: keep every GPU loaded for a set time, sample NVML each interval into SQLite, and judge.

``run_burnin`` runs (or resumes) a burn-in and returns its Verdict; ``report`` rebuilds the verdict from a
database. Heavy dependencies (torch, pynvml, prometheus-client) are imported only when used.
"""

from __future__ import annotations

import re
import signal
import sqlite3
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainsizer.errors import N_, InputError
from trainsizer.messages import Message, msg
from trainsizer.outputs import check_output_path
from trainsizer.probe.burnin.backend import Backend, GpuSample, XidEvent
from trainsizer.probe.burnin.fake import FakeBackend, FakeConfig, parse_fake_event
from trainsizer.probe.burnin.load import CommandLoad, Load, LoadUnavailable, SleeperLoad
from trainsizer.probe.burnin.rows import RunConfig, RunRow, SampledRound
from trainsizer.probe.burnin.store import CHECKPOINT_S, Store, refuse_leftovers
from trainsizer.probe.burnin.verdict import Verdict, build_verdict, default_slowdown

BACKENDS = ("auto", "fake", "nvml")
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION_RE = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*([smhd]?)")
XID_DEDUP_S = 10.0  # the same XID from NVML events and the kernel log within this many seconds is one XID


def parse_duration(text: str | float | int, field: str = "--duration") -> float:
    """``2m``, ``72h``, ``3d``, ``1h30m``, ``90`` (seconds) -> seconds."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        seconds = float(text)
    else:
        s = str(text).strip().lower().replace(" ", "")
        parts = _DURATION_RE.findall(s)
        if not s or "".join(n + u for n, u in parts) != s or (len(parts) > 1 and not all(u for _, u in parts)):
            raise InputError(field, f"{text!r}: accepted a number with s, m, h or d (e.g. 90s, 2m, 72h, 3d, 1h30m)")
        seconds = sum(float(n) * _UNITS[u or "s"] for n, u in parts)
    if not seconds > 0:
        raise InputError(field, f"{text!r}: must be more than 0 (e.g. 2m, 72h, 3d)")
    return seconds


def _check_interval(interval: float) -> float:
    try:
        value = float(interval)
    except (TypeError, ValueError):
        raise InputError("--interval", f"{interval!r}: accepted seconds between 0.05 and 3600") from None
    if not 0.05 <= value <= 3600:
        raise InputError("--interval", f"{interval!r}: accepted seconds between 0.05 and 3600 (default 1)")
    return value


def make_backend(name: str, fake: FakeConfig, kernel_log: bool = True, start_elapsed: float = 0.0) -> Backend:
    """The telemetry backend; ``auto`` is NVML when it initialises, else a clear 'no GPU' InputError."""
    if name not in BACKENDS:
        raise InputError("--backend", f"{name!r}: accepted {', '.join(BACKENDS)}")
    if name == "fake":
        return FakeBackend(fake, start_elapsed=start_elapsed)
    from trainsizer.probe.burnin.nvml import BackendUnavailable, NvmlBackend

    slowdown, source = default_slowdown("nvidia")
    try:
        return NvmlBackend(slowdown, source, kernel_log=kernel_log)
    except BackendUnavailable as exc:
        if name == "nvml":
            raise InputError("--backend", f"nvml: {exc}; --backend fake simulates GPUs") from None
        raise InputError("--backend", f"auto: no GPU found ({exc}); use --backend fake to simulate GPUs on this "
                                      f"machine") from None


def make_load(backend: Backend, command: list[str] | None, matmul_size: int, copy_mib: int) -> Load:
    gpus = [g.index for g in backend.devices()]
    if command:
        return CommandLoad(list(command))
    if backend.name == "fake":
        return SleeperLoad(backend, gpus)
    from trainsizer.probe.burnin.load import TorchLoad

    try:
        return TorchLoad(gpus, matmul_size=matmul_size, copy_mib=copy_mib)
    except LoadUnavailable as exc:
        raise InputError("load", str(exc)) from None


def _fake_config(fake_config: FakeConfig | dict | None, gpus: int, seed: int, events: list[str] | None) -> FakeConfig:
    if isinstance(fake_config, FakeConfig):
        return fake_config
    if isinstance(fake_config, dict):
        return FakeConfig.from_dict(fake_config)
    if not 1 <= gpus <= 64:
        raise InputError("--fake-gpus", f"{gpus}: accepted 1..64")
    return FakeConfig(gpus=gpus, seed=seed, events=[parse_fake_event(e, parse_duration) for e in events or []])


class _Progress:
    """A short status line on stderr now and then (stdout stays clean for --json)."""

    def __init__(self, quiet: bool, duration: float):
        self.quiet = quiet
        self.every = min(60.0, max(5.0, duration / 20))
        self.next = 0.0

    def __call__(self, elapsed: float, duration: float, samples: list[GpuSample], xids: int) -> None:
        if self.quiet or time.monotonic() < self.next:
            return
        self.next = time.monotonic() + self.every
        gpus = " ".join(f"[{s.gpu}] {s.temperature_c if s.temperature_c is not None else '-'}C "
                        f"{s.power_w if s.power_w is not None else '-'}W"
                        + (f" {s.tflops:.0f}TF" if s.tflops is not None else "") for s in samples[:8])
        more = f" (+{len(samples) - 8} GPUs)" if len(samples) > 8 else ""
        sys.stderr.write(f"burnin {elapsed:,.0f}/{duration:,.0f} s  {gpus}{more}  XIDs {xids}\n")
        sys.stderr.flush()


def _sigterm_as_interrupt() -> Callable[[], None]:
    """Turn SIGTERM into KeyboardInterrupt while the loop runs (main thread only); returns the undo."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    return lambda: signal.signal(signal.SIGTERM, previous)


@dataclass
class _Start:
    """What a run (new or resumed) starts with, before the load and the store exist."""

    backend: Backend
    total: float
    interval_s: float
    offset: float
    command: list[str] | None
    matmul_size: int
    copy_mib: int
    fake: FakeConfig
    store: Store | None = None  # the resumed run's database
    run: RunRow | None = None  # the resumed run's row
    path: Path | None = None  # the new run's database


def _resume_start(resume: str | Path, duration: str | float | None, kernel_log: bool, matmul_size: int,
                  copy_mib: int, say: Callable[[Message | None], None]) -> _Start:
    """Open RUN.db and check it can continue here: time left, the same GPUs."""
    say(msg("progress.reopening", path=str(resume)))
    store = Store.open(resume, field="--resume", write=True)
    run = store.run()
    assert run is not None
    cfg = run["config"]
    total = parse_duration(duration) if duration is not None else float(run["duration_s"])
    interval_s = float(run["interval_s"])
    last = store.last_sample(run["id"])
    offset = last[1] + interval_s if last else 0.0
    if offset >= total - 1e-9:
        store.close()
        raise InputError("--resume", f"{resume}: the run already has {offset:.1f} s of {total:.1f} s; "
                                     f"pass a longer --duration to extend it")
    fake = FakeConfig.from_dict(cfg["fake"]) if cfg.get("fake") else FakeConfig()
    say(msg("progress.telemetry", backend=run["backend"]))
    try:
        be = make_backend(run["backend"], fake, kernel_log=kernel_log, start_elapsed=offset)
    except BaseException:
        store.close()
        raise
    stored = [g.uuid for g in store.gpus(run["id"])]
    if [g.uuid for g in be.devices()] != stored:
        be.close()
        store.close()
        raise InputError("--resume", f"{resume} was recorded on other GPUs ({', '.join(stored)}); resume it on "
                                     f"the same machine")
    return _Start(be, total, interval_s, offset, cfg.get("command"), cfg.get("matmul_size", matmul_size),
                  cfg.get("copy_mib", copy_mib), fake, store=store, run=run)


def _new_start(duration: str | float | None, interval: float, backend: str, db: str | Path | None,
               metrics_port: int | None, metrics_host: str, fake_args: tuple[Any, ...], kernel_log: bool,
               command: list[str] | None, matmul_size: int, copy_mib: int, overwrite: bool,
               say: Callable[[Message | None], None]) -> _Start:
    """Check every option and the database path, then open the telemetry backend."""
    total = parse_duration(duration if duration is not None else "2m")
    interval_s = _check_interval(interval)
    if backend not in BACKENDS:
        raise InputError("--backend", f"{backend!r}: accepted {', '.join(BACKENDS)}")
    fake = _fake_config(*fake_args)
    path = Path(db) if db is not None else Path(f"burnin-{time.strftime('%Y%m%d-%H%M%S')}.db")
    check_output_path(path, "--db", overwrite=overwrite, exists_hint=f"pass --resume {path} to continue that run, "
                                                                     "or --overwrite to replace it")
    refuse_leftovers(path, "--db")
    if metrics_port is not None:
        from trainsizer.probe.burnin.exporter import check_port

        check_port(metrics_port, metrics_host)
    say(msg("progress.telemetry", backend=backend))
    be = make_backend(backend, fake, kernel_log=kernel_log)
    if overwrite:  # only now: every option was accepted
        for old in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
            old.unlink(missing_ok=True)
    return _Start(be, total, interval_s, 0.0, command, matmul_size, copy_mib, fake, path=path)


def _open_run(start: _Start, backend_requested: str, metrics_port: int | None, metrics_host: str,
              say: Callable[[Message | None], None]) -> tuple[Store, int, Load, Any, list[Any]]:
    """The load, the exporter and (for a new run) the database; everything opened is closed if one fails."""
    be, exporter = start.backend, None
    try:
        say(msg("progress.load_command", command=" ".join(start.command)) if start.command
            else msg("progress.load_builtin"))
        load = make_load(be, start.command, start.matmul_size, start.copy_mib)
        gpus = be.devices()
        if metrics_port is not None:
            from trainsizer.probe.burnin.exporter import Exporter

            exporter = Exporter(metrics_port, gpus, metrics_host)
        if start.store is not None and start.run is not None:
            return start.store, start.run["id"], load, exporter, gpus
        assert start.path is not None
        config = RunConfig(duration_s=start.total, interval_s=start.interval_s, backend_requested=backend_requested,
                           command=start.command, matmul_size=start.matmul_size, copy_mib=start.copy_mib,
                           load=load.describe(), fake=start.fake.to_dict() if be.name == "fake" else None,
                           gpus=[g.to_dict() for g in gpus])
        say(msg("progress.creating", path=str(start.path)))
        store, run_id = Store.create(start.path, duration_s=start.total, interval_s=start.interval_s,
                                     backend=be.name, load=load.name, config=config, gpus=gpus)
        return store, run_id, load, exporter, gpus
    except BaseException:
        if exporter is not None:
            exporter.close()
        be.close()
        if start.store is not None:
            start.store.close()
        raise


def run_burnin(duration: str | float | None = None, interval: float = 1.0, backend: str = "auto",
               command: list[str] | None = None, db: str | Path | None = None, resume: str | Path | None = None,
               metrics_port: int | None = None, metrics_host: str = "127.0.0.1", fake_gpus: int = 2,
               fake_seed: int = 0, fake_events: list[str] | None = None,
               fake_config: FakeConfig | dict | None = None, matmul_size: int = 8192, copy_mib: int = 1024,
               kernel_log: bool = True, quiet: bool = False,
               on_sample: Callable[[SampledRound], None] | None = None, overwrite: bool = False,
               progress: Callable[[Message | None], None] | None = None) -> Verdict:
    """Run a burn-in (or continue one with ``resume=RUN.db``) and return its verdict.

    duration: total load time (``2m``, ``72h``, ``3d``; default 2m). With ``resume`` the stored duration is
    kept unless one is given (then it replaces the total, e.g. to extend a run); the stored interval,
    backend, load and fake GPUs are reused. ``command``: the user's load (argv) instead of torch matmuls.
    ``on_sample`` is called after each committed round with {"elapsed", "samples", "round"}. ``overwrite``
    replaces an existing ``db`` (never by default). ``progress`` hears each start-up stage, then None once the load
    runs.
    """
    say = progress or (lambda text: None)
    if resume is not None:
        start = _resume_start(resume, duration, kernel_log, matmul_size, copy_mib, say)
    else:
        start = _new_start(duration, interval, backend, db, metrics_port, metrics_host,
                           (fake_config, fake_gpus, fake_seed, fake_events), kernel_log, command,
                           matmul_size, copy_mib, overwrite, say)
    try:
        store, run_id, load, exporter, gpus = _open_run(start, backend, metrics_port, metrics_host, say)
    finally:
        say(None)
    be = start.backend
    status, failure, segment = "store-failed", None, -1
    try:
        if start.run is not None:
            if start.total != start.run["duration_s"]:
                store.set_duration(run_id, start.total)
            store.add_note(run_id, f"resumed at {start.offset:.1f} s (previous status {start.run['status']})")
        for note in be.notes:
            store.add_note(run_id, note)
        segment = store.begin_segment(run_id, start.offset)
        status = _loop(store, run_id, segment, be, load, exporter, start.offset, start.total, start.interval_s,
                       quiet, on_sample, gpus)
    except sqlite3.Error as exc:  # the disk filled, the file became read-only: what was committed stays
        failure = exc
    finally:
        load.stop()
        if exporter is not None:
            exporter.close()
        be.close()
    if failure is None:
        try:
            store.finish(run_id, segment, status, load.exit_code, load.error)
            store.checkpoint("TRUNCATE")  # the verdict's rows all in the .db, the -wal emptied
        except sqlite3.Error as exc:
            failure = exc
    if failure is not None:
        raise _store_failed(store, run_id, "--resume" if start.run is not None else "--db", failure)
    verdict = build_verdict(store, run_id)
    store.close()
    return verdict


def _store_failed(store: Store, run_id: int, field: str, exc: sqlite3.Error) -> InputError:
    """A write that failed mid-run as one line: why, and the verdict of the samples stored until then (the round in
    flight is dropped, every committed one kept); the store is closed."""
    store.rollback()
    try:
        verdict = build_verdict(store, run_id)
        judged = N_("{path}: writing stopped the run at {elapsed} s ({reason}); the {samples} samples stored are "
                    "kept and judge {verdict} (trainsizer burnin report {path}); accepted: a disk with free space and "
                    "a file you can write: then trainsizer burnin --resume {path} continues the run")
        error = InputError(field, judged, path=str(store.path), elapsed=f"{verdict.run['elapsed_s']:.1f}",
                           reason=str(exc), samples=verdict.run["samples"], verdict=verdict.status)
    except sqlite3.Error:
        error = InputError(field, N_("{path}: writing stopped the run ({reason}); accepted: a disk with free space "
                                     "and a file you can write"), path=str(store.path), reason=str(exc))
    finally:
        store.close()
    return error


def _loop(store: Store, run_id: int, segment: int, be: Backend, load: Load, exporter: Any, offset: float,
          total: float, interval: float, quiet: bool, on_sample: Callable[[SampledRound], None] | None,
          gpus: list[Any]) -> str:
    """Sample every ``interval`` s on a fixed schedule until ``total`` s of load; returns the run status."""
    progress = _Progress(quiet, total)
    if not quiet:
        names = ", ".join(sorted({g.name for g in gpus}))
        where = f"; metrics on http://{exporter.host}:{exporter.port}/metrics" if exporter else ""
        sys.stderr.write(f"burnin: run {run_id} -> {store.path}; {len(gpus)} GPU(s) ({names}), backend {be.name}, "
                         f"load {load.name}, {total - offset:,.0f} s to go, every {interval:g} s{where}. "
                         f"Ctrl-C stops and judges.\n")
    xid_counts: dict[int, int] = {}
    last_xid: dict[int, int] = {}
    recent: list[tuple[int | None, int, float, str]] = []
    undo = _sigterm_as_interrupt()
    status = "completed"
    try:
        load.start()
        t0 = time.monotonic()
        next_checkpoint = t0 + CHECKPOINT_S
        k = 0
        while offset + k * interval < total - 1e-9:
            delay = t0 + k * interval - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            now, elapsed = time.time(), offset + (time.monotonic() - t0)
            samples = be.sample(elapsed)
            tput = load.throughput(elapsed)
            for s in samples:
                s.tflops = tput.get(s.gpu)
            store.add_samples(run_id, segment, now, elapsed, samples)
            for ev in be.poll_xids(elapsed):
                if _duplicate(ev, recent):
                    continue
                store.add_xid(run_id, now, ev)
                if ev.gpu is not None:
                    xid_counts[ev.gpu] = xid_counts.get(ev.gpu, 0) + 1
                    last_xid[ev.gpu] = ev.code
            store.commit()  # every round: a crash loses at most the round in flight
            if time.monotonic() >= next_checkpoint:  # the .db alone: all but the last CHECKPOINT_S seconds
                store.checkpoint()
                next_checkpoint = time.monotonic() + CHECKPOINT_S
            if exporter is not None:
                exporter.update(samples, xid_counts, last_xid, elapsed, total - elapsed)
            progress(elapsed, total, samples, sum(xid_counts.values()))
            if on_sample is not None:
                on_sample(SampledRound(elapsed=elapsed, samples=samples, round=k))
            if load.finished():
                status = "load-failed" if load.error else "load-ended"
                store.add_note(run_id, f"load ended at {elapsed:.1f} s: {load.error or 'exit code 0'}")
                break
            k += 1
    except KeyboardInterrupt:
        status = "interrupted"
    finally:
        undo()
    return status


def _duplicate(ev: XidEvent, recent: list[tuple[int | None, int, float, str]]) -> bool:
    now = time.monotonic()
    recent[:] = [r for r in recent if now - r[2] < XID_DEDUP_S]
    if any(r[0] == ev.gpu and r[1] == ev.code and r[3] != ev.source for r in recent):
        return True
    recent.append((ev.gpu, ev.code, now, ev.source))
    return False


def report(db_path: str | Path) -> Verdict:
    """The verdict of the run in ``db_path``, rebuilt from the database alone."""
    store = Store.open(db_path, field="RUN.db")
    try:
        return build_verdict(store)
    finally:
        store.close()
