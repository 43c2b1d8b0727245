"""Terminal tables (rich) for estimate, validate and the catalogs."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from trainsizer.i18n import resolve_lang, t


def _console() -> Console:
    return Console(highlight=False, width=140)


def print_estimate(result: Any, origin: str, lang: str | None) -> None:
    lang = resolve_lang(lang)
    con = _console()
    sc, mem, arch = result.scenario, result.memory, result.architecture
    tr, par = sc.training, sc.parallel
    active = f" ({result.params.active / 1e9:.1f} B active)" if arch.moe else ""
    layout = f"tp={par.tp} pp={par.pp} cp={par.cp} dp={par.dp} zero={par.zero}"
    con.print(f"[bold]{t('scenario', lang)}[/bold]: {origin}")
    con.print(f"  {arch.name or arch.model_type}: {result.params.total / 1e9:.2f} B params{active}; "
              f"{tr.method} {tr.precision} {tr.optimizer}; micro-batch {tr.micro_batch_size} x {tr.seq_len} tokens, "
              f"global batch {sc.global_batch_size}; checkpointing {tr.activation_checkpointing}, "
              f"attention {tr.attention}")
    con.print(f"  {par.gpus} x {result.gpu.name} ({result.gpu.memory_gib:.1f} GiB); {layout}")
    table = Table(title=t("title", lang), title_justify="left")
    table.add_column(t("component", lang))
    table.add_column(t("gib", lang), justify="right")
    table.add_column(t("why", lang), overflow="fold")
    for c in mem.components:
        if c.bytes > 0:
            table.add_row(c.name, f"{c.gib:.2f}", c.why)
    table.add_section()
    table.add_row(t("allocated", lang), f"{mem.allocated_gib:.2f}", f"{t('peak_phase', lang)} {mem.peak_phase}")
    table.add_row(t("reserved", lang), f"{mem.reserved_gib:.2f}", "")
    verdict = (f"[green]{t('fits', lang)}[/green]" if mem.fits else f"[red]{t('no_fit', lang)}[/red]")
    table.add_row(t("device", lang), f"{mem.device_gib:.2f}",
                  f"{verdict}: {t('capacity', lang)} {mem.capacity_gib:.2f} GiB, "
                  f"{t('headroom', lang)} {mem.capacity_gib - mem.device_gib:+.2f} GiB")
    con.print(table)
    if result.limits:
        lim = result.limits
        mbs = str(lim.max_micro_batch_size) if lim.max_micro_batch_size else t("nothing_fits", lang)
        seq = f"{lim.max_seq_len:,}" if lim.max_seq_len else t("nothing_fits", lang)
        con.print(f"[bold]{t('limits', lang)}[/bold]: {t('max_mbs', lang)} {mbs}; {t('max_seq', lang)} {seq}")
    perf = result.performance
    if perf:
        zh = lang == "zh-CN"
        con.print(f"[bold]{'速度' if zh else 'Speed'}[/bold]: step {perf.step_time_s:.3f} s, "
                  f"{perf.tokens_per_s:,.0f} tokens/s ({perf.tokens_per_s_per_gpu:,.0f} per GPU), "
                  f"{perf.tflops_per_gpu:.0f} TFLOPS/GPU, MFU {perf.mfu:.0%} of {perf.peak_tflops:g} dense")
        top = sorted(((v, k) for k, v in perf.breakdown_s.items() if v > 0), reverse=True)[:5]
        con.print("  " + ", ".join(f"{k} {v / perf.step_time_s:.0%}" for v, k in top))
        if perf.time_to_train_s:
            con.print(f"  {'训练时长' if zh else 'time to train'}: {perf.time_to_train_s / 86400:.2f} days, "
                      f"{perf.gpu_hours:,.0f} GPU-hours")
    rule = result.rule_of_thumb
    con.print(f"[bold]{t('rule', lang)}[/bold]: {rule.formula} = {rule.total_gb:,.1f} GB total, "
              f"{t('rule_value', lang)} {rule.per_gpu_gib:.1f} GiB vs {t('estimate', lang)} "
              f"{rule.estimate_gib:.1f} GiB ({t('off_by', lang)} {rule.error:+.0%})")
    for reason in rule.reasons:
        con.print(f"  - {reason}")
    if mem.notes:
        con.print(f"[bold]{t('notes', lang)}[/bold]:")
        for note in mem.notes:
            con.print(f"  - {note}")


def print_validation(results: list[Any], summary: dict[str, Any], lang: str | None = None) -> None:
    lang = resolve_lang(lang)
    con = _console()
    table = Table(title=t("validation", lang), title_justify="left")
    for col, just in (("case", "left"), ("metric", "left"), ("measured", "right"), ("predicted", "right"),
                      ("error", "right"), ("excluded", "left")):
        table.add_column(t(col, lang), justify=just, overflow="fold")
    for r in results:
        if r.error is None:
            table.add_row(r.id, r.metric, f"{r.measured:g}", "-", "-", r.skipped or "")
            continue
        err = f"{r.error:+.1%}"
        if abs(r.error) > 0.15:
            err = f"[red]{err}[/red]"
        table.add_row(r.id, r.metric, f"{r.measured:.2f}", f"{r.predicted:.2f}", err,
                      "yes" if r.excluded_from_fit else "")
    con.print(table)
    for kind, h in (summary.get("holdout") or {}).items():
        if not h["count"]:
            continue
        con.print(f"[bold]leave-one-source-out {kind}[/bold]: {h['count']} cases from {h['sources']} sources, "
                  f"median |error| {h['median_abs_error']:.1%}, p90 {h['p90_abs_error']:.1%}, "
                  f"excluded {h['excluded']}")
    con.print(summary.get("in_sample_note", ""))
    for name in ("all", "fitted", "excluded"):
        s = summary[name]
        if not s["count"]:
            continue
        con.print(f"{name:>8} (in-sample): {s['count']} cases, median |error| {s['median_abs_error']:.1%}, "
                  f"p90 {s['p90_abs_error']:.1%}, max {s['max_abs_error']:.1%}, "
                  f"within 15%: {s['within_15pct']}/{s['count']}")
    if summary.get("skipped"):
        con.print(f"skipped: {summary['skipped']} (no prediction for that metric yet)")


def print_gpus(cat: Any) -> None:
    table = Table(title="Accelerators (dense TFLOPS)", title_justify="left")
    for col in ("id", "GiB", "GB/s", "bf16", "fp8", "fp4", "scale-up", "TDP W", "source"):
        table.add_column(col, overflow="fold")
    for a in cat.accelerators.values():
        d = a.dense_tflops
        link = a.scale_up.link if a.scale_up and a.scale_up.link else "-"
        table.add_row(a.id, f"{a.memory_gib:g}", f"{a.memory_bandwidth_gbps or 0:g}", f"{d.bf16 or '-'}",
                      f"{d.fp8 or '-'}", f"{d.fp4 or '-'}", link, f"{a.tdp_w or '-'}", a.source[:60])
    _console().print(table)


def print_links(cat: Any) -> None:
    table = Table(title="Links (GB/s per direction)", title_justify="left")
    for col in ("id", "scope", "GB/s", "latency us", "name"):
        table.add_column(col, overflow="fold")
    for link in cat.links.values():
        table.add_row(link.id, link.scope, f"{link.per_direction_gbps:g}", f"{link.latency_us or '-'}", link.name)
    _console().print(table)


def print_models(rows: list[dict[str, Any]]) -> None:
    table = Table(title="Model presets", title_justify="left")
    for col in ("id", "params (B)", "active (B)", "published (B)", "name"):
        table.add_column(col)
    for r in rows:
        pub = r["published_params"]
        table.add_row(r["id"], f"{r['params'] / 1e9:.3f}", f"{r['active_params'] / 1e9:.3f}",
                      f"{float(pub) / 1e9:.3f}" if pub else "-", r["name"])
    _console().print(table)


def print_plan(result: Any, lang: str | None = None, extra: dict[str, Any] | None = None) -> None:
    lang = resolve_lang(lang)
    con = _console()
    zh = lang == "zh-CN"
    if not result.options:
        con.print("[red]" + ("没有放得下的配置。" if zh else "Nothing fits.") + "[/red] " +
                  ("可以这样调整：" if zh else "What would:"))
        for s in result.suggestions:
            con.print(f"  - {s}")
        return
    if extra:
        _print_answer(con, extra, zh)
    for note in result.notes:
        con.print(f"  - {note}")
    titles = {"cheapest_per_run": ("Cheapest per run", "单次训练最省"), "fastest": ("Fastest", "最快"),
              "fewest_gpus": ("Fewest GPUs", "卡数最少"), "cheapest_to_buy": ("Cheapest to own", "自购最省"),
              "best_mfu": ("Best MFU", "MFU 最高"), "pareto_time_vs_gpus": ("Pareto: step time vs GPUs", "帕累托前沿")}
    for key, (en, cn) in titles.items():
        idx = result.rankings.get(key, [])
        if not idx:
            continue
        table = Table(title=cn if zh else en, title_justify="left")
        for col in ("GPUs", "GPU", "node", "layout", "mbs / ckpt", "GiB used", "tokens/s", "MFU", "days", "per run",
                    "why"):
            table.add_column(col, overflow="fold")
        for i in idx:
            o = result.options[i]
            hw, par, tr, perf, mem = o["hardware"], o["parallel"], o["training"], o["performance"], o["memory"]
            layout = f"tp{par['tp']} pp{par['pp']}" + (f"x{par['virtual_pp']}" if par["virtual_pp"] > 1 else "")
            layout += f" cp{par['cp']} dp{par['dp']} z{par['zero']}"
            if par["offload"] != "none":
                layout += f" off:{par['offload']}"
            node = f"{hw['nodes']}x{hw['gpus_per_node']} {hw['intra_node']}"
            if hw["inter_node"]:
                node += f" {hw['inter_node']}"
            days = f"{perf['time_to_train_s'] / 86400:.1f}" if perf.get("time_to_train_s") else "-"
            pr = o.get("per_run") or {}
            run = (f"{pr['acquisition']} {pr['cost']:,.0f}" if pr.get("cost") is not None else "-")
            table.add_row(str(hw["gpus"]), hw["gpu"], node, layout,
                          f"{tr['micro_batch_size']} / {tr['activation_checkpointing']}",
                          f"{mem['device_gib']:.1f}/{mem['capacity_gib']:.0f}", f"{perf['tokens_per_s']:,.0f}",
                          f"{perf['mfu']:.0%}", days, run, o["why"])
        con.print(table)
    con.print(f"{result.evaluated:,} candidate layouts screened; {len(result.options)} hardware options re-checked "
              "with the reference estimators.")
    if extra and result.options:
        _print_recommendation(con, result.options, extra, zh)


def _print_answer(con: Console, extra: dict[str, Any], zh: bool) -> None:
    """The answer first: what to rent or buy, per run, commitment, time, why; then what the runner-ups trade."""
    rec = extra.get("recommendation")
    if not rec:
        con.print("[bold red]" + ("没有可推荐的方案" if zh else "No recommendation") + "[/bold red]: " +
                  ("没有同时满足期限、预算和市场的方案。" if zh else
                   "nothing meets the deadline and the budget and can be had in this market."))
        return
    cur = rec["currency"]
    cost = (f"{_money(rec['per_run'], cur)} {'每次训练' if zh else 'per run'}" if rec["per_run"] is not None
            else f"{rec['cost_per_million_tokens']:.2f} {cur} / M tokens")
    days = (f", {rec['time_to_train_days']:.1f} {'天' if zh else 'days'}" if rec["time_to_train_days"] is not None
            else "")
    commit = (f", {'需投入' if zh else 'commits'} {_money(rec['commitment'], cur)}"
              if rec["commitment"] is not None else "")
    con.print(f"[bold]{'答案' if zh else 'Answer'}[/bold]: {rec['why']}")
    con.print(f"  {rec['acquisition']} {rec['gpus']} x {rec['gpu']}: {cost}{days}{commit}"
              + (f"; {'市场' if zh else 'market'} {extra['market']['market']}" if extra.get("market") else ""))
    for r in rec["runner_ups"]:
        con.print(f"  {'备选' if zh else 'runner-up'}: {r['acquisition']} {r['gpus']} x {r['gpu']}: {r['trade']}")


def _money(x: float, cur: str) -> str:
    return f"{x / 1e6:,.2f} M {cur}" if abs(x) >= 1e6 else f"{x:,.0f} {cur}"


def _print_recommendation(con: Console, options: list[dict[str, Any]], extra: dict[str, Any], zh: bool) -> None:
    cur = extra["currency"]
    pick = extra.get("rankings", {}).get("recommended") or []
    fits = bool(pick)
    best = options[pick[0]] if pick else options[0]
    hw, sysd, cost = best["hardware"], best["system"], best["cost"]
    rented = "租用：在服务商机房" if zh else "rented: in the provider's data centre, your site's racks do not apply"
    where = f"{'机房' if zh else 'site'} {extra['site']}" if best.get("site_applies", True) else rented
    con.print(f"\n[bold]{'推荐方案明细' if zh else 'The recommended option in detail'}[/bold] ({where}): "
              f"{hw['gpus']} x {hw['gpu']} in {hw['nodes']} server(s) of {hw['gpus_per_node']}"
              + ("" if fits else " (no option can be had within the constraints: the fastest shown)"))
    host, st, net, pw = sysd["host"], sysd["storage"], sysd["network"], sysd["power"]
    con.print(f"  host: {host['ram_gib_per_node']:,.0f} GiB RAM, {host['cpu_cores_per_node']} cores per server "
              f"(needed {host['ram_needed_gib']:,.0f} GiB; {host['seed_rule']}: {host['seed_rule_ram_gib']:,.0f})")
    con.print(f"  storage: {st['shared_capacity_tb']:,.1f} TB shared, read {st['read_gbps'] * 1000:.1f} MB/s, "
              f"checkpoint bursts {st['checkpoint_write_gbps']:.1f} GB/s, "
              f"{st['local_nvme_tb_per_node']:g} TB NVMe per server")
    con.print(f"    {st['seed_rule_verdict']}")
    con.print(f"  network: {net['fabric'] or '-'}; {net['reason']}; {net['nics_per_node']} NICs per server, "
              f"{net['leaf_switches']} leaf + {net['spine_switches']} spine switches")
    con.print(f"  power: {pw['server_max_kw']:.1f} kW per server, {pw['total_it_max_kw']:.1f} kW IT max, "
              f"{pw['facility_kw']:.1f} kW at the site's PUE, {pw['heat_btu_per_h']:,} BTU/h")
    fit = sysd.get("site_fit")
    if fit:
        con.print(f"  site fit: {fit['verdict']}")
        for r in fit["remedies"]:
            con.print(f"    - {r}")
    if not cost:
        con.print(f"  [bold]verdict[/bold]: {best['verdict']}")
        return
    buy = cost["buy"]
    con.print(f"  buy: capex {_money(buy['capex_total'], cur)} "
              f"({', '.join(f'{k} {_money(v, cur)}' for k, v in buy['capex'].items() if v)}); "
              f"opex {_money(buy['opex_total_per_year'], cur)}/year; first year {_money(buy['first_year'], cur)} "
              f"(seed 1.6-1.8x hardware: {_money(cost['seed_first_year_range'][0], cur)}-"
              f"{_money(cost['seed_first_year_range'][1], cur)})")
    if cost.get("rent"):
        rent = cost["rent"]
        con.print(f"  renting for the whole horizon instead: {rent['price_per_gpu_hour']:.2f} {cur}/GPU-hour "
                  f"({rent['offer']}), {_money(rent['per_year'], cur)}/year; break-even " + _break_even(cost))
    pr = best.get("per_run") or {}
    if pr.get("hours"):
        rent_text = (f"{_money(pr['rent']['cost'], cur)} ({pr['rent']['provider']}, {pr['rent']['term']})"
                     if pr.get("rent") else pr.get("rent_unavailable") or "-")
        buy_text = (f"{_money(pr['buy']['cost'], cur)} at {pr['workload']}" if pr.get("buy")
                    else pr.get("buy_unavailable") or "-")
        con.print(f"  one training run ({pr['hours']:,.1f} h): rent {rent_text}; buy {buy_text}")
    if cost.get("fx_sensitivity"):
        con.print("  FX sensitivity (USD/CNY -> buy total): " + ", ".join(
            f"{rate}: {_money(v, cur)}" for rate, v in cost["fx_sensitivity"].items()))
    for check in cost.get("seed_checks", []):
        con.print(f"  seed: {check}")
    con.print(f"  [bold]verdict[/bold]: {best['verdict']}")
    tl = extra["timeline"]
    con.print(f"  timeline: {tl['total_days'][0]}-{tl['total_days'][1]} days (" +
              "; ".join(f"{s['step']} {s['days'][0]}-{s['days'][1]}" for s in tl["steps"]) + ")")
    for v in extra["verification"]:
        con.print(f"  {v['step']}: {v['command']}  ({v['check']})")


def _break_even(cost: dict[str, Any]) -> str:
    months, util = cost.get("break_even_months"), cost.get("break_even_utilisation")
    text = "never (renting costs less than owning's running costs)" if months is None \
        else f"after {months:,.0f} months"
    if util is not None:
        text += ("; no utilisation makes owning cheaper within the horizon" if util > 1
                 else f"; owning is cheaper above {util:.0%} utilisation")
    return text


def print_quotes(data: dict[str, Any]) -> None:
    con = _console()
    cur = data["currency"]
    table = Table(title=f"Rental quotes ({cur}; MFU basis: {data['mfu_basis']})", title_justify="left")
    for col in ("offer", "GPUs", f"{cur}/GPU-h", "delivered PFLOPS", f"{cur}/PFLOP-h", "run cost", "split", "flags"):
        table.add_column(col, overflow="fold")
    for q in data["quotes"]:
        split = ", ".join(f"{k} {v:.0%}" for k, v in q["split"].items()) + (" (est.)" if q["split_estimated"] else "")
        table.add_row(q["name"], str(q["gpus"]), f"{q['price_per_gpu_hour']:.2f}", f"{q['delivered_pflops']:.2f}",
                      f"{q['cost_per_delivered_pflop_hour']:.1f}",
                      "-" if q["run_cost"] is None else _money(q["run_cost"], cur), split, "; ".join(q["flags"]))
    con.print(table)


def print_sites(sites: dict[str, Any]) -> None:
    table = Table(title="Sites", title_justify="left")
    for col in ("id", "kW/rack", "cooling", "PUE", "power price", "rack rent", "name"):
        table.add_column(col, overflow="fold")
    for s in sites.values():
        rent = (f"{s.rack_rent_per_month:,.0f}/rack-mo" if s.rack_rent_per_month is not None
                else f"{s.rack_rent_per_kw_month or 0:,.0f}/kW-mo")
        table.add_row(s.id, f"{s.rack_power_kw:g}", s.cooling, f"{s.pue:g}", f"{s.electricity_price:g} {s.currency}",
                      rent, s.name)
    _console().print(table)


def print_scale(gpu: str, curves: list[Any]) -> None:
    con = _console()
    counts = [p.gpus for p in curves[0].points] if curves else []
    table = Table(title=f"Scaling {gpu}: tokens/s (efficiency)", title_justify="left")
    table.add_column("links")
    for n in counts:
        table.add_column(str(n), justify="right")
    for c in curves:
        cells = []
        for p in c.points:
            cells.append("-" if p.tokens_per_s is None else f"{p.tokens_per_s:,.0f} ({p.efficiency:.0%})")
        table.add_row(c.label, *cells)
    con.print(table)
    for c in curves:
        for v in c.verdicts():
            con.print(f"  - {v}")
