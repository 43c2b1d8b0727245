"""Writing a report model (:mod:`trainsizer.workflows.report_model`) as HTML, Markdown or JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_report(report: dict[str, Any], path: Path) -> None:
    from trainsizer.report.html import render_html
    from trainsizer.report.markdown import render_markdown

    suffix = path.suffix.lower()
    if suffix == ".json":
        data = {k: v for k, v in report.items() if k != "charts"}
        text = json.dumps(data, indent=2, ensure_ascii=False)
    elif suffix == ".md":
        text = render_markdown(report)
    else:
        text = render_html(report)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)  # never leave a half-written report behind
