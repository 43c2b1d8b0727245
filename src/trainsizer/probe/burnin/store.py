"""The run database: SQLite in WAL mode, one row per GPU per sample, committed every sampling round.

WAL with ``synchronous=NORMAL`` makes each commit survive a crash or ``kill -9`` of this process (only an
OS crash or power loss can drop the last transactions), so at most the round in flight is lost. Committed rows
sit in ``RUN.db-wal`` until a checkpoint copies them into ``RUN.db``: a run checkpoints every ``CHECKPOINT_S``
seconds and at its end, so the ``.db`` alone (copied without its ``-wal`` after a crash) holds all but the last
few seconds. The verdict is rebuilt from the files alone (``trainsizer burnin report RUN.db``), read-only.
"""

from __future__ import annotations

import contextlib
import json
import socket
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

from trainsizer.errors import N_, InputError
from trainsizer.probe.burnin.backend import SAMPLE_FIELDS, GpuInfo, GpuSample, XidEvent
from trainsizer.probe.burnin.rows import RunConfig, RunRow, SegmentRow, XidRow

SCHEMA_VERSION = 1
# Committed rows are copied from the -wal into the .db at least this often. SQLite's own automatic checkpoint
# waits for 1,000 WAL pages (https://www.sqlite.org/wal.html#automatic_checkpoint): hours of samples at 1 s.
CHECKPOINT_S = 5.0
WAL_SIDE_FILES = ("-wal", "-shm")  # beside RUN.db while it is open, and after a crash (sqlite.org/wal.html)

_INT_FIELDS = {"throttle_mask", "pcie_replays", "remap_pending", "remap_failure"} | {
    f for f in SAMPLE_FIELDS if f.startswith(("ecc_", "remapped_"))}
_COLUMNS = ", ".join(f"{f} {'INTEGER' if f in _INT_FIELDS else 'REAL'}" for f in SAMPLE_FIELDS)

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY, started_at REAL NOT NULL, duration_s REAL NOT NULL, interval_s REAL NOT NULL,
    backend TEXT NOT NULL, load TEXT NOT NULL, config TEXT NOT NULL, hostname TEXT,
    status TEXT NOT NULL, elapsed_s REAL NOT NULL DEFAULT 0, ended_at REAL,
    load_exit_code INTEGER, load_error TEXT);
CREATE TABLE IF NOT EXISTS segments (
    run_id INTEGER NOT NULL, segment INTEGER NOT NULL, started_at REAL NOT NULL, start_elapsed REAL NOT NULL,
    ended_at REAL, status TEXT, PRIMARY KEY (run_id, segment));
CREATE TABLE IF NOT EXISTS gpus (
    run_id INTEGER NOT NULL, gpu INTEGER NOT NULL, name TEXT, uuid TEXT, vendor TEXT, slowdown_c REAL,
    slowdown_source TEXT, pci_bus_id TEXT, PRIMARY KEY (run_id, gpu));
CREATE TABLE IF NOT EXISTS samples (
    run_id INTEGER NOT NULL, gpu INTEGER NOT NULL, segment INTEGER NOT NULL, t REAL NOT NULL, elapsed REAL NOT NULL,
    {_COLUMNS});
CREATE INDEX IF NOT EXISTS samples_run_gpu ON samples (run_id, gpu, elapsed);
CREATE TABLE IF NOT EXISTS xids (
    run_id INTEGER NOT NULL, gpu INTEGER, t REAL NOT NULL, elapsed REAL NOT NULL, code INTEGER NOT NULL,
    source TEXT, message TEXT);
