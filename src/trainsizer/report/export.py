"""The plan's sheets (:mod:`trainsizer.report.tables`) as an Excel workbook or one CSV file.

The workbook has one sheet per table, numbers as numbers and money in a currency number format.
The CSV holds the same tables one after another: each starts with a header row whose first cell is
``sheet``, every row of it has the sheet's name in the first column, and a blank row separates them;
it is UTF-8 with a byte-order mark, so spreadsheet programs read the Chinese text right.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from trainsizer.report.tables import Money, Sheet

XLSX_MEDIA_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
CSV_MEDIA_TYPE = "text/csv; charset=utf-8"


def xlsx_available() -> bool:
    from importlib.util import find_spec

    return find_spec("openpyxl") is not None


def money_format(currency: str) -> str:
    return f'#,##0.00 "{currency}"'


def _cell(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return float(value)
    return value


def xlsx_bytes(sheets: list[Sheet], currency: str) -> bytes:
    """The workbook as bytes (needs openpyxl: ``pip install 'trainsizer[xlsx]'``)."""
    try:
        from openpyxl import Workbook
        from openpyxl.styles import Font
    except ImportError as exc:  # pragma: no cover - the web, test and xlsx extras install it
        raise RuntimeError("writing .xlsx needs openpyxl: pip install 'trainsizer[xlsx]'") from exc
    wb = Workbook()
    wb.remove(wb.active)
    fmt = money_format(currency)
    for sheet in sheets:
        ws = wb.create_sheet(sheet.name[:31])
        ws.append(sheet.headers)
        for cell in ws[1]:
            cell.font = Font(bold=True)
        ws.freeze_panes = "A2"
        widths = [len(h) for h in sheet.headers]
        for row in sheet.rows:
            ws.append([_cell(v) for v in row])
            for col, value in enumerate(row):
                if isinstance(value, str) and value.startswith(("http://", "https://")):  # a source's links
                    ws.cell(row=ws.max_row, column=col + 1).hyperlink = value.split("\n")[0]
                if isinstance(value, Money):
                    ws.cell(row=ws.max_row, column=col + 1).number_format = fmt
                if col < len(widths):
                    widths[col] = max(widths[col], min(len(str(value)) if value is not None else 0, 60))
        for col, width in enumerate(widths):
            ws.column_dimensions[ws.cell(row=1, column=col + 1).column_letter].width = width + 2
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def csv_text(sheets: list[Sheet]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\r\n")
    for n, sheet in enumerate(sheets):
        if n:
            writer.writerow([])
        writer.writerow(["sheet", *sheet.headers])
        for row in sheet.rows:
            writer.writerow([sheet.name, *("" if v is None else _cell(v) for v in row)])
    return "\ufeff" + buf.getvalue()
