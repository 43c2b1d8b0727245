"""The sustained load of a burn-in: bf16 matmuls plus memory copies on every GPU (torch), the user's own
command, or - with the fake backend - a sleeper that reports the simulated GPUs' throughput.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from abc import ABC, abstractmethod

from trainsizer.errors import InputError
from trainsizer.probe.burnin.backend import Backend
from trainsizer.probe.burnin.rows import LoadDescription


class LoadUnavailable(RuntimeError):
    """The load cannot run here (no torch, no CUDA); the message says how to fix it."""


class Load(ABC):
    """Something that keeps the GPUs busy for the whole run."""

    name = "load"
    exit_code: int | None = None
    error: str | None = None

    @abstractmethod
    def start(self) -> None: ...

    @abstractmethod
    def stop(self) -> None: ...

    def throughput(self, elapsed: float) -> dict[int, float | None]:
        """Achieved TFLOPS per GPU since the previous call ({} when the load cannot tell)."""
        return {}

    def finished(self) -> bool:
        """True when the load ended on its own (crash, command exited)."""
        return False

    def describe(self) -> LoadDescription:
        return {"kind": self.name}


class SleeperLoad(Load):
    """No work at all: the fake backend's simulated GPUs are 'loaded' by definition."""

    name = "sleeper"

    def __init__(self, backend: Backend, gpus: list[int]):
        self.backend, self.gpus = backend, gpus

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def throughput(self, elapsed: float) -> dict[int, float | None]:
        return {g: self.backend.simulated_tflops(g, elapsed) for g in self.gpus}


class TorchLoad(Load):
    """Per GPU one thread: ``matmuls`` bf16 n x n matmuls then ``copies`` device copies of ``copy_mib``, repeated.

    TFLOPS are counted from the matmuls alone (2 n^3 each) over the time they took, so memory copies
    do not dilute the figure and a drop means the GPU computes slower.
    """

    name = "torch"

    def __init__(self, gpus: list[int], matmul_size: int = 8192, copy_mib: int = 1024, matmuls: int = 20,
                 copies: int = 4):
        try:
            import torch
        except ImportError as exc:
            raise LoadUnavailable("torch is not installed (pip install 'trainsizer[probe]'), or give your own "
                                  "load after --") from exc
        if not torch.cuda.is_available() or torch.cuda.device_count() < len(gpus):
            raise LoadUnavailable(f"torch sees {torch.cuda.device_count() if torch.cuda.is_available() else 0} "
                                  f"CUDA GPU(s), NVML {len(gpus)}; check CUDA_VISIBLE_DEVICES or give a command")
        if matmul_size < 256:
            raise InputError("--matmul-size", f"{matmul_size}: accepted 256 or more (default 8192)")
        self.torch = torch
        self.gpus, self.n, self.copy_mib, self.matmuls, self.copies = gpus, matmul_size, copy_mib, matmuls, copies
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._flops = dict.fromkeys(gpus, 0.0)
        self._busy_s = dict.fromkeys(gpus, 0.0)
        self._last = {g: (0.0, 0.0) for g in gpus}
        self._threads: list[threading.Thread] = []

    def describe(self) -> LoadDescription:
        return {"kind": self.name, "matmul_size": self.n, "dtype": "bfloat16", "copy_mib": self.copy_mib,
                "matmuls_per_batch": self.matmuls, "copies_per_batch": self.copies}

    def _worker(self, gpu: int) -> None:
        torch = self.torch
        try:
            dev = torch.device("cuda", gpu)
            torch.cuda.set_device(dev)
            a = torch.randn(self.n, self.n, device=dev, dtype=torch.bfloat16)
            b = torch.randn(self.n, self.n, device=dev, dtype=torch.bfloat16)
            c = torch.empty_like(a)
            src = torch.empty(self.copy_mib * 2**20 // 2, device=dev, dtype=torch.bfloat16)
            dst = torch.empty_like(src)
            flops = 2.0 * self.n ** 3 * self.matmuls
            while not self._stop.is_set():
                t0 = time.perf_counter()
                for _ in range(self.matmuls):
                    torch.mm(a, b, out=c)
                torch.cuda.synchronize(dev)
                t1 = time.perf_counter()
                for _ in range(self.copies):
                    dst.copy_(src)
                torch.cuda.synchronize(dev)
                with self._lock:
                    self._flops[gpu] += flops
                    self._busy_s[gpu] += t1 - t0
        except Exception as exc:  # CUDA errors (an XID often shows up here), out of memory
            self.error = f"GPU {gpu}: {type(exc).__name__}: {exc}"[:500]
            self.exit_code = 1

    def start(self) -> None:
        for g in self.gpus:
            t = threading.Thread(target=self._worker, args=(g,), name=f"burnin-gpu{g}", daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=60)
        if self.exit_code is None:
            self.exit_code = 0

    def finished(self) -> bool:
        return self.error is not None

    def throughput(self, elapsed: float) -> dict[int, float | None]:
        out: dict[int, float | None] = {}
        with self._lock:
            for g in self.gpus:
                f0, s0 = self._last[g]
                f1, s1 = self._flops[g], self._busy_s[g]
                out[g] = (f1 - f0) / (s1 - s0) / 1e12 if s1 > s0 else None
                if s1 > s0:
                    self._last[g] = (f1, s1)
        return out


class CommandLoad(Load):
    """The user's command (e.g. their training script), stopped with SIGINT then SIGTERM/SIGKILL at the end."""

    name = "command"

    def __init__(self, argv: list[str], grace_s: float = 30.0):
        if not argv:
            raise InputError("command", "empty; give the load after --, e.g. -- python train.py")
        self.argv, self.grace_s = argv, grace_s
        self.proc: subprocess.Popen | None = None
        self.stopped_by_us = False

    def describe(self) -> LoadDescription:
        return {"kind": self.name, "argv": self.argv}

    def start(self) -> None:
        try:
            # own process group: Ctrl-C reaches us first, and we stop the whole command tree in order
            self.proc = subprocess.Popen(self.argv, start_new_session=True)
        except OSError as exc:
            raise InputError("command", f"{self.argv[0]}: {exc.strerror or exc}") from None

    def finished(self) -> bool:
        if self.proc is not None and self.proc.poll() is not None and not self.stopped_by_us:
            self.exit_code = self.proc.returncode
            if self.exit_code != 0:
                self.error = f"command exited with code {self.exit_code}"
            return True
        return False

    def _signal(self, sig: int) -> None:
        assert self.proc is not None
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.stopped_by_us = True
            for sig, wait in ((signal.SIGINT, self.grace_s), (signal.SIGTERM, 10.0), (signal.SIGKILL, 10.0)):
                self._signal(sig)
                try:
                    self.proc.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        if self.exit_code is None:
            self.exit_code = self.proc.returncode