CREATE TABLE IF NOT EXISTS notes (run_id INTEGER NOT NULL, t REAL NOT NULL, text TEXT NOT NULL);
"""


class Store:
    """One burn-in database file (one run per file)."""

    def __init__(self, conn: sqlite3.Connection, path: Path):
        self.conn, self.path = conn, path
        self._insert = (f"INSERT INTO samples (run_id, gpu, segment, t, elapsed, {', '.join(SAMPLE_FIELDS)}) "
                        f"VALUES ({', '.join('?' * (5 + len(SAMPLE_FIELDS)))})")

    @staticmethod
    def _connect(path: Path) -> sqlite3.Connection:
        conn = sqlite3.connect(str(path), timeout=10.0)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        return conn

    @staticmethod
    def _connect_read_only(path: Path) -> sqlite3.Connection:
        """A connection that cannot change the file: ``mode=ro`` (https://www.sqlite.org/uri.html), no journal mode
        set. Without a ``-wal`` beside it the ``.db`` holds every row, and it is opened ``immutable=1`` too: SQLite
        then creates no ``-shm``/``-wal`` beside it (it would, for a WAL-mode file) and reads it in a read-only
        folder (sqlite.org/wal.html#readonly: a WAL file there needs its -shm, or immutable)."""
        immutable = "" if side_file(path, "-wal").exists() else "&immutable=1"
        conn = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro{immutable}", uri=True, timeout=10.0)
        conn.row_factory = sqlite3.Row
        return conn

    @classmethod
    def create(cls, path: str | Path, *, duration_s: float, interval_s: float, backend: str, load: str,
               config: RunConfig, gpus: list[GpuInfo]) -> tuple[Store, int]:
        p = Path(path)
        if p.exists():
            raise InputError("--db", f"{p} exists; pass --resume {p} to continue that run, or choose another path")
        if not p.parent.is_dir():
            raise InputError("--db", f"folder {p.parent} does not exist")
        refuse_leftovers(p, "--db")
        try:
            return cls._create(p, duration_s, interval_s, backend, load, config, gpus)
        except sqlite3.Error as exc:
            raise InputError("--db", N_("cannot write {path} ({reason}); accepted: a path on a disk with free "
                                        "space in a folder you can write to"), path=str(p), reason=str(exc)) from None

    @classmethod
    def _create(cls, p: Path, duration_s: float, interval_s: float, backend: str, load: str, config: RunConfig,
                gpus: list[GpuInfo]) -> tuple[Store, int]:
        store = cls(cls._connect(p), p)
        with store.conn:
            store.conn.executescript(SCHEMA)
            store.conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            cur = store.conn.execute(
                "INSERT INTO runs (started_at, duration_s, interval_s, backend, load, config, hostname, status) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, 'running')",
                (time.time(), duration_s, interval_s, backend, load, json.dumps(config), socket.gethostname()))
            run_id = int(cur.lastrowid)
            store.conn.executemany(
                "INSERT INTO gpus VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(run_id, g.index, g.name, g.uuid, g.vendor, g.slowdown_c, g.slowdown_source, g.pci_bus_id)
                 for g in gpus])
        store.checkpoint()  # the .db alone is a burn-in database from the start
        return store, run_id

    @classmethod
    def open(cls, path: str | Path, field: str = "RUN.db", write: bool = False) -> Store:
        """The run in ``path``: read-only (``report``), or with ``write`` to add to it (``--resume``: a database
        that cannot be written is refused here, before any load starts)."""
        p = Path(path)
        if not p.is_file():
            raise InputError(field, f"no such file: {p}")
        try:
            conn = cls._connect(p) if write else cls._connect_read_only(p)
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        except sqlite3.DatabaseError as exc:
            if write and isinstance(exc, sqlite3.OperationalError):
                raise _unwritable(p, field, exc) from None
            raise InputError(field, f"{p} is not a burn-in database ({exc})") from None
        if not {"runs", "samples", "gpus"} <= tables:
            conn.close()
            if not side_file(p, "-wal").exists() and _wal_mode(p):
                raise InputError(field, N_("{path} holds no burn-in run, and its {wal} is missing: a run that "
                                           "ended in a crash may have left its rows there; accepted: the database "
                                           "with its -wal file beside it"), path=str(p), wal=side_file(p, "-wal").name)
            raise InputError(field, f"{p} is not a burn-in database (made by trainsizer burnin)")
        store = cls(conn, p)
        if store.run() is None:
            raise InputError(field, f"{p} holds no run")
        if write:
            try:  # a write that changes nothing: SQLite says 'readonly' only when it writes
                with conn:
                    conn.execute("UPDATE meta SET value = value WHERE key = 'schema_version'")
            except sqlite3.OperationalError as exc:
                conn.close()
                raise _unwritable(p, field, exc) from None
        return store

    # --- writing -------------------------------------------------------------------------------------------
    def begin_segment(self, run_id: int, start_elapsed: float) -> int:
        row = self.conn.execute("SELECT COALESCE(MAX(segment), -1) + 1 FROM segments WHERE run_id = ?",
                                (run_id,)).fetchone()
        segment = int(row[0])
        with self.conn:
            self.conn.execute("INSERT INTO segments VALUES (?, ?, ?, ?, NULL, 'running')",
                              (run_id, segment, time.time(), start_elapsed))
            self.conn.execute("UPDATE runs SET status = 'running' WHERE id = ?", (run_id,))
        return segment

    def add_samples(self, run_id: int, segment: int, t: float, elapsed: float, samples: list[GpuSample]) -> None:
        self.conn.executemany(self._insert, [
            (run_id, s.gpu, segment, t, elapsed, *(getattr(s, f) for f in SAMPLE_FIELDS)) for s in samples])
        self.conn.execute("UPDATE runs SET elapsed_s = ? WHERE id = ?", (elapsed, run_id))

    def add_xid(self, run_id: int, t: float, ev: XidEvent) -> None:
        self.conn.execute("INSERT INTO xids VALUES (?, ?, ?, ?, ?, ?, ?)",
                          (run_id, ev.gpu, t, ev.elapsed, ev.code, ev.source, ev.message))

    def add_note(self, run_id: int, text: str) -> None:
        self.conn.execute("INSERT INTO notes VALUES (?, ?, ?)", (run_id, time.time(), text))

    def commit(self) -> None:
        self.conn.commit()

    def rollback(self) -> None:
        """Drop the round in flight after a failed write (what was committed stays); never raises."""
        with contextlib.suppress(sqlite3.Error):
            self.conn.rollback()

    def checkpoint(self, mode: str = "PASSIVE") -> None:
        """Copy the committed rows from the -wal into the .db (https://www.sqlite.org/pragma.html#pragma_wal_checkpoint:
        PASSIVE waits for no reader; TRUNCATE also empties the -wal, at the end of a run)."""
        if mode not in ("PASSIVE", "TRUNCATE"):
            raise ValueError(mode)
        self.conn.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()

    def set_duration(self, run_id: int, duration_s: float) -> None:
        with self.conn:
            self.conn.execute("UPDATE runs SET duration_s = ? WHERE id = ?", (duration_s, run_id))

    def finish(self, run_id: int, segment: int, status: str, exit_code: int | None, error: str | None) -> None:
        now = time.time()
        with self.conn:
            self.conn.execute("UPDATE runs SET status = ?, ended_at = ?, load_exit_code = ?, load_error = ? "
                              "WHERE id = ?", (status, now, exit_code, error, run_id))
            self.conn.execute("UPDATE segments SET ended_at = ?, status = ? WHERE run_id = ? AND segment = ?",
                              (now, status, run_id, segment))

    def close(self) -> None:
        self.conn.close()

    # --- reading -------------------------------------------------------------------------------------------
    def run(self, run_id: int | None = None) -> RunRow | None:
        sql = "SELECT * FROM runs WHERE id = ?" if run_id is not None else "SELECT * FROM runs ORDER BY id DESC"
        row = self.conn.execute(sql, (run_id,) if run_id is not None else ()).fetchone()
        if row is None:
            return None
        out = dict(row)
        out["config"] = json.loads(out["config"])  # the column holds the config's JSON
        return RunRow(**out)

    def gpus(self, run_id: int) -> list[GpuInfo]:
        rows = self.conn.execute("SELECT * FROM gpus WHERE run_id = ? ORDER BY gpu", (run_id,))
        return [GpuInfo(index=r["gpu"], name=r["name"], uuid=r["uuid"], vendor=r["vendor"], slowdown_c=r["slowdown_c"],
                        slowdown_source=r["slowdown_source"] or "", pci_bus_id=r["pci_bus_id"] or "") for r in rows]

    def samples(self, run_id: int, gpu: int) -> Iterator[sqlite3.Row]:
        return self.conn.execute("SELECT * FROM samples WHERE run_id = ? AND gpu = ? ORDER BY elapsed, rowid",
                                 (run_id, gpu))

    def aggregate(self, run_id: int, gpu: int, exprs: dict[str, str]) -> dict[str, float | None]:
        """SQL aggregates over one GPU's samples; ``exprs`` are trusted expressions over SAMPLE_FIELDS."""
        sql = ", ".join(f"{expr} AS {name}" for name, expr in exprs.items())
        row = self.conn.execute(f"SELECT {sql} FROM samples WHERE run_id = ? AND gpu = ?", (run_id, gpu)).fetchone()
        return dict(row)

    def first_last(self, run_id: int, gpu: int, column: str) -> tuple[Any, Any]:
        """The first and last non-NULL value of a sample column (in elapsed order)."""
        if column not in SAMPLE_FIELDS:
            raise ValueError(column)
        out = []
        for order in ("ASC", "DESC"):
            row = self.conn.execute(f"SELECT {column} FROM samples WHERE run_id = ? AND gpu = ? AND {column} IS NOT "
                                    f"NULL ORDER BY elapsed {order}, rowid {order} LIMIT 1", (run_id, gpu)).fetchone()
            out.append(row[0] if row else None)
        return out[0], out[1]

    def series(self, run_id: int, gpu: int, column: str) -> list[tuple[float, float]]:
        """(elapsed, value) of a sample column where it is not NULL."""
        if column not in SAMPLE_FIELDS:
            raise ValueError(column)
        return [(r[0], r[1]) for r in self.conn.execute(
            f"SELECT elapsed, {column} FROM samples WHERE run_id = ? AND gpu = ? AND {column} IS NOT NULL "
            f"ORDER BY elapsed, rowid", (run_id, gpu))]

    def count_samples(self, run_id: int, gpu: int | None = None) -> int:
        if gpu is None:
            return int(self.conn.execute("SELECT COUNT(*) FROM samples WHERE run_id = ?", (run_id,)).fetchone()[0])
        return int(self.conn.execute("SELECT COUNT(*) FROM samples WHERE run_id = ? AND gpu = ?",
                                     (run_id, gpu)).fetchone()[0])

    def last_sample(self, run_id: int) -> tuple[float, float] | None:
        row = self.conn.execute("SELECT MAX(t), MAX(elapsed) FROM samples WHERE run_id = ?", (run_id,)).fetchone()
        return (row[0], row[1]) if row[0] is not None else None

    def xids(self, run_id: int) -> list[XidRow]:
        return [XidRow(**r) for r in self.conn.execute("SELECT * FROM xids WHERE run_id = ? ORDER BY t", (run_id,))]

    def notes(self, run_id: int) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT text FROM notes WHERE run_id = ? ORDER BY t", (run_id,))]

    def segments(self, run_id: int) -> list[SegmentRow]:
        return [SegmentRow(**r) for r in self.conn.execute("SELECT * FROM segments WHERE run_id = ? ORDER BY segment",
                                                   (run_id,))]


def side_file(path: Path, suffix: str) -> Path:
    """``RUN.db-wal`` or ``RUN.db-shm`` beside ``RUN.db``."""
    return path.with_name(path.name + suffix)


def _wal_mode(path: Path) -> bool:
    """The file's header says WAL mode: bytes 18 and 19 are 2 (https://www.sqlite.org/fileformat2.html, 1.3.3)."""
    try:
        with path.open("rb") as f:
            head = f.read(20)
    except OSError:
        return False
    return len(head) == 20 and head.startswith(b"SQLite format 3\x00") and head[18:20] == b"\x02\x02"


def refuse_leftovers(path: Path, field: str) -> None:
    """A new run's database path with a ``-wal`` or ``-shm`` and no ``.db``: they are left from a run that did not
    end cleanly and whose database was renamed or moved (the -wal holds its last rows, and SQLite would take it
    for the new database's own and discard it: sqlite.org/wal.html). Refused, whatever --overwrite says."""
    if path.exists():
        return
    left = [side_file(path, s) for s in WAL_SIDE_FILES if side_file(path, s).exists()]
    if left:
        raise InputError(field, N_("{files} beside {path} are left from a run that did not end cleanly (the -wal "
                                   "holds its last samples); to keep them, move them beside that run's database as "
                                   "NAME.db-wal and NAME.db-shm and run trainsizer burnin report NAME.db; "
                                   "accepted: a path without them (move them away or choose another --db)"),
                         files=" and ".join(f.name for f in left), path=str(path))


def _unwritable(path: Path, field: str, exc: sqlite3.Error) -> InputError:
    return InputError(field, N_("{path} cannot be written ({reason}); accepted: a database in a folder you can "
                                "write to: copy it there with its -wal file, or judge it as it is with trainsizer "
                                "burnin report {path}"), path=str(path), reason=str(exc))
