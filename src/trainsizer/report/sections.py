"""The report as sections of text in the reader's language, for the HTML and Markdown renderers and the
terminal: the answer card first, then the job, the recommended option in detail, the alternatives, the
bill of materials, site fit, cost, notes, timeline, verification and the sources. Renderers only lay
these out; every word and number is formatted here (through :mod:`trainsizer.report.words`, the
engine's messages through :mod:`trainsizer.report.message_text` and the message catalog)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from trainsizer.i18n import N_, tr
from trainsizer.messages import msg
from trainsizer.report import message_text as mt
from trainsizer.report import option_text as ot
from trainsizer.report import words as w
from trainsizer.report.answer import card

if TYPE_CHECKING:  # the plan document's keys (workflows.plan_schema)
    from trainsizer.workflows.plan_schema import (
        JobJSON,
        OfferGapJSON,
        OptionJSON,
        PerRunJSON,
        PlanJSON,
        RentJSON,
        ReportJSON,
    )

CAPEX = {"servers": N_("servers"), "shared_storage": N_("shared storage"), "local_nvme": N_("local NVMe"),
         "network": N_("network"), "racks_and_installation": N_("racks and installation")}
OPEX = {"colocation": N_("colocation"), "electricity": N_("electricity"), "maintenance": N_("maintenance"),
        "staff": N_("staff")}
RAM_PARTS = {"os_and_runtime": N_("OS and runtime"), "training_processes": N_("training processes"),
             "data_loader_workers": N_("data loader workers"), "cpu_offload": N_("CPU offload"),
             "checkpoint_load_and_save": N_("checkpoint load and save")}
TITLES = {"answer": N_("Answer"), "summary": N_("The job"), "recommendation": N_("Recommendation in detail"),
          "charts": N_("Charts"), "alternatives": N_("Alternatives"), "bom": N_("Bill of materials"),
          "site": N_("Site fit"), "cost": N_("Cost: rent vs buy"), "notes": N_("Notes"), "timeline": N_("Timeline"),
          "verify": N_("Verification on hardware"), "assumptions": N_("Assumptions and sources")}


@dataclass(frozen=True)
class Code:
    """A command or identifier: shown as code, never translated."""

    text: str


@dataclass
class Section:
    """One section of a report or of the plan's detail: a key, its title and its blocks."""

    key: str
    title: str
    blocks: list[tuple[Any, ...]] = field(default_factory=list)  # ("p"|"verdict"|"list"|"table"|"answer"|"charts", ...)


def _summary(job: JobJSON, lang: str) -> Section:
    heads = [tr(h, lang) for h in (N_("Model"), N_("Parameters"), N_("Method"), N_("Precision"), N_("Optimizer"),
                                   N_("Sequence length"), N_("Training tokens"))]
    row = [job["model"], w.big(job["params"], lang), Code(job["method"]), Code(job["precision"]),
           Code(job["optimizer"]), f"{job['seq_len']:,}", w.big(job["tokens"], lang)]
    return Section("summary", tr(TITLES["summary"], lang), [("table", heads, [row])])


def recommended(pick: OptionJSON, lang: str, gap: OfferGapJSON | None = None) -> Section:
    """The pick's hardware, speed, parallel layout (what the framework is set to) and verdict; a quoted answer's
    verdict is its compute floor (``gap``: the plan's ``offer_gap``), not the priced verdict of a layout no known
    offer rents."""
    hw, perf = pick["hardware"], pick["performance"]
    args = {"hardware": w.hardware(hw["gpus"], hw["gpu"], lang), "servers": ot.servers_text(pick, lang),
            "links": ot.links(pick, lang) or "-", "tps": f"{perf['tokens_per_s']:,.0f}", "mfu": w.percent(perf["mfu"])}
    line = (tr("{hardware} in {servers} ({links}): {tps} tokens/s, MFU {mfu}, {time} to train.", lang,
               time=w.duration(perf["time_to_train_s"], lang), **args) if perf.get("time_to_train_s")
            else tr("{hardware} in {servers} ({links}): {tps} tokens/s, MFU {mfu}.", lang, **args))
    verdict = mt.text(gap["message"], lang) if gap else ot.verdict(pick, lang)
    layout = tr("Parallel layout: {layout}", lang, layout=ot.layout(pick, lang))
    return Section("recommendation", tr(TITLES["recommendation"], lang),
                   [("p", line), ("p", layout), ("verdict", verdict), ("p", ot.why(pick, lang))])


