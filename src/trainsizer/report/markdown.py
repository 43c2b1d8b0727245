"""The report as Markdown (the same sections as the HTML report; charts are in the HTML file)."""

from __future__ import annotations

from typing import Any

from trainsizer.report.html import TITLES, _money, _option_row, source_name


def _t(key: str, lang: str) -> str:
    en, zh = TITLES[key]
    return zh if lang == "zh-CN" else en


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    def cell(v: Any) -> str:
        return str(v).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def render_markdown(report: dict[str, Any]) -> str:
    lang, plan, pick, job = report["lang"], report["plan"], report["recommended"], report["job"]
    cur = plan["currency"]
    out = [f"# {report['title']}", "", f"trainsizer, {report['generated']}; job `{source_name(job['source'])}`; site "
           f"`{plan['site']}`; currency {cur}", ""]
    if not pick:
        out += [f"## {_t('suggestions', lang)}", ""] + [f"- {s}" for s in plan["suggestions"]]
        return "\n".join(out) + "\n"
    hw, perf = pick["hardware"], pick["performance"]
    out += [f"## {_t('recommendation', lang)}", "",
            f"**{hw['gpus']} x {hw['gpu']}** in {hw['nodes']} server(s) of {hw['gpus_per_node']} - "
            f"{plan.get('recommended_because', '')}; {perf['tokens_per_s']:,.0f} tokens/s, MFU {perf['mfu']:.0%}.",
            "", f"> {pick['verdict']}", "", pick["why"], "",
            f"## {_t('alternatives', lang)}", ""]
    shown = sorted({i for idx in plan["rankings"].values() for i in idx})[:15]
    out.append(_table(["option", "servers", "layout", "GiB used / capacity", "tokens/s", "MFU", "days", "buy",
                       "rent", "fits site"], [_option_row(plan["options"][i], cur) for i in shown]))
    sysd = pick["system"]
    out += ["", f"## {_t('bom', lang)}", "", "```", _json_block(sysd), "```"]
    cost = pick.get("cost")
    if cost:
        out += ["", f"## {_t('cost', lang)}", "",
                _table(["item", cur], [[f"capex {k}", _money(v, cur)] for k, v in cost["buy"]["capex"].items()]
                       + [[f"opex/year {k}", _money(v, cur)] for k, v in cost["buy"]["opex_per_year"].items()]
                       + [["buy total", _money(cost["buy"]["total"], cur)],
                          ["rent total", _money((cost.get("rent") or {}).get("total"), cur)]]),
                ""] + [f"- seed: {c}" for c in cost["seed_checks"]]
    out += ["", f"## {_t('timeline', lang)}", ""] + [f"- {s['step']}: {s['days'][0]}-{s['days'][1]} days"
                                                    for s in plan["timeline"]["steps"]]
    out += ["", f"## {_t('verify', lang)}", ""] + [f"- {v['step']}: `{v['command']}` - {v['check']}"
                                                  for v in plan["verification"]]
    out += ["", f"## {_t('assumptions', lang)}", "",
            _table(["assumption", "source", "as of"], [[a["what"], a["source"], a["as_of"]]
                                                      for a in report["assumptions"]])]
    return "\n".join(out) + "\n"


def _json_block(data: Any) -> str:
    import json

    return json.dumps(data, indent=2, ensure_ascii=False)
