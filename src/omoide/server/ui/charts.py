"""Charts as inline SVG, drawn here: no script, no library, no asset from elsewhere.

Each chart scales to its container (``viewBox`` with a fixed aspect) and is coloured by
CSS classes, so the page's stylesheet decides the palette and the Content-Security-Policy
needs no inline styles. Labels are escaped text like everything else on a page.
"""

from __future__ import annotations

from collections.abc import Sequence

from omoide.server.ui.html import Safe, el, esc

__all__ = ["bar_chart", "line_chart", "meter"]

WIDTH, HEIGHT = 600, 200
LEFT, RIGHT, TOP, BOTTOM = 44, 12, 12, 28


def _scale(values: Sequence[float]) -> float:
    """The top of the y axis: a round number at or above the largest value (a multiple of
    4 for whole numbers, so that the four grid steps are whole too)."""
    top = max([*values, 0.0])
    if top <= 0:
        return 4.0
    if top < 1:
        return top
    step = 10 ** max(0, len(str(int(top))) - 1)
    top = float(-(-top // step) * step)
    whole = all(float(v).is_integer() for v in values)
    return float(4 * -(-top // 4)) if whole else top


def _tick(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:.1f}"


def _frame(title: str, top: float, labels: Sequence[str], body: list[Safe]) -> Safe:
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    grid: list[Safe] = []
    for i in range(5):
        y = TOP + plot_h * i / 4
        value = top * (4 - i) / 4
        grid.append(
            el("line", x1=LEFT, x2=WIDTH - RIGHT, y1=f"{y:.1f}", y2=f"{y:.1f}", class_="gridline")
        )
        grid.append(
            el("text", _tick(value), x=LEFT - 6, y=f"{y + 4:.1f}", class_="axis", text_anchor="end")
        )
    n = len(labels)
    marks = sorted({0, n // 2, n - 1}) if n else []
    for i in marks:
        x = LEFT + (plot_w * (i + 0.5) / n if n else 0)
        grid.append(
            el("text", labels[i], x=f"{x:.1f}", y=HEIGHT - 8, class_="axis", text_anchor="middle")
        )
    return el(
        "figure",
        el(
            "svg",
            el("title", title),
            *grid,
            *body,
            viewBox=f"0 0 {WIDTH} {HEIGHT}",
            role="img",
            aria_label=title,
            class_="chart",
            preserveAspectRatio="xMidYMid meet",
        ),
        el("figcaption", title),
    )


def line_chart(
    title: str, labels: Sequence[str], series: Sequence[tuple[str, Sequence[float]]]
) -> Safe:
    """One polyline per named series over shared x labels (``series-0``… CSS classes)."""
    if not labels:
        return el("p", f"{title}: no data yet.", class_="empty")
    top = _scale([v for _, values in series for v in values])
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    n = len(labels)
    body: list[Safe] = []
    legend: list[Safe] = []
    for k, (name, values) in enumerate(series):
        points = [
            (LEFT + plot_w * (i + 0.5) / n, TOP + plot_h * (1 - v / top))
            for i, v in enumerate(values)
        ]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        body.append(el("polyline", points=path, class_=f"line series-{k}"))
        for (x, y), v, label in zip(points, values, labels, strict=False):
            body.append(
                el(
                    "circle",
                    el("title", f"{name} {label}: {v:g}"),
                    cx=f"{x:.1f}",
                    cy=f"{y:.1f}",
                    r=3,
                    class_=f"dot series-{k}",
                )
            )
        legend.append(el("li", el("span", class_=f"key series-{k}"), name))
    return join_chart(_frame(title, top, labels, body), legend)


def join_chart(chart: Safe, legend: list[Safe]) -> Safe:
    """A chart and, for more than one series, its legend, as one block."""
    return el("div", chart, el("ul", *legend, class_="legend") if len(legend) > 1 else None)


def bar_chart(title: str, labels: Sequence[str], values: Sequence[float]) -> Safe:
    """One bar per label."""
    if not labels:
        return el("p", f"{title}: no data yet.", class_="empty")
    top = _scale(values)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    n = len(labels)
    width = plot_w / n
    bar = min(width * 0.7, 48.0)
    body = [
        el(
            "rect",
            el("title", f"{label}: {value:g}"),
            x=f"{LEFT + width * (i + 0.5) - bar / 2:.1f}",
            y=f"{TOP + plot_h * (1 - value / top):.1f}",
            width=f"{bar:.1f}",
            height=f"{plot_h * value / top:.1f}",
            class_="bar",
        )
        for i, (label, value) in enumerate(zip(labels, values, strict=True))
    ]
    return _frame(title, top, labels, body)


def meter(used: float, cap: float) -> Safe:
    """How full something is: a bar and its percentage (warn past 80 %, full at 100 %)."""
    share = 0.0 if cap <= 0 else min(1.0, used / cap)
    kind = "full" if share >= 1 else "warn" if share >= 0.8 else "ok"
    return el(
        "span",
        el(
            "svg",
            el("rect", x=0, y=0, width=100, height=8, class_="track"),
            el("rect", x=0, y=0, width=f"{share * 100:.1f}", height=8, class_=f"fill {kind}"),
            viewBox="0 0 100 8",
            class_="meter",
            role="img",
            aria_label=f"{share:.0%}",
        ),
        esc(f" {share:.0%}"),
        class_="meter-wrap",
    )
