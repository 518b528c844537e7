"""`icectl stats partitions` against Spark's `compute_partition_stats` (Iceberg 1.10.2).

On the same Spark-written tables (identity partitions on a string and a double with null, NaN,
0.0 and -0.0 values, an evolved spec adding a bucket field, a data file dropped whole, position
deletes in v2 and deletion vectors in v3, equality deletes in the NaN and -0.0 partitions):

* the file Java writes and the file icectl writes for the same snapshot hold equal rows, in the
  same order, under the same Parquet schema (field ids, required/optional, types) and the same
  ``iceberg.schema``, both computed in full;
* after more commits each computes incrementally from icectl's file, and again the rows agree
  (Java reads icectl's file to do so);
* `icectl inspect partition-statistics` reads Java's file as pyarrow does;
* Spark reads the table after icectl's commit and Java lists icectl's file;
* `icectl expire` drops the entry and file of an expired snapshot and keeps the current one's,
  as Spark's `expire_snapshots` does on a twin table (its `deleted_statistics_files_count`).
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cli_support import icectl_json, run_icectl
from spark_support import IceTable, java_table, sql_rows

from icectl.ops.stats.partition_stats import compute_partition_stats
from icectl.table.table import Table

pytestmark = pytest.mark.interop


def _equality_delete(spark: Any, t: IceTable, keys_dir: Path, keys: list[tuple]) -> None:
    """Equality delete files (icectl's `delete --equality`, one per partition of the keys)."""
    path = keys_dir / f"keys-{t.name}.parquet"
    pq.write_table(pa.table({"id": pa.array([k[0] for k in keys], pa.int64()),
                             "cat": pa.array([k[1] for k in keys], pa.string()),
                             "v": pa.array([k[2] for k in keys], pa.float64())}), path)
    r = run_icectl("delete", str(t.location), "--equality", "id,cat,v", "--from", str(path))
    assert r.returncode == 0, r.stderr
    spark.sql(f"REFRESH TABLE {t.ident}")


def _build(spark: Any, t: IceTable, format_version: int, keys_dir: Path) -> None:
    sql = spark.sql
    sql(f"""CREATE TABLE {t.ident} (id bigint, cat string, v double) USING iceberg
            PARTITIONED BY (cat, v) TBLPROPERTIES ('format-version'='{format_version}',
            'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read')""")
    sql(f"""INSERT INTO {t.ident} VALUES (1, 'a', double('0.0')), (2, 'a', double('-0.0')),
            (3, NULL, double('NaN')), (4, 'b', NULL), (5, 'b', 1.5), (6, 'a', double('-0.0'))""")
    sql(f"INSERT INTO {t.ident} VALUES (7, 'a', double('0.0')), (8, 'c', double('NaN')), (9, 'a', double('-0.0'))")
    sql(f"DELETE FROM {t.ident} WHERE id = 1")  # a position delete file / a deletion vector
    _equality_delete(spark, t, keys_dir, [(8, "c", math.nan), (9, "a", -0.0)])  # in the NaN and -0.0 partitions
    sql(f"ALTER TABLE {t.ident} ADD PARTITION FIELD bucket(2, id)")
    sql(f"INSERT INTO {t.ident} VALUES (10, 'c', 2.0), (11, NULL, NULL)")
    sql(f"DELETE FROM {t.ident} WHERE id = 2")
    # the whole file, last: a deleted entry in the current snapshot's manifests, no delete file
    sql(f"DELETE FROM {t.ident} WHERE cat = 'b' AND v = 1.5")


def _more(spark: Any, t: IceTable) -> None:
    spark.sql(f"INSERT INTO {t.ident} VALUES (12, 'a', double('-0.0'))")
    spark.sql(f"INSERT INTO {t.ident} VALUES (13, 'd', 3.0)")  # a manifest of its own
    spark.sql(f"DELETE FROM {t.ident} WHERE id IN (7, 10)")
    spark.sql(f"DELETE FROM {t.ident} WHERE cat = 'd'")  # a partition emptied after the first file
    # one more commit: the manifest holding d's deleted entry (and nothing live) is gone from the
    # current snapshot, so only an incremental computation (from the previous file) has a row for d
    spark.sql(f"INSERT INTO {t.ident} VALUES (14, 'e', 4.0)")


def _norm(v: Any) -> Any:
    """A value with NaN and the sign of zero made comparable."""
    if isinstance(v, dict):
        return {k: _norm(x) for k, x in v.items()}
    if isinstance(v, float):
        return "NaN" if math.isnan(v) else repr(v)
    return v


def _rows(path: str) -> list[dict[str, Any]]:
    return [_norm(r) for r in pq.read_table(path.removeprefix("file:")).to_pylist()]


def _layout(path: str) -> tuple[str, Any]:
    f = pq.ParquetFile(path.removeprefix("file:"))
    # the fields, without the first lines: pyarrow's object, then the root group, which Java
    # names "table" and pyarrow "schema" (readers ignore it)
    schema_text = str(f.schema).split("\n", 2)[2]
    return schema_text, json.loads(f.metadata.metadata[b"iceberg.schema"])


def _metadata(t: IceTable) -> dict[str, Any]:
    versions = sorted(t.metadata_dir.glob("v*.metadata.json"), key=lambda p: int(p.name[1:].split(".")[0]))
    return json.loads(versions[-1].read_text())


def _java_compute(spark: Any, t: IceTable) -> str:
    (path,), = sql_rows(spark, f"CALL {t.catalog}.system.compute_partition_stats('{t.namespace}.{t.name}')")
    return path


def _unregister(spark: Any, t: IceTable, snapshot_id: int) -> None:
    """Remove a snapshot's partition statistics entry through Java (the file stays)."""
    jt = java_table(spark, t.location)
    jt.updatePartitionStatistics().removePartitionStatistics(snapshot_id).commit()
    spark.sql(f"REFRESH TABLE {t.ident}")


def _icectl_compute(spark: Any, t: IceTable) -> dict[str, Any]:
    out = icectl_json("stats", "partitions", str(t.location))
    assert out["committed"] is True, out
    spark.sql(f"REFRESH TABLE {t.ident}")  # Spark's catalog caches the version it knew
    return out


@pytest.mark.parametrize("format_version", [2, 3])
def test_partition_stats_equal_javas_full_and_incremental(spark: Any, new_table: Any, tmp_path: Path,
                                                          format_version: int) -> None:
    t = new_table(f"ps{format_version}")
    _build(spark, t, format_version, tmp_path)
    current = _metadata(t)["current-snapshot-id"]

    java_path = _java_compute(spark, t)
    java_rows = _rows(java_path)
    assert len(java_rows) >= 6
    # the edges are in the file: NaN and -0.0 partitions, a null one, an emptied one, both specs
    parts = [(r["partition"]["cat"], r["partition"]["v"]) for r in java_rows]
    assert {("a", "-0.0"), ("a", "0.0"), (None, "NaN"), ("b", "1.5")} <= set(parts)
    assert {r["spec_id"] for r in java_rows} == {0, 1}
    assert any(r["equality_delete_file_count"] for r in java_rows)
    assert any(r["data_file_count"] == 0 for r in java_rows), java_rows
    dv_rows = [r for r in java_rows if r.get("dv_count")]
    assert bool(dv_rows) == (format_version >= 3)

    # icectl reads Java's file as pyarrow does
    shown = icectl_json("inspect", "partition-statistics", str(t.location))
    assert [f["snapshot-id"] for f in shown] == [current]
    assert [_norm({k.replace("-", "_"): v for k, v in r.items()}) for r in shown[0]["rows"]] == \
        [{k: v for k, v in r.items() if format_version >= 3 or k != "dv_count"} | (
            {} if format_version >= 3 else {"dv_count": 0}) for r in java_rows]

    # icectl's full computation of the same snapshot: the same rows, order and layout
    _unregister(spark, t, current)
    out = _icectl_compute(spark, t)
    assert out["snapshot-id"] == current and out["incremental-from-snapshot-id"] is None
    assert _rows(out["statistics-path"]) == java_rows
    assert _layout(out["statistics-path"]) == _layout(java_path)
    assert out["partition-count"] == len(java_rows)

    # Spark reads the table after icectl's commit; Java lists icectl's file
    spark.sql(f"REFRESH TABLE {t.ident}")
    assert sorted(r[0] for r in sql_rows(spark, f"SELECT id FROM {t.ident}")) == [3, 4, 6, 7, 10, 11]
    jt = java_table(spark, t.location)
    listed = [(f.snapshotId(), f.path(), f.fileSizeInBytes()) for f in jt.partitionStatisticsFiles()]
    assert listed == [(current, out["statistics-path"], Path(out["statistics-path"]).stat().st_size)]

    # more commits; both compute incrementally from icectl's file
    _more(spark, t)
    later = _metadata(t)["current-snapshot-id"]
    out2 = _icectl_compute(spark, t)
    assert out2["snapshot-id"] == later and out2["incremental-from-snapshot-id"] == current
    _unregister(spark, t, later)
    java_later = _java_compute(spark, t)
    assert _rows(out2["statistics-path"]) == _rows(java_later)
    # both were incremental: Java read icectl's file (a full computation has no row for d)
    assert any(r["partition"]["cat"] == "d" and r["data_file_count"] == 0 for r in _rows(java_later))
    table = Table.load(str(t.location))
    full = compute_partition_stats(table.io, dataclasses.replace(table.metadata, partition_statistics=()))
    assert full.incremental_from is None and not any(s.partition.get(1000) == "d" for s in full.rows)


def test_expire_drops_partition_statistics_of_expired_snapshots_as_spark(spark: Any, new_table: Any) -> None:
    results = {}
    for name in ("by_icectl", "by_spark"):
        t = new_table(name)
        spark.sql(f"CREATE TABLE {t.ident} (id bigint, cat string) USING iceberg PARTITIONED BY (cat)")
        spark.sql(f"INSERT INTO {t.ident} VALUES (1, 'a')")
        first = _icectl_compute(spark, t)
        spark.sql(f"INSERT INTO {t.ident} VALUES (2, 'b')")
        second = _icectl_compute(spark, t)
        if name == "by_icectl":
            r = run_icectl("expire", str(t.location), "--older-than", "0s", "--retain-last", "1", "--json")
            assert r.returncode == 0, r.stderr
            deleted = json.loads(r.stdout)["deleted_statistics_files_count"]
        else:
            (row,) = sql_rows(spark, f"CALL {t.catalog}.system.expire_snapshots(table => "
                                     f"'{t.namespace}.{t.name}', older_than => TIMESTAMP '2999-01-01 00:00:00', "
                                     f"retain_last => 1)")
            deleted = row[-1]  # deleted_statistics_files_count
        md = _metadata(t)
        results[name] = (
            [e["snapshot-id"] for e in md.get("partition-statistics", [])] == [second["snapshot-id"]],
            Path(first["statistics-path"]).exists(), Path(second["statistics-path"]).exists(),
        )
        assert deleted == 1, name
    assert results["by_icectl"] == results["by_spark"] == (True, False, True)