def alternatives(plan: PlanJSON, lang: str, limit: int = 15) -> Section:
    opts = plan["options"]
    years = next((o["cost"]["buy"]["horizon_years"] for o in opts if o.get("cost")), None)
    heads = [tr(h, lang) for h in (N_("Option"), N_("Servers"), N_("Layout"), N_("GiB used / capacity"),
                                   N_("Tokens/s"), N_("MFU"), N_("Time to train"), N_("One run"))]
    heads += [tr("Buy over {years} years", lang, years=f"{years:g}") if years else tr("Buy", lang),
              tr("Rent over {years} years", lang, years=f"{years:g}") if years else tr("Rent", lang),
              tr("Fits the site", lang)]
    shown = sorted({i for idx in plan["rankings"].values() for i in idx})[:limit]
    rows = []
    for i in shown:
        o = opts[i]
        hw, perf, cost, cur = o["hardware"], o["performance"], o.get("cost") or {}, plan["currency"]
        fit = (o["system"].get("site_fit") or {}).get("fits") if o.get("site_applies", True) else None  # rented
        rows.append([w.hardware(hw["gpus"], hw["gpu"], lang), ot.servers_text(o, lang), Code(ot.layout(o, lang)),
                     ot.memory_cell(o, " / ", " ", lang), ot.tokens_cell(o), w.percent(perf["mfu"]),
                     ot.time_cell(o, lang),
                     ot.run_cell(o, cur, lang),
                     w.money((cost.get("buy") or {}).get("total"), cur, lang),
                     w.money((cost.get("rent") or {}).get("total"), cur, lang), w.yes_no(fit, lang)])
    return Section("alternatives", tr(TITLES["alternatives"], lang), [("table", heads, rows)])


def _stated(value: Any, unit: str, lang: str) -> str:
    return tr("not stated", lang) if value is None else f"{value:,.0f} {unit}"


def rented_bom(pick: OptionJSON, per_run: PerRunJSON, rent: RentJSON, lang: str) -> Section:
    """A rental's bill of materials: the instance, its price, and what the job needs of its machine beside
    what the offer states (no servers, storage system, network or staff to buy)."""
    sysd, hw = pick["system"], pick["hardware"]
    host, st = sysd["host"], sysd["storage"]
    m = rent.get("machine") or {}
    per_node = hw["gpus_per_node"] if hw["gpus"] > hw["gpus_per_node"] else hw["gpus"]

    def have(per_gpu: str, per_instance: str, unit: str) -> str:
        value = m[per_gpu] * per_node if m.get(per_gpu) is not None else m.get(per_instance)
        return _stated(value, unit, lang)

    rows = [
        [tr("Rented instance", lang), w.listing([ot.servers_text(pick, lang), w.gpu_name(hw["gpu"], lang)], lang),
         tr("{provider}, {term}, {price} per GPU-hour", lang, provider=rent["provider"],
            term=w.word(w.TERMS, rent["term"], lang),
            price=w.small_money(rent["price_per_gpu_hour"], per_run["currency"], lang))],
        [tr("Host RAM per instance", lang), tr("{need} GiB needed", lang, need=f"{host['instance_ram_gib']:,.0f}"),
         tr("the offer: {have}", lang, have=have("ram_gb_per_gpu", "ram_gb_per_instance", "GB"))],
        [tr("CPU cores per instance", lang), tr("{need} needed", lang, need=host["instance_cores"]),
         tr("the offer: {have}", lang, have=have("vcpus_per_gpu", "vcpus_per_instance", "vCPU"))],
        [tr("Disk for checkpoints and data", lang), f"{st['shared_capacity_tb'] * 1000:,.0f} GB",
         tr("the offer: {have}", lang, have=_stated(m.get("disk_gb"), "GB", lang))],
    ]
    heads = [tr("Item", lang), tr("Quantity or size", lang), tr("Why", lang)]
    return Section("bom", tr(TITLES["bom"], lang), [("table", heads, rows)])


