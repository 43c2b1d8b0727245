"""Running a probe's ranks under torchrun on this node: one process group, streamed progress lines, a
timeout that stops torchrun and every rank, and the last lines of output kept for the error message."""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn


class LaunchError(RuntimeError):
    """torchrun or a rank failed (or timed out); the message ends with the ranks' last output lines."""


def torchrun_command(module: str, nproc: int, args: Sequence[str]) -> list[str]:
    """``python -m torch.distributed.run --standalone --nproc-per-node N -m MODULE ARGS`` (PyTorch torchrun docs)."""
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(nproc),
            "-m", module, *args]


def child_environment() -> dict[str, str]:
    """This environment, with this very trainsizer first on PYTHONPATH (a checkout run from src included)."""
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[3])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    return env


def rank_environment() -> dict[str, str]:
    """The ranks import this very trainsizer and start quietly."""
    env = child_environment()
    env.setdefault("OMP_NUM_THREADS", "1")  # torchrun's own default, set here to skip its banner
    return env


def leave_rank(code: int) -> NoReturn:
    """End a rank whose process group is destroyed without interpreter finalization, where gloo's worker
    threads can still drop tensors that need the GIL and abort the rank (SIGABRT; pytorch/pytorch#179291)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def run_ranks(module: str, nproc: int, args: Sequence[str], timeout_s: float | None = None,
              progress_prefix: str = "", progress: Callable[[str], None] | None = None) -> str:
    """Run ``python -m MODULE ARGS --out FILE`` on ``nproc`` local ranks under torchrun and return what rank 0
    wrote to FILE; raise LaunchError with the last output lines when a rank fails or the timeout passes."""
    with tempfile.TemporaryDirectory(prefix="trainsizer-probe-") as tmp:
        out = Path(tmp) / "result.json"
        cmd = torchrun_command(module, nproc, [*args, "--out", str(out)])
        code, tail = run_streaming(cmd, rank_environment(), timeout_s, progress_prefix, progress)
        if code != 0 or not out.is_file():
            detail = "\n".join(tail).strip() or "(no output)"
            raise LaunchError(f"torchrun exited with status {code}" + (" (timed out)" if code == -9 else "")
                              + f"; last output:\n{detail}")
        return out.read_text(encoding="utf-8")


def run_streaming(cmd: Sequence[str], env: dict[str, str], timeout_s: float | None, progress_prefix: str = "",
                  progress: Callable[[str], None] | None = None) -> tuple[int, list[str]]:
    """Run ``cmd`` in its own process group; pass lines starting with ``progress_prefix`` on, keep the last
    lines for an error message. Returns (exit status, -9 when timed out; last lines)."""
    tail: collections.deque[str] = collections.deque(maxlen=80)  # torchrun's own summary fills ~25
    proc = subprocess.Popen(list(cmd), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    timed_out = threading.Event()

    def kill() -> None:
        timed_out.set()
        kill_group(proc)

    timer = threading.Timer(timeout_s, kill) if timeout_s else None
    if timer:
        timer.start()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.rstrip("\n")
            if progress_prefix and line.startswith(progress_prefix):
                if progress is not None:
                    progress(line[len(progress_prefix):])
            else:
                tail.append(line)
        code = proc.wait()
    except BaseException:
        kill_group(proc)
        raise
    finally:
        if timer:
            timer.cancel()
    return (-9 if timed_out.is_set() else code), list(tail)


def kill_group(proc: subprocess.Popen[str]) -> None:
    """Stop torchrun and its ranks (they share the process group started for them)."""
    if proc.poll() is not None:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=5)
            return
        except subprocess.TimeoutExpired:
            continue
