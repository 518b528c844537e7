"""The table metadata's ``statistics`` list: one statistics file (Puffin) per snapshot.

An entry is ``{snapshot-id, statistics-path, file-size-in-bytes, file-footer-size-in-bytes,
blob-metadata: [{type, snapshot-id, sequence-number, fields, properties}]}`` (``properties``
left out when empty), the keys in the order Java's ``StatisticsFileParser`` writes them.
Setting a snapshot's statistics replaces the file it had; the list is ordered as Java's
metadata builder orders it, by the buckets of a ``java.util.HashMap`` keyed by snapshot id.
(Seen against Spark: six snapshots' statistics came out in this order but for two ids sharing
a bucket, which Java listed the other way round; the rule for such ties is not yet known.)
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterable, Mapping, Sequence

from icectl.spec.metadata import TableMetadata, now_ms
from icectl.spec.snapshots import statistics_snapshot_id

__all__ = ["statistics_entry", "with_statistics", "java_hash_order"]


def statistics_entry(snapshot_id: int, path: str, file_size: int, footer_size: int,
                     blobs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A ``statistics`` entry; ``blobs``: (type, snapshot-id, sequence-number, fields,
    properties) of each blob of the file."""
    out = []
    for b in blobs:
        e: dict[str, Any] = {"type": b["type"], "snapshot-id": b["snapshot-id"],
                             "sequence-number": b["sequence-number"], "fields": list(b["fields"])}
        if b.get("properties"):
            e["properties"] = dict(b["properties"])
        out.append(e)
    return {"snapshot-id": snapshot_id, "statistics-path": path, "file-size-in-bytes": file_size,
            "file-footer-size-in-bytes": footer_size, "blob-metadata": out}


def java_hash_order(entries: Iterable[Mapping[str, Any]]) -> tuple[dict[str, Any], ...]:
    """Entries in the iteration order of a ``java.util.HashMap`` keyed by their snapshot id:
    by bucket of the key's hash (``Long.hashCode``, spread), then in insertion order."""
    entries = [dict(e) for e in entries]
    capacity = 16
    while len(entries) > capacity * 3 // 4:
        capacity *= 2

    def bucket(e: dict[str, Any]) -> int:
        v = (statistics_snapshot_id(e) or 0) & 0xFFFFFFFFFFFFFFFF
        h = (v ^ (v >> 32)) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return tuple(sorted(entries, key=bucket))


def with_statistics(md: TableMetadata, entry: Mapping[str, Any], *,
                    timestamp_ms: int | None = None) -> TableMetadata:
    """Set the statistics file of ``entry``'s snapshot, replacing the one it had (Java's
    ``setStatistics``)."""
    sid = statistics_snapshot_id(entry)
    listed = [dict(entry) if statistics_snapshot_id(e) == sid else e for e in md.statistics]
    if all(statistics_snapshot_id(e) != sid for e in md.statistics):
        listed.append(dict(entry))
    return replace(md, statistics=java_hash_order(listed),
                   last_updated_ms=timestamp_ms if timestamp_ms is not None else now_ms())