def quoted_bom(pick: OptionJSON, gap: OfferGapJSON, lang: str) -> Section:
    """A quoted answer's bill of materials: the cluster to ask a cloud to quote, its GPU time at the reference price,
    and what the job needs of each instance (nothing to buy, no site)."""
    hw, sysd, cur = pick["hardware"], pick["system"], gap["currency"]
    host, st = sysd["host"], sysd["storage"]
    ask = tr("ask for at least this", lang)
    rows = [
        [tr("Cluster to ask a quote on", lang),
         w.listing([ot.servers_text(pick, lang), w.gpu_name(hw["gpu"], lang)], lang), mt.text(gap["hold"], lang)
         if gap.get("hold") else ""],
        [tr("GPU time to ask a quote on", lang),
         tr("{hours} GPU-hours, about {money}", lang, hours=f"{gap['gpu_hours']:,.0f}", money=w.money(gap["floor"],
                                                                                                     cur, lang)),
         tr("at {provider}'s {price} per GPU-hour (on-demand, one GPU), setup billed on every GPU", lang,
            provider=gap["provider"], price=w.small_money(gap["price_per_gpu_hour"], cur, lang))],
        [tr("Host RAM per instance", lang), tr("{need} GiB needed", lang, need=f"{host['instance_ram_gib']:,.0f}"),
         ask],
        [tr("CPU cores per instance", lang), tr("{need} needed", lang, need=host["instance_cores"]), ask],
        [tr("Disk for checkpoints and data", lang), f"{st['shared_capacity_tb'] * 1000:,.0f} GB", ask],
    ]
    heads = [tr("Item", lang), tr("Quantity or size", lang), tr("Why", lang)]
    return Section("bom", tr(TITLES["bom"], lang), [("table", heads, rows)])


def quoted(plan: PlanJSON) -> OfferGapJSON | None:
    """The plan's ``offer_gap`` where its answer is the layout to ask a cloud to quote, else None."""
    rec = plan.get("recommendation")
    return plan.get("offer_gap") if rec and rec["acquisition"] == "quote" else None


def detail(plan: PlanJSON, pick: OptionJSON, lang: str) -> list[Section | None]:
    """The pick's bill of materials, site fit and cost; a quoted answer's cluster and GPU time to ask a quote on,
    run in the provider's data centre (the site does not apply, nothing is bought)."""
    gap = quoted(plan)  # the pick is then the quoted layout (rankings.recommended points at it)
    if gap is not None:
        return [quoted_bom(pick, gap, lang),
                Section("site", tr(TITLES["site"], lang), [("p", mt.text(msg("site.rented"), lang))]), None]
    return [bom(pick, lang), site_fit(pick, lang), cost(pick, plan["currency"], lang)]


