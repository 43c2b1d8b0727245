"""The plan's bill of materials and cost as tables (sheets of rows), for the .xlsx and .csv exports:
"Recommendation", "Bill of materials", "Options" and "Assumptions". Cells are numbers where the plan
has numbers; an amount of money is a :class:`Money` (a float the spreadsheet formats as currency). Sheet names,
headers, labels, the engine's messages and the names of GPUs, links, sites and rankings are in the report's
language (``lang``); numbers are as the plan has them (ids stay in the JSON)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from trainsizer.i18n import N_, tr
from trainsizer.messages import Message
from trainsizer.report import option_text
from trainsizer.report import words as w
from trainsizer.report.message_text import text
from trainsizer.report.source_text import described, links
from trainsizer.report.specs import pick_index

if TYPE_CHECKING:  # the plan document's keys (workflows.plan_schema)
    from trainsizer.workflows.plan_schema import AssumptionJSON, HorizonJSON, OptionJSON, PlanJSON, ReportJSON

RANKINGS = {"recommended": N_("recommended"), "fastest": N_("fastest"), "fewest_gpus": N_("fewest GPUs"),
            "best_mfu": N_("best MFU"), "cheapest_to_buy": N_("cheapest to buy"), "pareto_time_vs_gpus": N_("Pareto")}
BOM_HEADERS = [N_("item"), N_("quantity"), N_("unit"), N_("unit price"), N_("total price"), N_("note")]
SHEETS = {"recommendation": N_("Recommendation"), "bom": N_("Bill of materials"), "options": N_("Options"),
          "assumptions": N_("Assumptions")}
CAPEX = {"servers": N_("servers"), "shared_storage": N_("shared storage"), "local_nvme": N_("local NVMe"),
         "network": N_("network"), "racks_and_installation": N_("racks and installation")}
OPEX = {"colocation": N_("colocation"), "electricity": N_("electricity"), "maintenance": N_("maintenance"),
        "staff": N_("staff")}
OPTION_HEADERS = [N_("option"), N_("ranked"), N_("GPU"), N_("GPUs"), N_("servers"), N_("GPUs per server"),
                  N_("interconnect"), N_("layout"), N_("step time (s)"), N_("tokens/s"), N_("MFU"),
                  N_("time to train (days)"), N_("memory per GPU (GiB)"), N_("GPU memory (GiB)"), N_("fits site"),
                  N_("capex"), N_("opex per year"), N_("buy total"), N_("rent per year"), N_("rent total"),
                  N_("one run: buy share"), N_("one run: rent"), N_("verdict"),
                  # the 80 % ranges (workflows/robust.py): each figure's low and high end, and the fit as a chance
                  N_("step time, low (s)"), N_("step time, high (s)"), N_("tokens/s, low"), N_("tokens/s, high"),
                  N_("time to train, low (days)"), N_("time to train, high (days)"),
                  N_("memory per GPU, low (GiB)"), N_("memory per GPU, high (GiB)"),
                  N_("one run, low"), N_("one run, high"), N_("chance of running out of memory")]


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


def layout(option: OptionJSON, lang: str = "en") -> str:
    if lang != "en":
        return option_text.layout(option, lang)  # in words
    p, t = option["parallel"], option["training"]
    return (f"tp{p['tp']} pp{p['pp']} cp{p.get('cp', 1)} dp{p['dp']}"
            + (f" ep{p['ep']}" if p.get("ep", 1) > 1 else "") + f" zero{p['zero']}"
            + (f"/{p['zero_shard_gpus']}" if p.get("zero_shard_gpus") else "")
            + (f" offload {p['offload']}" if p.get("offload", "none") != "none" else "")
            + f" mbs {t['micro_batch_size']} ckpt {t['activation_checkpointing']}")


def _run_rows(pick: OptionJSON, cur: str, lang: str) -> list[list[Any]]:
    """One run's figures from the option's ``per_run``, the figures the answer card reads."""
    pr = pick.get("per_run") or {}
    if pr.get("cost") is None:
        return []
    return [[tr("one training run: buy share", lang), _money((pr.get("buy") or {}).get("cost")), cur],
            [tr("one training run: rent", lang), _money((pr.get("rent") or {}).get("cost")), cur],
            [tr("one training run: cost", lang), _money(pr.get("cost")), cur],
            [tr("one training run: commitment", lang), _money(pr.get("commitment")), cur],
            [tr("one training run: hours", lang), pr.get("hours"), "h"]]


def _cost_rows(cost: HorizonJSON, cur: str, lang: str) -> list[list[Any]]:
    buy, rent = cost["buy"], cost.get("rent") or {}
    rows: list[list[Any]] = []
    rows += [[tr("buy capex: {item}", lang, item=w.word(CAPEX, k, lang)), Money(v), cur]
             for k, v in buy["capex"].items()]
    rows += [[tr("buy capex total", lang), Money(buy["capex_total"]), cur]]
    rows += [[tr("buy opex per year: {item}", lang, item=w.word(OPEX, k, lang)), Money(v), cur]
             for k, v in buy["opex_per_year"].items()]
    rows += [[tr("buy opex total per year", lang), Money(buy["opex_total_per_year"]), cur],
             [tr("buy residual value", lang), _money(buy.get("residual")), cur],
             [tr("buy total over the horizon", lang), Money(buy["total"]), cur],
             [tr("horizon", lang), buy["horizon_years"], tr("years", lang)],
             [tr("rent offer", lang), rent.get("offer"), ""],
             [tr("rent price per GPU-hour", lang), _money(rent.get("price_per_gpu_hour")), cur],
             [tr("rent per year", lang), _money(rent.get("per_year")), cur],
             [tr("rent total over the horizon", lang), _money(rent.get("total")), cur],
             [tr("break-even", lang), cost.get("break_even_months"), tr("months", lang)],
             [tr("rent vs buy", lang), cost.get("verdict"), ""]]
    return rows


def _range_rows(plan: PlanJSON, pick: OptionJSON, recommended: bool, lang: str) -> list[list[Any]]:
    """The pick's 80 % ranges (low and high in one cell each) and how often the choice holds."""
    r = pick.get("range") or {}
    rows: list[list[Any]] = []
    span = r.get("time_to_train_s")
    if span:
        rows += [[tr("time to train, low end of its range", lang), _days(span[0]), tr("days", lang)],
                 [tr("time to train, high end of its range", lang), _days(span[1]), tr("days", lang)]]
    rec = plan.get("recommendation") or {}
    # a quoted answer states its GPU time's cost: the range is the floor's (offer_gap.floor_range), not the option's
    cost = ((plan.get("offer_gap") or {}).get("floor_range") if recommended and rec.get("acquisition") == "quote"
            else r.get("per_run_cost"))
    if cost:
        rows += [[tr("one training run, low end of its range", lang), cost[0], plan["currency"]],
                 [tr("one training run, high end of its range", lang), cost[1], plan["currency"]]]
    if "p_exceeds_capacity" in r:
        rows.append([tr("chance of running out of memory", lang), r["p_exceeds_capacity"], tr("fraction", lang)])
    conf = (plan.get("recommendation") or {}).get("confidence") if recommended else None
    if conf:
        rows.append([tr("the choice holds in", lang), conf["share"], tr("fraction", lang)])
    return rows


