"""The report as one self-contained HTML file: inline CSS (with print rules) and inline SVG charts.
Nothing is loaded from the network, so it opens offline and can be mailed as an attachment."""

from __future__ import annotations

from html import escape
from pathlib import PurePath
from typing import Any

from trainsizer.report.charts import render_chart
from trainsizer.report.specs import plan_chart_specs

TITLES = {
    "summary": ("Summary", "摘要"), "recommendation": ("Recommendation", "推荐方案"),
    "charts": ("Charts", "图表"), "alternatives": ("Alternatives", "备选方案"),
    "bom": ("Bill of materials", "配置清单"), "site": ("Site fit", "机房适配"),
    "cost": ("Cost: rent vs buy", "成本：租用与自购"), "timeline": ("Timeline", "部署时间线"),
    "verify": ("Verification on hardware", "上机验证"), "assumptions": ("Assumptions and sources", "假设与来源"),
    "suggestions": ("What would make it fit", "如何调整才能放下"),
}
CSS = """
body{font-family:Helvetica,Arial,"PingFang SC","Microsoft YaHei",sans-serif;max-width:1000px;margin:2em auto;
padding:0 1em;color:#111;line-height:1.45;overflow-wrap:anywhere}
.table-wrap{overflow-x:auto;max-width:100%}figure{margin:.5em 0}
h1{font-size:1.6em;border-bottom:3px solid #1f4e79}h2{font-size:1.25em;margin-top:1.6em;color:#1f4e79}
table{border-collapse:collapse;width:100%;margin:.6em 0;font-size:.9em}th,td{border:1px solid #999;
overflow-wrap:anywhere;padding:4px 6px;text-align:left;vertical-align:top}th{background:#e8eef5}
.verdict{font-weight:bold;padding:.5em;border-left:5px solid #c55a11;background:#fbf1ea}
.chart{max-width:100%;height:auto;margin:.5em 0;page-break-inside:avoid}
.small{font-size:.8em;color:#444}code{background:#f3f3f3;padding:1px 3px}
@media (max-width:480px){body{margin:1em auto;padding:0 .6em}table{font-size:.8em}}
@media print{body{margin:0;max-width:none}h2{page-break-after:avoid}table,figure{page-break-inside:avoid}
.verdict{background:none}}
"""


def _t(key: str, lang: str) -> str:
    en, zh = TITLES[key]
    return zh if lang == "zh-CN" else en


def _money(x: float | None, cur: str) -> str:
    if x is None:
        return "-"
    return f"{x / 1e6:,.2f} M {cur}" if abs(x) >= 1e6 else f"{x:,.0f} {cur}"


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{escape(str(h))}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<div class='table-wrap'><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"


def _option_row(o: dict[str, Any], cur: str) -> list[Any]:
    hw, par, perf, mem = o["hardware"], o["parallel"], o["performance"], o["memory"]
    days = perf["time_to_train_s"] / 86400 if perf.get("time_to_train_s") else None
    cost = o.get("cost") or {}
    buy = (cost.get("buy") or {}).get("total")
    rent = (cost.get("rent") or {}).get("total")
    fit = (o.get("system", {}).get("site_fit") or {}).get("fits")
    return [f"{hw['gpus']} x {hw['gpu']}", f"{hw['nodes']} x {hw['gpus_per_node']}",
            f"tp{par['tp']} pp{par['pp']} dp{par['dp']} zero{par['zero']} {par['offload']}",
            f"{mem['device_gib']:.1f} / {mem['capacity_gib']:.0f}", f"{perf['tokens_per_s']:,.0f}",
            f"{perf['mfu']:.0%}", "-" if days is None else f"{days:.1f}", _money(buy, cur), _money(rent, cur),
            {True: "yes", False: "no", None: "-"}[fit]]


