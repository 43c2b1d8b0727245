"""Prometheus gauges of a running burn-in (``--metrics-port``), served on 127.0.0.1 unless told otherwise.

prometheus-client is imported only when an exporter is asked for; each exporter has its own registry.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from trainsizer.errors import InputError
from trainsizer.probe.burnin.backend import THROTTLE_REASONS, GpuInfo, GpuSample

PREFIX = "trainsizer_burnin"


def check_port(port: int, host: str) -> None:
    if not isinstance(port, int) or not 1 <= port <= 65535:
        raise InputError("--metrics-port", f"{port!r}: accepted 1..65535")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        if host != "localhost":
            raise InputError("--metrics-host", f"{host!r}: accepted an IP address (default 127.0.0.1, "
                                               f"0.0.0.0 for every interface) or localhost") from None


class Exporter:
    """Gauges per GPU: temperature, power, clocks, throttle reasons, ECC, remapped rows, PCIe replays, XIDs,
    throughput and utilisation."""

    def __init__(self, port: int, gpus: list[GpuInfo], host: str = "127.0.0.1"):
        check_port(port, host)
        try:
            import prometheus_client as prom
        except ImportError:
            raise InputError("--metrics-port", "needs prometheus-client (pip install 'trainsizer[burnin]')") from None
        self.registry = reg = prom.CollectorRegistry()
        labels = ["gpu", "uuid", "name"]
        self._labels = {g.index: (str(g.index), g.uuid, g.name) for g in gpus}

        def gauge(name: str, doc: str, extra: tuple[str, ...] = ()) -> Any:
            return prom.Gauge(f"{PREFIX}_{name}", doc, [*labels, *extra], registry=reg)

        self.g = {
            "temperature_c": gauge("temperature_celsius", "GPU temperature (NVML_TEMPERATURE_GPU)"),
            "power_w": gauge("power_watts", "Power draw"),
            "sm_clock_mhz": gauge("sm_clock_mhz", "SM clock"),
            "mem_clock_mhz": gauge("memory_clock_mhz", "Memory clock"),
            "throttle_mask": gauge("throttle_reasons_mask", "Clock event (throttle) reason bit mask"),
            "pcie_replays": gauge("pcie_replays", "PCIe replay counter"),
            "util_gpu": gauge("utilization_gpu_percent", "GPU utilisation"),
            "util_mem": gauge("utilization_memory_percent", "Memory utilisation"),
            "tflops": gauge("throughput_tflops", "Achieved TFLOPS of the load over the last interval"),
        }
        self.throttle = gauge("throttle_active", "1 while the clock event reason is active", ("reason",))
        self.ecc = gauge("ecc_errors", "ECC error counts", ("type", "counter"))
        self.remapped = gauge("remapped_rows", "Remapped rows", ("kind",))
        self.xids = gauge("xid_errors", "XIDs seen during the run", ())
        self.xid_last = gauge("xid_last_code", "Code of the last XID seen during the run")
        self.elapsed = prom.Gauge(f"{PREFIX}_elapsed_seconds", "Elapsed load time of the run", registry=reg)
        self.remaining = prom.Gauge(f"{PREFIX}_remaining_seconds", "Load time left in the run", registry=reg)
        for g in gpus:
            self.xids.labels(*self._labels[g.index]).set(0)
        try:
            result = prom.start_http_server(port, addr=host, registry=reg)
        except OSError as exc:
            raise InputError("--metrics-port", f"cannot listen on {host}:{port} ({exc.strerror or exc}); "
                                               f"choose another port") from None
        self._server = result[0] if isinstance(result, tuple) else None
        self.port, self.host = port, host

    def update(self, samples: list[GpuSample], xid_counts: dict[int, int], last_xid: dict[int, int],
               elapsed: float, remaining: float) -> None:
        self.elapsed.set(elapsed)
        self.remaining.set(max(remaining, 0.0))
        for s in samples:
            lab = self._labels.get(s.gpu)
            if lab is None:
                continue
            for attr, gauge in self.g.items():
                value = getattr(s, attr)
                if value is not None:
                    gauge.labels(*lab).set(value)
            if s.throttle_mask is not None:
                for bit, (reason, _) in THROTTLE_REASONS.items():
                    self.throttle.labels(*lab, reason).set(1 if s.throttle_mask & bit else 0)
            for typ in ("corrected", "uncorrected"):
                for counter in ("volatile", "aggregate"):
                    value = getattr(s, f"ecc_{counter}_{typ}")
                    if value is not None:
                        self.ecc.labels(*lab, typ, counter).set(value)
            for kind in ("corrected", "uncorrected"):
                value = getattr(s, f"remapped_{kind}")
                if value is not None:
                    self.remapped.labels(*lab, kind).set(value)
            self.xids.labels(*lab).set(xid_counts.get(s.gpu, 0))
            if s.gpu in last_xid:
                self.xid_last.labels(*lab).set(last_xid[s.gpu])

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