def recommendation_sheet(plan: PlanJSON, pick: OptionJSON | None, recommended: bool,
                         lang: str = "en") -> Sheet:
    cur = plan["currency"]
    sheet = Sheet(tr(SHEETS["recommendation"], lang), [tr("item", lang), tr("value", lang), tr("unit", lang)])
    if pick is None:
        sheet.rows = [[tr("nothing fits", lang), "", ""]] + [[tr("suggestion", lang), s, ""]
                                                             for s in plan.get("suggestions", [])]
        return sheet
    hw, perf, mem, sysd = pick["hardware"], pick["performance"], pick["memory"], pick["system"]
    fit = sysd.get("site_fit") or {}
    sheet.rows = [
        [tr("option", lang), tr("recommended", lang) if recommended
         else tr("fastest (no option fits the site with prices)", lang), ""],
        [tr("because", lang), plan.get("recommended_because", "") if recommended else "", ""],
        ["GPU", w.gpu_name(hw["gpu"], lang), ""], [tr("GPU count", lang), hw["gpus"], tr("GPUs", lang)],
        [tr("servers", lang), hw["nodes"], tr("servers of {n} GPUs", lang, n=hw["gpus_per_node"])],
        [tr("interconnect", lang), w.links((hw.get("intra_node"), hw.get("inter_node")), lang), ""],
        [tr("layout", lang), layout(pick, lang), ""],
        [tr("tokens/s", lang), perf["tokens_per_s"], tr("tokens/s", lang)],
        [tr("step time", lang), perf["step_time_s"], "s"], ["MFU", perf["mfu"], tr("fraction", lang)],
        [tr("time to train", lang), _days(perf.get("time_to_train_s")), tr("days", lang)],
        [tr("memory per GPU", lang), mem["device_gib"], "GiB"], [tr("GPU memory", lang), mem["capacity_gib"], "GiB"],
        [tr("site", lang), w.site_name(plan["site"], lang), ""], [tr("site fit", lang), fit.get("verdict"), ""],
        [tr("currency", lang), cur, ""],
    ]
    rec = plan.get("recommendation") or {}
    gap = plan.get("offer_gap") or {}
    if recommended and rec.get("acquisition") == "quote":  # the layout to ask a cloud to quote: its GPU time
        sheet.rows += [[tr("one training run: GPU time to ask a quote on", lang), _money(rec.get("per_run")), cur],
                       [tr("one training run: hours", lang), gap.get("hours"), "h"]]
    sheet.rows += _run_rows(pick, cur, lang)
    sheet.rows += _range_rows(plan, pick, recommended, lang)
    if pick.get("cost"):
        sheet.rows += _cost_rows(pick["cost"], cur, lang)
    else:
        sheet.rows.append([tr("cost", lang), tr("no price data for this GPU", lang), ""])
    sheet.rows.append([tr("verdict", lang), pick.get("verdict"), ""])
    return sheet


