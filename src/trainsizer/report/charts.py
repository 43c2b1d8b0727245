"""Charts as self-contained SVG strings: no JavaScript, no CDN, readable in print (dark strokes,
labelled axes, patterns distinguishable in greyscale by dash style).

Used by the HTML report and the web planner alike.
"""

from __future__ import annotations

import math
from html import escape
from typing import Any

PALETTE = ["#1f4e79", "#c55a11", "#2e7d32", "#6a1b9a", "#ad1457", "#00838f", "#5d4037", "#455a64"]
DASHES = ["", "6 3", "2 3", "8 3 2 3", "1 2", "10 4", "4 4", "12 2"]
FONT = "font-family='Helvetica, Arial, sans-serif'"


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1e9:
        return f"{v / 1e9:.3g}G"
    if a >= 1e6:
        return f"{v / 1e6:.3g}M"
    if a >= 1e3:
        return f"{v / 1e3:.3g}k"
    return f"{v:.3g}"


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        return [lo]
    step = 10 ** math.floor(math.log10((hi - lo) / n))
    for m in (1, 2, 5, 10):
        if (hi - lo) / (step * m) <= n:
            step *= m
            break
    start = math.floor(lo / step) * step
    out, v = [], start
    while v <= hi + 1e-9 * step:
        if v >= lo - 1e-9 * step:
            out.append(round(v, 10))
        v += step
    return out


def bar_chart(title: str, labels: list[str], values: list[float], unit: str = "", width: int = 640) -> str:
    """Horizontal bars, e.g. the memory breakdown of one GPU."""
    row, left, right = 26, 190, 90
    height = 50 + row * len(labels)
    vmax = max(values + [1e-12])
    plot = width - left - right
    parts = [f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {width} {height}' width='100%' role='img' "
             f"aria-label='{escape(title)}' class='chart'>",
             f"<text x='{width / 2}' y='20' text-anchor='middle' font-size='15' font-weight='bold' {FONT}>"
             f"{escape(title)}</text>"]
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        y = 36 + i * row
        w = plot * value / vmax
        parts.append(f"<text x='{left - 6}' y='{y + 15}' text-anchor='end' font-size='12' {FONT}>"
                     f"{escape(label)}</text>")
        parts.append(f"<rect x='{left}' y='{y + 3}' width='{w:.1f}' height='{row - 8}' fill='{PALETTE[i % 8]}' "
                     f"stroke='#000' stroke-width='0.5'/>")
        parts.append(f"<text x='{left + w + 5:.1f}' y='{y + 15}' font-size='12' {FONT}>"
                     f"{value:.2f} {escape(unit)}</text>")
    parts.append("</svg>")
    return "".join(parts)


def line_chart(title: str, x: list[float], series: dict[str, list[float | None]], x_label: str, y_label: str,
               log_x: bool = False, width: int = 640, height: int = 360) -> str:
    """Lines with markers, one per series (None = no point), e.g. tokens/s vs GPU count per link."""
    left, right, top, bottom = 70, 20, 34, 60 + 16 * ((len(series) + 1) // 2)
    plot_w, plot_h = width - left - right, height - top - bottom
    ys = [v for vals in series.values() for v in vals if v is not None]
    if not ys or not x:
        return f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {width} 60' class='chart'><text x='10' y='30' " \
               f"{FONT}>{escape(title)}: no data</text></svg>"
    y_lo = min(0.0, min(ys) * 1.08)
    y_hi = max(ys) * 1.08 if max(ys) > 0 else 0.0
    if y_hi <= y_lo:
        y_hi = y_lo + 1.0
    fx = (lambda v: math.log2(v)) if log_x else (lambda v: v)
    x_lo, x_hi = fx(min(x)), fx(max(x))
    span = (x_hi - x_lo) or 1.0

    def px(v: float) -> float:
        return left + (fx(v) - x_lo) / span * plot_w

    def py(v: float) -> float:
        return top + plot_h - (v - y_lo) / (y_hi - y_lo) * plot_h

    parts = [f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {width} {height}' width='100%' role='img' "
             f"aria-label='{escape(title)}' class='chart'>",
             f"<text x='{width / 2}' y='20' text-anchor='middle' font-size='15' font-weight='bold' {FONT}>"
             f"{escape(title)}</text>",
             f"<rect x='{left}' y='{top}' width='{plot_w}' height='{plot_h}' fill='none' stroke='#000'/>"]
    for t in _ticks(y_lo, y_hi):
        parts.append(f"<line x1='{left}' x2='{left + plot_w}' y1='{py(t):.1f}' y2='{py(t):.1f}' stroke='#ccc'/>")
        parts.append(f"<text x='{left - 5}' y='{py(t) + 4:.1f}' text-anchor='end' font-size='11' {FONT}>"
                     f"{_fmt(t)}</text>")
    for v in x:
        parts.append(f"<text x='{px(v):.1f}' y='{top + plot_h + 16}' text-anchor='middle' font-size='11' {FONT}>"
                     f"{_fmt(v)}</text>")
    parts.append(f"<text x='{left + plot_w / 2}' y='{top + plot_h + 34}' text-anchor='middle' font-size='12' {FONT}>"
                 f"{escape(x_label)}</text>")
    parts.append(f"<text x='16' y='{top + plot_h / 2}' text-anchor='middle' font-size='12' {FONT} "
                 f"transform='rotate(-90 16 {top + plot_h / 2})'>{escape(y_label)}</text>")
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
        parts.append(f"<text x='{lx + 30}' y='{ly}' font-size='11' {FONT}>{escape(name)}</text>")
    parts.append("</svg>")
    return "".join(parts)


def pareto_chart(title: str, points: list[tuple[float, float, str]], front: list[int], x_label: str,
                 y_label: str, width: int = 640, height: int = 380, log_y: bool = False, max_types: int = 6) -> str:
    """Best time per GPU count for each GPU type, and the Pareto front across all of them."""
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
    series["Pareto front"] = pareto
    if log_y:
        series = {k: [None if v is None else math.log10(max(v, 1e-9)) for v in vals] for k, vals in series.items()}
        y_label = f"log10 {y_label}"
    return line_chart(title, xs, series, x_label, y_label, log_x=True, width=width, height=height)


def render_chart(spec: dict[str, Any]) -> str:
    """An SVG chart from a chart spec of the report model (``kind`` bar, line or pareto)."""
    args = {k: v for k, v in spec.items() if k != "kind"}
    if spec["kind"] == "bar":
        return bar_chart(args["title"], args["labels"], args["values"], args.get("unit", ""))
    if spec["kind"] == "pareto":
        return pareto_chart(args["title"], [tuple(p) for p in args["points"]], args["front"], args["x_label"],
                            args["y_label"], log_y=args.get("log_y", False))
    return line_chart(args["title"], args["x"], args["series"], args["x_label"], args["y_label"],
                      log_x=args.get("log_x", False))
