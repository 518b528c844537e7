"""The frame of the health report page: one self-contained HTML document (inline CSS, inline
SVG, no script, no font, no link to anything), sections, figure tables and verdicts. Pure text
building; the charts are html_svg's, the mapping of a report onto sections is html's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from icectl.ops.health.html_svg import esc, figure_attrs, fmt_value

__all__ = ["Figure", "Json", "figure", "figure_table", "pointer", "section", "document"]

Json = Mapping[str, Any]  # a part of the report's JSON document

CSS = """
:root { color-scheme: light; --ink: #1d232b; --mute: #5d6673; --line: #d8dde4; --bar: #3b74c4;
  --rest: #9aa6b5; --target: #c2410c; --ok: #15803d; --due: #b45309; --bad: #b91c1c; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink);
  margin: 0 auto; padding: 20px 28px 48px; max-width: 1100px; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; word-break: break-all; }
h2 { font-size: 17px; margin: 28px 0 8px; padding-top: 12px; border-top: 1px solid var(--line); }
h3 { font-size: 14px; margin: 14px 0 6px; color: var(--mute); }
.sub { color: var(--mute); margin: 0 0 12px; }
table.figures { border-collapse: collapse; margin: 6px 0 10px; }
table.figures th { text-align: left; font-weight: normal; color: var(--mute); padding: 2px 18px 2px 0; }
table.figures td { text-align: right; font-variant-numeric: tabular-nums; padding: 2px 0; }
table.figures td.src { text-align: left; color: var(--mute); padding-left: 18px; }
.verdict { border-left: 4px solid var(--line); padding: 6px 10px; margin: 6px 0; background: #f7f8fa; }
.verdict.ok { border-color: var(--ok); } .verdict.due { border-color: var(--due); }
.verdict.bad { border-color: var(--bad); }
.verdict .status { font-weight: 600; text-transform: uppercase; font-size: 12px; margin-right: 8px; }
.verdict.ok .status { color: var(--ok); } .verdict.due .status { color: var(--due); }
.verdict.bad .status { color: var(--bad); }
.verdict code, code.fix { display: block; margin-top: 4px; padding: 4px 6px; background: #eef1f5;
  font: 12.5px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; white-space: pre-wrap;
  word-break: break-all; }
.gain { color: var(--mute); font-size: 13px; }
svg.chart { display: block; max-width: 100%; height: auto; margin: 6px 0 14px; }
svg.chart text { font: 11px system-ui, sans-serif; fill: var(--mute); }
svg.chart .panel-title, svg.chart .label { fill: var(--ink); }
svg.chart .grid { stroke: var(--line); stroke-width: 1; }
svg.chart .bar { fill: var(--bar); } svg.chart .bar.rest { fill: var(--rest); }
svg.chart .target { stroke: var(--target); stroke-width: 1.5; stroke-dasharray: 5 3; }
svg.chart text.target-label { fill: var(--target); }
svg.chart .series { fill: none; stroke: #8aa0bd; stroke-width: 1.2; }
svg.chart .op-append { fill: #15803d; } svg.chart .op-overwrite { fill: #c2410c; }
svg.chart .op-replace { fill: #2563eb; } svg.chart .op-delete { fill: #b91c1c; }
svg.chart .op-other { fill: #6b7280; }
.grid2 { display: grid; grid-template-columns: repeat(auto-fit, minmax(420px, 1fr)); gap: 0 24px; }
footer { margin-top: 36px; color: var(--mute); font-size: 12px; }
"""


@dataclass(frozen=True)
class Figure:
    """One row of a figure table: a name, the value, its JSON path and how to show it."""

    name: str
    value: object
    path: str | None
    unit: str = ""


def pointer(*parts: object) -> str:
    """The JSON Pointer (RFC 6901) of a value from its path: ``pointer("dimensions", 0)``."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def figure(value: object, path: str | None, unit: str = "") -> str:
    """A figure in the text: shown for people, exact in its data attributes."""
    shown = _shown(value, unit)
    return f'<span class="figure"{figure_attrs(path, value)}>{esc(shown)}</span>'


def _shown(value: object, unit: str) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if not isinstance(value, (int, float)):
        return str(value)
    if unit == "%":
        return f"{value * 100:.1f}%"
    return fmt_value(value, unit)


def figure_table(rows: Sequence[Figure]) -> str:
    """Name / value rows; each value a figure element."""
    body = "".join(f"<tr><th>{esc(r.name)}</th><td>{figure(r.value, r.path, r.unit)}</td></tr>" for r in rows)
    return f'<table class="figures">{body}</table>'


def section(anchor: str, title: str, *parts: str) -> str:
    return f'<section id="{esc(anchor)}"><h2>{esc(title)}</h2>{"".join(parts)}</section>'


def document(title: str, subtitle: str, body: Sequence[str], footer: str = "") -> str:
    """The whole page: doctype, inline CSS, the sections in order."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            # the page may load nothing at all: no script, no font, no image, no style from outside
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            "style-src 'unsafe-inline'\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
            f"<h1>{esc(title)}</h1><p class=\"sub\">{esc(subtitle)}</p>{''.join(body)}"
            f"<footer>{esc(footer)}</footer></body></html>\n")
