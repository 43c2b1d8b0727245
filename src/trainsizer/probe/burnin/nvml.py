"""Real NVIDIA GPUs through NVML (``pynvml`` from the nvidia-ml-py package, imported only here).

Every reading that a GPU or driver does not support is stored as None rather than failing the run.
XIDs come from an NVML event set (``nvmlEventTypeXidCriticalError``) and from the kernel log.
"""

from __future__ import annotations

from typing import Any

from trainsizer.probe.burnin.backend import Backend, GpuInfo, GpuSample, XidEvent
from trainsizer.probe.burnin.xid import KernelLogXids, bus_key


class BackendUnavailable(RuntimeError):
    """NVML cannot be used here (not installed, no driver, no GPU); the message says which."""


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


class NvmlBackend(Backend):
    """NVML telemetry for every visible NVIDIA GPU."""

    name = "nvml"

    def __init__(self, default_slowdown_c: float | None = None, default_source: str = "", kernel_log: bool = True):
        try:
            import pynvml
        except ImportError as exc:
            raise BackendUnavailable("nvidia-ml-py is not installed (pip install 'trainsizer[burnin]')") from exc
        self.nv = nv = pynvml
        try:
            nv.nvmlInit()
        except nv.NVMLError as exc:
            raise BackendUnavailable(f"NVML did not initialise ({exc}): no NVIDIA driver or GPU") from None
        try:
            count = nv.nvmlDeviceGetCount()
        except nv.NVMLError as exc:
            nv.nvmlShutdown()
            raise BackendUnavailable(f"NVML could not count GPUs ({exc})") from None
        if count == 0:
            nv.nvmlShutdown()
            raise BackendUnavailable("NVML found no GPU")
        self.handles = [nv.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        self._info: list[GpuInfo] = []
        for i, h in enumerate(self.handles):
            slowdown = self._safe(nv.nvmlDeviceGetTemperatureThreshold, h, nv.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN)
            pci = self._safe(nv.nvmlDeviceGetPciInfo, h)
            self._info.append(GpuInfo(
                index=i, name=_text(self._safe(nv.nvmlDeviceGetName, h) or f"GPU {i}"),
                uuid=_text(self._safe(nv.nvmlDeviceGetUUID, h) or ""), vendor="nvidia",
                slowdown_c=float(slowdown) if slowdown else default_slowdown_c,
                slowdown_source="NVML NVML_TEMPERATURE_THRESHOLD_SLOWDOWN" if slowdown else default_source,
                pci_bus_id=_text(pci.busId) if pci is not None else ""))
        self._reasons = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None)
        self._events = self._event_set()
        bus_map = {bus_key(g.pci_bus_id): g.index for g in self._info if g.pci_bus_id}
        self.kernel_log = KernelLogXids(bus_map) if kernel_log else None

    def _safe(self, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except self.nv.NVMLError:
            return None

    def _event_set(self) -> Any:
        nv = self.nv
        try:
            es = nv.nvmlEventSetCreate()
        except nv.NVMLError:
            return None
        registered = 0
        for h in self.handles:
            try:
                nv.nvmlDeviceRegisterEvents(h, nv.nvmlEventTypeXidCriticalError, es)
                registered += 1
            except nv.NVMLError:
                pass  # not supported on this GPU (e.g. some consumer boards)
        if not registered:
            self._safe(nv.nvmlEventSetFree, es)
            return None
        return es

    def devices(self) -> list[GpuInfo]:
        return list(self._info)

    def _throttle(self, h: Any) -> int | None:
        nv = self.nv
        if self._reasons is not None:
            try:
                return int(self._reasons(h))
            except nv.NVMLError:
                self._reasons = None  # older driver: the pre-rename name
        return self._safe(nv.nvmlDeviceGetCurrentClocksThrottleReasons, h)

    def sample(self, elapsed: float) -> list[GpuSample]:
        nv, safe = self.nv, self._safe
        out = []
        for i, h in enumerate(self.handles):
            power = safe(nv.nvmlDeviceGetPowerUsage, h)  # milliwatts
            rows = safe(nv.nvmlDeviceGetRemappedRows, h)  # [corrected, uncorrected, pending, failure]
            util = safe(nv.nvmlDeviceGetUtilizationRates, h)

            def ecc(kind: int, counter: int, h: Any = h) -> int | None:
                return safe(nv.nvmlDeviceGetTotalEccErrors, h, kind, counter)

            corr, unc = nv.NVML_MEMORY_ERROR_TYPE_CORRECTED, nv.NVML_MEMORY_ERROR_TYPE_UNCORRECTED
            out.append(GpuSample(
                gpu=i, temperature_c=safe(nv.nvmlDeviceGetTemperature, h, nv.NVML_TEMPERATURE_GPU),
                power_w=power / 1000.0 if power is not None else None,
                sm_clock_mhz=safe(nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_SM),
                mem_clock_mhz=safe(nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_MEM),
                throttle_mask=self._throttle(h),
                ecc_volatile_corrected=ecc(corr, nv.NVML_VOLATILE_ECC),
                ecc_volatile_uncorrected=ecc(unc, nv.NVML_VOLATILE_ECC),
                ecc_aggregate_corrected=ecc(corr, nv.NVML_AGGREGATE_ECC),
                ecc_aggregate_uncorrected=ecc(unc, nv.NVML_AGGREGATE_ECC),
                remapped_corrected=int(rows[0]) if rows else None, remapped_uncorrected=int(rows[1]) if rows else None,
                remap_pending=int(bool(rows[2])) if rows else None, remap_failure=int(bool(rows[3])) if rows else None,
                pcie_replays=safe(nv.nvmlDeviceGetPcieReplayCounter, h),
                util_gpu=float(util.gpu) if util is not None else None,
                util_mem=float(util.memory) if util is not None else None))
        return out

    def poll_xids(self, elapsed: float) -> list[XidEvent]:
        nv = self.nv
        out: list[XidEvent] = []
        if self._events is not None:
            for _ in range(1000):  # drain what is queued, without waiting
                try:
                    data = nv.nvmlEventSetWait_v2(self._events, 0)
                except nv.NVMLError:  # NVML_ERROR_TIMEOUT: nothing queued
                    break
                if not data.eventType & nv.nvmlEventTypeXidCriticalError:
                    continue
                gpu = self._safe(nv.nvmlDeviceGetIndex, data.device)
                out.append(XidEvent(gpu=gpu, code=int(data.eventData), source="nvml", elapsed=elapsed,
                                    message=f"NVML nvmlEventTypeXidCriticalError, XID {int(data.eventData)}"))
        if self.kernel_log is not None:
            out += self.kernel_log.poll(elapsed)
        return out

    @property
    def notes(self) -> list[str]:
        notes = []
        if self._events is None:
            notes.append("NVML XID events not supported here")
        if self.kernel_log is not None and self.kernel_log.note:
            notes.append(self.kernel_log.note)
        return notes

    def close(self) -> None:
        if self.kernel_log is not None:
            self.kernel_log.close()
        if self._events is not None:
            self._safe(self.nv.nvmlEventSetFree, self._events)
            self._events = None
        self._safe(self.nv.nvmlShutdown)
