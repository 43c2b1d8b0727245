"""The report as one self-contained HTML file: inline CSS (with print rules) and inline SVG charts.
Nothing is loaded from the network, so it opens offline and can be mailed as an attachment."""

from __future__ import annotations

from html import escape
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from trainsizer.report.charts import render_chart
from trainsizer.report.message_text import text
from trainsizer.report.sections import Code, Section, document, meta_line, title
from trainsizer.report.specs import plan_chart_specs, scale_spec

if TYPE_CHECKING:  # the plan document's keys (workflows.plan_schema)
    from trainsizer.report.answer import Card
    from trainsizer.report.chart_spec import ChartSpec
    from trainsizer.workflows.plan_schema import ReportJSON

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
.answer{border:2px solid #1f4e79;border-radius:6px;padding:.2em 1em 1em;margin:1em 0}
.answer h2{margin-top:.6em}.answer dl{display:grid;grid-template-columns:max-content 1fr;gap:.2em 1em;margin:.4em 0}
.answer dt{font-weight:bold}.answer dd{margin:0}.answer .why{font-size:1.05em}
.runner-ups li{margin:.3em 0}
@media (max-width:480px){body{margin:1em auto;padding:0 .6em}table{font-size:.8em}
.answer dl{grid-template-columns:1fr}}
@media print{body{margin:0;max-width:none}h2{page-break-after:avoid}table,figure{page-break-inside:avoid}
.verdict{background:none}}
"""


def source_name(source: str) -> str:
    """A job's source as the report shows it: the file's name, never the directories it sits in."""
    return PurePath(source.replace("\\", "/")).name or source


def chart_specs(report: ReportJSON) -> dict[str, ChartSpec]:
    """The report's charts: memory, cost and Pareto specs from the plan as the web page builds them
    (:mod:`trainsizer.report.specs`), the scaling curve from the report model."""
    lang = report["lang"]
    specs = {**report.get("charts", {}), **plan_chart_specs(report["plan"], lang)}
    if "scaling" in specs:  # the report model's curve, titled and labelled in the report's language
        old = specs["scaling"]
        gpu = (report.get("recommended") or {}).get("hardware", {}).get("gpu", "")
        series = {text(name, lang): values for name, values in old["series"].items()}
        specs["scaling"] = {**old, **scale_spec(gpu, old["x"], series, lang), "log_x": old.get("log_x", True)}
    return {key: specs[key] for key in ("memory", "scaling", "cost", "pareto") if key in specs}


def _cell(value: Any) -> str:
    if isinstance(value, Code):
        return f"<code translate='no'>{escape(value.text)}</code>"
    return escape(str(value))


def _table(headers: list[Any], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{_cell(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_cell(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<div class='table-wrap'><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"


def answer_html(answer: Card, heading: str = "h2") -> str:
    """The answer card: the recommendation (or why there is none), the sentence why, the runner-ups."""
    if not answer["ok"]:
        items = "".join(f"<li>{escape(i)}</li>" for i in answer["advice"])
        return (f"<section class='answer' data-testid='answer-card' data-ok='false'><{heading}>"
                f"{escape(answer['title'])}</{heading}><p class='why'>{escape(answer['reason'])}</p>"
                + (f"<ul>{items}</ul>" if items else "") + "</section>")
    d = answer["data"]
    facts = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in answer["facts"])
    runners = "".join(
        f"<li data-testid='runner-up' data-gpu='{escape(r['data'].gpu)}' data-gpus='{r['data'].gpus}' "
        f"data-acquisition='{r['data'].acquisition}' data-per-run='{r['data'].per_run}'>"
        f"<b>{escape(r['title'])}</b> — {escape(r['summary'])} — {escape(r['trade'])}</li>"
        for r in answer["runner_ups"])
    return (f"<section class='answer' data-testid='answer-card' data-ok='true' data-gpu='{escape(d.gpu)}' "
            f"data-gpus='{d.gpus}' data-acquisition='{d.acquisition}' data-per-run='{d.per_run}' "
            f"data-leads='{d.leads}'>"
            f"<{heading}>{escape(answer['title'])}</{heading}><dl>{facts}</dl>"
            f"<p class='why'>{escape(answer['why'])}</p>"
            + (f"<p><b>{escape(answer['runner_ups_title'])}</b></p><ul class='runner-ups'>{runners}</ul>"
               if runners else "") + "</section>")


def _section(section: Section, report: ReportJSON) -> str:
    parts = []
    for block in section.blocks:
        kind = block[0]
        if kind == "answer":
            return answer_html(block[1])
        if kind == "charts":
            parts.append("".join(f"<figure id='chart-{key}'>{render_chart(spec)}</figure>"
                                 for key, spec in chart_specs(report).items()))
        elif kind == "p":
            parts.append(f"<p>{escape(block[1])}</p>")
        elif kind == "verdict":
            parts.append(f"<p class='verdict'>{escape(block[1])}</p>")
        elif kind == "list":
            parts.append("<ul>" + "".join(f"<li>{escape(i)}</li>" for i in block[1]) + "</ul>")
        elif kind == "table":
            parts.append(_table(block[1], block[2]))
    return f"<h2>{escape(section.title)}</h2>" + "".join(parts)


def render_html(report: ReportJSON) -> str:
    lang, job = report["lang"], report["job"]
    name = escape(title(job, lang))
    head = [f"<!DOCTYPE html><html lang='{'zh-CN' if lang == 'zh-CN' else 'en'}'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>",
            f"<title>{name}</title><style>{CSS}</style></head><body>", f"<h1>{name}</h1>",
            f"<p class='small'>{escape(meta_line(report, source_name(job['source']), lang))}</p>"]
    return "".join(head + [_section(s, report) for s in document(report)]) + "</body></html>"
