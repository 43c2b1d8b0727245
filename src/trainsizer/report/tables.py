"""The plan's bill of materials and cost as tables (sheets of rows), for the .xlsx and .csv exports:
"Recommendation", "Bill of materials", "Options" and "Assumptions". Cells are numbers where the plan
has numbers; an amount of money is a :class:`Money` (a float the spreadsheet formats as currency)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from trainsizer.messages import Message
from trainsizer.report.message_text import text
from trainsizer.report.specs import pick_index

RANKINGS = ("recommended", "fastest", "fewest_gpus", "best_mfu", "cheapest_to_buy", "pareto_time_vs_gpus")
BOM_HEADERS = ["item", "quantity", "unit", "unit price", "total price", "note"]


class Money(float):
    """An amount in the sheet's currency."""


@dataclass
class Sheet:
    name: str
    headers: list[str]
    rows: list[list[Any]] = field(default_factory=list)


def _money(x: Any) -> Money | None:
    return None if x is None else Money(x)


def _days(seconds: float | None) -> float | None:
    return None if seconds is None else seconds / 86400


def layout(option: dict[str, Any]) -> str:
    p, t = option["parallel"], option["training"]
    return (f"tp{p['tp']} pp{p['pp']} cp{p.get('cp', 1)} dp{p['dp']} zero{p['zero']}"
            + (f" offload {p['offload']}" if p.get("offload", "none") != "none" else "")
            + f" mbs {t['micro_batch_size']} ckpt {t['activation_checkpointing']}")


def _cost_rows(cost: dict[str, Any], cur: str) -> list[list[Any]]:
    buy, rent, per_run = cost["buy"], cost.get("rent") or {}, cost.get("per_run") or {}
    rows: list[list[Any]] = []
    if per_run:
        rows += [["one training run: buy share", _money(per_run.get("buy")), cur],
                 ["one training run: rent", _money(per_run.get("rent")), cur],
                 ["one training run: hours", per_run.get("hours"), "h"]]
    rows += [[f"buy capex: {k.replace('_', ' ')}", Money(v), cur] for k, v in buy["capex"].items()]
    rows += [["buy capex total", Money(buy["capex_total"]), cur]]
    rows += [[f"buy opex per year: {k}", Money(v), cur] for k, v in buy["opex_per_year"].items()]
    rows += [["buy opex total per year", Money(buy["opex_total_per_year"]), cur],
             ["buy residual value", _money(buy.get("residual")), cur],
             ["buy total over the horizon", Money(buy["total"]), cur],
             ["horizon", buy["horizon_years"], "years"],
             ["rent offer", rent.get("offer"), ""],
             ["rent price per GPU-hour", _money(rent.get("price_per_gpu_hour")), cur],
             ["rent per year", _money(rent.get("per_year")), cur],
             ["rent total over the horizon", _money(rent.get("total")), cur],
             ["break-even", cost.get("break_even_months"), "months"],
             ["rent vs buy", cost.get("verdict"), ""]]
    return rows


def recommendation_sheet(plan: dict[str, Any], pick: dict[str, Any] | None, recommended: bool) -> Sheet:
    cur = plan["currency"]
    sheet = Sheet("Recommendation", ["item", "value", "unit"])
    if pick is None:
        sheet.rows = [["nothing fits", "", ""]] + [["suggestion", s, ""] for s in plan.get("suggestions", [])]
        return sheet
    hw, perf, mem, sysd = pick["hardware"], pick["performance"], pick["memory"], pick["system"]
    fit = sysd.get("site_fit") or {}
    sheet.rows = [
        ["option", "recommended" if recommended else "fastest (no option fits the site with prices)", ""],
        ["because", plan.get("recommended_because", "") if recommended else "", ""],
        ["GPU", hw["gpu"], ""], ["GPU count", hw["gpus"], "GPUs"],
        ["servers", hw["nodes"], f"servers of {hw['gpus_per_node']} GPUs"],
        ["interconnect", " + ".join(x for x in (hw.get("intra_node"), hw.get("inter_node")) if x), ""],
        ["layout", layout(pick), ""], ["tokens/s", perf["tokens_per_s"], "tokens/s"],
        ["step time", perf["step_time_s"], "s"], ["MFU", perf["mfu"], "fraction"],
        ["time to train", _days(perf.get("time_to_train_s")), "days"],
        ["memory per GPU", mem["device_gib"], "GiB"], ["GPU memory", mem["capacity_gib"], "GiB"],
        ["site", plan["site"], ""], ["site fit", fit.get("verdict"), ""], ["currency", cur, ""],
    ]
    if pick.get("cost"):
        sheet.rows += _cost_rows(pick["cost"], cur)
    else:
        sheet.rows.append(["cost", "no price data for this GPU", ""])
    sheet.rows.append(["verdict", pick.get("verdict"), ""])
    return sheet


