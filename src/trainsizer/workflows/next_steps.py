"""What to do after the answer: the deployment timeline and the verification steps to run on the hardware.

Both follow the seed guide (评估 2-3 天, 服务器准备 1-2 天, 环境 2-3 天, 数据与测试 2-3 天; 三步：实测显存,
剖析一步训练看数据加载与梯度同步是否超过20%, 跑三到五天小规模训练).
"""

from __future__ import annotations

from trainsizer.messages import msg
from trainsizer.plan.planner_data import planner_data
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


def timeline(acquisition: str | None = "rent") -> TimelineJSON:
    """The deployment steps: for bought hardware the seed's (evaluation, server preparation, environment, data)
    with the vendor's delivery lead time (planner.yaml); for a rental the instance, its environment and the data."""
    if acquisition == "rent":
        steps = [{"step": msg(code), "days": [lo, hi]} for code, lo, hi in RENTAL_TIMELINE]
        lo, hi = sum(s["days"][0] for s in steps), sum(s["days"][1] for s in steps)
        return {"steps": steps, "total_days": [lo, hi], "note": msg("timeline.rented"),
                "source": "assumed: a rented instance starts from a ready image within minutes; data preparation "
                          "2-3 days from the Chinese guide '成都AI训练服务器选型' (undated)"}
    steps = [{"step": msg(code), "days": [lo, hi]} for code, lo, hi in TIMELINE]
    note = msg("timeline.in_stock")
    source = ("Chinese guide '成都AI训练服务器选型' (undated): 三天之内能完成整个选型评估; "
              "deployment steps 2-3/1-2/2-3/2-3 days")
    if acquisition == "buy":
        lead = planner_data().delivery_lead_time
        steps.insert(1, {"step": msg("timeline.delivery"), "days": list(lead.days)})
        note = msg("timeline.with_delivery")
        source += f"; delivery: {lead.source} ({lead.status})"
    lo, hi = sum(s["days"][0] for s in steps), sum(s["days"][1] for s in steps)
    return {"steps": steps, "total_days": [lo, hi], "note": note, "source": source}


def verification_steps(job_path: str = "JOB.yaml", acquisition: str | None = None) -> list[VerificationStepJSON]:
    """Measure memory, profile a step, then: on a rented instance, check it against the offer in the first hour;
    on bought servers, the seed's 3-5 day burn-in."""
    steps: list[VerificationStepJSON] = [
        {"step": msg("verify.memory"), "command": f"trainsizer probe memory {job_path}",
         "check": msg("verify.memory_check")},
        {"step": msg("verify.profile"), "command": f"trainsizer probe profile {job_path}",
         "check": msg("verify.profile_check")},
    ]
    if acquisition == "rent":
        steps.append({"step": msg("verify.first_hour"), "command": "nvidia-smi; free -g; nproc; df -h",
                      "check": msg("verify.first_hour_check")})
    else:
        steps.append({"step": msg("verify.burnin"), "command": "trainsizer burnin --duration 72h",
                      "check": msg("verify.burnin_check")})
    return steps
