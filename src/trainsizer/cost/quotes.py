"""Comparing rental quotes on delivered compute, not on the price per card-hour.

Each offer's delivered PFLOPS = GPUs x dense peak x the MFU that the performance model predicts
for the job on the offer's own topology (NVSwitch, pairwise NVLink, PCIe; InfiniBand or RoCE).
Risk flags follow the seed guide's evaluation list (卡间拓扑, 存储配套, 运维保障, 计费粒度, the
one-third rule), each with its reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field, model_validator

from trainsizer.cost.prices import Prices
from trainsizer.datafiles import user_yaml
from trainsizer.errors import InputError
from trainsizer.input_checks import Flag, Int, Number, known_keys, parse_model
from trainsizer.messages import Message, msg

HOURS_PER_MONTH = 730.0
DEFAULT_MFU = 0.35  # without a job: a typical large-model MFU (stated in the output)
SPLIT_TOLERANCE = 1e-6  # shares written to three decimals may sum to 1.000000x in floating point
TOPOLOGY_LINK = {"nvswitch": None, "nvlink-pairwise": "pcie5", "pcie": "pcie4"}


class _Offer(BaseModel):
    # numbers finite and never true/false, counts strict integers, flags true/false only (the web takes these too)
    model_config = ConfigDict(extra="forbid", defer_build=True, allow_inf_nan=False)


class StorageOffer(_Offer):
    included_tb: Number = Field(0, ge=0, le=1e6)
    bandwidth_gbps: Number | None = Field(None, ge=0, le=1e6)


class Split(_Offer):
    """The shares of the price that pay for compute, storage, network and service: parts of one whole."""

    compute: Number = Field(ge=0, le=1)
    storage: Number = Field(0, ge=0, le=1)
    network: Number = Field(0, ge=0, le=1)
    service: Number = Field(0, ge=0, le=1)


class Quote(_Offer):
    name: str
    gpu: str
    gpus_per_server: Int = Field(8, gt=0, le=64)
    servers: Int = Field(1, gt=0, le=10000)
    price: Number = Field(gt=0, le=1e9)  # per GPU-hour or per server-month, in `currency`
    unit: Literal["gpu-hour", "server-month"]
    currency: Literal["CNY", "USD"] = "CNY"
    billing: Literal["per-second", "per-minute", "per-hour", "daily", "monthly"] = "per-hour"
    min_term_months: Number = Field(0, ge=0, le=120)
    topology: Literal["nvswitch", "nvlink-pairwise", "pcie"] = "nvswitch"
    inter_node: str | None = None
    storage: StorageOffer = Field(default_factory=StorageOffer)
    replacement_sla_hours: Number | None = Field(None, gt=0, le=100_000)
    onsite_staff: Flag = False
    downtime_charged: Flag = False
    split: Split | None = None

    @model_validator(mode="after")
    def _split_at_most_the_whole(self) -> Quote:
        """The shares of one offer's split are parts of its price: together at most 1 (the row is named)."""
        shares = self.split.model_dump() if self.split is not None else {}
        total = sum(shares.values())
        if total > 1 + SPLIT_TOLERANCE:
            parts = " + ".join(f"{k} {v:g}" for k, v in shares.items() if v)
            raise ValueError(f"split: the shares of quote '{self.name}' sum to {total:g} ({parts}); accepted: "
                             f"shares that sum to at most 1")
        return self


def load_quotes(path: str | Path) -> list[Quote]:
    data = user_yaml(path, field="quotes")
    if not isinstance(data, dict) or not isinstance(data.get("quotes"), list) or not data["quotes"]:
        raise InputError("quotes", f"{path} needs a non-empty 'quotes:' list")
    known_keys(data, ("schema_version", "quotes"), f"{path}:")
    return [parse_model(Quote, entry, f"{path}: quotes[{i}]") for i, entry in enumerate(data["quotes"])]


class QuoteResultJSON(TypedDict):
    """``QuoteResult.to_dict``: one offer compared (``trainsizer quotes``)."""

    name: str
    gpus: int
    price_per_gpu_hour: float
    monthly_total: int
    delivered_pflops: float
    mfu: float
    cost_per_delivered_pflop_hour: float
    run_cost: int | None
    split: dict[str, float]
    split_estimated: bool
    flags: list[Message]


@dataclass
class QuoteResult:
    name: str
    gpus: int
    price_per_gpu_hour: float
    monthly_total: float
    delivered_pflops: float
    mfu: float
    cost_per_pflop_hour: float
    run_cost: float | None
    split: dict[str, float]
    split_estimated: bool
    flags: list[Message] = field(default_factory=list)

    def to_dict(self) -> QuoteResultJSON:
        return {"name": self.name, "gpus": self.gpus, "price_per_gpu_hour": round(self.price_per_gpu_hour, 3),
                "monthly_total": round(self.monthly_total), "delivered_pflops": round(self.delivered_pflops, 2),
                "mfu": round(self.mfu, 3), "cost_per_delivered_pflop_hour": round(self.cost_per_pflop_hour, 2),
                "run_cost": None if self.run_cost is None else round(self.run_cost),
                "split": {k: round(v, 3) for k, v in self.split.items()}, "split_estimated": self.split_estimated,
                "flags": self.flags}


