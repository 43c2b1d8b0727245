"""What to do after the answer: the deployment timeline and the verification steps to run on the hardware.

Both follow the seed guide (评估 2-3 天, 服务器准备 1-2 天, 环境 2-3 天, 数据与测试 2-3 天; 三步：实测显存,
剖析一步训练看数据加载与梯度同步是否超过20%, 跑三到五天小规模训练).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from trainsizer.datafiles import packaged_yaml
from trainsizer.messages import Message, msg
from trainsizer.plan.planner_data import planner_data

if TYPE_CHECKING:  # the JSON's types, for annotations
    from trainsizer.workflows.plan_schema import TimelineJSON, VerificationStepJSON

TIMELINE = [
    ("timeline.evaluation", 2, 3),
    ("timeline.preparation", 1, 2),
    ("timeline.environment", 2, 3),
    ("timeline.data", 2, 3),
]


# A rented instance (assumed: per-card clouds start an instance from a ready image within minutes; the data
# preparation is the job's own, as the seed's): no server preparation, delivery or burn-in.
RENTAL_TIMELINE = [
    ("timeline.rent_instance", 0, 1),
    ("timeline.environment_rented", 0, 1),
    ("timeline.data", 2, 3),
]


# A cluster asked for on a quote (assumed: no public figure for how long a cloud takes to quote, contract and
# provision several RDMA-connected servers; days rather than the minutes of a listed instance).
QUOTED_TIMELINE = [
    ("timeline.quote_cluster", 2, 7),
    ("timeline.environment_rented", 0, 1),
    ("timeline.data", 2, 3),
]


# The rented ways to have the machines: their steps, the timeline's note and where its figures come from.
RENTED_TIMELINES = {
    "quote": (QUOTED_TIMELINE, "timeline.quoted",
              "assumed: a cloud quotes, contracts and provisions a multi-server lease within days (ask its lead time "
              "with the price); data preparation 2-3 days from the Chinese guide '成都AI训练服务器选型' (undated)"),
    "rent": (RENTAL_TIMELINE, "timeline.rented",
             "assumed: a rented instance starts from a ready image within minutes; data preparation 2-3 days from "
             "the Chinese guide '成都AI训练服务器选型' (undated)"),
}


def timeline(acquisition: str | None = "rent") -> TimelineJSON:
    """The deployment steps: for bought hardware the seed's (evaluation, server preparation, environment, data)
    with the vendor's delivery lead time (planner.yaml); for a rental the instance, its environment and the data;
    for a cluster asked for on a quote, the quote and the provider's provisioning first."""
    if acquisition in RENTED_TIMELINES:
        table, note_code, source = RENTED_TIMELINES[acquisition]
        return _timeline([{"step": msg(code), "days": [lo, hi]} for code, lo, hi in table], msg(note_code), source)
    steps = [{"step": msg(code), "days": [lo, hi]} for code, lo, hi in TIMELINE]
    note = msg("timeline.in_stock")
    source = ("Chinese guide '成都AI训练服务器选型' (undated): 三天之内能完成整个选型评估; "
              "deployment steps 2-3/1-2/2-3/2-3 days")
    if acquisition == "buy":
        lead = planner_data().delivery_lead_time
        steps.insert(1, {"step": msg("timeline.delivery"), "days": list(lead.days)})
        note = msg("timeline.with_delivery")
        source += f"; delivery: {lead.source} ({lead.status})"
    return _timeline(steps, note, source)


def _timeline(steps: list[Any], note: Message, source: str) -> TimelineJSON:
    """The steps with their total days (the sums of each end of the steps' ranges)."""
    lo, hi = sum(s["days"][0] for s in steps), sum(s["days"][1] for s in steps)
    return {"steps": steps, "total_days": [lo, hi], "note": note, "source": source}


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceTools:
    """A vendor's tools the verification steps name (device_tools.yaml): which of trainsizer's probes run on its
    parts, its device query (nvidia-smi, npu-smi info), how its PyTorch reads peak memory, its profiler."""

    probes: frozenset[str]
    device_query: str | None
    peak_memory: str | None
    profiler: str | None = None


@cache
def device_tools(vendor: str) -> DeviceTools | None:
    """The vendor's row of device_tools.yaml (None: not listed)."""
    row = packaged_yaml("trainsizer.workflows", "device_tools.yaml")["vendors"].get(vendor)
    if row is None:
        return None
    return DeviceTools(probes=frozenset(row["probes"]), device_query=row["device_query"],
                       peak_memory=row["peak_memory"], profiler=row.get("profiler"))


def verification_steps(job_path: str = "JOB.yaml", acquisition: str | None = None,
                       vendor: str = "nvidia") -> list[VerificationStepJSON]:
    """Measure memory, profile a step, then: on a rented instance, check it against the offer in the first hour;
    on bought servers, the seed's 3-5 day burn-in. Each with the tools of the GPU's ``vendor`` (device_tools.yaml):
    trainsizer's probes where they run on its parts, else the vendor's own."""
    tools = device_tools(vendor)
    if tools is None:  # not listed: the probes read torch.cuda, which some vendors' PyTorch builds answer
        tools = DeviceTools(probes=frozenset({"memory", "profile"}), device_query=None, peak_memory=None)
    query = tools.device_query
    if "memory" in tools.probes:
        memory_check = (msg("verify.memory_check") if vendor == "nvidia" or query is None
                        else msg("verify.memory_check_with", peak=tools.peak_memory, query=query))
        steps: list[VerificationStepJSON] = [
            {"step": msg("verify.memory"), "command": f"trainsizer probe memory {job_path}", "check": memory_check}]
    else:
        steps = [{"step": msg("verify.memory"), "command": query or "",
                  "check": msg("verify.memory_check_own", peak=tools.peak_memory, query=query)}]
    if "profile" in tools.probes:
        steps.append({"step": msg("verify.profile"), "command": f"trainsizer probe profile {job_path}",
                      "check": msg("verify.profile_check")})
    else:
        steps.append({"step": msg("verify.profile"), "command": tools.profiler or "",
                      "check": msg("verify.profile_check")})
    if acquisition == "rent":
        steps.append({"step": msg("verify.first_hour"), "command": f"{query or 'nvidia-smi'}; free -g; nproc; df -h",
                      "check": msg("verify.first_hour_check")})
    elif "burnin" in tools.probes:
        steps.append({"step": msg("verify.burnin"), "command": "trainsizer burnin --duration 72h",
                      "check": msg("verify.burnin_check")})
    else:
        steps.append({"step": msg("verify.burnin"), "command": query or "",  # unlisted: no command we can name
                      "check": msg("verify.burnin_check_own" if query else "verify.burnin_check_vendor")})
    return steps