def bom(pick: OptionJSON, lang: str) -> Section:
    per_run = pick.get("per_run")
    rent = (per_run or {}).get("rent")
    if per_run and per_run.get("acquisition") == "rent" and rent:
        return rented_bom(pick, per_run, rent, lang)
    sysd = pick["system"]
    host, st, net, pw, servers = sysd["host"], sysd["storage"], sysd["network"], sysd["power"], sysd["servers"]
    ram_parts = w.listing([f"{w.word(RAM_PARTS, k, lang)} {v:,.0f}" for k, v in host["ram_breakdown_gib"].items()],
                          lang)
    rows = [
        [tr("GPU servers", lang),
         w.listing([ot.servers_text(pick, lang), w.gpu_name(servers["gpu"], lang)], lang),
         ot.why(pick, lang)],
        [tr("Host RAM per server", lang), f"{host['ram_gib_per_node']:,.0f} GiB",
         tr("{needed} GiB needed: {parts} (GiB); {seed_rule}: {seed} GiB", lang,
            needed=f"{host['ram_needed_gib']:,.0f}", parts=ram_parts, seed_rule=mt.text(host["seed_rule"], lang),
            seed=f"{host['seed_rule_ram_gib']:,.0f}")],
        [tr("CPU cores per server", lang), str(host["cpu_cores_per_node"]),
         tr("{n} needed for data loaders and ranks", lang, n=host["cpu_cores_needed"])],
        [tr("Shared storage", lang), f"{st['shared_capacity_tb']:,.2f} TB",
         tr("checkpoints {ckpt} TB each, dataset {data} TB", lang, ckpt=f"{st['checkpoint_tb']:.2f}",
            data=f"{st['dataset_tb']:.3f}")],
        [tr("Storage throughput", lang), tr("read {read} MB/s, checkpoint writes {write} GB/s", lang,
                                             read=f"{st['read_gbps'] * 1000:.1f}",
                                             write=f"{st['checkpoint_write_gbps']:.1f}"),
         mt.text(st["seed_rule_verdict"], lang)],
        [tr("Local NVMe per server", lang), f"{st['local_nvme_tb_per_node']:g} TB",
         tr("checkpoint staging, dataset cache", lang)],
        [tr("Network", lang), tr("{fabric}; {nics} NICs per server; {leaf} leaf + {spine} spine switches", lang,
                                  fabric=w.link_name(net["fabric"], lang), nics=net["nics_per_node"],
                                  leaf=net["leaf_switches"], spine=net["spine_switches"]),
         mt.text(net["reason"], lang)],
        [tr("Power", lang), tr("{server} kW per server, {it} kW IT, {facility} kW at the site", lang,
                                server=f"{pw['server_max_kw']:.1f}", it=f"{pw['total_it_max_kw']:.1f}",
                                facility=f"{pw['facility_kw']:.1f}"),
         tr("{btu} BTU/h of heat", lang, btu=f"{pw['heat_btu_per_h']:,}")],
    ]
    heads = [tr("Item", lang), tr("Quantity or size", lang), tr("Why", lang)]
    return Section("bom", tr(TITLES["bom"], lang), [("table", heads, rows)])


def site_fit(pick: OptionJSON, lang: str) -> Section | None:
    """How the pick's servers sit in the user's racks; a rented pick runs in the provider's data centre: the racks
    do not apply, and the section says only that."""
    if not pick.get("site_applies", True):
        return Section("site", tr(TITLES["site"], lang), [("p", mt.text(msg("site.rented"), lang))])
    fit = pick["system"].get("site_fit")
    if not fit:
        return None
    blocks: list[tuple[Any, ...]] = [("p", mt.text(fit["verdict"], lang))]
    if fit["remedies"]:
        blocks.append(("list", mt.texts(fit["remedies"], lang)))
    return Section("site", tr(TITLES["site"], lang), blocks)


def _run_rows(pick: OptionJSON, cur: str, lang: str) -> list[list[str]]:
    """One run's figures as the answer card reads them: the option's ``per_run`` (one figure per quantity)."""
    pr = pick.get("per_run") or {}
    m = lambda x: w.money(x, cur, lang)  # noqa: E731
    rent, buy = pr.get("rent") or {}, pr.get("buy") or {}
    if pr.get("cost") is None:
        return []
    return [[tr("One run: buy share / rent", lang), f"{m(buy.get('cost'))} / {m(rent.get('cost'))}"],
            [tr("One run: commitment", lang), m(pr.get("commitment"))]]


