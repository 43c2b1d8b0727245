"""XIDs from the kernel log: ``NVRM: Xid (PCI:0000:10:1c): 63, pid=...`` lines in ``/dev/kmsg``, else ``dmesg``.

Best effort by design: when neither is readable (no root, ``kernel.dmesg_restrict``, a container) the
reader says so in ``note`` and reports nothing; it never raises.
"""

from __future__ import annotations

import os
import re
import subprocess
import time

from trainsizer.probe.burnin.backend import XidEvent

XID_RE = re.compile(r"NVRM: Xid \((?:PCI:)?(?P<bus>[0-9a-fA-F]+(?::[0-9a-fA-F]+)*(?:\.[0-9a-fA-F]+)?)\): (?P<code>\d+)")


def bus_key(bus_id: str) -> str:
    """``00000000:10:1C.0`` (NVML) and ``0000:10:1c`` (kernel log) -> ``10:1c`` (bus:device)."""
    parts = bus_id.strip().lower().split(".")[0].split(":")
    return ":".join(p.lstrip("0").rjust(2, "0") for p in parts[-2:])


def parse_xid_line(line: str) -> tuple[str, int] | None:
    """(bus key, XID code) of a kernel-log line, or None when it is not an XID line."""
    m = XID_RE.search(line)
    return (bus_key(m["bus"]), int(m["code"])) if m else None


class KernelLogXids:
    """New XID lines since the reader started, from /dev/kmsg (non-blocking) or, failing that, ``dmesg``."""

    def __init__(self, bus_to_gpu: dict[str, int], path: str = "/dev/kmsg", dmesg_every_s: float = 30.0,
                 use_dmesg: bool = True):
        self.bus_to_gpu = bus_to_gpu
        self.source = ""
        self.note = ""
        self._fd: int | None = None
        self._buf = b""
        self._dmesg_seen: set[str] = set()
        self._dmesg_every_s = dmesg_every_s
        self._dmesg_next = 0.0
        try:
            self._fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            os.lseek(self._fd, 0, os.SEEK_END)  # only what happens from now on
            self.source = "kmsg"
            return
        except OSError as exc:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
            self.note = f"{path} not readable ({exc.strerror or exc})"
        if use_dmesg:
            lines = self._dmesg()
            if lines is not None:
                self._dmesg_seen = {ln for ln in lines if parse_xid_line(ln)}
                self._dmesg_next = time.monotonic() + dmesg_every_s
                self.source = "dmesg"
                return
            self.note += "; dmesg not readable"
        self.note += ": XIDs only from NVML events"

    @staticmethod
    def _dmesg() -> list[str] | None:
        try:
            proc = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=10, check=False)
        except (OSError, subprocess.SubprocessError):
            return None
        return proc.stdout.splitlines() if proc.returncode == 0 else None

    def _event(self, line: str, elapsed: float) -> XidEvent | None:
        parsed = parse_xid_line(line)
        if not parsed:
            return None
        bus, code = parsed
        return XidEvent(gpu=self.bus_to_gpu.get(bus), code=code, source=self.source, elapsed=elapsed,
                        message=line.strip()[:500])

    def poll(self, elapsed: float) -> list[XidEvent]:
        """XIDs logged since the previous call; never blocks, never raises."""
        out: list[XidEvent] = []
        if self._fd is not None:
            while True:
                try:
                    chunk = os.read(self._fd, 8192)
                except BlockingIOError:
                    break
                except BrokenPipeError:  # kmsg records were overwritten before we read them
                    continue
                except OSError:
                    break
                if not chunk:
                    break
                self._buf += chunk
            *lines, self._buf = self._buf.split(b"\n")
            for raw in lines:
                text = raw.decode("utf-8", "replace")
                ev = self._event(text.split(";", 1)[-1], elapsed)
                if ev:
                    out.append(ev)
        elif self.source == "dmesg" and time.monotonic() >= self._dmesg_next:
            self._dmesg_next = time.monotonic() + self._dmesg_every_s
            for line in self._dmesg() or []:
                if line not in self._dmesg_seen and parse_xid_line(line):
                    self._dmesg_seen.add(line)
                    ev = self._event(line, elapsed)
                    if ev:
                        out.append(ev)
        return out

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