def _bom_section(pick: dict[str, Any], lang: str) -> str:
    parts: list[str] = []
    sysd = pick["system"]
    host, st, net, pw = sysd["host"], sysd["storage"], sysd["network"], sysd["power"]
    parts.append(f"<h2>{_t('bom', lang)}</h2>")
    parts.append(_table(["item", "quantity / size", "why"], [
        ["GPU servers", f"{sysd['servers']['count']} x {sysd['servers']['gpus_per_server']} {sysd['servers']['gpu']}",
         pick["why"]],
        ["host RAM per server", f"{host['ram_gib_per_node']:,.0f} GiB",
         f"needed {host['ram_needed_gib']:,.0f} GiB: " + ", ".join(f"{k} {v:,.0f}" for k, v in
                                                                  host["ram_breakdown_gib"].items())
         + f" (seed: {host['seed_rule_ram_gib']:,.0f} GiB)"],
        ["CPU cores per server", host["cpu_cores_per_node"], f"{host['cpu_cores_needed']} for loaders and ranks"],
        ["shared storage", f"{st['shared_capacity_tb']:,.1f} TB", f"checkpoints {st['checkpoint_tb']:.2f} TB each, "
                                                                   f"dataset {st['dataset_tb']:.3f} TB"],
        ["storage throughput", f"read {st['read_gbps'] * 1000:.1f} MB/s, write {st['checkpoint_write_gbps']:.1f} GB/s",
         st["seed_rule_verdict"]],
        ["local NVMe per server", f"{st['local_nvme_tb_per_node']:g} TB", "checkpoint staging, dataset cache"],
        ["network", f"{net['fabric'] or '-'}; {net['nics_per_node']} NICs/server; {net['leaf_switches']} leaf + "
                    f"{net['spine_switches']} spine", net["reason"]],
        ["power", f"{pw['server_max_kw']:.1f} kW/server, {pw['total_it_max_kw']:.1f} kW IT, "
                  f"{pw['facility_kw']:.1f} kW facility", f"{pw['heat_btu_per_h']:,} BTU/h of heat"],
    ]))
    return "".join(parts)


def _cost_section(cost: dict[str, Any], cur: str, lang: str) -> str:
    parts: list[str] = []
    buy = cost["buy"]
    parts.append(f"<h2>{_t('cost', lang)}</h2>")
    rows = [[f"capex: {k}", _money(v, cur)] for k, v in buy["capex"].items()]
    rows += [[f"opex per year: {k}", _money(v, cur)] for k, v in buy["opex_per_year"].items()]
    rows += [["buy total over the horizon", _money(buy["total"], cur)],
             ["rent total over the horizon", _money((cost.get("rent") or {}).get("total"), cur)],
             ["break-even months", cost["break_even_months"] if cost["break_even_months"] is not None else "-"],
             ["break-even utilisation", cost["break_even_utilisation"]]]
    if cost.get("per_run"):
        rows.append(["one training run: buy share / rent",
                     f"{_money(cost['per_run']['buy'], cur)} / {_money(cost['per_run']['rent'], cur)}"])
    rows += [["FX sensitivity (USD/CNY -> buy total)", ", ".join(f"{r}: {_money(v, cur)}" for r, v in
                                                                    cost["fx_sensitivity"].items())]]
    parts.append(_table(["item", cur], rows))
    parts.append("<ul>" + "".join(f"<li>seed: {escape(c)}</li>" for c in cost["seed_checks"]) + "</ul>")
    return "".join(parts)


def source_name(source: str) -> str:
    """A job's source as the report shows it: the file's name, never the directories it sits in."""
    return PurePath(source.replace("\\", "/")).name or source


