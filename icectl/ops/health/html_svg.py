"""Inline SVG charts for the health report page: a histogram with a target line, horizontal bars
for a top N and the rest, a timeline of snapshots in panels (one per measure, one dot per
snapshot coloured by its operation) and plain sized bars. Pure functions from plain data to SVG
text: no network, no scripts, no fonts of their own (the page's inline CSS styles them).

Every text from the table (names, partition values, operations) is escaped; every mark that
draws a figure carries ``data-figure`` (where the figure lives in the report's JSON, a dotted
path such as ``data_files.size_histogram.3.count``) and ``data-value`` (the figure as JSON text),
so a test can compare the drawn page with the JSON figure by figure."""

from __future__ import annotations

import datetime as _dt
import html
import json
import math
from dataclasses import dataclass
from typing import Callable, Sequence

__all__ = ["Mark", "Bin", "Point", "esc", "figure_attrs", "fmt_bytes", "fmt_count", "fmt_duration", "fmt_value",
           "histogram", "top_bars", "timeline", "sized_bars"]

WIDTH = 640
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 14, 44


@dataclass(frozen=True)
class Mark:
    """One drawn figure: its label, value and where the value lives in the report's JSON
    (``extra``: more attributes of its mark, already escaped)."""

    label: str
    value: float
    figure: str | None = None
    extra: str = ""


@dataclass(frozen=True)
class Bin:
    """One histogram bin: [low, high) and its count (``figure``: the count's JSON path)."""

    low: float
    high: float | None
    count: int
    figure: str | None = None


@dataclass(frozen=True)
class Point:
    """One snapshot of a timeline: when (ms since the epoch), its operation, one value per series
    (None: not recorded) and each value's JSON path."""

    time_ms: int
    operation: str
    values: tuple[float | None, ...]
    figures: tuple[str | None, ...] = ()
    label: str = ""


def esc(value: object) -> str:
    """``value`` as text safe inside an element or a quoted attribute."""
    return html.escape(str(value), quote=True)