# long: one row per item of the bill of materials, each with its own unit and note
def bom_sheet(pick: OptionJSON | None, lang: str = "en") -> Sheet:
    """One row per item; the priced ones carry the capex lines, so the price column adds up to the capex."""
    sheet = Sheet(tr(SHEETS["bom"], lang), [tr(h, lang) for h in BOM_HEADERS])
    if pick is None:
        return sheet
    sysd = pick["system"]
    srv, host, st, net, pw = sysd["servers"], sysd["host"], sysd["storage"], sysd["network"], sysd["power"]
    n, gpu = srv["count"], w.gpu_name(srv["gpu"], lang)
    capex = dict((pick.get("cost") or {}).get("buy", {}).get("capex", {}))

    def priced(item: str, qty: float, unit: str, key: str | None, note: Any) -> list[Any]:
        total = capex.pop(key, None) if key else None
        unit_price = Money(total / qty) if total is not None and qty else None
        return [item, qty, unit, unit_price, _money(total), note]

    sites = sysd.get("site_fit") or {}
    network_note = tr("{nics} NICs per server, {leaf} leaf + {spine} spine switches, {cables} cables", lang,
                     nics=net["nics_per_node"], leaf=net["leaf_switches"], spine=net["spine_switches"],
                     cables=net.get("cables", 0))
    sheet.rows = [
        priced(tr("GPU servers", lang), n, tr("server ({n} x {gpu})", lang, n=srv["gpus_per_server"], gpu=gpu),
               "servers", tr("GPUs, host RAM and CPUs are in the server price", lang)),
        priced(tr("GPUs", lang), n * srv["gpus_per_server"], gpu, None, tr("in the server price", lang)),
        priced(tr("host RAM", lang), n * host["ram_gib_per_node"], "GiB", None,
               tr("{per} GiB per server; {needed} GiB needed", lang, per=f"{host['ram_gib_per_node']:g}",
                 needed=f"{host['ram_needed_gib']:g}")),
        priced(tr("CPU cores", lang), n * host["cpu_cores_per_node"], tr("cores", lang), None,
               tr("{per} per server; {needed} needed", lang, per=host["cpu_cores_per_node"],
                  needed=host["cpu_cores_needed"])),
        priced(tr("shared storage", lang), st["shared_capacity_tb"], "TB", "shared_storage",
               tr("checkpoints {ckpt} TB each, dataset {data} TB", lang, ckpt=f"{st['checkpoint_tb']:g}",
                 data=f"{st['dataset_tb']:g}")),
        priced(tr("local NVMe", lang), n * st["local_nvme_tb_per_node"], "TB", "local_nvme",
               tr("{tb} TB per server", lang, tb=f"{st['local_nvme_tb_per_node']:g}")),
        priced(tr("network", lang), 1, tr("fabric {fabric}", lang, fabric=w.link_name(net["fabric"], lang)), "network",
               w.join([network_note, text(net["reason"], lang)], lang)),
        priced(tr("racks and installation", lang), sites.get("racks") or 1,
               tr("racks", lang) if sites.get("racks") else tr("lot", lang),
               "racks_and_installation", sites.get("verdict", "")),
        priced(tr("power", lang), pw["total_it_max_kw"], tr("kW IT (max)", lang), None,
               tr("{server} kW per server, {facility} kW facility; electricity is opex", lang,
                 server=f"{pw['server_max_kw']:g}", facility=f"{pw['facility_kw']:g}")),
    ]
    sheet.rows += [priced(tr("other: {item}", lang, item=w.word(CAPEX, k, lang)), 1, tr("lot", lang), k, "")
                   for k in list(capex)]
    return sheet