def chart_specs(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The report's charts: memory, cost and Pareto specs from the plan as the web page builds them
    (:mod:`trainsizer.report.specs`), the scaling curve from the report model."""
    specs = {**report.get("charts", {}), **plan_chart_specs(report["plan"], report["lang"])}
    return {key: specs[key] for key in ("memory", "scaling", "cost", "pareto") if key in specs}


def _charts_section(report: dict[str, Any]) -> str:
    figures = "".join(f"<figure id='chart-{key}'>{render_chart(spec)}</figure>"
                      for key, spec in chart_specs(report).items())
    return f"<h2>{_t('charts', report['lang'])}</h2>{figures}"


def render_html(report: dict[str, Any]) -> str:
    lang = report["lang"]
    plan = report["plan"]
    cur = plan["currency"]
    pick = report["recommended"]
    job = report["job"]
    parts = [f"<!DOCTYPE html><html lang='{'zh-CN' if lang == 'zh-CN' else 'en'}'><head><meta charset='utf-8'>"
             "<meta name='viewport' content='width=device-width, initial-scale=1'>",
             f"<title>{escape(report['title'])}</title><style>{CSS}</style></head><body>",
             f"<h1>{escape(report['title'])}</h1>",
             f"<p class='small'>trainsizer, {report['generated']}; job {escape(source_name(job['source']))}; site "
             f"{escape(plan['site'])}; currency {cur}</p>",
             f"<h2>{_t('summary', lang)}</h2>",
             _table(["model", "parameters", "method", "precision", "optimizer", "sequence", "tokens"],
                    [[job["model"], f"{job['params'] / 1e9:.2f} B", job["method"], job["precision"], job["optimizer"],
                      job["seq_len"], f"{job['tokens']:.3g}" if job["tokens"] else "-"]])]
    if not pick:
        parts.append(f"<h2>{_t('suggestions', lang)}</h2><ul>"
                     + "".join(f"<li>{escape(s)}</li>" for s in plan["suggestions"]) + "</ul></body></html>")
        return "".join(parts)
    hw, perf = pick["hardware"], pick["performance"]
    parts.append(f"<h2>{_t('recommendation', lang)}</h2>")
    parts.append(f"<p><b>{hw['gpus']} x {escape(hw['gpu'])}</b> in {hw['nodes']} server(s) of {hw['gpus_per_node']} "
                 f"({escape(hw['intra_node'] or '')}{' + ' + escape(hw['inter_node']) if hw['inter_node'] else ''}) "
                 f"- {escape(plan.get('recommended_because', ''))}. {perf['tokens_per_s']:,.0f} tokens/s, MFU "
                 f"{perf['mfu']:.0%}" + (f", {perf['time_to_train_s'] / 86400:.1f} days to train"
                                         if perf.get("time_to_train_s") else "") + ".</p>")
    parts.append(f"<p class='verdict'>{escape(pick['verdict'])}</p>")
    parts.append(f"<p>{escape(pick['why'])}</p>")
    parts.append(_charts_section(report))
    parts.append(f"<h2>{_t('alternatives', lang)}</h2>")
    headers = ["option", "servers", "layout", "GiB used / capacity", "tokens/s", "MFU", "days",
               f"buy ({plan['options'][0]['cost']['buy']['horizon_years'] if plan['options'][0].get('cost') else '-'}"
               " y)", "rent", "fits site"]
    shown = sorted({i for key, idx in plan["rankings"].items() for i in idx})[:15]
    parts.append(_table(headers, [_option_row(plan["options"][i], cur) for i in shown]))
    parts.append(_bom_section(pick, lang))
    sysd = pick["system"]
    fit = sysd.get("site_fit")
    if fit:
        parts.append(f"<h2>{_t('site', lang)}</h2><p>{escape(fit['verdict'])}</p>")
        if fit["remedies"]:
            parts.append("<ul>" + "".join(f"<li>{escape(r)}</li>" for r in fit["remedies"]) + "</ul>")
    if pick.get("cost"):
        parts.append(_cost_section(pick["cost"], cur, lang))
    parts.append(f"<h2>{_t('timeline', lang)}</h2>")
    tl = plan["timeline"]
    parts.append(_table(["step", "days"], [[s["step"], f"{s['days'][0]}-{s['days'][1]}"] for s in tl["steps"]]
                        + [["total", f"{tl['total_days'][0]}-{tl['total_days'][1]} ({tl['note']})"]]))
    parts.append(f"<h2>{_t('verify', lang)}</h2>")
    parts.append(_table(["step", "command", "what to check"],
                        [[v["step"], v["command"], v["check"]] for v in plan["verification"]]))
    parts.append(f"<h2>{_t('assumptions', lang)}</h2>")
    parts.append(_table(["assumption", "source", "as of"],
                        [[a["what"], a["source"], a["as_of"]] for a in report["assumptions"]]))
    parts.append("</body></html>")
    return "".join(parts)
