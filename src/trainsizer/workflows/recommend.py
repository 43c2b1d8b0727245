"""A plan option becomes a recommendation: bill of materials, site fit, time to train, rent and buy
cost, a rent-or-buy verdict, the deployment timeline and the verification steps to run.

Timeline and verification steps follow the seed guide (评估 2-3 天, 服务器准备 1-2 天, 环境 2-3 天,
数据与测试 2-3 天; 三步：实测显存, 剖析一步训练看数据加载与梯度同步是否超过20%, 跑三到五天小规模训练).
"""

from __future__ import annotations

from typing import Any

from trainsizer.cost.prices import Prices
from trainsizer.cost.tco import compare
from trainsizer.errors import InputError
from trainsizer.hardware.catalog import Catalog, default_catalog
from trainsizer.models.architecture import Architecture
from trainsizer.scenario import Scenario
from trainsizer.system.bom import size_system
from trainsizer.system.sites import Site

TIMELINE = [
    ("evaluation and quotes", 2, 3),
    ("server preparation (delivery, racking, cabling)", 1, 2),
    ("environment (drivers, NCCL, containers, storage mounts)", 2, 3),
    ("data preparation and acceptance tests", 2, 3),
]


def timeline(in_stock: bool = True) -> dict[str, Any]:
    steps = [{"step": name, "days": [lo, hi]} for name, lo, hi in TIMELINE]
    lo, hi = sum(s["days"][0] for s in steps), sum(s["days"][1] for s in steps)
    note = "machines in stock or rented" if in_stock else "add the vendor's delivery time"
    return {"steps": steps, "total_days": [lo, hi], "note": note,
            "source": "shared/seed guide: 三天之内能完成整个选型评估; deployment steps 2-3/1-2/2-3/2-3 days"}


def verification_steps(job_path: str = "JOB.yaml") -> list[dict[str, str]]:
    return [
        {"step": "1. measure real peak memory on one GPU",
         "command": f"trainsizer probe memory {job_path}",
         "check": "torch.cuda.max_memory_allocated and nvidia-smi against the estimate"},
        {"step": "2. profile a training step",
         "command": f"trainsizer probe profile {job_path}",
         "check": "data loading plus gradient sync above 20 % of the step means storage or network binds"},
        {"step": "3. run a 3-5 day small-scale training on the target machine",
         "command": "trainsizer burnin --duration 72h",
         "check": "throttling, ECC / XID errors, throughput drift, thermals"},
    ]


def recommend_options(options: list[dict[str, Any]], job: Scenario, arch: Architecture, site: Site,
                      prices: Prices, horizon_years: float, utilisation: float, budget: float | None = None,
                      catalog: Catalog | None = None) -> list[dict[str, Any]]:
    """Attach system sizing, site fit and cost to each option; drop those over budget."""
    cat = catalog or default_catalog()
    out = []
    for opt in options:
        hw, par, tr = opt["hardware"], opt["parallel"], opt["training"]
        gpu = cat.accelerator(hw["gpu"])
        sc = job.model_copy(update={
            "parallel": job.parallel.model_copy(update={k: par[k] for k in (
                "gpus", "tp", "pp", "cp", "virtual_pp", "sequence_parallel", "zero", "distributed_optimizer",
                "offload")}),
            "training": job.training.model_copy(update={"micro_batch_size": tr["micro_batch_size"],
                                                        "activation_checkpointing": tr["activation_checkpointing"],
                                                        "global_batch_size": tr["global_batch_size"]}),
            "hardware": job.hardware.model_copy(update={"gpu": hw["gpu"], "gpus_per_node": hw["gpus_per_node"],
                                                        "intra_node": hw["intra_node"],
                                                        "inter_node": hw["inter_node"]})})
        server = prices.server(gpu.id, hw["gpus_per_node"])
        published_kw = server[1].get("max_power_kw") if server else None
        system = size_system(sc, arch, gpu, opt["performance"]["tokens_per_s"], site, published_kw)
        run_s = opt["performance"].get("time_to_train_s")
        rec = dict(opt)
        rec["system"] = system.to_dict()
        try:
            cost = compare(system.inventory(), site, prices, horizon_years, utilisation,
                           run_s / 3600 if run_s else None)
        except InputError as exc:
            if exc.field != "hardware.gpu":
                raise
            rec["cost"] = None
            rec["verdict"] = f"no cost: {exc} (the ranking still holds)"
            if budget is None:
                out.append(rec)
            continue
        rec["cost"] = cost.to_dict()
        rec["verdict"] = cost.verdict
        if system.site_fit and not system.site_fit.fits:
            rec["verdict"] = f"{cost.verdict}; site: {system.site_fit.verdict}"
        if budget is not None and cost.buy.capex_total > budget and (
                cost.rent is None or cost.rent.total > budget):
            continue
        out.append(rec)
    return out
