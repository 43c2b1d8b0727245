"""Writing a report model (:mod:`trainsizer.workflows.report_model`) as HTML, Markdown, JSON, or its bill of
materials and cost as an Excel workbook (.xlsx) or CSV."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the plan document's keys (workflows.plan_schema)
    from trainsizer.workflows.plan_schema import ReportJSON

SUFFIXES = (".html", ".htm", ".md", ".json", ".xlsx", ".csv")


def render_report(report: ReportJSON, suffix: str) -> str | bytes:
    """The report in the format its file suffix names (HTML for anything else)."""
    from trainsizer.jsonout import dumps_strict
    from trainsizer.report.export import csv_text, xlsx_bytes
    from trainsizer.report.html import render_html
    from trainsizer.report.markdown import render_markdown
    from trainsizer.report.message_text import as_json
    from trainsizer.report.tables import export_sheets

    suffix = suffix.lower()
    if suffix == ".json":
        data = {k: v for k, v in report.items() if k != "charts"}
        # messages as {code, args, text}; never NaN or Infinity: every JSON parser reads it
        return dumps_strict(as_json(data, report["lang"]))
    if suffix == ".md":
        return render_markdown(report)
    if suffix == ".xlsx":
        plan = report["plan"]
        return xlsx_bytes(export_sheets(report), plan["currency"])
    if suffix == ".csv":
        return csv_text(export_sheets(report))
    return render_html(report)


def write_report(report: ReportJSON, path: Path) -> None:
    content = render_report(report, path.suffix)
    tmp = path.with_name(path.name + ".tmp")
    if isinstance(content, bytes):
        tmp.write_bytes(content)
    else:
        tmp.write_text(content, encoding="utf-8", newline="" if path.suffix.lower() == ".csv" else None)
    tmp.replace(path)  # never leave a half-written report behind
