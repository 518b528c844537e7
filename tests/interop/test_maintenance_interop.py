"""`icectl compact --deletes` and `icectl rewrite-manifests` against Spark's procedures on twin
Spark-written tables: `rewrite_position_delete_files` and `rewrite_manifests`. Both sides must
read the same rows in Spark and in `icectl scan`; manifests end clustered by partition."""

from __future__ import annotations

import json
from typing import Any

from cli_support import run_icectl
from spark_support import IceTable, sql_rows

from icectl.io.manifest import records as avro
from icectl.table.table import Table

MOR = "'write.delete.mode'='merge-on-read'"


def _fill(spark: Any, t: IceTable, fv: int = 2) -> None:
    """Three inserts (three data files per partition), then merge-on-read deletes touching each
    file, and a delete of one file's remaining rows (Spark drops that file; its earlier position
    delete file is left dangling)."""
    spark.sql(f"""CREATE TABLE {t.ident} (id bigint, cat string, v double) USING iceberg
                  PARTITIONED BY (cat) TBLPROPERTIES ('format-version'='{fv}', {MOR})""")
    for lo in (0, 100, 200):
        spark.sql(f"""INSERT INTO {t.ident} SELECT id, CASE WHEN id % 2 = 0 THEN 'a' ELSE 'b' END,
                      id / 4.0 FROM range({lo}, {lo + 40})""")
    spark.sql(f"DELETE FROM {t.ident} WHERE id IN (2, 3, 102, 103, 202, 203)")
    spark.sql(f"DELETE FROM {t.ident} WHERE id IN (4, 5, 104, 105, 204, 205)")
    spark.sql(f"DELETE FROM {t.ident} WHERE id >= 200 AND id < 240 AND cat = 'a'")


def _spark_rows(spark: Any, t: IceTable) -> list[tuple]:
    spark.sql(f"REFRESH TABLE {t.ident}")
    return sql_rows(spark, f"SELECT id, cat, v FROM {t.ident} ORDER BY id")


def _icectl_rows(t: IceTable) -> list[tuple]:
    p = run_icectl("scan", t.location, "--format", "jsonl")
    assert p.returncode == 0, p.stderr
    rows = [json.loads(line) for line in p.stdout.splitlines()]
    return sorted((r["id"], r["cat"], r["v"]) for r in rows)


def _live(t: IceTable) -> tuple[set[str], list[Any]]:
    table = Table.load(str(t.location))
    snap = table.metadata.current_snapshot()
    data, deletes = set(), []
    for m in avro.load_manifest_list(table.io, snap.manifest_list, table.metadata.format_version):
        for e in avro.load_manifest(table.io, m):
            if e.is_live:
                (data.add(e.data_file.file_path) if e.data_file.content == 0 else deletes.append(e.data_file))
    return data, deletes


def _targets(table_loc: str, f: Any) -> set[str]:
    import pyarrow.parquet as pq

    return set(pq.read_table(f.file_path, columns=["file_path"]).column(0).to_pylist())


def test_compact_deletes_matches_rewrite_position_delete_files(spark: Any, new_table: Any) -> None:
    theirs, mine = new_table("theirs"), new_table("mine")
    _fill(spark, theirs)
    _fill(spark, mine)
    expected = _spark_rows(spark, theirs)
    assert _spark_rows(spark, mine) == expected and len(expected) == 120 - 12 - 18
    _, before = _live(mine)
    spark.sql(f"CALL ice.system.rewrite_position_delete_files(table => '{theirs.namespace}.{theirs.name}', "
              "options => map('min-input-files', '2'))")
    p = run_icectl("compact", mine.location, "--deletes", "--min-input-files", "2", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["committed"] and out["summary"]["operation"] == "replace"
    assert out["dangling-delete-files-count"] >= 1
    # same rows, read by Spark and by icectl, on both tables
    assert _spark_rows(spark, mine) == _spark_rows(spark, theirs) == expected
    assert _icectl_rows(mine) == _icectl_rows(theirs) == [(i, c, float(v)) for i, c, v in expected]
    # no delete file left that targets nothing live; fewer delete files than before
    data, deletes = _live(mine)
    assert len(deletes) < len(before)
    for f in deletes:
        assert _targets(str(mine.location), f) <= data
    _, spark_deletes = _live(theirs)
    assert len(deletes) <= len(spark_deletes)
    assert sum(f.record_count for f in deletes) == sum(f.record_count for f in spark_deletes)


def _many_manifests(spark: Any, t: IceTable) -> None:
    spark.sql(f"""CREATE TABLE {t.ident} (id bigint, cat string) USING iceberg PARTITIONED BY (cat)
                  TBLPROPERTIES ('format-version'='2')""")
    for lo in range(0, 50, 10):
        spark.sql(f"""INSERT INTO {t.ident} SELECT id, CASE WHEN id % 3 = 0 THEN 'x'
                      WHEN id % 3 = 1 THEN 'y' ELSE 'z' END FROM range({lo}, {lo + 10})""")


def _manifest_partitions(t: IceTable) -> list[list[tuple]]:
    table = Table.load(str(t.location))
    snap = table.metadata.current_snapshot()
    return [[e.data_file.partition for e in avro.load_manifest(table.io, m) if e.is_live]
            for m in avro.load_manifest_list(table.io, snap.manifest_list, table.metadata.format_version)]


def test_rewrite_manifests_matches_spark(spark: Any, new_table: Any) -> None:
    theirs, mine = new_table("theirs"), new_table("mine")
    _many_manifests(spark, theirs)
    _many_manifests(spark, mine)
    assert len(_manifest_partitions(mine)) == 5
    spark.sql(f"CALL ice.system.rewrite_manifests('{theirs.namespace}.{theirs.name}')")
    p = run_icectl("rewrite-manifests", mine.location, "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["committed"]
    keys = ("manifests-created", "manifests-replaced", "manifests-kept", "entries-processed",
            "total-data-files", "total-records", "changed-partition-count")

    def last(t: IceTable) -> tuple:
        spark.sql(f"REFRESH TABLE {t.ident}")
        op, s = sql_rows(spark, f"SELECT operation, summary FROM {t.ident}.snapshots ORDER BY committed_at DESC LIMIT 1")[0]
        return op, {k: s.get(k) for k in keys}

    assert last(mine) == last(theirs)
    assert last(mine)[0] == "replace" and last(mine)[1]["manifests-replaced"] == "5"
    mine_parts, their_parts = _manifest_partitions(mine), _manifest_partitions(theirs)
    assert len(mine_parts) == len(their_parts) == 1
    assert mine_parts == their_parts  # entries in the same (partition) order
    assert mine_parts[0] == sorted(mine_parts[0])
    select = "SELECT id, cat FROM {} ORDER BY id"
    assert sql_rows(spark, select.format(mine.ident)) == sql_rows(spark, select.format(theirs.ident))
    assert len(_icectl_rows_plain(mine)) == 50


def _icectl_rows_plain(t: IceTable) -> list[str]:
    p = run_icectl("scan", t.location, "--format", "jsonl")
    assert p.returncode == 0, p.stderr
    return p.stdout.splitlines()