def json_text(value: object) -> str:
    """The JSON text of a figure, as ``--json`` prints it."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def figure_attrs(figure: str | None, value: object) -> str:
    """The ``data-figure``/``data-value`` attributes of a mark (nothing without a figure path)."""
    if figure is None:
        return ""
    return f' data-figure="{esc(figure)}" data-value="{esc(json_text(value))}"'


_BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def fmt_bytes(n: float | None) -> str:
    """A byte count for people: ``512 B``, ``1.5 MiB`` (a median of sizes may be half a byte:
    ``736.5 B``)."""
    if n is None:
        return "-"
    value, unit = float(n), 0
    while abs(value) >= 1024 and unit < len(_BYTE_UNITS) - 1:
        value, unit = value / 1024, unit + 1
    if unit == 0:
        return f"{int(value)} B" if value.is_integer() else f"{value:.1f} B"
    return f"{value:.1f} {_BYTE_UNITS[unit]}" if abs(value) < 100 else f"{value:.0f} {_BYTE_UNITS[unit]}"


def fmt_count(n: float | None) -> str:
    """A count for people, thousands separated: ``12,345``; a fraction with up to 3 decimals."""
    if n is None:
        return "-"
    if isinstance(n, float) and not n.is_integer():
        if math.isnan(n) or math.isinf(n):
            return str(n)
        return f"{n:,.3f}".rstrip("0").rstrip(".")
    return f"{int(n):,}"


def fmt_duration(ms: float | None) -> str:
    """Milliseconds for people, in the largest whole unit: ``5 d``, ``90 min``, ``250 ms``."""
    if ms is None:
        return "-"
    for size, unit in ((86_400_000, "d"), (3_600_000, "h"), (60_000, "min"), (1000, "s")):
        if abs(ms) >= size:
            v = ms / size
            return f"{v:,.0f} {unit}" if v.is_integer() or abs(v) >= 100 else f"{v:,.1f} {unit}"
    return f"{fmt_count(ms)} ms"


def fmt_value(n: float | None, unit: str = "") -> str:
    """A figure for people by its unit: ``bytes``, ``ms`` (a duration), ``time`` (ms since the
    epoch, shown in UTC), ``id`` (digits as they are), else a count."""
    if unit == "bytes":
        return fmt_bytes(n)
    if unit == "ms":
        return fmt_duration(n)
    if unit == "id":
        return "-" if n is None else str(n)
    if unit == "time":
        return "-" if n is None else _iso(int(n))
    return fmt_count(n)


def _open(height: int, title: str, cls: str) -> str:
    return (f'<svg class="chart {esc(cls)}" role="img" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" '
            f'aria-label="{esc(title)}"><title>{esc(title)}</title>')


def _num(v: float) -> str:
    """A coordinate, short."""
    return f"{v:.2f}".rstrip("0").rstrip(".")


def _ticks(top: float, unit: str = "") -> list[float]:
    """Up to 5 round tick values from 0 to at least ``top`` (for bytes: round in KiB, MiB...)."""
    if top <= 0:
        return [0.0]
    if unit == "bytes" and top >= 1024:
        scale = 1024 ** min(int(math.log(top, 1024)), len(_BYTE_UNITS) - 1)
        return [t * scale for t in _ticks(top / scale)]
    raw = top / 4
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    return [i * step for i in range(int(math.ceil(top / step)) + 1)]


def _y_axis(ticks: Sequence[float], y: Callable[[float], float], unit: str, right: float) -> list[str]:
    out = []
    for t in ticks:
        yy = _num(y(t))
        out.append(f'<line class="grid" x1="{LEFT}" x2="{_num(right)}" y1="{yy}" y2="{yy}"/>'
                   f'<text class="tick" x="{LEFT - 6}" y="{yy}" text-anchor="end" '
                   f'dominant-baseline="middle">{esc(fmt_value(t, unit))}</text>')
    return out


def histogram(bins: Sequence[Bin], title: str, target: float | None = None,
              target_label: str = "target", unit: str = "bytes", height: int = 240) -> str:
    """Bars of equal width, one per bin (bins may be spaced any way, e.g. by powers of two),
    their heights the counts; a dashed vertical line at ``target`` placed inside the bin that
    holds it (linearly between its bounds)."""
    out = [_open(height, title, "histogram")]
    if not bins:
        return "".join(out + [_empty(height)])
    plot_h = height - TOP - BOTTOM
    top = max(b.count for b in bins) or 1
    ticks = _ticks(top)
    y_max = max(ticks[-1], 1)
    right = WIDTH - RIGHT
    step = (right - LEFT) / len(bins)

    def y(v: float) -> float:
        return TOP + plot_h - plot_h * v / y_max

    out += _y_axis(ticks, y, "", right)
    for i, b in enumerate(bins):
        x, h = LEFT + i * step, plot_h * b.count / y_max
        span = f"{fmt_value(b.low, unit)} – {fmt_value(b.high, unit) if b.high is not None else '∞'}"
        out.append(f'<rect class="bar" x="{_num(x + 1)}" y="{_num(y(b.count))}" width="{_num(max(step - 2, 1))}" '
                   f'height="{_num(h)}"{figure_attrs(b.figure, b.count)}><title>{esc(span)}: '
                   f'{esc(fmt_count(b.count))}</title></rect>')
        out.append(f'<text class="tick" x="{_num(x + step / 2)}" y="{height - BOTTOM + 14}" '
                   f'text-anchor="middle">{esc(fmt_value(b.low, unit))}</text>')
    if target is not None:
        tx = _target_x(bins, target, step)
        if tx is not None:
            out.append(f'<line class="target" x1="{_num(tx)}" x2="{_num(tx)}" y1="{TOP}" '
                       f'y2="{TOP + plot_h}"><title>{esc(target_label)}: {esc(fmt_value(target, unit))}'
                       f'</title></line><text class="target-label" x="{_num(tx + 4)}" y="{TOP + 10}">'
                       f'{esc(target_label)} {esc(fmt_value(target, unit))}</text>')
    out.append(f'<text class="axis" x="{LEFT}" y="{height - 6}">each bar: the files from the size under it '
               f'up to the next one</text>')
    return "".join(out) + "</svg>"


def _target_x(bins: Sequence[Bin], target: float, step: float) -> float | None:
    for i, b in enumerate(bins):
        if b.low <= target and (b.high is None or target < b.high):
            frac = 0.0 if b.high is None or b.high == b.low else (target - b.low) / (b.high - b.low)
            return LEFT + (i + frac) * step
    if bins and target < bins[0].low:
        return float(LEFT)
    return None


def _empty(height: int) -> str:
    return (f'<text class="empty" x="{WIDTH / 2}" y="{height / 2}" text-anchor="middle">'
            f'nothing to draw</text></svg>')


def top_bars(marks: Sequence[Mark], title: str, rest: Mark | None = None, unit: str = "",
             bar_height: int = 18) -> str:
    """Horizontal bars, one per mark in the given order (the top N), then one for ``rest`` (the
    others together, drawn apart: class ``rest``). Labels left, values right of each bar."""
    rows = list(marks) + ([rest] if rest is not None else [])
    height = TOP + len(rows) * (bar_height + 6) + 8
    out = [_open(height, title, "top-bars")]
    if not rows:
        return "".join(out + [_empty(max(height, 40))])
    label_w, value_w = 200, 90
    span = WIDTH - label_w - value_w - RIGHT
    top = max((m.value or 0) for m in rows) or 1
    for i, m in enumerate(rows):
        yy = TOP + i * (bar_height + 6)
        w = span * (m.value or 0) / top
        cls = "bar rest" if rest is not None and i == len(rows) - 1 else "bar"
        label = m.label if len(m.label) <= 32 else m.label[:31] + "…"
        out.append(f'<text class="label" x="{label_w - 6}" y="{_num(yy + bar_height / 2)}" text-anchor="end" '
                   f'dominant-baseline="middle">{esc(label)}</text>'
                   f'<rect class="{cls}" x="{label_w}" y="{yy}" width="{_num(max(w, 1))}" height="{bar_height}"'
                   f'{figure_attrs(m.figure, m.value)}{m.extra}><title>{esc(m.label)}: '
                   f'{esc(fmt_value(m.value, unit))}</title></rect><text class="value" x="{_num(label_w + max(w, 1) + 4)}" '
                   f'y="{_num(yy + bar_height / 2)}" dominant-baseline="middle">{esc(fmt_value(m.value, unit))}</text>')
    return "".join(out) + "</svg>"


def sized_bars(marks: Sequence[Mark], title: str, unit: str = "bytes", target: float | None = None,
               target_label: str = "target", height: int = 200) -> str:
    """Vertical bars, one per mark in the given order, heights the values; a dashed horizontal
    line at ``target`` (e.g. the manifest target size)."""
    out = [_open(height, title, "sized-bars")]
    if not marks:
        return "".join(out + [_empty(height)])
    plot_h = height - TOP - BOTTOM
    biggest = max(m.value or 0 for m in marks)
    drawn = target is not None and target <= 4 * biggest  # else the bars would be slivers
    top = max(biggest, target if drawn and target is not None else 0) or 1
    ticks = _ticks(top, unit)
    y_max = ticks[-1] or 1
    right = WIDTH - RIGHT
    step = (right - LEFT) / len(marks)

    def y(v: float) -> float:
        return TOP + plot_h - plot_h * v / y_max

    out += _y_axis(ticks, y, unit, right)
    for i, m in enumerate(marks):
        v = m.value or 0
        out.append(f'<rect class="bar" x="{_num(LEFT + i * step + step * 0.1)}" y="{_num(y(v))}" '
                   f'width="{_num(max(step * 0.8, 0.5))}" height="{_num(plot_h * v / y_max)}"'
                   f'{figure_attrs(m.figure, m.value)}><title>{esc(m.label)}: {esc(fmt_value(m.value, unit))}'
                   f'</title></rect>')
    caption = f"{len(marks)} bars, in order"
    if target is not None and not drawn:
        caption += (f"; the {target_label} {fmt_value(target, unit)} is far above the largest "
                    f"({fmt_value(biggest, unit)})")
    elif target is not None:
        ty = _num(y(target))
        out.append(f'<line class="target" x1="{LEFT}" x2="{_num(right)}" y1="{ty}" y2="{ty}"><title>'
                   f'{esc(target_label)}: {esc(fmt_value(target, unit))}</title></line>'
                   f'<text class="target-label" x="{_num(right - 4)}" y="{_num(y(target) - 4)}" '
                   f'text-anchor="end">{esc(target_label)} {esc(fmt_value(target, unit))}</text>')
    out.append(f'<text class="axis" x="{LEFT}" y="{height - 6}">{esc(caption)}</text>')
    return "".join(out) + "</svg>"


def operation_class(operation: str) -> str:
    """The CSS class of a snapshot operation (one of Iceberg's four, else ``op-other``)."""
    return f"op-{operation}" if operation in ("append", "overwrite", "replace", "delete") else "op-other"


def timeline(points: Sequence[Point], series: Sequence[tuple[str, str]], title: str,
             panel_height: int = 110) -> str:
    """One panel per series (``(name, unit)``), stacked, sharing the time axis: a line through
    the snapshots' values and one dot per snapshot coloured by its operation. Snapshots in the
    given order (the caller sorts them by time); equal times are spread by their order."""
    height = TOP + len(series) * panel_height + BOTTOM
    out = [_open(height, title, "timeline")]
    if not points or not series:
        return "".join(out + [_empty(height)])
    xs = _time_x(points)
    for s, (name, unit) in enumerate(series):
        out += _panel(points, xs, s, name, unit, TOP + s * panel_height, panel_height - 18)
    first, last = min(p.time_ms for p in points), max(p.time_ms for p in points)
    out.append(f'<text class="axis" x="{LEFT}" y="{height - 20}">{esc(_iso(first))}</text>'
               f'<text class="axis" x="{WIDTH - RIGHT}" y="{height - 20}" text-anchor="end">'
               f'{esc(_iso(last))}</text>')
    ops = sorted({p.operation for p in points})
    x = LEFT
    for op in ops:
        out.append(f'<circle class="legend {operation_class(op)}" cx="{x + 5}" cy="{height - 6}" r="4"/>'
                   f'<text class="legend-label" x="{x + 12}" y="{height - 2}">{esc(op)}</text>')
        x += 24 + 7 * len(op)
    return "".join(out) + "</svg>"


def _time_x(points: Sequence[Point]) -> list[float]:
    """Each point's x: by time when the times differ, else by index; points never overlap."""
    right = WIDTH - RIGHT
    if len(points) == 1:
        return [(LEFT + right) / 2]
    t0, t1 = min(p.time_ms for p in points), max(p.time_ms for p in points)
    n = len(points)
    by_index = [LEFT + (right - LEFT) * i / (n - 1) for i in range(n)]
    if t1 == t0:
        return by_index
    # half by time, half by order: gaps show, and a burst of commits still spreads out
    return [(LEFT + (right - LEFT) * (p.time_ms - t0) / (t1 - t0) + bi) / 2 for p, bi in zip(points, by_index)]


def _panel(points: Sequence[Point], xs: Sequence[float], s: int, name: str, unit: str,
           top: float, plot_h: float) -> list[str]:
    values = [p.values[s] if s < len(p.values) else None for p in points]
    known = [v for v in values if v is not None]
    ticks = _ticks(max(known) if known else 0, unit)
    y_max = ticks[-1] or 1

    def y(v: float) -> float:
        return top + 14 + plot_h - 14 - (plot_h - 14) * v / y_max

    out = [f'<text class="panel-title" x="{LEFT}" y="{_num(top + 10)}">{esc(name)}</text>',
           f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{_num(y(0))}" y2="{_num(y(0))}"/>',
           f'<text class="tick" x="{LEFT - 6}" y="{_num(y(y_max))}" text-anchor="end" dominant-baseline="middle">'
           f'{esc(fmt_value(y_max, unit))}</text>',
           f'<text class="tick" x="{LEFT - 6}" y="{_num(y(0))}" text-anchor="end" dominant-baseline="middle">0</text>']
    line = " ".join(f"{_num(x)},{_num(y(v))}" for x, v in zip(xs, values) if v is not None)
    if line:
        out.append(f'<polyline class="series" points="{line}"/>')
    for p, x, v in zip(points, xs, values):
        if v is None:
            continue
        fig = p.figures[s] if s < len(p.figures) else None
        out.append(f'<circle class="dot {operation_class(p.operation)}" cx="{_num(x)}" cy="{_num(y(v))}" r="3.5"'
                   f'{figure_attrs(fig, v)}><title>{esc(p.label or _iso(p.time_ms))} {esc(p.operation)}: '
                   f'{esc(name)} {esc(fmt_value(v, unit))}</title></circle>')
    return out


def _iso(ms: int) -> str:
    return _dt.datetime.fromtimestamp(ms / 1000, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
