"""`icectl compact` and `icectl delete --mode copy-on-write` against Spark on twin tables.

Spark (Iceberg 1.10.2) builds two identical tables full of small files: unpartitioned inserts,
merge-on-read DELETEs (Parquet position deletes on v2, deletion vectors on v3), an equality
delete written through the Java API (Spark SQL never writes one), then a second partition spec
and more small inserts and deletes. Spark's ``rewrite_data_files`` procedure compacts one,
``icectl compact`` (a child process) the other. Both must read the same rows in Spark and in
``icectl scan``; icectl must leave no more data files than Spark and no delete file on the
compacted table that has nothing left to delete.

The copy-on-write twin test compares Spark's copy-on-write DELETE with ``icectl delete --mode
copy-on-write``; the conflict test runs a Spark DELETE while icectl's compaction tasks run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cli_support import icectl_rows, run_icectl, spark_rows
from spark_support import IceTable, sql_rows, write_equality_delete

MOR = "'write.delete.mode'='merge-on-read'"


def _fill(spark: Any, t: IceTable, fv: int) -> None:
    spark.sql(f"""CREATE TABLE {t.ident} (id int, cat string, v double) USING iceberg
                  TBLPROPERTIES ('format-version'='{fv}', {MOR})""")
    for i in range(6):  # six small unpartitioned files (spec 0)
        spark.sql(f"""INSERT INTO {t.ident} SELECT CAST(id AS int),
                      CASE WHEN id % 2 = 0 THEN 'a' ELSE 'b' END, id / 4.0
                      FROM range({i * 20}, {i * 20 + 20})""")
    spark.sql(f"DELETE FROM {t.ident} WHERE id % 7 = 0")
    # an unpartitioned (global) equality delete, as Flink or the Java API write them
    write_equality_delete(spark, t.location, ["id"], [(3,), (41,), (99,)], "eq-1")
    spark.sql(f"REFRESH TABLE {t.ident}")  # committed through Java's HadoopTables, not Spark
    spark.sql(f"ALTER TABLE {t.ident} ADD PARTITION FIELD cat")
    for i in range(6, 12):  # small files in the new spec, one per partition and insert
        spark.sql(f"""INSERT INTO {t.ident} SELECT CAST(id AS int),
                      CASE WHEN id % 2 = 0 THEN 'a' ELSE 'b' END, id / 4.0
                      FROM range({i * 20}, {i * 20 + 20})""")
    spark.sql(f"DELETE FROM {t.ident} WHERE id % 11 = 0")


def _data_files(spark: Any, t: IceTable) -> int:
    spark.sql(f"REFRESH TABLE {t.ident}")
    return sql_rows(spark, f"SELECT count(*) FROM {t.ident}.data_files")[0][0]


def _delete_files(spark: Any, t: IceTable) -> list[tuple]:
    spark.sql(f"REFRESH TABLE {t.ident}")
    return sorted(sql_rows(spark, f"SELECT content, file_path FROM {t.ident}.delete_files"))


def _last_operation(spark: Any, t: IceTable) -> tuple[str, dict]:
    spark.sql(f"REFRESH TABLE {t.ident}")
    op, summary = sql_rows(spark, f"SELECT operation, summary FROM {t.ident}.snapshots "
                                  "ORDER BY committed_at DESC LIMIT 1")[0]
    return op, dict(summary)


@pytest.mark.parametrize("fv", [2, 3])
def test_compact_matches_spark_rewrite_data_files(spark: Any, new_table: Any, fv: int) -> None:
    theirs, mine = new_table("theirs"), new_table("mine")
    _fill(spark, theirs, fv)
    _fill(spark, mine, fv)
    select = "SELECT id, cat, v FROM {} ORDER BY id"
    expected = sql_rows(spark, select.format(theirs.ident))
    assert sql_rows(spark, select.format(mine.ident)) == expected
    ids = [i for i in range(240) if (i >= 120 or i % 7) and i % 11 and i not in (3, 41, 99)]
    assert [r[0] for r in expected] == ids
    deletes_before = _delete_files(spark, mine)
    assert {c for c, _ in deletes_before} == {1, 2}  # position deletes (or DVs) and equality

    ns = theirs.ident.split(".", 1)[1]
    spark.sql(f"CALL {theirs.catalog}.system.rewrite_data_files(table => '{ns}')")
    p = run_icectl("compact", mine.location, "--json", timeout=600)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["committed"] and out["summaries"][0]["operation"] == "replace"

    op, _ = _last_operation(spark, theirs)
    assert op == "replace" and _last_operation(spark, mine)[0] == "replace"
    assert sql_rows(spark, select.format(mine.ident)) == expected
    assert sql_rows(spark, select.format(theirs.ident)) == expected
    assert icectl_rows(mine.location, None) == icectl_rows(theirs.location, None) == \
        spark_rows(spark, mine.ident, None)
    assert icectl_rows(mine.location, "id > 100") == spark_rows(spark, theirs.ident, "id > 100")
    assert _data_files(spark, mine) <= _data_files(spark, theirs)
    # every partition was compacted: no delete file is left with anything to delete
    assert _delete_files(spark, mine) == []
    # the new files are in the current spec, and Spark reads every one of them
    spec_ids = sql_rows(spark, f"SELECT DISTINCT spec_id FROM {mine.ident}.data_files")
    assert spec_ids == [(1,)]


def test_copy_on_write_delete_matches_spark(spark: Any, new_table: Any) -> None:
    theirs, mine = new_table("theirs"), new_table("mine")
    for t in (theirs, mine):
        spark.sql(f"""CREATE TABLE {t.ident} (id bigint, cat string) USING iceberg
                      PARTITIONED BY (cat) TBLPROPERTIES ('format-version'='2',
                      'write.delete.mode'='copy-on-write')""")
        for i in range(3):
            spark.sql(f"""INSERT INTO {t.ident} SELECT id, CASE WHEN id % 3 = 0 THEN 'a'
                          WHEN id % 3 = 1 THEN 'b' ELSE 'c' END FROM range({i * 30}, {i * 30 + 30})""")
    spark.sql(f"DELETE FROM {theirs.ident} WHERE id IN (3, 4, 33, 80)")
    p = run_icectl("delete", mine.location, "--filter", "id in (3, 4, 33, 80)", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["mode"] == "copy-on-write" and out["position-delete-files"] == []
    op_theirs, s_theirs = _last_operation(spark, theirs)
    op_mine, s_mine = _last_operation(spark, mine)
    assert op_theirs == op_mine == "overwrite"
    for key in ("deleted-data-files", "deleted-records", "added-records", "total-records",
                "total-delete-files"):
        assert s_mine.get(key) == s_theirs.get(key), key
    select = "SELECT id, cat FROM {} ORDER BY id"
    assert sql_rows(spark, select.format(mine.ident)) == sql_rows(spark, select.format(theirs.ident))
    assert _delete_files(spark, mine) == _delete_files(spark, theirs) == []


def test_concurrent_delete_makes_compact_fail_and_leave_nothing(spark: Any, new_table: Any) -> None:
    from icectl.errors import CommitConflict
    from icectl.ops.maintain.compact import compact_table
    from icectl.table.table import Table

    t = new_table("t")
    _fill(spark, t, 2)
    before = _files(t.location)
    by_spark: set[str] = set()

    class SparkDeletesMeanwhile:
        name = "inprocess"

        def map(self, fn: Any, tasks: Any, **_: Any) -> list:
            out = [fn(task) for task in tasks]  # the compacted files are written now
            b = _files(t.location)
            spark.sql(f"DELETE FROM {t.ident} WHERE id IN (1, 200)")  # touches inputs
            by_spark.update(_files(t.location) - b)
            return out

    with pytest.raises(CommitConflict) as info:
        compact_table(Table.load(str(t.location)), engine=SparkDeletesMeanwhile())
    assert info.value.exit_code == 6
    assert by_spark and _files(t.location) == before | by_spark  # none of icectl's files left
    assert _last_operation(spark, t)[0] == "delete"
    rows = sql_rows(spark, f"SELECT id FROM {t.ident} WHERE id IN (1, 2, 200)")
    assert sorted(rows) == [(2,)]


def _files(location: Any) -> set[str]:
    return {str(p) for p in Path(location).rglob("*") if p.is_file() and not p.name.startswith(".")}


def test_cli_compact_losing_to_a_spark_delete_exits_6(spark: Any, new_table: Any) -> None:
    """`icectl compact` is stopped (the fault-injection hook: SIGSTOP before its 5th file write,
    which the driver reaches while writing manifests; the one worker process writes 4 data
    files) while Spark deletes rows of its input files; resumed, it must exit 6 and remove
    everything it wrote."""
    import os
    import signal
    import subprocess
    import sys
    import time

    t = new_table("t")
    _fill(spark, t, 2)
    before = _files(t.location)
    env = dict(os.environ, ICECTL_FAULT_STOP_AT="5", NO_COLOR="1")
    env.pop("ICECTL_WAREHOUSE", None)
    proc = subprocess.Popen([sys.executable, "-m", "icectl", "compact", str(t.location),
                             "--workers", "1"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        state = ""
        while time.monotonic() < deadline and proc.poll() is None:
            state = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            if state == "T":
                break
            time.sleep(0.05)
        assert state == "T", f"icectl compact did not stop: {proc.poll()} {state}"
        mid = _files(t.location)
        spark.sql(f"DELETE FROM {t.ident} WHERE id IN (1, 200)")
        by_spark = _files(t.location) - mid
        os.kill(proc.pid, signal.SIGCONT)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 6, err
    assert out == "" and len(err.strip().splitlines()) == 1 and "run it again" in err
    assert by_spark and _files(t.location) == before | by_spark