def _job_mfu(q: Quote, job: Any, arch: Any, catalog: Any,
             max_oom_risk: float | None = None) -> tuple[float, float | None, int | None]:
    """(MFU, time to train in hours, chosen tp) of the job's best layout on this offer's hardware: the fastest within
    ``max_oom_risk`` of running out of memory (a plan's limit), where one is given."""
    from trainsizer.plan.search import Constraints, fastest_within, plan

    gpus = q.servers * q.gpus_per_server
    intra = TOPOLOGY_LINK[q.topology]
    cons = Constraints((q.gpu,), gpus, q.gpus_per_server, None, 1, exact_gpus=gpus, intra_node=intra,
                       inter_node=q.inter_node if q.servers > 1 else None, max_oom_risk=max_oom_risk)
    res = plan(job, arch, cons, catalog, with_suggestions=False)
    best = fastest_within(res.options, max_oom_risk)
    if best is None:
        return 0.0, None, None
    t = best.time_to_train_s
    return best.mfu, (t / 3600 if t else None), best.scenario.parallel.tp


def compare_quotes(quotes: list[Quote], prices: Prices, job: Any = None, arch: Any = None,
                   catalog: Any = None, max_oom_risk: float | None = None) -> list[QuoteResult]:
    from trainsizer.estimate.step import peak_for
    from trainsizer.hardware.catalog import default_catalog

    cat = catalog or default_catalog()
    results = []
    for q in quotes:
        gpu = cat.accelerator(q.gpu, "quotes.gpu")
        gpus = q.servers * q.gpus_per_server
        price = prices.convert(q.price, q.currency)
        per_gpu_hour = price if q.unit == "gpu-hour" else price / q.gpus_per_server / HOURS_PER_MONTH
        monthly = per_gpu_hour * gpus * HOURS_PER_MONTH
        precision = job.training.precision if job is not None else "bf16-mixed"
        peak, _, _ = peak_for(gpu, precision)
        flags: list[Message] = []
        run_cost = None
        tp = None
        if job is not None:
            mfu, hours, tp = _job_mfu(q, job, arch, cat, max_oom_risk)
            if mfu == 0.0:
                flags.append(msg("quote.does_not_fit"))
            if hours is not None:
                run_cost = _billed(per_gpu_hour, gpus, hours, q)
                if q.billing == "per-hour" and hours < 24:
                    rounded = math.ceil(hours) / hours - 1
                    flags.append(msg("quote.hourly_rounding", hours=hours, pct=rounded))
                if q.min_term_months * HOURS_PER_MONTH > hours * 1.5:
                    flags.append(msg("quote.minimum_term", months=q.min_term_months, days=hours / 24))
        else:
            mfu = DEFAULT_MFU
        delivered = gpus * peak * mfu / 1000  # PFLOPS
        per_pflop_hour = per_gpu_hour * gpus / delivered if delivered else float("inf")
        # pairwise NVLink / PCIe against a TP-heavy job (the seed: up to ~30 % apart)
        if q.topology != "nvswitch" and job is not None:
            nv_mfu, _, nv_tp = _job_mfu(q.model_copy(update={"topology": "nvswitch"}), job, arch, cat,
                                        max_oom_risk)
            if nv_tp and nv_tp > 2 and nv_mfu > mfu * 1.05:
                flags.append(msg("quote.wants_nvswitch", topology=q.topology, tp=nv_tp,
                                 pct=nv_mfu / max(mfu, 1e-9) - 1))
        elif q.topology != "nvswitch":
            flags.append(msg("quote.tp_slow", topology=q.topology))
        if q.storage.bandwidth_gbps is None:
            flags.append(msg("quote.no_storage_bandwidth"))
        if q.replacement_sla_hours is None:
            flags.append(msg("quote.no_replacement_sla"))
        if q.downtime_charged:
            flags.append(msg("quote.downtime_charged"))
        purchase = prices.server(q.gpu, q.gpus_per_server)
        if purchase:
            server_month = per_gpu_hour * q.gpus_per_server * HOURS_PER_MONTH
            if server_month * 12 < purchase.amount / 3:
                flags.append(msg("quote.rent_too_cheap", rent=server_month * 12, price=purchase.amount))
        split, estimated = _split(q, prices, monthly)
        results.append(QuoteResult(q.name, gpus, per_gpu_hour, monthly, delivered, mfu, per_pflop_hour, run_cost,
                                   split, estimated, flags))
    return sorted(results, key=lambda r: (r.run_cost if r.run_cost is not None else r.cost_per_pflop_hour))


def _billed(per_gpu_hour: float, gpus: int, hours: float, q: Quote) -> float:
    step = {"per-second": 1 / 3600, "per-minute": 1 / 60, "per-hour": 1.0, "daily": 24.0,
            "monthly": HOURS_PER_MONTH}[q.billing]
    billed = max(math.ceil(hours / step) * step, q.min_term_months * HOURS_PER_MONTH)
    return per_gpu_hour * gpus * billed


def _split(q: Quote, prices: Prices, monthly: float) -> tuple[dict[str, float], bool]:
    if q.split:
        s = q.split.model_dump()
        total = sum(s.values()) or 1.0
        return {k: v / total for k, v in s.items()}, False
    # estimate: storage and network at their purchase price over 36 months, service 10 %
    storage = q.storage.included_tb * prices.component("parallel_fs_per_tb").amount / 36
    network = (q.servers * q.gpus_per_server * prices.component("nic_400g").amount / 36) if q.servers > 1 else 0.0
    service = 0.10 * monthly
    compute = max(0.0, monthly - storage - network - service)
    return {"compute": compute / monthly, "storage": storage / monthly, "network": network / monthly,
            "service": service / monthly}, True
