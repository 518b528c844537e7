"""Snapshot summaries: the reference's keys, order, DV counting and carried totals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from icectl.spec.manifests import DATA, EQUALITY_DELETES, MANIFEST_DELETES, POSITION_DELETES, DataFile, ManifestFile
from icectl.spec.summary import SummaryBuilder, snapshot_summary

GOLDEN = Path(__file__).resolve().parent.parent / "data" / "metadata"
ENGINE_KEYS = {"spark.app.id", "engine-version", "app-id", "engine-name", "iceberg-version"}


def data_file(records: int, size: int, content: int = DATA, fmt: str = "PARQUET", **kw) -> DataFile:
    return DataFile(content, f"/d/{records}-{size}.{fmt.lower()}", fmt, (), records, size, **kw)


def spark_snapshot(name: str, index: int) -> tuple[dict, dict | None]:
    md = json.loads((GOLDEN / name).read_text())
    snaps = md["snapshots"]
    prev = snaps[index - 1]["summary"] if index > 0 else None
    return snaps[index]["summary"], prev


def without_engine(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k not in ENGINE_KEYS}


def test_append_matches_spark_summary_keys_order_and_totals() -> None:
    # Spark's second append on the v2 golden table: 2 files, 2 records, 3320 bytes, 2 partitions.
    expected, previous = spark_snapshot("spark_v2_mor.json", 1)
    b = SummaryBuilder()
    b.added_file(data_file(1, 1660), "d_month=2024-01")
    b.added_file(data_file(1, 1660), "d_month=2024-02")
    got = snapshot_summary("append", b.build(), previous, has_previous=True)
    assert list(got.items()) == list(without_engine(expected).items())


def test_deletion_vectors_count_as_dvs_with_their_blob_size() -> None:
    expected, previous = spark_snapshot("spark_v3_dv.json", 2)
    dv = data_file(1, 9999, content=POSITION_DELETES, fmt="PUFFIN", content_offset=4,
                   content_size_in_bytes=42, referenced_data_file="/d/x.parquet")
    b = SummaryBuilder().added_file(dv, "p=1")
    got = snapshot_summary("delete", b.build(), previous, has_previous=True)
    assert list(got.items()) == list(without_engine(expected).items())


def test_position_and_equality_deletes_and_removals() -> None:
    b = SummaryBuilder()
    b.added_file(data_file(5, 100), "")
    b.added_file(data_file(2, 10, content=POSITION_DELETES), "")
    b.added_file(data_file(3, 20, content=EQUALITY_DELETES, equality_ids=(1,)), "")
    b.removed_file(data_file(7, 70), "")
    assert b.build() == {
        "added-data-files": "1", "deleted-data-files": "1",
        "added-equality-delete-files": "1", "added-position-delete-files": "1",
        "added-delete-files": "2", "added-records": "5", "deleted-records": "7",
        "added-files-size": "130", "removed-files-size": "70", "added-position-deletes": "2",
        "added-equality-deletes": "3", "changed-partition-count": "1",
    }
    assert list(b.build())[:4] == ["added-data-files", "deleted-data-files",
                                   "added-equality-delete-files", "added-position-delete-files"]


def test_custom_properties_come_first() -> None:
    b = SummaryBuilder().set("pipeline", "nightly").added_file(data_file(1, 1), "")
    assert list(b.build()) == ["pipeline", "added-data-files", "added-records", "added-files-size",
                               "changed-partition-count"]


def test_partition_summaries_within_the_limit() -> None:
    b = SummaryBuilder(partition_summary_limit=2)
    b.added_file(data_file(3, 30), "d=2024-01-02")
    b.added_file(data_file(1, 10), "d=2024-01-02")
    b.added_file(data_file(2, 20), "d=2024-01-03")
    out = b.build()
    assert out["changed-partition-count"] == "2"
    assert out["partition-summaries-included"] == "true"
    assert out["partitions.d=2024-01-02"] == "added-data-files=2,added-records=4,added-files-size=40"
    assert out["partitions.d=2024-01-03"] == "added-data-files=1,added-records=2,added-files-size=20"
    over = SummaryBuilder(partition_summary_limit=1)
    over.added_file(data_file(3, 30), "d=1").added_file(data_file(3, 30), "d=2")
    assert "partition-summaries-included" not in over.build()
    assert not any(k.startswith("partitions.") for k in over.build())


def test_unpartitioned_changes_have_no_partition_summaries() -> None:
    out = SummaryBuilder(partition_summary_limit=10).added_file(data_file(1, 1), "").build()
    assert out["changed-partition-count"] == "1"
    assert "partition-summaries-included" not in out


def test_added_manifest_drops_partition_counts_and_delete_sizes() -> None:
    m = ManifestFile("/m.avro", 10, 0, content=MANIFEST_DELETES, added_files_count=2,
                     existing_files_count=0, deleted_files_count=1, added_rows_count=5,
                     existing_rows_count=0, deleted_rows_count=0)
    b = SummaryBuilder().added_file(data_file(1, 100), "p=1").added_manifest(m)
    assert b.build() == {"added-data-files": "1", "added-delete-files": "2",
                         "removed-delete-files": "1", "added-records": "1"}


@pytest.mark.parametrize("previous, has_previous, expected", [
    (None, False, {"total-records": "3", "total-files-size": "30", "total-data-files": "1",
                   "total-delete-files": "0", "total-position-deletes": "0",
                   "total-equality-deletes": "0"}),
    ({"total-records": "10", "total-data-files": "2"}, True,
     {"total-records": "13", "total-data-files": "3"}),
    ({}, True, {}),  # a previous snapshot without a summary: no totals
    ({"total-records": "1", "total-data-files": "x"}, True, {"total-records": "4"}),
])
def test_totals_carried_forward(previous, has_previous, expected) -> None:
    changes = SummaryBuilder().added_file(data_file(3, 30), "").build()
    out = snapshot_summary("append", changes, previous, has_previous=has_previous)
    assert {k: v for k, v in out.items() if k.startswith("total-")} == expected
    assert next(iter(out)) == "operation"


def test_negative_totals_are_left_out() -> None:
    changes = SummaryBuilder().removed_file(data_file(5, 50), "").build()
    out = snapshot_summary("delete", changes, {"total-records": "2", "total-data-files": "3",
                                               "total-files-size": "100"}, has_previous=True)
    assert "total-records" not in out
    assert out["total-data-files"] == "2" and out["total-files-size"] == "50"


def test_environment_keys_follow_totals_and_never_override() -> None:
    changes = SummaryBuilder().set("engine-name", "mine").added_file(data_file(1, 1), "").build()
    out = snapshot_summary("append", changes, None, has_previous=False,
                           environment={"engine-name": "icectl", "engine-version": "0.1"})
    assert out["engine-name"] == "mine"
    assert list(out)[-1] == "engine-version"
