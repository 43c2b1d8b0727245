"""The report as Markdown: the same sections as the HTML report (charts are in the HTML file)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trainsizer.report.html import source_name
from trainsizer.report.sections import Code, Section, document, meta_line, title
from trainsizer.report.words import labelled

if TYPE_CHECKING:  # the plan document's keys (workflows.plan_schema)
    from trainsizer.report.answer import Card
    from trainsizer.workflows.plan_schema import ReportJSON


def _cell(v: Any) -> str:
    if isinstance(v, Code):
        return f"`{v.text}`"
    return str(v).replace("|", "\\|").replace("\n", " ")


def _table(headers: list[Any], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(_cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def answer_markdown(answer: Card, lang: str) -> list[str]:
    if not answer["ok"]:
        return [f"**{answer['reason']}**", ""] + [f"- {i}" for i in answer["advice"]]
    out = [f"- {labelled(f'**{k}**', v, lang)}" for k, v in answer["facts"]] + ["", answer["why"]]
    if answer["runner_ups"]:
        out += ["", f"**{answer['runner_ups_title']}**", ""]
        out += [f"- **{r['title']}** — {r['summary']} — {r['trade']}" for r in answer["runner_ups"]]
    return out


def _section(section: Section, lang: str) -> list[str]:
    out = [f"## {section.title}", ""]
    for block in section.blocks:
        kind = block[0]
        if kind == "answer":
            out += answer_markdown(block[1], lang)
        elif kind == "p":
            out.append(block[1])
        elif kind == "verdict":
            out.append(f"> {block[1]}")
        elif kind == "list":
            out += [f"- {i}" for i in block[1]]
        elif kind == "table":
            out.append(_table(block[1], block[2]))
        out.append("")
    return out


def render_markdown(report: ReportJSON) -> str:
    lang, job = report["lang"], report["job"]
    out = [f"# {title(job, lang)}", "", meta_line(report, f"`{source_name(job['source'])}`", lang), ""]
    for section in document(report, charts=False):
        out += _section(section, lang)
    return "\n".join(out).rstrip() + "\n"
