"""The data-files and partitions dimensions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Sequence

from icectl.ops.health.collect import PartitionFacts, TableFacts
from icectl.ops.health import fixes
from icectl.ops.health.model import DUE, INFO, Dimension, Effect, Verdict
from icectl.ops.health.policy import Policy
from icectl.spec.views import partition_json

if TYPE_CHECKING:
    from icectl.spec.metadata import TableMetadata

__all__ = ["data_files_dimension", "partitions_dimension", "size_histogram", "gini", "median",
           "HISTOGRAM_FRACTIONS", "CompactionForecast"]

# bucket edges of the file-size histogram, as fractions of the target file size: the last two
# inner edges are compaction's minimum and maximum sizes (0.75 and 1.8 x the target)
HISTOGRAM_FRACTIONS = (0.0, 1 / 1024, 1 / 256, 1 / 64, 1 / 16, 1 / 4, 0.75, 1.8)

TINY_MIN_PARTITIONS = 10  # fewer partitions than this are never called tiny (a new table's are)

# (files rewritten, files written) of the compaction the data-files verdict proposes, or None
CompactionForecast = Callable[[], "tuple[int, int] | None"]


def median(values: Sequence[float]) -> float | None:
    if not values:
        return None
    s = sorted(values)
    n = len(s)
    return float(s[n // 2]) if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def gini(values: Sequence[float]) -> float | None:
    """The Gini coefficient of non-negative values (0: all equal; towards 1: one holds all)."""
    n = len(values)
    total = float(sum(values))
    if n == 0 or total <= 0:
        return None if n == 0 else 0.0
    s = sorted(values)
    weighted = sum((i + 1) * v for i, v in enumerate(s))
    return round((2 * weighted) / (n * total) - (n + 1) / n, 6)


def size_histogram(sizes: Sequence[int], target: int) -> list[dict[str, Any]]:
    """Files and bytes per size bucket; each bucket's ``lower-bytes`` is inclusive, its
    ``upper-bytes`` exclusive (None: no upper bound)."""
    edges = [int(target * f) for f in HISTOGRAM_FRACTIONS]
    buckets = [{"lower-bytes": lo, "upper-bytes": hi, "files": 0, "bytes": 0}
               for lo, hi in zip(edges, edges[1:] + [None])]
    from bisect import bisect_right

    for size in sizes:
        b = buckets[max(0, bisect_right(edges, size) - 1)]
        b["files"] += 1
        b["bytes"] += size
    return buckets


def _partition_row(md: TableMetadata, p: PartitionFacts) -> dict[str, Any]:
    values, path = partition_json(md, p.spec_id, p.values)
    return {"spec-id": p.spec_id, "partition": values, "partition-path": path,
            "data-files": p.data_files, "data-bytes": p.data_bytes, "records": p.records,
            "small-files": p.small_files, "small-bytes": p.small_bytes,
            "position-delete-files": p.position_delete_files,
            "position-delete-records": p.position_delete_records,
            "equality-delete-files": p.equality_delete_files,
            "equality-delete-records": p.equality_delete_records,
            "delete-bytes": p.delete_bytes}


def partition_rows(facts: TableFacts) -> list[dict[str, Any]]:
    """Every partition (of every spec) holding live files, the biggest first."""
    rows = [_partition_row(facts.md, p) for p in facts.partitions.values()]
    rows.sort(key=lambda r: (-r["data-bytes"], -r["data-files"], r["partition-path"]))
    return rows


def data_files_dimension(facts: TableFacts, policy: Policy, location: str,
                         forecast: CompactionForecast) -> Dimension:
    sizes = facts.data_sizes
    target = policy["target-file-size"]
    small = policy["small-file-size"]
    n = len(sizes)
    total = sum(sizes)
    small_files = sum(p.small_files for p in facts.partitions.values())
    share = round(small_files / n, 6) if n else 0.0
    figures: dict[str, Any] = {
        "data-files": n,
        "data-bytes": total,
        "records": sum(p.records for p in facts.partitions.values()),
        "target-file-size-bytes": target,
        "small-file-size-bytes": small,
        "small-files": small_files,
        "small-bytes": sum(p.small_bytes for p in facts.partitions.values()),
        "small-file-share": share,
        "average-file-bytes": total // n if n else None,
        "median-file-bytes": median(sizes),
        "min-file-bytes": min(sizes) if sizes else None,
        "max-file-bytes": max(sizes) if sizes else None,
        "size-histogram": size_histogram(sizes, target),
        "partitions": partition_rows(facts),
    }
    verdicts = []
    if n and share > policy["max-small-file-share"]:
        plan = forecast()
        if plan is not None and plan[0] > 0:
            rewritten, written = plan
            after = n - rewritten + written
            verdicts.append(Verdict(
                "data-files", "small-files", DUE,
                f"{small_files} of {n} data files ({share:.0%}) are smaller than {_mib(small)} "
                f"(0.75 x the target file size {_mib(target)})",
                "max-small-file-share", fixes.compact(location),
                (Effect("data-files", "files", n, after),
                 Effect("files-rewritten", "files", rewritten, written))))
    return Dimension("data-files", figures, tuple(verdicts))


def _mib(n: int) -> str:
    if n >= 1024 * 1024:
        return f"{n / (1024 * 1024):.1f} MiB"
    if n >= 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n} B"


def partitions_dimension(facts: TableFacts, policy: Policy) -> Dimension:
    data = [p for p in facts.partitions.values() if p.data_files]
    sizes = [p.data_bytes for p in data]
    med = median(sizes)
    largest = max(sizes) if sizes else None
    skew = round(largest / med, 6) if sizes and med else None
    tiny_bound = policy["tiny-partition-bytes"]
    tiny = [p for p in data if p.data_bytes < tiny_bound]
    empty = [p for p in facts.partitions.values() if p.records == 0]
    spec = facts.md.spec
    figures = {
        "partitioned": bool(spec.fields),
        "partitions": len(facts.partitions),
        "partitions-with-data": len(data),
        "largest-partition-bytes": largest,
        "median-partition-bytes": med,
        "skew": skew,
        "gini": gini(sizes),
        "tiny-partition-bytes": tiny_bound,
        "tiny-partitions": len(tiny),
        "empty-partitions": len(empty),
    }
    verdicts = []
    if skew is not None and len(data) > 1 and skew > policy["max-partition-skew"]:
        verdicts.append(Verdict(
            "partitions", "partition-skew", INFO,
            f"the largest partition holds {skew:.1f} x the median partition's bytes "
            f"(Gini {figures['gini']:.2f}); a finer partition field (or a bucket) spreads it",
            "max-partition-skew", None, (Effect("skew", "ratio", skew, None),)))
    if len(data) >= TINY_MIN_PARTITIONS and len(tiny) * 2 > len(data):
        verdicts.append(Verdict(
            "partitions", "tiny-partitions", INFO,
            f"{len(tiny)} of {len(data)} partitions hold less than {_mib(tiny_bound)}: each is at "
            f"least one small file compaction cannot merge across partitions; a coarser partition "
            f"transform (e.g. month instead of day) would hold them in fewer files",
            "tiny-partition-bytes", None, (Effect("tiny-partitions", "partitions", len(tiny), None),)))
    if empty:
        verdicts.append(Verdict(
            "partitions", "empty-partitions", INFO,
            f"{len(empty)} partition(s) hold only delete files or files without rows",
            None, None, (Effect("empty-partitions", "partitions", len(empty), 0),)))
    return Dimension("partitions", figures, tuple(verdicts))
