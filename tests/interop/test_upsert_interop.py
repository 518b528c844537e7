"""Spark reads icectl's equality deletes and upserts: ``icectl delete --equality`` and
``icectl upsert`` (child processes) on tables Spark (Iceberg 1.10.2) created and filled, then
Spark's rows, ``icectl scan``'s rows and a plain Python model of the table must all agree -
including rows upserted twice across snapshots (each upsert's new rows survive its own deletes),
rows Spark inserts afterwards, and a Spark DELETE on top of icectl's equality deletes.
Partitioned and unpartitioned, format v2 and v3.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cli_support import run_icectl
from spark_support import IceTable, sql_rows, write_equality_delete

MOR = "'write.delete.mode'='merge-on-read'"


def _model_rows(model: dict[tuple, str]) -> list[tuple]:
    return sorted((k[0], k[1], v) for k, v in model.items())


def _spark(spark: Any, t: IceTable) -> list[tuple]:
    spark.sql(f"REFRESH TABLE {t.ident}")
    return sorted(tuple(r) for r in sql_rows(spark, f"SELECT id, region, v FROM {t.ident}"))


def _icectl(t: IceTable) -> list[tuple]:
    p = run_icectl("scan", str(t.location), "--format", "jsonl", "--columns", "id,region,v")
    assert p.returncode == 0, p.stderr
    return sorted(tuple(json.loads(line).values()) for line in p.stdout.splitlines())


def _check(spark: Any, t: IceTable, model: dict[tuple, str]) -> None:
    expected = _model_rows(model)
    assert _spark(spark, t) == expected
    assert _icectl(t) == expected


def _csv(path: Path, rows: list[tuple]) -> str:
    path.write_text("id,region,v\n" + "".join(f"{i},{r},{v}\n" for i, r, v in rows))
    return str(path)


def _last(spark: Any, t: IceTable) -> tuple[str, dict[str, str]]:
    spark.sql(f"REFRESH TABLE {t.ident}")
    return tuple(sql_rows(spark, f"SELECT operation, summary FROM {t.ident}.snapshots "
                                 "ORDER BY committed_at DESC LIMIT 1")[0])


@pytest.mark.parametrize("fv", [2, 3])
@pytest.mark.parametrize("partitioned", [True, False], ids=["partitioned", "unpartitioned"])
def test_equality_deletes_and_upserts_read_by_spark(spark: Any, ice_table: IceTable, tmp_path: Path,
                                                    fv: int, partitioned: bool) -> None:
    t = ice_table
    part = "PARTITIONED BY (region)" if partitioned else ""
    spark.sql(f"""CREATE TABLE {t.ident} (id bigint, region string, v string) USING iceberg {part}
                  TBLPROPERTIES ('format-version'='{fv}', {MOR},
                                 'commit.manifest.min-count-to-merge'='3')""")
    spark.sql(f"""INSERT INTO {t.ident} SELECT id, CASE WHEN id % 3 = 0 THEN 'eu'
                  WHEN id % 3 = 1 THEN 'us' ELSE 'ap' END, concat('v', id) FROM range(0, 30)""")
    model = {(i, ("eu", "us", "ap")[i % 3]): f"v{i}" for i in range(30)}
    _check(spark, t, model)

    # 1. equality delete of some keys (one absent key, extra columns ignored)
    gone = [(0, "eu", "x"), (4, "us", "x"), (5, "ap", "x"), (99, "eu", "x")]
    p = run_icectl("delete", str(t.location), "--equality", "id,region",
                   "--from", _csv(tmp_path / "gone.csv", gone), "--json")
    assert p.returncode == 0, p.stderr
    for i, r, _ in gone:
        model.pop((i, r), None)
    op, summary = _last(spark, t)
    assert op == "delete" and summary["added-equality-deletes"] == str(len(gone))
    assert summary["added-equality-delete-files"] == ("3" if partitioned else "1")
    _check(spark, t, model)

    # 2. upsert: replaced keys, a re-inserted deleted key, a new key
    up = [(1, "us", "u1"), (4, "us", "back"), (100, "ap", "new")]
    p = run_icectl("upsert", str(t.location), _csv(tmp_path / "up1.csv", up), "--key", "id,region")
    assert p.returncode == 0, p.stderr
    model.update({(i, r): v for i, r, v in up})
    op, summary = _last(spark, t)
    assert op == "overwrite" and summary["added-records"] == "3"
    assert summary["added-equality-deletes"] == "3"
    _check(spark, t, model)

    # 3. the same key upserted again in a later snapshot, and Spark writing in between
    spark.sql(f"INSERT INTO {t.ident} VALUES (200, 'eu', 's200')")
    model[(200, "eu")] = "s200"
    up = [(1, "us", "u1-again"), (200, "eu", "u200")]
    p = run_icectl("upsert", str(t.location), _csv(tmp_path / "up2.csv", up), "--key", "id,region")
    assert p.returncode == 0, p.stderr
    model.update({(i, r): v for i, r, v in up})
    _check(spark, t, model)

    # 4. Spark's own merge-on-read DELETE on top of icectl's equality deletes
    spark.sql(f"DELETE FROM {t.ident} WHERE id IN (1, 2, 3)")
    for k in [k for k in model if k[0] in (1, 2, 3)]:
        del model[k]
    _check(spark, t, model)
    contents = {r[0] for r in sql_rows(spark, f"SELECT content FROM {t.ident}.delete_files")}
    assert 2 in contents  # equality deletes are live and planned by Spark
    eq_ids = sql_rows(spark, f"SELECT DISTINCT equality_ids FROM {t.ident}.delete_files "
                             "WHERE content = 2")
    assert [list(r[0]) for r in eq_ids] == [[1, 2]]

    # 5. partition evolution: a second spec (bucket on the key) with live files; the upsert's
    # deletes go to the matching partition of each spec, where Spark must find them
    spark.sql(f"ALTER TABLE {t.ident} ADD PARTITION FIELD bucket(4, id)")
    spark.sql(f"INSERT INTO {t.ident} VALUES (300, 'us', 's300'), (301, 'ap', 's301')")
    model.update({(300, "us"): "s300", (301, "ap"): "s301"})
    up = [(300, "us", "u300"), (6, "eu", "u6"), (7, "us", "u7")]
    p = run_icectl("upsert", str(t.location), _csv(tmp_path / "up3.csv", up), "--key", "id,region")
    assert p.returncode == 0, p.stderr
    model.update({(i, r): v for i, r, v in up})
    _check(spark, t, model)
    # manifests were merged along the way (min-count-to-merge 3), by icectl and by Spark alike
    assert len(sql_rows(spark, f"SELECT path FROM {t.ident}.manifests")) < 8


def test_equality_delete_twin_of_the_java_api(spark: Any, new_table: Any, tmp_path: Path) -> None:
    """Iceberg Java (GenericAppenderFactory + RowDelta, as Flink writes them) deletes keys from
    one table, icectl the same keys from its twin: same rows, same snapshot summary (sizes
    aside), same delete file metadata (content, records, equality ids, counts and bounds)."""
    theirs, mine = new_table("theirs"), new_table("mine")
    for t in (theirs, mine):
        spark.sql(f"""CREATE TABLE {t.ident} (id int, region string, v int) USING iceberg
                      TBLPROPERTIES ('format-version'='2', {MOR})""")
        spark.sql(f"""INSERT INTO {t.ident} SELECT CAST(id AS int), CASE WHEN id % 3 = 0 THEN NULL
                      WHEN id % 3 = 1 THEN 'eu' ELSE 'us' END, CAST(id * 2 AS int) FROM range(0, 30)""")
    keys = [(1, "eu"), (2, "us"), (3, None), (29, "us")]
    write_equality_delete(spark, theirs.location, ["id", "region"], keys, "eq-java")
    src = tmp_path / "keys.jsonl"
    src.write_text("".join(json.dumps({"id": i, "region": r}) + "\n" for i, r in keys))
    p = run_icectl("delete", str(mine.location), "--equality", "id,region", "--from", str(src))
    assert p.returncode == 0, p.stderr

    sizes = {"added-files-size", "total-files-size"}
    summaries = []
    for t in (theirs, mine):
        op, summary = _last(spark, t)
        summaries.append((op, {k: v for k, v in summary.items() if k.startswith(("added-", "total-",
                                                                                "changed-"))
                               and k not in sizes}))
    assert summaries[0] == summaries[1] and summaries[0][0] == "delete"
    cols = ("content, record_count, equality_ids, value_counts, null_value_counts, "
            "lower_bounds, upper_bounds")
    files = [sql_rows(spark, f"SELECT {cols} FROM {t.ident}.delete_files") for t in (theirs, mine)]
    assert files[0] == files[1] and len(files[0]) == 1
    select = "SELECT id, region, v FROM {} ORDER BY id"
    assert sql_rows(spark, select.format(mine.ident)) == sql_rows(spark, select.format(theirs.ident))
    assert len(sql_rows(spark, select.format(mine.ident))) == 26
