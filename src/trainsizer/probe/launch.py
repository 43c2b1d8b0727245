"""Running a probe's ranks under torchrun on this node: one process group, streamed progress lines, a
timeout that stops torchrun and every rank, and the last lines of output kept for the error message."""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path


def torchrun_command(module: str, nproc: int, args: Sequence[str]) -> list[str]:
    """``python -m torch.distributed.run --standalone --nproc-per-node N -m MODULE ARGS`` (PyTorch torchrun docs)."""
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(nproc),
            "-m", module, *args]


def rank_environment() -> dict[str, str]:
    """The ranks import this very trainsizer (a checkout run with PYTHONPATH=src included) and start quietly."""
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")  # torchrun's own default, set here to skip its banner
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    return env


def run_streaming(cmd: Sequence[str], env: dict[str, str], timeout_s: float | None, progress_prefix: str = "",
                  progress: Callable[[str], None] | None = None) -> tuple[int, list[str]]:
    """Run ``cmd`` in its own process group; pass lines starting with ``progress_prefix`` on, keep the last
    lines for an error message. Returns (exit status, -9 when timed out; last lines)."""
    tail: collections.deque[str] = collections.deque(maxlen=30)
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
