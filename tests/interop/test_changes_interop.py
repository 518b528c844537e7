"""icectl against Spark 3.5.8 + Iceberg 1.10.2 for keyed writes and change reads:

* ``icectl upsert`` / ``icectl delete --equality`` by a key that is not the partition source
  (a ``days(ts)`` table keyed by ``event_id`` / ``user_id``) on one twin, Spark's merge-on-read
  ``MERGE INTO`` / ``DELETE`` on the other: the same rows, read by Spark and by icectl, with
  position deletes (v2) or deletion vectors (v3) as Spark writes them;
* ``icectl scan --from-snapshot/--to-snapshot`` against Spark's incremental read
  (``start-snapshot-id`` / ``end-snapshot-id``);
* ``icectl changes`` against ``CALL system.create_changelog_view`` (plain, with identifier
  columns, net changes) on copy-on-write tables (1.10.2's changelog scan refuses delete files,
  which the unit tests cover against a model instead).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cli_support import run_icectl
from spark_support import IceTable, sql_rows

MOR = ("'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
       "'write.merge.mode'='merge-on-read'")
UTC = dt.timezone.utc


def _rows(spark: Any, t: IceTable) -> list[tuple]:
    spark.sql(f"REFRESH TABLE {t.ident}")
    return sorted(sql_rows(spark, f"SELECT event_id, unix_micros(ts), user_id, v FROM {t.ident}"),
                  key=lambda r: (r[0] is None, r[0] or 0, r[3]))


def _icectl_rows(t: IceTable) -> list[tuple]:
    p = run_icectl("scan", str(t.location), "--format", "jsonl")
    assert p.returncode == 0, p.stderr
    out = []
    for line in p.stdout.splitlines():
        r = json.loads(line)
        ts = dt.datetime.fromisoformat(r["ts"]) - dt.datetime(1970, 1, 1, tzinfo=UTC)
        micros = (ts.days * 86400 + ts.seconds) * 1_000_000 + ts.microseconds
        out.append((r["event_id"], micros, r["user_id"], r["v"]))
    return sorted(out, key=lambda r: (r[0] is None, r[0] or 0, r[3]))


def _parquet(path: Path, rows: list[tuple]) -> str:
    pq.write_table(pa.table({
        "event_id": pa.array([r[0] for r in rows], pa.int64()),
        "ts": pa.array([r[1] for r in rows], pa.timestamp("us", "UTC")),
        "user_id": pa.array([r[2] for r in rows], pa.string()),
        "v": pa.array([r[3] for r in rows], pa.string())}), path)
    return str(path)


def _last(spark: Any, t: IceTable) -> tuple:
    return sql_rows(spark, f"SELECT operation, summary FROM {t.ident}.snapshots "
                           "ORDER BY committed_at DESC LIMIT 1")[0]


@pytest.mark.parametrize("fv", [2, 3])
def test_upsert_and_delete_on_a_non_partition_key_equal_spark(spark: Any, new_table: Any,
                                                              tmp_path: Path, fv: int) -> None:
    theirs, mine = new_table("theirs"), new_table("mine")
    days = ["2024-03-01 10:00:00", "2024-03-02 11:00:00", "1969-12-31 23:00:00"]
    for t in (theirs, mine):
        spark.sql(f"""CREATE TABLE {t.ident} (event_id bigint, ts timestamp, user_id string,
                      v string) USING iceberg PARTITIONED BY (days(ts))
                      TBLPROPERTIES ('format-version'='{fv}', {MOR})""")
        spark.sql(f"""INSERT INTO {t.ident} SELECT id,
                      CAST(CASE id % 3 WHEN 0 THEN '{days[0]}' WHEN 1 THEN '{days[1]}'
                           ELSE '{days[2]}' END AS timestamp),
                      CASE WHEN id % 7 = 6 THEN NULL ELSE concat('u', id % 4) END,
                      concat('v', id) FROM range(0, 30)""")
    assert _rows(spark, theirs) == _rows(spark, mine)

    # 1. upsert by event_id: replaced rows (one moves to another day), a new key, a null key
    new = dt.datetime(2024, 3, 5, 8, tzinfo=UTC)
    src = [(1, new, "x1", "n1"), (5, dt.datetime(2024, 3, 1, 10, tzinfo=UTC), None, "n5"),
           (29, new, "x29", "n29"), (500, new, "x500", "n500"), (None, new, "xnull", "nnull")]
    path = _parquet(tmp_path / "src.parquet", src)
    spark.read.parquet(path).createOrReplaceTempView("src_rows")
    spark.sql(f"""MERGE INTO {theirs.ident} t USING src_rows s ON t.event_id = s.event_id
                  WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *""")
    p = run_icectl("upsert", str(mine.location), path, "--key", "event_id", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["method"] == ("deletion-vectors" if fv == 3 else "position-deletes")
    assert out["replaced-rows"] == 3
    assert _rows(spark, mine) == _rows(spark, theirs)
    assert _icectl_rows(mine) == _rows(spark, theirs)
    op, summary = _last(spark, mine)
    assert op == "overwrite" and summary["added-position-deletes"] == "3"
    spark_summary = _last(spark, theirs)[1]
    assert spark_summary["added-position-deletes"] == "3"
    if fv == 3:  # rows 5 and 29 share a file: one deletion vector each for two files
        assert summary["added-dvs"] == spark_summary["added-dvs"] == "2"
    formats = {r[0] for r in sql_rows(spark, f"SELECT file_format FROM {mine.ident}.delete_files")}
    assert formats == ({"PUFFIN"} if fv == 3 else {"PARQUET"})

    # 2. delete by user_id (nulls match nulls, as in an equality delete), twice on the same
    # files: on v3 the deletion vectors are merged with the upsert's
    keys = tmp_path / "gdpr.csv"
    keys.write_text("user_id\nu1\n\n")  # an empty line: no row
    spark.sql(f"DELETE FROM {theirs.ident} WHERE user_id = 'u1'")
    p = run_icectl("delete", str(mine.location), "--equality", "user_id", "--from", str(keys),
                   "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["deleted-rows"] > 0
    assert _rows(spark, mine) == _rows(spark, theirs)
    keys = tmp_path / "nulls.jsonl"
    keys.write_text('{"user_id": null}\n')
    spark.sql(f"DELETE FROM {theirs.ident} WHERE user_id IS NULL")
    p = run_icectl("delete", str(mine.location), "--equality", "user_id", "--from", str(keys))
    assert p.returncode == 0, p.stderr
    assert _rows(spark, mine) == _rows(spark, theirs)
    assert _icectl_rows(mine) == _rows(spark, theirs)
    assert _last(spark, mine)[0] == "delete"

    # 3. Spark keeps writing on top of what icectl wrote
    for t in (theirs, mine):
        spark.sql(f"UPDATE {t.ident} SET v = 'sp' WHERE event_id IN (0, 1, 2)")
    assert _rows(spark, mine) == _rows(spark, theirs)
    assert _icectl_rows(mine) == _rows(spark, theirs)


def _snapshots(spark: Any, t: IceTable) -> list[int]:
    spark.sql(f"REFRESH TABLE {t.ident}")
    return [r[0] for r in sql_rows(spark, f"SELECT snapshot_id FROM {t.ident}.snapshots "
                                          "ORDER BY committed_at")]


def test_incremental_scan_equals_spark_incremental_read(spark: Any, ice_table: IceTable) -> None:
    t = ice_table
    spark.sql(f"""CREATE TABLE {t.ident} (id bigint, cat string) USING iceberg
                  PARTITIONED BY (cat) TBLPROPERTIES ('format-version'='2')""")
    spark.sql(f"INSERT INTO {t.ident} VALUES (1, 'a'), (2, 'b')")
    spark.sql(f"INSERT INTO {t.ident} VALUES (3, 'a'), (4, NULL)")
    spark.sql(f"INSERT INTO {t.ident} VALUES (5, 'c')")
    spark.sql(f"CALL ice.system.rewrite_data_files(table => '{t.ident}', "
              "options => map('rewrite-all', 'true'))")  # a replace snapshot: no rows change
    spark.sql(f"INSERT INTO {t.ident} VALUES (6, 'b')")
    s = _snapshots(spark, t)

    def spark_read(start: int, end: int | None) -> list[tuple]:
        r = spark.read.format("iceberg").option("start-snapshot-id", str(start))
        if end is not None:
            r = r.option("end-snapshot-id", str(end))
        return sorted((tuple(x) for x in r.load(t.ident).collect()), key=str)

    def icectl_read(start: int, end: int | None) -> list[tuple]:
        args = ["scan", str(t.location), "--from-snapshot", str(start), "--format", "jsonl"]
        if end is not None:
            args += ["--to-snapshot", str(end)]
        p = run_icectl(*args)
        assert p.returncode == 0, p.stderr
        return sorted((tuple(json.loads(x).values()) for x in p.stdout.splitlines()), key=str)

    for start, end in [(s[0], None), (s[0], s[1]), (s[1], s[2]), (s[0], s[4]), (s[2], s[4])]:
        assert icectl_read(start, end) == spark_read(start, end), (start, end)
    assert len(icectl_read(s[0], None)) == 4
    # a delete in the range: Spark's incremental read silently skips it (still reading row 5,
    # which it deleted); icectl refuses
    spark.sql(f"DELETE FROM {t.ident} WHERE id = 5")
    s = _snapshots(spark, t)
    assert (5, "c") in spark_read(s[0], None)
    p = run_icectl("scan", str(t.location), "--from-snapshot", str(s[0]))
    assert p.returncode == 9 and "'delete' snapshot" in p.stderr and len(p.stderr.splitlines()) == 1


def _view(spark: Any, t: IceTable, start: int, end: int | None, **kw: str) -> list[tuple]:
    opts = f"'start-snapshot-id', '{start}'" + (f", 'end-snapshot-id', '{end}'" if end else "")
    extra = "".join(f", {k} => {v}" for k, v in kw.items())
    spark.sql(f"CALL ice.system.create_changelog_view(table => '{t.ident}', options => map({opts}), "
              f"changelog_view => 'cv'{extra})")
    return sorted(sql_rows(spark, "SELECT * FROM cv"), key=str)


def _changes(t: IceTable, start: int, end: int | None, *extra: str) -> list[tuple]:
    args = ["changes", str(t.location), "--from", str(start), "--format", "jsonl", *extra]
    if end:
        args += ["--to", str(end)]
    p = run_icectl(*args)
    assert p.returncode == 0, p.stderr
    return sorted((tuple(json.loads(x).values()) for x in p.stdout.splitlines()), key=str)


@pytest.mark.parametrize("partitioned", [True, False], ids=["partitioned", "unpartitioned"])
def test_changes_equal_spark_changelog_view(spark: Any, ice_table: IceTable, partitioned: bool) -> None:
    t = ice_table
    part = "PARTITIONED BY (cat)" if partitioned else ""
    spark.sql(f"""CREATE TABLE {t.ident} (id bigint, cat string, v string) USING iceberg {part}
                  TBLPROPERTIES ('format-version'='2')""")  # copy-on-write: Spark's default
    spark.sql(f"""INSERT INTO {t.ident} SELECT id, CASE WHEN id % 3 = 0 THEN 'a' WHEN id % 3 = 1
                  THEN 'b' ELSE NULL END, CASE WHEN id % 5 = 4 THEN NULL ELSE concat('v', id) END
                  FROM range(0, 20)""")
    spark.sql(f"INSERT INTO {t.ident} VALUES (100, 'a', 'x'), (101, NULL, NULL)")
    spark.sql(f"DELETE FROM {t.ident} WHERE id IN (1, 2, 100)")                      # rewrites
    spark.sql(f"UPDATE {t.ident} SET v = 'upd' WHERE id IN (3, 4)")                 # update pairs
    spark.sql(f"""MERGE INTO {t.ident} t USING (SELECT 5 AS id, 'b' AS cat, 'm5' AS v UNION ALL
                  SELECT 200, 'a', 'm200') s ON t.id = s.id
                  WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *""")
    spark.sql(f"CALL ice.system.rewrite_data_files(table => '{t.ident}', "
              "options => map('rewrite-all', 'true'))")                              # skipped
    spark.sql(f"INSERT INTO {t.ident} VALUES (3, 'z', 'dup-id')")                    # same id again
    spark.sql(f"DELETE FROM {t.ident} WHERE id = 101")
    s = _snapshots(spark, t)
    for start, end in [(s[0], None), (s[1], s[3]), (s[2], s[2 + 1]), (s[0], s[5])]:
        mine = _changes(t, start, end)
        assert mine == _view(spark, t, start, end), (start, end)
    mine = _changes(t, s[0], None, "--net")
    assert mine == _view(spark, t, s[0], None, net_changes="true")
    # update pairs by id, for a range where each id changes at most once per snapshot
    mine = _changes(t, s[1], s[4], "--key", "id")
    theirs = _view(spark, t, s[1], s[4], identifier_columns="array('id')")
    assert mine == theirs
    assert any(r[3] == "UPDATE_BEFORE" for r in mine) and any(r[3] == "UPDATE_AFTER" for r in mine)
    assert len(mine) > 4
