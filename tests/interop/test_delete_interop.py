"""`icectl delete` against Spark's merge-on-read DELETE on twin tables.

Spark (Iceberg 1.10.2) creates and fills two identical v2 tables; Spark runs ``DELETE FROM ...
WHERE`` on one, ``icectl delete --filter`` (a child process) runs on the other. Both must end
with the same rows as Spark reads them (so Spark reads icectl's position deletes), the same
kinds and numbers of added files (position delete files, one per data file), and the same
delete-related summary counters under the same operation.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow.parquet as pq
import pytest

from cli_support import run_icectl
from spark_support import IceTable, sql_rows

MOR = "'write.delete.mode'='merge-on-read'"
KEYS = ("added-dvs", "removed-dvs", "added-data-files", "deleted-data-files", "deleted-records", "added-delete-files",
        "added-position-delete-files", "added-position-deletes", "total-delete-files",
        "total-position-deletes", "total-data-files", "total-records")


def _twin(spark: Any, t: IceTable, fv: int = 2) -> None:
    spark.sql(f"""CREATE TABLE {t.ident} (id bigint, cat string, v double) USING iceberg
                  PARTITIONED BY (cat) TBLPROPERTIES ('format-version'='{fv}', {MOR})""")
    spark.sql(f"""INSERT INTO {t.ident} SELECT id, CASE WHEN id % 3 = 0 THEN 'a'
                  WHEN id % 3 = 1 THEN 'b' ELSE 'c' END, id / 4.0 FROM range(0, 60)""")


def _last(spark: Any, t: IceTable) -> tuple[str, dict[str, str]]:
    spark.sql(f"REFRESH TABLE {t.ident}")
    op, summary = sql_rows(spark, f"SELECT operation, summary FROM {t.ident}.snapshots "
                                  "ORDER BY committed_at DESC LIMIT 1")[0]
    return op, {k: summary.get(k) for k in KEYS}


def _delete_files(spark: Any, t: IceTable) -> list[tuple]:
    return sorted(sql_rows(spark, f"SELECT content, file_format, record_count FROM "
                                  f"{t.ident}.delete_files"))


@pytest.mark.parametrize("spark_where, ice_filter", [
    ("id IN (3, 4, 10, 17, 42, 59)", "id in (3, 4, 10, 17, 42, 59)"),  # row-level deletes
    ("cat = 'c'", "cat = 'c'"),  # a whole partition: a metadata-only delete
])
def test_delete_matches_spark(spark: Any, new_table: Any, spark_where: str, ice_filter: str
                              ) -> None:
    theirs, mine = new_table("theirs"), new_table("mine")
    _twin(spark, theirs)
    _twin(spark, mine)
    spark.sql(f"DELETE FROM {theirs.ident} WHERE {spark_where}")
    p = run_icectl("delete", mine.location, "--filter", ice_filter, "--mode", "merge-on-read", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["committed"]
    op, summary = _last(spark, theirs)
    assert op == "delete" and summary["total-records"] is not None
    assert summary["added-position-deletes" if "id" in ice_filter else "deleted-records"]
    assert _last(spark, mine) == (op, summary)
    select = "SELECT id, cat, v FROM {} ORDER BY id"
    assert sql_rows(spark, select.format(mine.ident)) == sql_rows(spark, select.format(theirs.ident))
    assert _delete_files(spark, mine) == _delete_files(spark, theirs)
    for path in out["position-delete-files"]:  # the reserved field ids, one data file each
        t = pq.read_table(path)
        assert [f.metadata[b"PARQUET:field_id"] for f in t.schema] == [b"2147483546", b"2147483545"]
        assert len(set(t.column("file_path").to_pylist())) == 1


def test_v3_deletion_vectors_match_spark(spark: Any, new_table: Any) -> None:
    """Two deletes in a row (the second merges a data file's deletion vector), then a Spark
    DELETE on top of icectl's deletion vectors (Spark reads and merges them)."""
    theirs, mine = new_table("theirs"), new_table("mine")
    _twin(spark, theirs, 3)
    _twin(spark, mine, 3)
    select = "SELECT id, cat, v FROM {} ORDER BY id"
    for ids in ("3, 4, 10, 17", "6, 9, 10, 42"):
        spark.sql(f"DELETE FROM {theirs.ident} WHERE id IN ({ids})")
        p = run_icectl("delete", mine.location, "--filter", f"id in ({ids})", "--mode", "merge-on-read")
        assert p.returncode == 0, p.stderr
        op, summary = _last(spark, theirs)
        assert op == "delete" and summary["added-dvs"]
        assert _last(spark, mine) == (op, summary)
        assert sql_rows(spark, select.format(mine.ident)) == \
            sql_rows(spark, select.format(theirs.ident))
        assert _delete_files(spark, mine) == _delete_files(spark, theirs)
    for t in (theirs, mine):
        spark.sql(f"DELETE FROM {t.ident} WHERE id IN (12, 13, 15)")
    assert sql_rows(spark, select.format(mine.ident)) == sql_rows(spark, select.format(theirs.ident))
    assert _delete_files(spark, mine) == _delete_files(spark, theirs)
    assert _last(spark, mine) == _last(spark, theirs)


def test_copy_on_write_drops_a_file_its_metrics_prove_as_spark_does(spark: Any, new_table: Any) -> None:
    """A copy-on-write delete whose filter the column bounds of a whole file prove (ids 30..59 of
    the second insert, no partition to prove it) removes its files without rewriting them, as
    Spark's metadata-only delete does; Spark reads the same rows from both tables."""
    theirs, mine = new_table("theirs"), new_table("mine")
    for t in (theirs, mine):
        spark.sql(f"""CREATE TABLE {t.ident} (id bigint, v double) USING iceberg
                      TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='copy-on-write')""")
        for lo in (0, 30):
            spark.sql(f"INSERT INTO {t.ident} SELECT id, id / 4.0 FROM range({lo}, {lo + 30}) "
                      "ORDER BY id")
    spark.sql(f"DELETE FROM {theirs.ident} WHERE id >= 30")
    p = run_icectl("delete", mine.location, "--filter", "id >= 30", "--mode", "copy-on-write", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    op, summary = _last(spark, theirs)
    assert op == "delete" and summary["added-data-files"] is None  # Spark's metadata-only delete
    assert out["committed"] and len(out["removed-data-files"]) == int(summary["deleted-data-files"]) > 0
    assert out["rewritten-data-files"] == [] and out["added-data-files"] == []
    assert _last(spark, mine) == (op, summary)
    select = "SELECT id, v FROM {} ORDER BY id"
    assert sql_rows(spark, select.format(mine.ident)) == sql_rows(spark, select.format(theirs.ident))
    assert [r[0] for r in sql_rows(spark, select.format(mine.ident))] == list(range(30))