def cost(pick: OptionJSON, cur: str, lang: str) -> Section | None:
    c = pick.get("cost")
    runs = _run_rows(pick, cur, lang)
    if not c:
        return Section("cost", tr(TITLES["cost"], lang), [("table", [tr("Item", lang), cur], runs)]) if runs else None
    buy, rent = c["buy"], c.get("rent") or {}
    m = lambda x: w.money(x, cur, lang)  # noqa: E731
    years = f"{buy['horizon_years']:g}"
    rows = [[tr("Buy, up front: {item}", lang, item=w.word(CAPEX, k, lang)), m(v)] for k, v in buy["capex"].items()]
    rows += [[tr("Buy, per year: {item}", lang, item=w.word(OPEX, k, lang)), m(v)]
             for k, v in buy["opex_per_year"].items()]
    rows += [[tr("Buy: total over {years} years", lang, years=years), m(buy["total"])],
             [tr("Rent: total over {years} years", lang, years=years), m(rent.get("total"))]]
    if rent:
        rows.append([tr("Rent offer", lang), f"{rent['offer']}, {w.rate(rent['price_per_gpu_hour'], cur, lang)}"])
    months = c.get("break_even_months")
    rows.append([tr("Break-even", lang), w.months(months, lang) if months is not None else tr("never", lang)])
    rows += runs
    rows += [[tr("Buy total at USD/CNY {rate}", lang, rate=r), m(v)] for r, v in c["fx_sensitivity"].items()]
    horizon = tr("Over the horizon: {verdict}", lang, verdict=mt.text(c["verdict"], lang))
    blocks: list[tuple[Any, ...]] = [("table", [tr("Item", lang), cur], rows), ("p", horizon)]
    if c["seed_checks"]:
        blocks.append(("list", [tr("seed guide: {check}", lang, check=mt.text(s, lang)) for s in c["seed_checks"]]))
    return Section("cost", tr(TITLES["cost"], lang), blocks)


def timeline(plan: PlanJSON, lang: str) -> Section:
    tl = plan["timeline"]

    def span(lo: int, hi: int) -> str:
        return tr("{lo}-{hi} days", lang, lo=lo, hi=hi)

    rows = [[mt.text(s["step"], lang), span(*s["days"])] for s in tl["steps"]]
    total = tr("{days} ({note})", lang, days=span(*tl["total_days"]), note=mt.text(tl["note"], lang))
    rows.append([tr("Total", lang), total])
    return Section("timeline", tr(TITLES["timeline"], lang), [("table", [tr("Step", lang), tr("Days", lang)], rows)])


def verification(plan: PlanJSON, lang: str) -> Section:
    rows = [[mt.text(v["step"], lang), Code(v["command"]), mt.text(v["check"], lang)] for v in plan["verification"]]
    heads = [tr("Step", lang), tr("Command", lang), tr("What to check", lang)]
    return Section("verify", tr(TITLES["verify"], lang), [("table", heads, rows)])


def sources(assumptions: list[dict[str, str]], lang: str) -> Section:
    rows = [[mt.text(a["what"], lang), a["source"], a["as_of"]] for a in assumptions]
    heads = [tr("Assumption", lang), tr("Source", lang), tr("As of", lang)]
    return Section("assumptions", tr(TITLES["assumptions"], lang), [("table", heads, rows)])


def meta_line(report: ReportJSON, source: str, lang: str) -> str:
    plan = report["plan"]
    return tr("trainsizer, {date}; job {job}; site {site}; currency {currency}", lang, date=report["generated"],
              job=source, site=w.site_name(plan["site"], lang), currency=plan["currency"])


def title(job: JobJSON, lang: str) -> str:
    return tr("Training plan: {model}", lang, model=job["model"])


def document(report: ReportJSON, charts: bool = True) -> list[Section]:
    """The report's sections in order, the answer first."""
    lang, plan, pick = report["lang"], report["plan"], report["recommended"]
    answer = card(plan, lang)
    out = [Section("answer", answer["title"], [("answer", answer)]), _summary(report["job"], lang)]
    if pick:
        out.append(recommended(pick, lang, quoted(plan)))
        if charts:
            out.append(Section("charts", tr(TITLES["charts"], lang), [("charts",)]))
        out += [alternatives(plan, lang), *detail(plan, pick, lang)]
    if plan.get("notes") and pick and answer["ok"]:  # without a recommendation the card lists them
        out.append(Section("notes", tr(TITLES["notes"], lang), [("list", mt.texts(plan["notes"], lang))]))
    if pick:  # a deployment timeline only for an answer: nothing is rented or bought without one
        out += [timeline(plan, lang) if answer["ok"] else None, verification(plan, lang)]
    out.append(sources(report["assumptions"], lang))
    return [s for s in out if s]
