"""NaN and -0.0 identity partitions: what icectl writes and deletes there, Spark 3.5.8 + Iceberg
1.10.2 reads the same way.

* an equality delete in a NaN partition (and in a -0.0 one) written by ``icectl delete
  --equality`` into a table Spark created and filled: Spark leaves the same rows as icectl's
  scan (icectl used to leave the NaN rows, its delete index missing the NaN partition);
* compaction of unpartitioned files into ``identity(x)``: Spark reads every row's own sign of
  zero (0.0 rows went into the -0.0 partition's file, and Spark fills an identity column from
  the partition tuple);
* Java plans the delete file against the NaN partition's data file, as icectl's ``plan`` does.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from cli_support import run_icectl
from spark_support import IceTable, java_table, sql_rows


def _keys(path: Path, ids: list[int], xs: list[float]) -> str:
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "x": pa.array(xs, pa.float64())}), path)
    return str(path)


def _spark_rows(spark: Any, t: IceTable) -> list[tuple[int, str]]:
    spark.sql(f"REFRESH TABLE {t.ident}")
    return sorted((i, _text(x)) for i, x in sql_rows(spark, f"SELECT id, x FROM {t.ident}"))


def _icectl_rows(t: IceTable) -> list[tuple[int, str]]:
    p = run_icectl("scan", str(t.location), "--format", "jsonl")
    assert p.returncode == 0, p.stderr
    return sorted((r["id"], _text(r["x"])) for r in map(json.loads, p.stdout.splitlines()))


def _text(x: Any) -> str:
    if isinstance(x, str):  # JSON form of NaN / infinities
        return x
    if x is None:
        return "null"
    if math.isnan(x):
        return "NaN"
    return repr(float(x))  # keeps the sign of zero


def test_equality_deletes_in_nan_and_signed_zero_partitions_as_spark_reads_them(
        spark: Any, new_table: Any, tmp_path: Path) -> None:
    t = new_table("eqnan")
    spark.sql(f"""CREATE TABLE {t.ident} (id bigint, x double) USING iceberg PARTITIONED BY (x)
                  TBLPROPERTIES ('format-version'='2')""")
    spark.sql(f"""INSERT INTO {t.ident} VALUES (1, double('NaN')), (2, double('NaN')), (3, 1.0),
                  (4, double('-0.0')), (5, double('0.0')), (6, double('-0.0'))""")
    keys = _keys(tmp_path / "keys.parquet", [1, 4, 5], [math.nan, -0.0, -0.0])
    p = run_icectl("delete", str(t.location), "--equality", "id,x", "--from", keys)
    assert p.returncode == 0, p.stderr
    # (1, NaN) and (4, -0.0) are deleted; (5, -0.0) names no row: row 5 is 0.0
    expected = [(2, "NaN"), (3, "1.0"), (5, "0.0"), (6, "-0.0")]
    assert _icectl_rows(t) == expected
    assert _spark_rows(spark, t) == expected
    # Java attaches the delete files to the same data files (the NaN partition's too)
    java: dict[str, list[str]] = {}
    tasks = java_table(spark, str(t.location)).newScan().planFiles()
    try:
        it = tasks.iterator()
        while it.hasNext():
            task = it.next()
            java[str(task.file().location())] = sorted(str(d.location()) for d in task.deletes())
    finally:
        tasks.close()
    p = run_icectl("plan", str(t.location), "--json")
    assert p.returncode == 0, p.stderr
    files = json.loads(p.stdout)["files"]
    mine = {f["path"]: sorted(d["path"] for d in f["delete-files"]) for f in files}
    assert mine == java
    by_part = {str(f["partition"]["x"]): len(f["delete-files"]) for f in files}
    assert by_part == {"NaN": 1, "1.0": 0, "-0.0": 1, "0.0": 0}  # both -0.0 keys in one file

def test_compaction_into_a_float_partition_as_spark_reads_it(spark: Any, new_table: Any) -> None:
    t = new_table("compactzero")
    spark.sql(f"""CREATE TABLE {t.ident} (id bigint, x double) USING iceberg
                  TBLPROPERTIES ('format-version'='2')""")
    for base in (0, 10):
        spark.sql(f"""INSERT INTO {t.ident} VALUES ({base + 1}, double('-0.0')), ({base + 2}, 0.0),
                      ({base + 3}, double('NaN')), ({base + 4}, -double('NaN')), ({base + 5}, 2.5)""")
    before = _spark_rows(spark, t)
    p = run_icectl("partition", "add", str(t.location), "identity(x)")
    assert p.returncode == 0, p.stderr
    p = run_icectl("compact", str(t.location), "--min-input-files", "2", "--workers", "1")
    assert p.returncode == 0, p.stderr
    assert _spark_rows(spark, t) == before
    assert _icectl_rows(t) == before
    files = sql_rows(spark, f"SELECT partition.x, file_path FROM {t.ident}.files")
    assert sorted(_text(x) for x, _ in files) == ["-0.0", "0.0", "2.5", "NaN"]
