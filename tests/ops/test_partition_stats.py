"""`icectl stats partitions` without Spark: the figures at the edges of partition identity, the
incremental computation against the full one, and every refusal writing nothing.

The comparison with Java's `compute_partition_stats` on Spark-written tables is in
tests/interop/test_partition_stats_interop.py."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from clirun import icectl, icectl_json
from support.tables import MOR, empty_table, write_text

from icectl.ops.stats.partition_stats import compute_partition_stats
from icectl.table.table import Table


def _files(loc: Path) -> set[str]:
    return {str(p.relative_to(loc)) for p in loc.rglob("*") if p.is_file()}


def _rows(path: str) -> list[dict]:
    return pq.read_table(path).to_pylist()


def _float_text(v):
    if v is None:
        return None
    return "NaN" if math.isnan(v) else repr(v)


def test_signed_zeros_nan_and_null_are_rows_of_their_own_sorted_as_the_reference(tmp_path: Path) -> None:
    loc = tmp_path / "t"
    empty_table(loc, "id long, cat string, v double", partition="cat, v", properties=MOR)
    write_text(loc, "id,cat,v\n1,a,0.0\n2,a,-0.0\n3,,NaN\n4,b,\n5,a,NaN\n6,a,1.5\n7,a,-0.0\n")
    out = icectl_json("stats", "partitions", str(loc))
    rows = _rows(out["statistics-path"])
    got = [(r["partition"]["cat"], _float_text(r["partition"]["v"]), r["data_record_count"]) for r in rows]
    # nulls first, then values; -0.0 before 0.0 and apart from it; NaN after every number
    assert got == [(None, "NaN", 1), ("a", "-0.0", 2), ("a", "0.0", 1), ("a", "1.5", 1), ("a", "NaN", 1),
                   ("b", None, 1)]
    assert out["partition-count"] == 6 and out["committed"] is True
    assert all(r["total_record_count"] is None and r["spec_id"] == 0 for r in rows)
    md = Table.load(str(loc)).metadata
    assert md.partition_statistics == ({"snapshot-id": out["snapshot-id"], "statistics-path": out["statistics-path"],
                                        "file-size-in-bytes": Path(out["statistics-path"]).stat().st_size},)
    # the live figures agree with the `partitions` view (Spark's partitions table), one spec here
    view = icectl_json("inspect", "partitions", str(loc))
    assert sorted(json.dumps([p["partition"]["cat"], p["partition"]["v"] if isinstance(p["partition"]["v"], str)
                              else _float_text(p["partition"]["v"]), p["record-count"], p["file-count"],
                              p["total-data-file-size-in-bytes"]]) for p in view) == \
        sorted(json.dumps([r["partition"]["cat"], _float_text(r["partition"]["v"]), r["data_record_count"],
                           r["data_file_count"], r["total_data_file_size_in_bytes"]]) for r in rows)
    # the same rows, read back by the inspect view
    shown = icectl_json("inspect", "partition-statistics", str(loc), "--snapshot", str(out["snapshot-id"]))
    assert [(r["partition"]["cat"], r["partition"]["v"], r["data-record-count"]) for r in shown[0]["rows"]] == \
        [(c, None if v is None else float(v) if v != "NaN" else "NaN", n) for c, v, n in got]


@pytest.mark.parametrize("format_version", [2, 3])
def test_incremental_equals_full_on_appends_and_row_deletes(tmp_path: Path, format_version: int) -> None:
    """Where no partition empties, the incremental figures are the full ones (Java's too)."""
    loc = tmp_path / "t"
    empty_table(loc, "id long, cat string", partition="cat", format_version=format_version, properties=MOR)
    write_text(loc, "id,cat\n1,a\n2,a\n3,b\n")
    first = icectl_json("stats", "partitions", str(loc))
    assert first["incremental-from-snapshot-id"] is None
    write_text(loc, "id,cat\n4,a\n5,c\n")
    assert icectl("delete", str(loc), "--filter", "id = 2", "--mode", "merge-on-read").returncode == 0
    # last: b's only file goes, its manifest rewritten with a's file as an existing entry (counted
    # by the previous file already) and b's as a deleted one (in the current manifests, so the
    # full computation sees it too)
    assert icectl("delete", str(loc), "--filter", "id = 3", "--mode", "copy-on-write").returncode == 0
    second = icectl_json("stats", "partitions", str(loc))
    assert second["incremental-from-snapshot-id"] == first["snapshot-id"]
    t = Table.load(str(loc))
    full = compute_partition_stats(t.io, dataclasses.replace(t.metadata, partition_statistics=()))
    assert full.incremental_from is None
    inc_rows = _rows(second["statistics-path"])
    full_rows = [{**s.row(), "partition": {"cat": s.partition.get(1000)}} for s in full.rows]
    if format_version < 3:
        for r in full_rows:
            del r["dv_count"]
    assert inc_rows == full_rows
    assert [(r["partition"]["cat"], r["data_record_count"], r["data_file_count"]) for r in inc_rows] == \
        [("a", 3, 2), ("b", 0, 0), ("c", 1, 1)]
    a = next(r for r in inc_rows if r["partition"]["cat"] == "a")
    assert a["position_delete_record_count"] == 1
    assert (a.get("dv_count"), a["position_delete_file_count"]) == ((1, 0) if format_version >= 3 else (None, 1))


def test_an_unreadable_previous_file_means_a_full_computation(tmp_path: Path) -> None:
    loc = tmp_path / "t"
    empty_table(loc, "id long, cat string", partition="cat")
    write_text(loc, "id,cat\n1,a\n")
    first = icectl_json("stats", "partitions", str(loc))
    Path(first["statistics-path"]).write_bytes(b"not parquet")
    write_text(loc, "id,cat\n2,b\n")
    second = icectl_json("stats", "partitions", str(loc))
    assert second["incremental-from-snapshot-id"] is None
    assert [(r["partition"]["cat"], r["data_record_count"]) for r in _rows(second["statistics-path"])] == \
        [("a", 1), ("b", 1)]


def test_a_v2_file_is_read_after_the_upgrade_to_v3(tmp_path: Path) -> None:
    loc = tmp_path / "t"
    empty_table(loc, "id long, cat string", partition="cat", properties=MOR)
    write_text(loc, "id,cat\n1,a\n2,a\n")
    first = icectl_json("stats", "partitions", str(loc))
    assert "dv_count" not in pq.read_schema(first["statistics-path"]).names
    assert icectl("upgrade", str(loc), "--format-version", "3").returncode == 0
    assert icectl("delete", str(loc), "--filter", "id = 1", "--mode", "merge-on-read").returncode == 0
    second = icectl_json("stats", "partitions", str(loc))
    assert second["incremental-from-snapshot-id"] == first["snapshot-id"]
    (row,) = _rows(second["statistics-path"])
    assert (row["data_record_count"], row["position_delete_record_count"], row["dv_count"]) == (2, 1, 1)
    assert pq.read_schema(second["statistics-path"]).field("dv_count").nullable is False


def test_an_older_snapshot_and_a_snapshot_that_already_has_statistics(tmp_path: Path) -> None:
    loc = tmp_path / "t"
    empty_table(loc, "id long, cat string", partition="cat")
    write_text(loc, "id,cat\n1,a\n")
    old = Table.load(str(loc)).metadata.current_snapshot_id
    write_text(loc, "id,cat\n2,b\n")
    out = icectl_json("stats", "partitions", str(loc), "--snapshot-id", str(old))
    assert out["snapshot-id"] == old
    assert [r["partition"]["cat"] for r in _rows(out["statistics-path"])] == ["a"]
    before = _files(loc)
    again = icectl("stats", "partitions", str(loc), "--snapshot-id", str(old), "--json")
    assert again.returncode == 0
    view = json.loads(again.stdout)
    assert (view["committed"], view["statistics-path"], view["partition-count"]) == (False, out["statistics-path"], None)
    assert "already has partition statistics" in view["warnings"][0]
    assert _files(loc) == before


@pytest.mark.parametrize("case, code", [("unpartitioned", 5), ("unknown snapshot", 3)])
def test_refusals_write_nothing(tmp_path: Path, case: str, code: int) -> None:
    loc = tmp_path / "t"
    empty_table(loc, "id long, cat string", partition=None if case == "unpartitioned" else "cat")
    write_text(loc, "id,cat\n1,a\n")
    before = _files(loc)
    args = ["stats", "partitions", str(loc)] + (["--snapshot-id", "12345"] if case == "unknown snapshot" else [])
    r = icectl(*args)
    assert r.returncode == code, r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert _files(loc) == before


def test_no_snapshot_and_an_empty_snapshot_get_no_file(tmp_path: Path) -> None:
    loc = tmp_path / "t"
    empty_table(loc, "id long, cat string", partition="cat")
    before = _files(loc)
    r = icectl("stats", "partitions", str(loc))
    assert r.returncode == 0 and "no snapshot" in r.stderr and r.stdout == ""
    assert _files(loc) == before
    write_text(loc, "id,cat\n1,a\n")
    assert icectl("delete", str(loc), "--filter", "cat = 'a'").returncode == 0
    write_text(loc, "id,cat\n2,a\n")
    assert icectl("delete", str(loc), "--filter", "cat = 'a'").returncode == 0
    write_text(loc, "id,cat\n3,b\n")
    assert icectl("delete", str(loc), "--filter", "cat = 'b'").returncode == 0
    out = icectl_json("stats", "partitions", str(loc))
    # the last delete left the 'b' entry as deleted in its manifest: a row of zeros, as Java's
    assert [(r["partition"]["cat"], r["data_file_count"]) for r in _rows(out["statistics-path"])] == [("b", 0)]


def test_the_file_has_the_specs_schema_and_field_ids(tmp_path: Path) -> None:
    loc = tmp_path / "t"
    empty_table(loc, "id long, cat string, ts timestamp", partition="cat, day(ts)", format_version=3)
    write_text(loc, "id,cat,ts\n1,a,1969-12-31T23:00:00\n")
    out = icectl_json("stats", "partitions", str(loc))
    schema = pq.read_schema(out["statistics-path"])

    def ids(fields) -> list[tuple]:
        return [(f.name, int(f.metadata[b"PARQUET:field_id"]), f.nullable) for f in fields]

    assert ids(schema) == [
        ("partition", 1, False), ("spec_id", 2, False), ("data_record_count", 3, False),
        ("data_file_count", 4, False), ("total_data_file_size_in_bytes", 5, False),
        ("position_delete_record_count", 6, False), ("position_delete_file_count", 7, False),
        ("equality_delete_record_count", 8, False), ("equality_delete_file_count", 9, False),
        ("total_record_count", 10, True), ("last_updated_at", 11, True),
        ("last_updated_snapshot_id", 12, True), ("dv_count", 13, False)]
    assert ids(schema.field("partition").type) == [("cat", 1000, True), ("ts_day", 1001, True)]
    (row,) = _rows(out["statistics-path"])
    assert str(row["partition"]["ts_day"]) == "1969-12-31"  # a pre-1970 day, as a date
    assert pa.types.is_date32(schema.field("partition").type.field("ts_day").type)


def test_a_commit_that_loses_a_race_keeps_its_file_and_the_winners_change(tmp_path: Path) -> None:
    """The table moved on (a property) after the statistics were computed: the retry registers
    the same file on the winner's metadata, and the file of the lost attempt is not removed."""
    from icectl.ops.stats.partition_stats import write_partition_stats

    loc = tmp_path / "t"
    empty_table(loc, "id long, cat string", partition="cat")
    write_text(loc, "id,cat\n1,a\n")
    stale = Table.load(str(loc))
    assert icectl("properties", "set", str(loc), "owner=ops").returncode == 0
    result = write_partition_stats(stale)
    assert result.committed and Path(result.statistics_path).exists()
    md = Table.load(str(loc)).metadata
    assert md.properties.get("owner") == "ops"
    assert [e["statistics-path"] for e in md.partition_statistics] == [result.statistics_path]
    assert [p.name for p in (loc / "metadata").glob("partition-stats-*")] == [Path(result.statistics_path).name]