def bom_sheet(pick: dict[str, Any] | None) -> Sheet:
    """One row per item; the priced ones carry the capex lines, so the price column adds up to the capex."""
    sheet = Sheet("Bill of materials", BOM_HEADERS)
    if pick is None:
        return sheet
    sysd = pick["system"]
    srv, host, st, net, pw = sysd["servers"], sysd["host"], sysd["storage"], sysd["network"], sysd["power"]
    n = srv["count"]
    capex = dict((pick.get("cost") or {}).get("buy", {}).get("capex", {}))

    def priced(item: str, qty: float, unit: str, key: str | None, note: str) -> list[Any]:
        total = capex.pop(key, None) if key else None
        unit_price = Money(total / qty) if total is not None and qty else None
        return [item, qty, unit, unit_price, _money(total), note]

    sites = sysd.get("site_fit") or {}
    sheet.rows = [
        priced("GPU servers", n, f"server ({srv['gpus_per_server']} x {srv['gpu']})", "servers",
               "GPUs, host RAM and CPUs are in the server price"),
        priced("GPUs", n * srv["gpus_per_server"], srv["gpu"], None, "in the server price"),
        priced("host RAM", n * host["ram_gib_per_node"], "GiB", None,
               f"{host['ram_gib_per_node']:g} GiB per server; {host['ram_needed_gib']:g} GiB needed"),
        priced("CPU cores", n * host["cpu_cores_per_node"], "cores", None,
               f"{host['cpu_cores_per_node']} per server; {host['cpu_cores_needed']} needed"),
        priced("shared storage", st["shared_capacity_tb"], "TB", "shared_storage",
               f"checkpoints {st['checkpoint_tb']:g} TB each, dataset {st['dataset_tb']:g} TB"),
        priced("local NVMe", n * st["local_nvme_tb_per_node"], "TB", "local_nvme",
               f"{st['local_nvme_tb_per_node']:g} TB per server"),
        priced("network", 1, f"fabric {net['fabric'] or '-'}", "network",
               f"{net['nics_per_node']} NICs per server, {net['leaf_switches']} leaf + {net['spine_switches']} spine "
               f"switches, {net.get('cables', 0)} cables; {text(net['reason'], 'en')}"),
        priced("racks and installation", sites.get("racks") or 1, "racks" if sites.get("racks") else "lot",
               "racks_and_installation", sites.get("verdict", "")),
        priced("power", pw["total_it_max_kw"], "kW IT (max)", None,
               f"{pw['server_max_kw']:g} kW per server, {pw['facility_kw']:g} kW facility; electricity is opex"),
    ]
    sheet.rows += [priced(f"other: {k.replace('_', ' ')}", 1, "lot", k, "") for k in list(capex)]
    return sheet


def options_sheet(plan: dict[str, Any]) -> Sheet:
    headers = ["option", "ranked", "GPU", "GPUs", "servers", "GPUs per server", "interconnect", "layout",
               "step time (s)",
               "tokens/s", "MFU", "time to train (days)", "memory per GPU (GiB)", "GPU memory (GiB)", "fits site",
               "capex", "opex per year", "buy total", "rent per year", "rent total", "one run: buy share",
               "one run: rent", "verdict"]
    ranked = sorted({i for key in RANKINGS for i in plan["rankings"].get(key, [])},
                    key=lambda i: plan["options"][i]["performance"]["step_time_s"])
    sheet = Sheet("Options", headers)
    for i in ranked:
        o = plan["options"][i]
        hw, perf, mem = o["hardware"], o["performance"], o["memory"]
        cost = o.get("cost") or {}
        buy, rent, run = cost.get("buy") or {}, cost.get("rent") or {}, cost.get("per_run") or {}
        fit = (o["system"].get("site_fit") or {}).get("fits")
        sheet.rows.append([
            i, ", ".join(k for k in RANKINGS if i in plan["rankings"].get(k, [])), hw["gpu"], hw["gpus"],
            hw["nodes"], hw["gpus_per_node"], " + ".join(x for x in (hw.get("intra_node"), hw.get("inter_node")) if x),
            layout(o), perf["step_time_s"], perf["tokens_per_s"], perf["mfu"],
            _days(perf.get("time_to_train_s")), mem["device_gib"], mem["capacity_gib"],
            {True: "yes", False: "no", None: ""}[fit], _money(buy.get("capex_total")),
            _money(buy.get("opex_total_per_year")), _money(buy.get("total")), _money(rent.get("per_year")),
            _money(rent.get("total")), _money(run.get("buy")), _money(run.get("rent")), o.get("verdict")])
    return sheet


def export_sheets(report: dict[str, Any]) -> list[Sheet]:
    """The four sheets of a report model (``plan``, ``recommended`` and ``assumptions`` are read)."""
    plan = report["plan"]
    idx = pick_index(plan)
    pick = plan["options"][idx] if idx is not None else None
    recommended = bool(plan["rankings"].get("recommended"))
    assumptions = Sheet("Assumptions", ["what", "source", "as of"],
                        [[a["what"], a["source"], a["as_of"]] for a in report.get("assumptions", [])])
    sheets = [recommendation_sheet(plan, pick, recommended), bom_sheet(pick), options_sheet(plan), assumptions]
    lang = report.get("lang", "en")
    for sheet in sheets:
        sheet.rows = [[text(c, lang) if isinstance(c, Message) else c for c in row] for row in sheet.rows]
    return sheets
