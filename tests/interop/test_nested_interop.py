"""Nested columns on Spark-written tables: `icectl scan`, `scan --filter` and `delete --filter`
(child processes, as a user runs them) against Spark's SELECT.

Spark (Iceberg 1.10.2) writes a table with a struct (holding a date and a nested struct), a list
of strings, a map and a list of structs, with nulls at every level; then evolves it (a field
added to the struct and to the list's struct, struct fields renamed, an int promoted to bigint)
and writes more rows. icectl must show every struct field by its current name, read the old
files by field id, filter on struct fields and on the nullness of whole struct/list/map columns
as Spark's WHERE does, and delete exactly the rows Spark's WHERE selects (both modes).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from cli_support import json_value, run_icectl
from spark_support import CATALOG, IceTable

_OLD = """
SELECT id,
  CASE WHEN id % 7 = 0 THEN NULL ELSE named_struct(
    'a', CASE WHEN id % 5 = 0 THEN NULL ELSE CAST(id AS int) - 20 END,
    'b', CASE WHEN id % 4 = 0 THEN NULL ELSE concat('s', id % 3) END,
    'd', date_add(DATE '1969-12-25', CAST(id AS int)),
    'inner', CASE WHEN id % 6 = 0 THEN NULL ELSE named_struct(
        'p', CAST(id % 9 AS int) - 4, 'q', CASE WHEN id % 2 = 0 THEN 'a' ELSE NULL END) END)
  END,
  CASE WHEN id % 8 = 0 THEN NULL WHEN id % 8 = 1 THEN CAST(array() AS array<string>)
       ELSE array(concat('t', id % 3), CASE WHEN id % 3 = 0 THEN NULL ELSE 'u' END) END,
  CASE WHEN id % 9 = 0 THEN NULL WHEN id % 9 = 1 THEN CAST(map() AS map<string, int>)
       ELSE map(concat('k', id % 2), CAST(id AS int), 'z', CASE WHEN id % 4 = 1 THEN NULL ELSE 1 END)
  END,
  CASE WHEN id % 10 = 0 THEN NULL ELSE array(
    named_struct('x', CAST(id AS int), 'y', CASE WHEN id % 3 = 0 THEN NULL ELSE CAST(-id AS int) END),
    CASE WHEN id % 4 = 0 THEN NULL ELSE named_struct('x', 1, 'y', 2) END) END
FROM range(0, 60)
"""

_NEW = """
SELECT id,
  CASE WHEN id % 7 = 0 THEN NULL ELSE named_struct(
    'aa', CASE WHEN id % 5 = 0 THEN NULL ELSE id * 100000000 END,
    'b', concat('n', id % 2),
    'd', CAST(NULL AS date),
    'inner', named_struct('p', CAST(id % 3 AS int), 'q', 'b'),
    'c', CASE WHEN id % 2 = 0 THEN NULL ELSE 'c' END) END,
  array('new'),
  CASE WHEN id % 3 = 0 THEN NULL ELSE map('n', CAST(id AS int)) END,
  array(named_struct('xx', CAST(id AS int), 'y', CAST(id AS int), 'z', 'z'))
FROM range(60, 80)
"""


def build(spark: Any, t: IceTable, mode: str = "merge-on-read") -> None:
    spark.sql(f"""CREATE TABLE {t.ident} (id bigint,
        info struct<a: int, b: string, d: date, inner: struct<p: int, q: string>>,
        tags array<string>, m map<string, int>, pts array<struct<x: int, y: int>>)
        USING iceberg PARTITIONED BY (bucket(2, id))
        TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='{mode}')""")
    spark.sql(f"INSERT INTO {t.ident} {_OLD}")
    for ddl in ("ADD COLUMN info.c string", "RENAME COLUMN info.a TO aa",
                "ALTER COLUMN info.aa TYPE bigint", "ADD COLUMN pts.element.z string",
                "RENAME COLUMN pts.element.x TO xx"):
        spark.sql(f"ALTER TABLE {t.ident} {ddl}")
    spark.sql(f"INSERT INTO {t.ident} {_NEW}")


def _spark_value(v: Any) -> Any:
    """A Spark value in the JSON-able shape icectl's jsonl has (maps: sorted key/value pairs)."""
    if hasattr(v, "asDict"):
        return {k: _spark_value(x) for k, x in v.asDict(recursive=False).items()}
    if isinstance(v, dict):
        return sorted(([_spark_value(k), _spark_value(x)] for k, x in v.items()), key=repr)
    if isinstance(v, list):
        return [_spark_value(x) for x in v]
    return json_value(v)


