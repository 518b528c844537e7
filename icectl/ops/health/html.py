"""The health report as one self-contained HTML page: ``render_html(report) -> str``.

The page is drawn from the report's JSON (``HealthReport.to_json()``, the very dict ``--json``
prints), so every figure on it is the JSON's number. Each figure element carries
``data-figure``, the JSON Pointer (RFC 6901) of its value in that JSON, and ``data-value``, the
value as JSON text; a test compares the two figure by figure.

Sections, in order: the summary (status, verdict counts), the verdicts the worst first (each
with the command that fixes it and its expected effects), one section per dimension (its
figures, then its charts), the thresholds and where each came from. Charts: data-file sizes
against the target, bytes and files per partition (the top partitions and the rest), the
snapshots over time (records, data files, delete files, bytes; dots by operation), manifest
sizes against the manifest target, overlap depth per column. Pure: no I/O, never prints."""

from __future__ import annotations

import datetime as _dt
from typing import Any, Mapping

from icectl.ops.health.html_charts import CHARTS
from icectl.ops.health.html_page import Figure, Json, document, figure, figure_table, pointer, section
from icectl.ops.health.html_svg import esc, figure_attrs

__all__ = ["render_html", "pointer"]

_SEVERITY_CLASS = {"due": "due", "warn": "bad", "info": "ok"}
# how a threshold or an effect with this JSON unit is shown
_SHOWN_UNITS = {"bytes": "bytes", "share": "%", "ms": "ms"}


def render_html(report: Any) -> str:
    """The page of a health report (a ``HealthReport`` or its JSON)."""
    doc: Json = report.to_json() if hasattr(report, "to_json") else report
    body = [_summary(doc), _verdicts(doc)]
    for i, dim in enumerate(doc.get("dimensions") or []):
        body.append(_dimension(doc, dim, pointer("dimensions", i)))
    body.append(_thresholds(doc))
    name = doc.get("identifier") or doc.get("table") or "table"
    subtitle = f"{doc.get('table', '')}, judged {_when(doc.get('generated-at-ms'))}"
    return document(f"Health of {name}", subtitle, body,
                    footer=f"icectl health, {_when(doc.get('generated-at-ms'))}; every figure as in its JSON report")


def _when(ms: Any) -> str:
    if not isinstance(ms, int):
        return ""
    return _dt.datetime.fromtimestamp(ms / 1000, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _summary(doc: Json) -> str:
    rows = [Figure("status", doc.get("status"), "/status"),
            Figure("snapshot", doc.get("snapshot-id"), "/snapshot-id", "id"),
            Figure("format version", doc.get("format-version"), "/format-version"),
            Figure("metadata file", doc.get("metadata-file"), "/metadata-file")]
    for sev, n in (doc.get("verdict-counts") or {}).items():
        rows.append(Figure(f"verdicts: {sev}", n, pointer("verdict-counts", sev)))
    problems = "".join(f'<p class="verdict bad">{esc(p)}</p>' for p in doc.get("policy-problems") or [])
    return section("summary", "Summary", figure_table(rows), problems)


def verdict_html(v: Json, ptr: str) -> str:
    """One verdict: severity, dimension, problem, the fix command and its expected effects."""
    sev = str(v.get("severity", ""))
    parts = [f'<div class="verdict {_SEVERITY_CLASS.get(sev, "ok")}" data-code="{esc(v.get("code", ""))}">',
             f'<span class="status"{figure_attrs(ptr + "/severity", sev)}>{esc(sev)}</span>',
             f'<b>{esc(v.get("dimension", ""))}</b>: <span class="problem">{esc(v.get("problem", ""))}</span>']
    if v.get("command-text"):
        parts.append(f'<code class="fix"{figure_attrs(ptr + "/command-text", v["command-text"])}>'
                     f'{esc(v["command-text"])}</code>')
    effects = v.get("effects") or []
    if effects:
        items = []
        for j, e in enumerate(effects):
            unit = _SHOWN_UNITS.get(str(e.get("unit")), "")
            ep = f"{ptr}/effects/{j}"
            items.append(f'<li>{esc(e.get("measure", ""))}: {figure(e.get("before"), ep + "/before", unit)} → '
                         f'{figure(e.get("after"), ep + "/after", unit)}</li>')
        parts.append(f'<ul class="gain">{"".join(items)}</ul>')
    return "".join(parts) + "</div>"


def _verdicts(doc: Json) -> str:
    verdicts = doc.get("verdicts") or []
    if not verdicts:
        return section("verdicts", "Verdicts", '<p class="verdict ok"><span class="status">ok</span>'
                                               'no maintenance due</p>')
    return section("verdicts", "Verdicts (the worst first)",
                   *(verdict_html(v, pointer("verdicts", i)) for i, v in enumerate(verdicts)))


def unit_of(key: str) -> str:
    """How to show a figure, from its key: bytes, a share (%), an id, a duration, else a count."""
    if key.endswith("-id") or key == "id":
        return "id"
    if key.endswith("-ms"):
        return "ms" if "age" in key.split("-") else "time"  # an age, else a point in time
    if key.endswith("bytes") or key.endswith("-size") or key.startswith("bytes"):
        return "bytes"
    if key.endswith("share"):
        return "%"
    return ""


def scalar_rows(figures: Json, ptr: str) -> list[Figure]:
    """A figure row for every scalar figure, nested mappings' too (``a / b``); lists are for
    the charts."""
    rows: list[Figure] = []

    def walk(m: Json, p: str, prefix: str) -> None:
        for k, v in m.items():
            if isinstance(v, Mapping):
                walk(v, p + pointer(k), prefix + f"{k} / ")
            elif not isinstance(v, (list, tuple)):
                rows.append(Figure(prefix + k, v, p + pointer(k), unit_of(k)))

    walk(figures, ptr, "")
    return rows


def _dimension(doc: Json, dim: Json, ptr: str) -> str:
    name = str(dim.get("name", ""))
    parts = [f'<p class="sub">status: {figure(dim.get("status"), ptr + "/status")}</p>']
    if dim.get("skipped"):
        parts.append(f'<p class="verdict">skipped: {figure(dim["skipped"], ptr + "/skipped")}</p>')
    figures = dim.get("figures") or {}
    parts.append(figure_table(scalar_rows(figures, ptr + "/figures")))
    chart = CHARTS.get(name)
    if chart is not None and not dim.get("skipped"):
        parts += chart(dim, ptr, doc)
    return section(f"dim-{name}", name.replace("-", " ").capitalize(), *parts)


def _thresholds(doc: Json) -> str:
    rows = []
    for name, t in (doc.get("thresholds") or {}).items():
        p = pointer("thresholds", name)
        unit = _SHOWN_UNITS.get(str(t.get("unit")), "")
        src = esc(t.get("source", "")) + (f" ({esc(t['property'])})" if t.get("property") else "")
        rows.append(f"<tr><th>{esc(name)}</th><td>{figure(t.get('value'), p + '/value', unit)}</td>"
                    f"<td class=\"src\">{src}</td></tr>")
    return section("thresholds", "Thresholds", f'<table class="figures">{"".join(rows)}</table>')