def options_sheet(plan: PlanJSON, lang: str = "en") -> Sheet:
    ranked = sorted({i for key in RANKINGS for i in plan["rankings"].get(key, [])},
                    key=lambda i: plan["options"][i]["performance"]["step_time_s"])
    sheet = Sheet(tr(SHEETS["options"], lang), [tr(h, lang) for h in OPTION_HEADERS])
    for i in ranked:
        o = plan["options"][i]
        hw, perf, mem = o["hardware"], o["performance"], o["memory"]
        cost = o.get("cost") or {}
        buy, rent, pr = cost.get("buy") or {}, cost.get("rent") or {}, o.get("per_run") or {}
        fit = (o["system"].get("site_fit") or {}).get("fits") if o.get("site_applies", True) else None  # rented
        sheet.rows.append([
            i, w.listing([tr(v, lang) for k, v in RANKINGS.items() if i in plan["rankings"].get(k, [])], lang),
            w.gpu_name(hw["gpu"], lang), hw["gpus"], hw["nodes"], hw["gpus_per_node"],
            w.links((hw.get("intra_node"), hw.get("inter_node")), lang),
            layout(o, lang), perf["step_time_s"], perf["tokens_per_s"], perf["mfu"],
            _days(perf.get("time_to_train_s")), mem["device_gib"], mem["capacity_gib"],
            "" if fit is None else w.yes_no(fit, lang), _money(buy.get("capex_total")),
            _money(buy.get("opex_total_per_year")), _money(buy.get("total")), _money(rent.get("per_year")),
            _money(rent.get("total")), _money((pr.get("buy") or {}).get("cost")),
            _money((pr.get("rent") or {}).get("cost")), o.get("verdict"), *_range_cells(o)])
    return sheet


def _range_cells(o: OptionJSON) -> list[Any]:
    """The option's 80 % ranges as low / high cells (tokens per second is the step time's range read inversely)."""
    r, perf = o.get("range") or {}, o["performance"]
    step = r.get("step_time_s") or [None, None]
    tokens = [perf["tokens_per_s"] * perf["step_time_s"] / t if t else None for t in (step[1], step[0])]
    time = r.get("time_to_train_s") or [None, None]
    cost = r.get("per_run_cost") or [None, None]
    return [*step, *tokens, _days(time[0]), _days(time[1]), *(r.get("device_gib") or [None, None]),
            _money(cost[0]), _money(cost[1]), r.get("p_exceeds_capacity")]


def _assumptions(rows: list[AssumptionJSON], lang: str) -> Sheet:
    """What the plan assumes, its source and date; in Chinese the source's kind and sites, then its links (the
    English original only as a link: ``report.source_text``)."""
    headers = [tr("what", lang), tr("source", lang), tr("as of", lang)]
    if not lang.startswith("zh"):
        return Sheet(tr(SHEETS["assumptions"], lang), headers, [[a["what"], a["source"], a["as_of"]] for a in rows])
    return Sheet(tr(SHEETS["assumptions"], lang), [*headers, tr("links to the source", lang)],
                 [[a["what"], described(a["source"], lang), a["as_of"], "\n".join(links(a["source"]))]
                  for a in rows])


def export_sheets(report: ReportJSON) -> list[Sheet]:
    """The four sheets of a report model (``plan``, ``recommended``, ``assumptions`` and ``lang`` are read)."""
    plan = report["plan"]
    lang = report.get("lang", "en")
    idx = pick_index(plan)
    pick = plan["options"][idx] if idx is not None else None
    recommended = bool(plan["rankings"].get("recommended"))
    assumptions = _assumptions(report.get("assumptions", []), lang)
    sheets = [recommendation_sheet(plan, pick, recommended, lang), bom_sheet(pick, lang), options_sheet(plan, lang),
              assumptions]
    for sheet in sheets:  # the engine's messages in the report's language
        sheet.rows = [[text(c, lang) if isinstance(c, Message) else c for c in row] for row in sheet.rows]
    return sheets
