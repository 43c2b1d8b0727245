"""Charts as self-contained SVG strings: no JavaScript, no CDN, readable in print (dark strokes,
labelled axes, patterns distinguishable in greyscale by dash style).

Used by the HTML report and the web planner alike: both build chart specs with
:mod:`trainsizer.report.specs` and draw them with :func:`render_chart`. Axes follow
:func:`trainsizer.report.axes.choose_axis` (linear unless the data spans more than 20x).
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

from trainsizer.report.axes import Axis, choose_axis, fmt_tick
from trainsizer.workflows.defaults import TIGHT_FRACTION

if TYPE_CHECKING:  # what a spec holds
    from trainsizer.report.chart_spec import ChartSpec, Mark

PALETTE = ["#1f4e79", "#c55a11", "#2e7d32", "#6a1b9a", "#ad1457", "#00838f", "#5d4037", "#455a64"]
DASHES = ["", "6 3", "2 3", "8 3 2 3", "1 2", "10 4", "4 4", "12 2"]
FONT = "font-family='Helvetica, Arial, \"PingFang SC\", \"Microsoft YaHei\", sans-serif'"
STATUS_COLORS = {"fits": "#2e7d32", "tight": "#c55a11", "no_fit": "#b00020"}



def fit_status(used_gib: float, capacity_gib: float, fits: bool | None = None) -> str:
    """``fits``, ``tight`` (above ``TIGHT_FRACTION`` of capacity) or ``no_fit``."""
    if fits is False or used_gib > capacity_gib:
        return "no_fit"
    return "tight" if used_gib > TIGHT_FRACTION * capacity_gib else "fits"


def _open(title: str, width: int, height: int, kind: str) -> list[str]:
    return [f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {width} {height}' width='100%' role='img' "
            f"aria-label='{escape(title)}' class='chart chart-{kind}'>",
            f"<text x='{width / 2}' y='20' text-anchor='middle' font-size='15' font-weight='bold' {FONT}>"
            f"{escape(title)}</text>"]


def _text(x: float, y: float, text: str, size: int = 12, anchor: str = "start", extra: str = "") -> str:
    return (f"<text x='{x:.1f}' y='{y:.1f}' text-anchor='{anchor}' font-size='{size}' {FONT}{extra}>"
            f"{escape(text)}</text>")


def text_width(text: str, size: float = 12) -> float:
    """About how wide ``text`` is drawn at ``size`` px (CJK characters are square, Latin ones about half)."""
    return sum(size if ord(c) >= 0x2E80 else size * 0.56 for c in text)


def bar_chart(title: str, labels: list[str], values: list[float], unit: str = "", width: int = 640) -> str:
    """Horizontal bars from zero, e.g. a breakdown whose parts are compared with each other."""
    row, left, right = 26, 190, 90
    height = 50 + row * len(labels)
    vmax = max(values + [1e-12])
    plot = width - left - right
    parts = _open(title, width, height, "bar")
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        y = 36 + i * row
        w = plot * value / vmax
        parts.append(_text(left - 6, y + 15, label, anchor="end"))
        parts.append(f"<rect x='{left}' y='{y + 3}' width='{w:.1f}' height='{row - 8}' fill='{PALETTE[i % 8]}' "
                     f"stroke='#000' stroke-width='0.5'/>")
        parts.append(_text(left + w + 5, y + 15, f"{value:.2f} {unit}"))
    parts.append("</svg>")
    return "".join(parts)


def _memory_guides(ax: Axis, left: float, plot: float, top: float, bottom: float, capacity: float,
                   text: dict[str, str]) -> list[str]:
    """The safety margin (TIGHT_FRACTION to capacity, shaded) and the capacity line, labelled above the plot."""
    xm, xc = left + plot * ax.frac(TIGHT_FRACTION * capacity), left + plot * ax.frac(capacity)
    return [f"<rect class='safety-margin' data-testid='safety-margin' x='{xm:.1f}' y='{top:.1f}' "
            f"width='{xc - xm:.1f}' height='{bottom - top:.1f}' fill='#f3c9ae' fill-opacity='0.6' stroke='none'>"
            f"<title>{escape(text['margin'])}</title></rect>",
            f"<line class='capacity-line' data-testid='capacity-line' x1='{xc:.1f}' x2='{xc:.1f}' y1='{top - 6:.1f}' "
            f"y2='{bottom:.1f}' stroke='#b00020' stroke-width='2.2'/>",
            _text(xc, top - 9, text["capacity"], 11, "end"),
            _text(xm - 4, bottom + 28, text["margin"], 11, "end", " fill='#7a3d12'")]


def _error_bar(x0: float, x1: float, y: float, title: str) -> str:
    """A horizontal error bar with caps from ``x0`` to ``x1`` at height ``y`` (an 80 % range)."""
    caps = "".join(f"<line x1='{x:.1f}' x2='{x:.1f}' y1='{y - 6:.1f}' y2='{y + 6:.1f}' stroke='#000' "
                   f"stroke-width='1.5'/>" for x in (x0, x1))
    return (f"<g class='range' data-testid='memory-range'><title>{escape(title)}</title><line x1='{x0:.1f}' "
            f"x2='{x1:.1f}' y1='{y:.1f}' y2='{y:.1f}' stroke='#000' stroke-width='1.5'/>{caps}</g>")


# long: one SVG drawn in order (ticks, guides, parts, total, range, status); splitting it scatters the layout
def memory_chart(title: str, labels: list[str], values: list[float], total: float, capacity: float,
                 unit: str = "GiB", text: dict[str, str] | None = None, width: int = 640,
                 total_range: list[float] | None = None) -> str:
    """Memory per GPU as a waterfall: each part starts where the previous ended, so the last one ends at the
    headline ``total``, drawn again as one bar beneath with its 80 % range (``total_range``) as an error bar; the
    GPU's ``capacity`` is a line, the safety margin below it (``TIGHT_FRACTION``) is shaded, and the status
    (fits, tight, does not fit) is written out."""
    status = fit_status(total, capacity)
    text = {"total": "total on the device", "capacity": f"capacity {capacity:.1f} {unit}",
            "margin": f"safety margin ({1 - TIGHT_FRACTION:.0%})", "status": status, "reason": "", **(text or {})}
    row, right = 22, 60
    left = min(max(max((text_width(t) for t in [*labels, text["total"]]), default=0) + 14, 120), 300)
    top = 52
    plot = width - left - right
    n = len(labels) + 1
    bottom = top + row * n + 4
    notes = [t for t in (text.get("range") if total_range else "", text["reason"]) if t]
    height = int(bottom + 54 + 16 * max(len(notes), 1))
    ax = Axis(0.0, max(capacity, total, *(total_range or ())) * 1.06)
    parts = _open(title, width, height, "memory")
    for t in ax.ticks():
        x = left + plot * ax.frac(t)
        parts.append(f"<line x1='{x:.1f}' x2='{x:.1f}' y1='{top:.1f}' y2='{bottom:.1f}' stroke='#ddd'/>")
        parts.append(_text(x, bottom + 14, fmt_tick(t), 11, "middle"))
    parts += _memory_guides(ax, left, plot, top, bottom, capacity, text)
    cum = 0.0
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        y = top + i * row
        x0, x1 = left + plot * ax.frac(cum), left + plot * ax.frac(cum + value)
        parts.append(_text(left - 6, y + 14, label, anchor="end"))
        parts.append(f"<rect class='memory-part' x='{x0:.1f}' y='{y + 3}' width='{max(x1 - x0, 0.5):.1f}' "
                     f"height='{row - 7}' fill='{PALETTE[i % 8]}' stroke='#000' stroke-width='0.5'/>")
        parts.append(_text(x1 + 4, y + 14, f"+{value:.2f}", 11))
        cum += value
    y = top + (n - 1) * row
    color = STATUS_COLORS[status]
    parts.append(_text(left - 6, y + 14, text["total"], anchor="end", extra=" font-weight='bold'"))
    parts.append(f"<rect class='memory-total' data-testid='memory-total' x='{left}' y='{y + 3}' "
                 f"width='{plot * ax.frac(total):.1f}' height='{row - 7}' fill='{color}' stroke='#000' "
                 f"stroke-width='0.8'/>")
    end = left + plot * ax.frac(max([total, *(total_range or ())]))
    parts.append(_text(end + 4, y + 14, f"{total:.2f}", 11, extra=" font-weight='bold'"))
    if total_range:
        parts.append(_error_bar(left + plot * ax.frac(total_range[0]), left + plot * ax.frac(total_range[1]),
                                y + row / 2 - 1, text.get("range") or f"{total_range[0]:.1f}-{total_range[1]:.1f}"))
    parts.append(f"<text class='memory-status' data-testid='memory-status' data-status='{status}' x='{left}' "
                 f"y='{bottom + 44}' font-size='12' font-weight='bold' fill='{color}' {FONT}>"
                 f"{escape(text['status'])}</text>")
    for k, note in enumerate(notes):  # the range in words, then why a tight fit is one
        parts.append(_text(left, bottom + 60 + 16 * k, note, 11))
    parts.append(_text(left, bottom + 28, unit, 11))
    parts.append("</svg>")
    return "".join(parts)


def _mark(x: float, y: float, label: str, color: str = "#000", right_edge: float = 640) -> list[str]:
    anchor, dx = ("end", -12) if x > right_edge - 170 else ("start", 12)
    return [f"<g class='recommended-point' data-testid='recommended-point'>"
            f"<circle cx='{x:.1f}' cy='{y:.1f}' r='8' fill='none' stroke='{color}' stroke-width='2.5'/>"
            f"<circle cx='{x:.1f}' cy='{y:.1f}' r='3' fill='{color}'/>",
            _text(x + dx, y - 10, label, 12, anchor, " font-weight='bold' stroke='#fff' stroke-width='3' "
                  "paint-order='stroke'"), "</g>"]


# Each end of a chart's x axis extends by this share of its span, so a point at the smallest or largest x is drawn
# clear of the frame and the y axis's tick labels (assumed: about 20 px on a 550 px plot).
X_INSET = 0.04


def _inset(ax: Axis) -> Axis:
    if ax.hi <= ax.lo:
        return ax
    if ax.log:
        k = (ax.hi / ax.lo) ** X_INSET
        return Axis(ax.lo / k, ax.hi * k, True)
    pad = (ax.hi - ax.lo) * X_INSET
    return Axis(ax.lo - pad, ax.hi + pad)


# long: one SVG drawn in order (axes, ticks, series, legend, marks and their ranges); splitting it scatters the layout
def line_chart(title: str, x: list[float], series: dict[str, list[float | None]], x_label: str, y_label: str,
               log_x: bool | None = None, width: int = 640, height: int = 360, log_y: bool | None = None,
               marks: list[Mark] | None = None, log_note: str = " (log scale)") -> str:
    """Lines with markers, one per series (None = no point), e.g. tokens/s vs GPU count per link. Each axis is
    linear unless its data spans more than 20x (``log_x`` / ``log_y`` force a choice); ``marks`` are points
    ringed and labelled (``{"x", "y", "label"}``), e.g. the recommended option."""
    left, right, top, bottom = 70, 20, 34, 60 + 16 * ((len(series) + 1) // 2)
    plot_w, plot_h = width - left - right, height - top - bottom
    ys = [v for vals in series.values() for v in vals if v is not None]
    if not ys or not x:
        return f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {width} 60' class='chart'><text x='10' y='30' " \
               f"{FONT}>{escape(title)}: no data</text></svg>"
    ax = _inset(choose_axis(x, log=log_x))  # no point on the frame: the first and last sit inside it
    ay = choose_axis(ys + [v for m in marks or [] for v in (m["y"], *m.get("y_range", ()))], from_zero=True, pad=0.1,
                     log=log_y)
    if ax.hi == ax.lo:
        ax = Axis(ax.lo - 1, ax.hi + 1)

    def px(v: float) -> float:
        return left + ax.frac(v) * plot_w

    def py(v: float) -> float:
        return top + plot_h - ay.frac(v) * plot_h

    parts = _open(title, width, height, "line")
    parts.append(f"<rect x='{left}' y='{top}' width='{plot_w}' height='{plot_h}' fill='none' stroke='#000'/>")
    for t in ay.ticks():
        parts.append(f"<line x1='{left}' x2='{left + plot_w}' y1='{py(t):.1f}' y2='{py(t):.1f}' stroke='#ccc'/>")
        parts.append(_text(left - 5, py(t) + 4, fmt_tick(t), 11, "end"))
    for v in (x if len(x) <= 12 else ax.ticks()):
        parts.append(_text(px(v), top + plot_h + 16, fmt_tick(v), 11, "middle"))
    scale_note = lambda a: log_note if a.log else ""  # noqa: E731
    parts.append(_text(left + plot_w / 2, top + plot_h + 34, x_label + scale_note(ax), 12, "middle"))
    parts.append(_text(16, top + plot_h / 2, y_label + scale_note(ay), 12, "middle",
                       f" transform='rotate(-90 16 {top + plot_h / 2})'"))
    for i, (name, vals) in enumerate(series.items()):
        color, dash = PALETTE[i % 8], DASHES[i % 8]
        pts = [(px(xv), py(yv)) for xv, yv in zip(x, vals, strict=False) if yv is not None]
        if len(pts) > 1:
            path = " ".join(f"{a:.1f},{b:.1f}" for a, b in pts)
            parts.append(f"<polyline points='{path}' fill='none' stroke='{color}' stroke-width='2.2' "
                         f"stroke-dasharray='{dash}'/>")
        for a, b in pts:
            parts.append(f"<circle cx='{a:.1f}' cy='{b:.1f}' r='3.2' fill='{color}' stroke='#000' stroke-width='0.5'/>")
        lx = left + (i % 2) * (plot_w / 2)
        ly = top + plot_h + 50 + 16 * (i // 2)
        parts.append(f"<line x1='{lx}' x2='{lx + 24}' y1='{ly - 4}' y2='{ly - 4}' stroke='{color}' stroke-width='2.2' "
                     f"stroke-dasharray='{dash}'/>")
        parts.append(_text(lx + 30, ly, name, 11))
    for m in marks or []:
        if m.get("y_range"):  # the 80 % range as an error bar with caps
            x0, (y0, y1) = px(m["x"]), (py(v) for v in m["y_range"])
            parts.append(f"<g class='range' data-testid='{m.get('testid', 'recommended-range')}'>"
                         f"<line x1='{x0:.1f}' x2='{x0:.1f}' "
                         f"y1='{y0:.1f}' y2='{y1:.1f}' stroke='#000' stroke-width='1.5'/>"
                         + "".join(f"<line x1='{x0 - 6:.1f}' x2='{x0 + 6:.1f}' y1='{y:.1f}' y2='{y:.1f}' stroke='#000' "
                                   f"stroke-width='1.5'/>" for y in (y0, y1)) + "</g>")
        if m.get("label"):  # a mark without a label is its range alone
            parts += _mark(px(m["x"]), py(m["y"]), m["label"], right_edge=left + plot_w)
    parts.append("</svg>")
    return "".join(parts)


PARETO_LOG_SPAN = 4  # GPU counts over this ratio (two doublings) are drawn on a log axis


def pareto_chart(title: str, points: list[tuple[float, float, str]], front: list[int], x_label: str,
                 y_label: str, width: int = 640, height: int = 380, max_types: int = 6,
                 recommended: int | None = None, recommended_label: str = "recommended",
                 front_label: str = "Pareto front", log_note: str = " (log scale)",
                 recommended_range: list[float] | None = None) -> str:
    """Best time per GPU count for each GPU type, the Pareto front across all of them, and the recommended
    option (``points[recommended]``) ringed and labelled, with its 80 % range as an error bar."""
    if not points:
        return line_chart(title, [], {}, x_label, y_label)
    xs = sorted({p[0] for p in points})
    types: list[str] = []
    for _, _, label in sorted(points, key=lambda p: p[1]):
        if label not in types:
            types.append(label)
    series: dict[str, list[float | None]] = {}
    for label in types[:max_types]:
        vals: list[float | None] = [None] * len(xs)
        for gx, gy, lab in points:
            if lab == label:
                k = xs.index(gx)
                vals[k] = gy if vals[k] is None else min(vals[k], gy)
        series[label] = vals
    pareto: list[float | None] = [None] * len(xs)
    for i in front:
        gx, gy, _ = points[i]
        k = xs.index(gx)
        pareto[k] = gy if pareto[k] is None else min(pareto[k], gy)
    series[front_label] = pareto
    marks: list[Mark] = []
    if recommended is not None and 0 <= recommended < len(points):
        gx, gy, lab = points[recommended]
        marks.append({"x": gx, "y": gy, "label": recommended_label,
                      **({"y_range": recommended_range} if recommended_range else {})})
    # GPU counts double (8, 16, 32): on a log axis each doubling is one step, where a linear one crowds the small
    # counts into the left edge
    doubling = xs[0] > 0 and xs[-1] / xs[0] >= PARETO_LOG_SPAN
    return line_chart(title, xs, series, x_label, y_label, width=width, height=height, marks=marks,
                      log_note=log_note, log_x=True if doubling else None)


def render_chart(spec: ChartSpec) -> str:
    """An SVG chart from a chart spec (``kind`` memory, bar, line or pareto). Axes follow the data
    (:func:`trainsizer.report.axes.use_log_axis`); a spec's own ``log_x`` / ``log_y`` hints are not used."""
    args = {k: v for k, v in spec.items() if k != "kind"}
    if spec["kind"] == "memory":
        return memory_chart(args["title"], args["labels"], args["values"], args["total"], args["capacity"],
                            args.get("unit", "GiB"), args.get("text"), total_range=args.get("total_range"))
    if spec["kind"] == "bar":
        return bar_chart(args["title"], args["labels"], args["values"], args.get("unit", ""))
    if spec["kind"] == "pareto":
        return pareto_chart(args["title"], [tuple(p) for p in args["points"]], args["front"], args["x_label"],
                            args["y_label"], recommended=args.get("recommended"),
                            recommended_label=args.get("recommended_label", "recommended"),
                            front_label=args.get("front_label", "Pareto front"),
                            log_note=args.get("log_note", " (log scale)"),
                            recommended_range=args.get("recommended_range"))
    return line_chart(args["title"], args["x"], args["series"], args["x_label"], args["y_label"],
                      log_note=args.get("log_note", " (log scale)"), marks=args.get("marks"))
