"""`icectl maintain` on a Spark-written table with small files, merge-on-read deletes, many
snapshots and manifests and an orphan file: Spark reads the same rows after each step, and the
gains the dry run printed are within 10% of what the steps did (measured from outside)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from cli_support import run_icectl
from maintain_support import ORPHAN_AGE_S, bytes_freed, files_on_disk, head_timestamp, measures, within, write_policy
from spark_support import IceTable, sql_rows

STEPS = ["expire", "orphans", "compact-deletes", "compact", "rewrite-manifests"]


def _build(spark: Any, t: IceTable) -> None:
    spark.sql(f"""CREATE TABLE {t.ident} (id bigint, cat string, v double) USING iceberg
                  PARTITIONED BY (cat) TBLPROPERTIES ('format-version'='2',
                  'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read')""")
    for lo in range(0, 600, 50):  # twelve snapshots of one small file per partition
        spark.sql(f"""INSERT INTO {t.ident} SELECT id, CASE WHEN id % 2 = 0 THEN 'a' ELSE 'b' END,
                      id / 4.0 FROM range({lo}, {lo + 50}) ORDER BY id""")
    spark.sql(f"DELETE FROM {t.ident} WHERE id < 20")
    spark.sql(f"DELETE FROM {t.ident} WHERE id >= 100 AND id < 105")
    stray = t.location / "data" / "stray.parquet"
    stray.write_bytes(b"not referenced by the table" * 10)
    old = time.time() - ORPHAN_AGE_S
    os.utime(stray, (old, old))


def _rows(spark: Any, t: IceTable) -> list[tuple]:
    spark.sql(f"REFRESH TABLE {t.ident}")
    return sql_rows(spark, f"SELECT id, cat, v FROM {t.ident} ORDER BY id")


def _maintain(*args: Any) -> dict:
    p = run_icectl("maintain", *map(str, args), "--json", timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_spark_reads_the_same_rows_after_each_step(spark: Any, ice_table: IceTable, tmp_path: Path) -> None:
    t = ice_table
    _build(spark, t)
    rows = _rows(spark, t)
    assert len(rows) == 600 - 25
    base = {"icectl.maintain.expire.older-than": str(head_timestamp(t.location))}
    plan = _maintain(t.location, "--policy", write_policy(tmp_path / "all.json", base), "--dry-run")
    assert plan["due-steps"] == ["expire", "orphans", "compact", "rewrite-manifests"], plan["steps"]
    start_measures, start_files = measures(t.location), files_on_disk(t.location)
    assert plan["before"] == start_measures
    # one step more each run (the later ones disabled by the policy): Spark reads after each
    for k, step in enumerate(STEPS):
        policy = dict(base, **{f"icectl.maintain.{s}.enabled": s in STEPS[:k + 1] for s in STEPS})
        done = _maintain(t.location, "--policy", write_policy(tmp_path / f"{step}.json", policy))
        assert done["failed-step"] is None
        assert done["ran-steps"] == ([step] if step in plan["due-steps"] else []), (step, done["steps"])
        assert _rows(spark, t) == rows, f"rows changed after the {step} step"
    end_measures = measures(t.location)
    for measure, expected in plan["expected-after"].items():
        assert within(expected, end_measures[measure]), (measure, expected, end_measures[measure])
    freed = bytes_freed(start_files, files_on_disk(t.location))
    assert freed > 0 and within(plan["expected-bytes-freed"], freed), (plan["expected-bytes-freed"], freed)
    assert end_measures["data-files"] == 2 and end_measures["delete-files"] == 0
    # and nothing is due any more
    again = _maintain(t.location, "--policy", write_policy(tmp_path / "again.json", base))
    assert again["due-steps"] == [] and _rows(spark, t) == rows


def test_dangling_deletes_go_by_the_delete_files_compaction(spark: Any, ice_table: IceTable, tmp_path: Path) -> None:
    """Spark leaves a position delete file dangling when it drops the data file it applied to
    (a delete of the file's remaining rows): health's dangling-deletes verdict makes maintain
    run compact --deletes, with the delete files it expected; Spark reads the same rows."""
    t = ice_table
    spark.sql(f"""CREATE TABLE {t.ident} (id bigint, cat string, v double) USING iceberg
                  PARTITIONED BY (cat) TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read')""")
    for lo in (0, 100, 200):
        spark.sql(f"""INSERT INTO {t.ident} SELECT id, CASE WHEN id % 2 = 0 THEN 'a' ELSE 'b' END,
                      id / 4.0 FROM range({lo}, {lo + 40})""")
    spark.sql(f"DELETE FROM {t.ident} WHERE id IN (2, 3, 102, 103, 202, 203)")
    spark.sql(f"DELETE FROM {t.ident} WHERE id >= 200 AND id < 240 AND cat = 'a'")
    rows = _rows(spark, t)
    policy = write_policy(tmp_path / "p.json", {f"icectl.maintain.{s}.enabled": s == "compact-deletes" for s in STEPS})
    plan = _maintain(t.location, "--policy", policy, "--dry-run")
    step = next(s for s in plan["steps"] if s["step"] == "compact-deletes")
    assert step["due"] and "dangling-deletes" in [v["code"] for v in step["verdicts"]], step
    assert step["command-line"][:4] == ["icectl", "compact", str(t.location), "--deletes"]
    done = _maintain(t.location, "--policy", policy)
    assert done["ran-steps"] == ["compact-deletes"]
    assert done["steps"][2]["result"]["dangling-delete-files-count"] >= 1
    assert _rows(spark, t) == rows
    after = measures(t.location)
    assert within(plan["expected-after"]["delete-files"], after["delete-files"]), (plan["expected-after"], after)
    assert _maintain(t.location, "--policy", policy)["due-steps"] == []
