"""The layout dimension: how many files a point filter on a column must read.

For each layout column (the sort order's source columns, or those chosen) every live data file
with both bounds of the column is an interval [lower, upper]. Within each partition (a point
filter on the column alone reads every partition; one within a partition is what compaction can
change):

* ``overlap-depth-max``: the most intervals holding one value;
* ``overlap-depth-average``: for each file, the number of the partition's files whose interval
  holds its lower bound, averaged over the files -- the files a point filter at a typical value
  reads. 1.0 is a perfectly clustered column; a column in random order across N files of a
  partition approaches N.

Files without both bounds of the column (no statistics, or only nulls) are counted apart
(``files-without-bounds``): a filter cannot skip them either.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import TYPE_CHECKING, Any, Sequence

from icectl.errors import NotFound
from icectl.ops.health.collect import TableFacts
from icectl.ops.health import fixes
from icectl.ops.health.model import DUE, Dimension, Effect, Verdict
from icectl.ops.health.policy import Policy
from icectl.spec.partition_identity import partition_key
from icectl.spec.types import PrimitiveType
from icectl.spec.values import from_bytes

if TYPE_CHECKING:
    from icectl.spec.metadata import TableMetadata

__all__ = ["layout_columns", "layout_dimension", "overlap_depths"]


def layout_columns(md: TableMetadata, columns: Sequence[str] | None) -> tuple[list[int], bool]:
    """(field ids of the layout columns, whether they were chosen): the chosen ones, else the
    default sort order's primitive source columns."""
    schema = md.schema
    if columns:
        ids = []
        for c in columns:
            f = schema.find_field_or_none(c, False)
            if f is None:
                raise NotFound(f"no column {c!r} in the schema{schema.suggest(c)}", argument="columns")
            ids.append(f.field_id)
        return ids, True
    ids = []
    for sf in md.sort_order.fields:
        f = schema.find_field_or_none(sf.source_id)
        if f is not None and isinstance(f.type, PrimitiveType) and f.field_id not in ids:
            ids.append(f.field_id)
    return ids, False


def overlap_depths(intervals: Sequence[tuple[Any, Any]]) -> tuple[float, int]:
    """(average depth at each interval's lower bound, maximum depth) of closed intervals."""
    if not intervals:
        return 0.0, 0
    lowers = sorted(lo for lo, _ in intervals)
    uppers = sorted(hi for _, hi in intervals)
    # depth at x: intervals with lower <= x, less those with upper < x
    total = sum(bisect_right(lowers, lo) - bisect_left(uppers, lo) for lo, _ in intervals)
    events = sorted([(lo, 0) for lo, _ in intervals] + [(hi, 1) for _, hi in intervals])
    depth = best = 0
    for _, kind in events:  # starts before ends at one value: closed intervals touch
        depth += 1 if kind == 0 else -1
        best = max(best, depth)
    return total / len(intervals), best


def _intervals(facts: TableFacts, fid: int, t: Any) -> tuple[dict[tuple, list[tuple[Any, Any]]], int]:
    by_part: dict[tuple, list[tuple[Any, Any]]] = {}
    missing = 0
    for m, mc, i in facts.live_data():
        st = mc.stats.get(fid)
        lo = st.lower[i] if st is not None else None
        hi = st.upper[i] if st is not None else None
        if lo is None or hi is None:
            missing += 1
            continue
        try:
            pair = (from_bytes(t, lo), from_bytes(t, hi))
        except Exception:  # noqa: BLE001 - an unreadable bound tells nothing
            missing += 1
            continue
        by_part.setdefault((m.partition_spec_id, partition_key(mc.partition_tuple(i))), []).append(pair)
    return by_part, missing


def _column_figures(facts: TableFacts, fid: int) -> dict[str, Any]:
    schema = facts.md.schema
    f = schema.find_field(fid)
    by_part, missing = _intervals(facts, fid, f.type)
    weighted = 0.0
    files = 0
    worst = 0
    for intervals in by_part.values():
        try:
            avg, most = overlap_depths(intervals)
        except TypeError:  # values that do not order (never for one primitive type)
            continue
        weighted += avg * len(intervals)
        files += len(intervals)
        worst = max(worst, most)
    return {"column": schema.column_name(fid), "field-id": fid, "files-with-bounds": files,
            "files-without-bounds": missing,
            "overlap-depth-average": round(weighted / files, 6) if files else None,
            "overlap-depth-max": worst if files else None}


def layout_dimension(facts: TableFacts, policy: Policy, location: str, chosen: bool) -> Dimension:
    if not facts.layout_ids:
        return Dimension("layout", {"columns": []}, skipped="the table has no sort order (choose columns)")
    cols = [_column_figures(facts, fid) for fid in facts.layout_ids]
    figures: dict[str, Any] = {"columns": cols, "chosen": chosen}
    verdicts = []
    limit = policy["max-overlap-depth"]
    bad = [c for c in cols if c["overlap-depth-average"] is not None and c["overlap-depth-average"] > limit]
    if bad:
        names = ", ".join(c["column"] for c in bad)
        cmd = fixes.compact_sorted(location, [c["column"] for c in cols] if chosen else None)
        # a sort compaction rewrites the files compaction picks (small ones, and too big or
        # with deletes): a perfectly clustered result only when every file is picked
        all_small = sum(p.small_files for p in facts.partitions.values()) == len(facts.data_sizes)
        verdicts.append(Verdict(
            "layout", "overlapping-files", DUE,
            "a point filter on " + names + " reads " +
            ", ".join(f"{c['overlap-depth-average']:.1f} files on average (at most {c['overlap-depth-max']})"
                      for c in bad) + " of a partition",
            "max-overlap-depth", cmd,
            tuple(Effect(f"overlap-depth-average:{c['column']}", "files", c["overlap-depth-average"],
                         1.0 if all_small else None) for c in bad)))
    return Dimension("layout", figures, tuple(verdicts))