def spark_rows(spark: Any, t: IceTable, where: str | None = None, cols: str = "*") -> list[dict]:
    spark.sql(f"REFRESH TABLE {t.ident}")
    q = f"SELECT {cols} FROM {t.ident}" + (f" WHERE {where}" if where else "")
    rows = [{k: _spark_value(v) for k, v in r.asDict(recursive=False).items()}
            for r in spark.sql(q).collect()]
    return sorted(rows, key=lambda r: r["id"])


def icectl_rows(t: IceTable, *args: str) -> list[dict]:
    r = run_icectl("scan", str(t.location), "--format", "jsonl", *args)
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    for row in rows:  # maps: the same sorted pairs
        m = row.get("m")
        if m is not None:
            row["m"] = sorted(([k, v] for k, v in zip(m["keys"], m["values"])), key=repr)
    return sorted(rows, key=lambda r: r["id"])


@pytest.fixture(scope="module")
def table(spark: Any, warehouse: Any) -> IceTable:
    """One Spark-written, evolved table shared by the read-only tests of this module."""
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.nested_interop")
    t = IceTable(CATALOG, "nested_interop", "t", warehouse)
    build(spark, t)
    return t


def test_rows_equal_spark_with_current_names(spark: Any, table: IceTable) -> None:
    theirs = spark_rows(spark, table)
    assert len(theirs) == 80
    assert set(theirs[-1]["info"]) == {"aa", "b", "d", "inner", "c"}
    assert icectl_rows(table) == theirs


FILTERS = [
    "info.aa >= 40",
    "info.aa < 0 or info.b = 's1'",
    "info.inner.p > 2",
    "info.inner.q is null",
    "info.inner is null",
    "info.d < '1970-01-01'",
    "info.c is not null",
    "info is null",
    "info is not null and tags is null",
    "m is null or pts is null",
    "m is not null and pts is not null",
]


@pytest.mark.parametrize("where", FILTERS)
def test_nested_filters_equal_spark_where(spark: Any, table: IceTable, where: str) -> None:
    theirs = spark_rows(spark, table, where)
    assert 0 < len(theirs) < 80  # each filter tells rows apart
    assert icectl_rows(table, "--filter", where) == theirs


def test_dotted_columns_keep_the_named_struct_fields(spark: Any, table: IceTable) -> None:
    theirs = spark_rows(spark, table, None, "id, CASE WHEN info IS NULL THEN NULL ELSE "
                        "named_struct('aa', info.aa, 'inner', CASE WHEN info.inner IS NULL THEN "
                        "NULL ELSE named_struct('q', info.inner.q) END) END AS info")
    assert icectl_rows(table, "--columns", "id,info.aa,info.inner.q") == theirs


@pytest.mark.parametrize("mode", ["merge-on-read", "copy-on-write"])
@pytest.mark.parametrize("where", ["info.aa >= 40", "info.inner is null or m is null"])
def test_delete_by_nested_filter_leaves_what_spark_keeps(spark: Any, new_table: Any, mode: str,
                                                         where: str) -> None:
    t = new_table("t")
    build(spark, t, mode)
    keep = spark_rows(spark, t, f"NOT coalesce({where}, false)")
    assert 0 < len(keep) < 80
    r = run_icectl("delete", str(t.location), "--filter", where, "--mode", mode)
    assert r.returncode == 0, r.stderr
    assert icectl_rows(t) == keep
    assert spark_rows(spark, t) == keep  # Spark reads what icectl wrote
