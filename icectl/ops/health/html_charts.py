"""The charts of each health dimension on the HTML page: which figures of the report's JSON each
chart draws, registered in :data:`icectl.ops.health.html.CHARTS` by dimension name. Every mark
names its figure's JSON Pointer; the one figure a chart adds (the sum of the partitions beyond
the top N) names the list and key it sums (``data-sum-of``, ``data-sum-key``,
``data-sum-from``), so it is checked against the JSON too."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from icectl.ops.health.html import CHARTS, Json, pointer
from icectl.ops.health.html_svg import Bin, Mark, esc, histogram, json_text, sized_bars, top_bars

__all__ = ["TOP_PARTITIONS", "rest_attrs"]

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


CHARTS["data-files"] = _data_files
CHARTS["manifests"] = _manifests
