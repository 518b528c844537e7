"""The snapshots dimension's timeline figure (ops/health/timeline.py): every snapshot of the
metadata, by commit time then sequence number, with its summary's totals; a total that is
missing, not a whole number or negative is null (never guessed). Real tables: the CLI and
interop tests of the HTML report."""

from __future__ import annotations

from types import SimpleNamespace

from icectl.ops.health.timeline import CHANGES, TOTALS, snapshot_timeline
from icectl.spec.snapshots import Snapshot


def test_rows_in_commit_order_with_totals_or_null():
    full = {"operation": "append", "total-records": "10", "total-data-files": "2", "total-delete-files": "0",
            "total-files-size": "2048"}
    snaps = [
        Snapshot(3, 3000, 2, 3, summary={"operation": "delete", "total-records": " 7 ", "total-data-files": "x",
                                         "total-delete-files": "-1"}),
        Snapshot(1, 1000, None, 1, summary=full),
        Snapshot(2, 1000, 1, 2, summary=None),  # an old v1 writer: no summary at all
    ]
    rows = snapshot_timeline(SimpleNamespace(snapshots=snaps))
    assert [r["snapshot-id"] for r in rows] == [1, 2, 3]  # the same millisecond: by sequence number
    assert [rows[0][k] for k in TOTALS] == [10, 2, 0, 2048]
    assert rows[1]["operation"] is None and [rows[1][k] for k in TOTALS] == [None] * 4
    assert [rows[2][k] for k in TOTALS] == [7, None, None, None]
    assert rows[2] == {"snapshot-id": 3, "parent-snapshot-id": 2, "sequence-number": 3, "timestamp-ms": 3000,
                       "operation": "delete", "total-records": 7, "total-data-files": None,
                       "total-delete-files": None, "total-files-size": None, **dict.fromkeys(CHANGES)}


def test_no_snapshots_no_rows():
    assert snapshot_timeline(SimpleNamespace(snapshots=[])) == []
