"""`icectl migrate`, `icectl snapshot-table` and `icectl append --from-dir` against the reference.

The directories are written by Spark itself (``partitionBy(...).parquet(dir)``: Hive-style
``k=v/`` directories, ``__HIVE_DEFAULT_PARTITION__`` for null, escaped values, ``_SUCCESS`` and
``.crc`` files, no Parquet field ids) and copied into twins, one per engine. Spark's ``snapshot``
procedure runs on a session-catalog table over one twin. Spark's ``migrate`` needs the session
catalog to be Iceberg's SparkSessionCatalog, which the shared session's is not: icectl's
``migrate`` (same import of files, at the directory's own location) is compared with Spark's
``snapshot`` of its twin instead. ``append --from-dir`` is compared with ``add_files`` from the
path source ```parquet`.`/dir```. Each comparison reads rows and the partitions metadata table
through Spark on both sides.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.register_assert_rewrite("cli_support")

from cli_support import icectl_json, run_icectl  # noqa: E402

from icectl.table.table import Table  # noqa: E402

pytestmark = pytest.mark.interop

# edge values in partition paths: negative numbers, dates before 1970, nulls, strings that need
# escaping (Hive escapes / = % and : ; a space and a plus stay as they are)
EDGE_ROWS = [
    (1, "a", -5, dt.date(1969, 12, 31), "a/b"),
    (2, "b", -5, dt.date(1969, 12, 31), "a/b"),
    (3, "c", None, dt.date(1900, 1, 1), "x=y"),
    (4, "d", 0, None, "sp ace"),
    (5, "e", 7, dt.date(2024, 2, 29), "p+q"),
    (6, "f", 7, dt.date(2024, 2, 29), "50%:x"),
    (7, "g", 2147483647, dt.date(1970, 1, 1), None),
    (8, None, -2147483648, dt.date(1970, 1, 2), "é"),
]
COLUMNS = "id bigint, v string, k int, d date, s string"


def _spark_dir(spark: Any, where: Path) -> Path:
    df = spark.createDataFrame(EDGE_ROWS, COLUMNS)
    df.coalesce(1).write.partitionBy("k", "d", "s").parquet(str(where))
    return where


def _scan(location, *args: str) -> list[dict]:
    r = run_icectl("scan", str(location), *args, "--format", "jsonl")
    assert r.returncode == 0, r.stderr
    return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]

def _tree(root: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for dirpath, _dirs, names in os.walk(root):
        for n in names:
            p = Path(dirpath) / n
            st = p.stat()
            out[str(p.relative_to(root))] = (st.st_size, st.st_mtime_ns)
    return out


def _rows(spark: Any, query: str) -> list[tuple]:
    return sorted((tuple(r) for r in spark.sql(query).collect()), key=repr)


def _loaded(spark: Any, location: Path | str, suffix: str = "") -> list[tuple]:
    df = spark.read.format("iceberg").load(f"{location}{suffix}")
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _partitions_of(spark: Any, ident_or_location: str, by_path: bool) -> list[tuple]:
    if by_path:
        df = spark.read.format("iceberg").load(f"{ident_or_location}#partitions")
    else:
        df = spark.table(f"{ident_or_location}.partitions")
    return sorted((tuple(r) for r in df.select("partition", "record_count", "file_count").collect()), key=repr)


def test_snapshot_table_and_migrate_equal_sparks_snapshot(spark, new_table, tmp_path):
    src = _spark_dir(spark, tmp_path / "src")
    assert (src / "_SUCCESS").exists() and any(n.endswith(".crc") for n in _tree(src))
    twin_spark = tmp_path / "twin-spark"
    twin_migrate = tmp_path / "twin-migrate"
    shutil.copytree(src, twin_spark)
    shutil.copytree(src, twin_migrate)

    # Spark: a session-catalog Parquet table over its twin, then the snapshot procedure
    ref = new_table("spark_snap")
    v1 = f"default.adopt_src_{ref.namespace}"
    spark.sql(f"CREATE TABLE {v1} ({COLUMNS}) USING parquet PARTITIONED BY (k, d, s) LOCATION '{twin_spark}'")
    try:
        spark.sql(f"ALTER TABLE {v1} RECOVER PARTITIONS")
        spark.sql(f"CALL ice.system.snapshot(source_table => 'spark_catalog.{v1}', table => '{ref.ident}')")
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {v1}")  # (an external table: its files stay)

    # icectl: snapshot-table of the source, migrate of the other twin
    before = _tree(src)
    snap_loc = tmp_path / "ice-snap"
    out = icectl_json("snapshot-table", str(src), str(snap_loc), "--json")
    assert out["mode"] == "snapshot" and out["properties"] == {"snapshot": "true", "gc.enabled": "false"}
    assert _tree(src) == before, "snapshot-table changed its source directory"
    assert out["field-ids"] == "name-mapping" and out["added-files"] == len(EDGE_ROWS) - 1  # rows 1, 2 share one
    assert {s["path"]: s["reason"] for s in out["ignored-files"]}[str(src / "_SUCCESS")] == "hidden"
    mig = icectl_json("migrate", str(twin_migrate), "--json")
    assert mig["location"] == str(twin_migrate) and mig["properties"] == {"migrated": "true"}

    expected = sorted(EDGE_ROWS, key=repr)
    assert _rows(spark, f"SELECT * FROM {ref.ident}") == expected
    assert _loaded(spark, snap_loc) == expected
    assert _loaded(spark, twin_migrate) == expected
    # the same schema (partition columns last) and the same partitions as Spark's snapshot
    ref_cols = [f.name for f in spark.table(ref.ident).schema.fields]
    assert [f.name for f in spark.read.format("iceberg").load(str(snap_loc)).schema.fields] == ref_cols
    want = _partitions_of(spark, ref.ident, False)
    assert len(want) == len(EDGE_ROWS) - 1
    assert _partitions_of(spark, str(snap_loc), True) == want
    assert _partitions_of(spark, str(twin_migrate), True) == want
    # what Spark's snapshot table records, icectl's does: gc disabled, the name mapping
    ref_props = dict(_rows(spark, f"SHOW TBLPROPERTIES {ref.ident}"))
    assert ref_props["gc.enabled"] == "false" and ref_props["snapshot"] == "true"
    assert "schema.name-mapping.default" in ref_props
    # icectl reads its own tables' rows the same (the partition columns from the paths)
    scanned = _scan(str(twin_migrate), "--filter", "k = -5")
    assert sorted(r["id"] for r in scanned) == [1, 2]
    # expire and orphans refuse to delete a file of the snapshot table (gc.enabled=false)
    assert run_icectl("expire", str(snap_loc), "--older-than", "2100-01-01").returncode == 5
    assert run_icectl("orphans", str(snap_loc), "--older-than", "2000-01-01", "--delete").returncode == 5
    assert _tree(src) == before


def test_append_from_dir_equals_add_files_from_a_path(spark, new_table, tmp_path):
    src = _spark_dir(spark, tmp_path / "src")
    twin = tmp_path / "twin"
    shutil.copytree(src, twin)
    ref, ice = new_table("spark_add"), new_table("ice_add")
    for t in (ref, ice):
        spark.sql(f"CREATE TABLE {t.ident} ({COLUMNS}) USING iceberg PARTITIONED BY (k, d, s)")
    spark.sql(f"CALL ice.system.add_files(table => '{ref.ident}', source_table => '`parquet`.`{src}`')")
    out = icectl_json("append", str(ice.location), "--from-dir", str(twin), "--json")
    assert out["added-files"] == len(EDGE_ROWS) - 1 and out["name-mapping-created"] is True
    spark.sql(f"REFRESH TABLE {ice.ident}")  # the catalog caches tables; icectl committed behind it
    expected = sorted(EDGE_ROWS, key=repr)
    assert _rows(spark, f"SELECT * FROM {ref.ident}") == expected
    assert _rows(spark, f"SELECT * FROM {ice.ident}") == expected
    assert _partitions_of(spark, ice.ident, False) == _partitions_of(spark, ref.ident, False)
    # a second add of the same files: both refuse (Java's check_duplicate_files)
    with pytest.raises(Exception, match="(?i)duplicate"):
        spark.sql(f"CALL ice.system.add_files(table => '{ref.ident}', source_table => '`parquet`.`{src}`')")
    again = run_icectl("append", str(ice.location), "--from-dir", str(twin))
    assert again.returncode == 5 and "already in the table" in again.stderr
    spark.sql(f"REFRESH TABLE {ice.ident}")
    assert _rows(spark, f"SELECT count(*) FROM {ice.ident}") == [(len(EDGE_ROWS),)]


# partition directory values -> the type Spark's partition discovery gives the column
INFERENCE = {
    "a": ["1", "-5", "007"],  # int
    "b": ["1", "4294967296"],  # int and long: long
    "c": ["1", "123456789012345678901234"],  # beyond a long: decimal
    "e": ["1.5", "-0.0", "NaN", "2"],  # double
    "f": ["1969-12-31", "2024-01-02"],  # date
    "g": ["2024-01-02 10%3A00%3A00", "1969-12-31 23%3A59%3A59.5"],  # timestamp
    "h": ["2024-01-02", "2024-01-02 10%3A00%3A00"],  # date and timestamp: timestamp
    "i": ["1", "2024-01-02"],  # int and date: string
    "j": ["__HIVE_DEFAULT_PARTITION__", "__HIVE_DEFAULT_PARTITION__"],  # nulls only: string
    "m": ["4294967296", "1.5"],  # long and double: string
    "n": ["1", "__HIVE_DEFAULT_PARTITION__"],  # int and null: int
}
SPARK_TO_ICEBERG = {"IntegerType()": "int", "LongType()": "long", "DoubleType()": "double",
                    "DateType()": "date", "TimestampType()": "timestamptz", "StringType()": "string",
                    # Spark types a column of nulls only NullType, which no Iceberg v1/v2 column
                    # can be: icectl makes it a string (as a Hive table would declare it)
                    "NullType()": "string"}


def test_partition_types_are_inferred_as_sparks_partition_discovery(spark, tmp_path):
    root = tmp_path / "infer"
    keys = list(INFERENCE)
    for i in range(max(len(v) for v in INFERENCE.values())):  # one file per row of values
        d = root.joinpath(*[f"{k}={INFERENCE[k][i % len(INFERENCE[k])]}" for k in keys])
        d.mkdir(parents=True)
        pq.write_table(pa.table({"id": pa.array([i], pa.int64())}), d / "part-0.parquet")
    direct_df = spark.read.parquet(str(root))  # (read before the table's metadata/ is there)
    spark_types = {f.name: f.dataType for f in direct_df.schema.fields}
    direct = sorted(tuple(r) for r in direct_df.select(*keys).collect())
    assert icectl_json("migrate", str(root), "--json")["added-files"] == 4
    ours = {f.name: str(f.type) for f in Table.load(str(root)).metadata.schema.fields}
    for k in keys:
        st = spark_types[k]
        want = (f"decimal({st.precision}, {st.scale})" if st.typeName() == "decimal"
                else SPARK_TO_ICEBERG[repr(st)])
        assert ours[k] == want, (k, INFERENCE[k], repr(st), ours[k])
    # Spark reads the partition values back from icectl's table as it reads them from the paths
    back = sorted(tuple(r) for r in spark.read.format("iceberg").load(str(root)).select(*keys).collect())
    assert json.dumps(back, default=str) == json.dumps(direct, default=str)
