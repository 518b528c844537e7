"""The charts of each health dimension on the HTML page: which figures of the report's JSON each
chart draws, in :data:`CHARTS` by dimension name (html's page draws them). Every mark
names its figure's JSON Pointer; the one figure a chart adds (the sum of the partitions beyond
the top N) names the list and key it sums (``data-sum-of``, ``data-sum-key``,
``data-sum-from``), so it is checked against the JSON too."""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from icectl.ops.health.html_page import Json, pointer
from icectl.ops.health.html_svg import Bin, Mark, Point, esc, histogram, json_text, sized_bars, timeline, top_bars
from icectl.ops.health.timeline import TOTALS

__all__ = ["CHARTS", "TOP_PARTITIONS", "rest_attrs"]

TOP_PARTITIONS = 12  # partitions drawn one by one; the others are one "rest" bar


def _heading(text: str) -> str:
    return f"<h3>{esc(text)}</h3>"


def rest_attrs(list_ptr: str, key: str, start: int, value: Any) -> str:
    """The attributes of a figure that sums ``key`` over a JSON list from index ``start`` on."""
    return (f' data-sum-of="{esc(list_ptr)}" data-sum-key="{esc(key)}" data-sum-from="{start}"'
            f' data-value="{esc(json_text(value))}"')


def _data_files(dim: Json, ptr: str, doc: Json) -> list[str]:
    figs = dim.get("figures") or {}
    out: list[str] = []
    hist = figs.get("size-histogram") or []
    if hist:
        hp = ptr + pointer("figures", "size-histogram")
        bins = [Bin(b.get("lower-bytes") or 0, b.get("upper-bytes"), b.get("files") or 0, f"{hp}/{i}/files")
                for i, b in enumerate(hist)]
        out += [_heading("Data file sizes against the target (files per size range)"),
                histogram(bins, "data file sizes", target=figs.get("target-file-size-bytes"),
                          target_label="target")]
    rows = figs.get("partitions") or []
    if rows:
        out += partition_charts(rows, ptr + pointer("figures", "partitions"))
    return out


def partition_charts(rows: Sequence[Mapping[str, Any]], list_ptr: str) -> list[str]:
    """Bytes and files per partition: the first TOP_PARTITIONS rows (the JSON's order, the
    biggest first) one bar each, the others one bar."""
    top, others = rows[:TOP_PARTITIONS], rows[TOP_PARTITIONS:]
    out = []
    for key, unit, title in (("data-bytes", "bytes", "Data bytes per partition"),
                             ("data-files", "", "Data files per partition")):
        marks = [Mark(_partition_label(r), r.get(key) or 0, f"{list_ptr}/{i}/{key}") for i, r in enumerate(top)]
        rest = None
        if others:
            total = sum(r.get(key) or 0 for r in others)
            # the rest bar: checked as the sum of the JSON rows beyond the top
            rest = Mark(f"the other {len(others)} partitions", total,
                        extra=rest_attrs(list_ptr, key, len(top), total))
        svg = top_bars(marks, title, rest=rest, unit=unit)
        out += [_heading(f"{title} (the {len(top)} biggest" + (", then the rest)" if others else ")")), svg]
    return out


def _partition_label(row: Mapping[str, Any]) -> str:
    """A partition as people read it: ``field=value`` pairs (the values as they are, not the
    path's URL escapes); another spec's partition says which spec."""
    values = row.get("partition")
    if isinstance(values, Mapping) and values:
        text = ", ".join(f"{k}={_plain(v)}" for k, v in values.items())
    else:
        text = str(row.get("partition-path") or "") or "(unpartitioned)"
    spec = row.get("spec-id")
    return text if spec in (None, 0) else f"{text} (spec {spec})"


def _plain(v: Any) -> str:
    if v is None:
        return "null"
    return v if isinstance(v, str) else json_text(v)


def _manifests(dim: Json, ptr: str, doc: Json) -> list[str]:
    figs = dim.get("figures") or {}
    sizes = figs.get("manifest-sizes") or []
    if not sizes:
        return []
    sp = ptr + pointer("figures", "manifest-sizes")
    marks = [Mark(f"manifest {i + 1} of {len(sizes)}", v, f"{sp}/{i}") for i, v in enumerate(sizes)]
    return [_heading("Manifest sizes against the manifest target (smallest first)"),
            sized_bars(marks, "manifest sizes", unit="bytes", target=figs.get("target-size-bytes"))]


_SERIES = (("records", ""), ("data files", ""), ("delete files", ""), ("bytes", "bytes"))  # TOTALS' order


def _snapshots(dim: Json, ptr: str, doc: Json) -> list[str]:
    rows = (dim.get("figures") or {}).get("timeline") or []
    if not rows:
        return []
    tp = ptr + pointer("figures", "timeline")
    points = [Point(r.get("timestamp-ms") or 0, str(r.get("operation") or "unknown"),
                    tuple(r.get(k) for k in TOTALS), tuple(f"{tp}/{j}/{k}" for k in TOTALS),
                    f"snapshot {r.get('snapshot-id')}")
              for j, r in enumerate(rows)]
    return [_heading("Snapshots over time: the table's totals after each commit, by operation"),
            timeline(points, _SERIES, "snapshot timeline")]


def _layout(dim: Json, ptr: str, doc: Json) -> list[str]:
    cols = (dim.get("figures") or {}).get("columns") or []
    if not cols:
        return []
    cp = ptr + pointer("figures", "columns")
    marks = []
    for j, c in enumerate(cols):
        for key, word in (("overlap-depth-average", "average"), ("overlap-depth-max", "max")):
            if c.get(key) is not None:
                marks.append(Mark(f"{c.get('column')}: {word}", c[key], f"{cp}/{j}/{key}"))
    return [_heading("Overlap depth per column: files a point filter reads within a partition"),
            top_bars(marks, "overlap depth per column")]


# dimension name -> (its JSON, its pointer, the report's JSON) -> the chart SVGs of its section
CHARTS: dict[str, Callable[[Json, str, Json], list[str]]] = {
    "data-files": _data_files,
    "manifests": _manifests,
    "snapshots": _snapshots,
    "layout": _layout,
}
