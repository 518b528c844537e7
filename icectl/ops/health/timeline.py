"""The snapshots of a table over time, for the snapshots dimension's ``timeline`` figure (the HTML
report draws it): one row per snapshot in the metadata, oldest first, with the table totals its
summary records after it (``total-records``, ``total-data-files``, ``total-delete-files``,
``total-files-size``; Iceberg writers record them, Spark's ``snapshots`` table shows them in
``summary``), then what it changed (``added-data-files``, ``removed-delete-files``, ...). A
count a summary lacks or cannot parse as a whole number is null, never guessed. Pure:
metadata in, rows out."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from icectl.spec.metadata import TableMetadata
    from icectl.spec.snapshots import Snapshot

__all__ = ["snapshot_timeline", "TOTALS", "CHANGES"]

TOTALS = ("total-records", "total-data-files", "total-delete-files", "total-files-size")
# what each snapshot changed, and the delete totals, as its summary records them
CHANGES = ("added-records", "deleted-records", "added-data-files", "deleted-data-files",
           "added-delete-files", "removed-delete-files", "added-files-size", "removed-files-size",
           "total-position-deletes", "total-equality-deletes")


def _total(s: Snapshot, key: str) -> int | None:
    text = s.summary_value(key)
    if text is None:
        return None
    try:
        value = int(text.strip())
    except ValueError:
        return None
    return value if value >= 0 else None


def snapshot_timeline(md: TableMetadata) -> list[dict[str, Any]]:
    """Every snapshot of ``md``, by commit time (then sequence number): id, parent, sequence
    number, time, operation, the summary's table totals and what the snapshot changed."""
    snaps = sorted(md.snapshots, key=lambda s: (s.timestamp_ms, s.sequence_number))
    rows = []
    for s in snaps:
        row: dict[str, Any] = {"snapshot-id": s.snapshot_id, "parent-snapshot-id": s.parent_snapshot_id,
                               "sequence-number": s.sequence_number, "timestamp-ms": s.timestamp_ms,
                               "operation": s.operation}
        row.update((k, _total(s, k)) for k in TOTALS + CHANGES)
        rows.append(row)
    return rows
