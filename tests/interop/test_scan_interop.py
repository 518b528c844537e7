"""`icectl scan` against Spark: the same rows on Spark-written merge-on-read tables.

Spark (Iceberg 1.10.2) writes position deletes (v2) and deletion vectors (v3) with DELETE,
UPDATE and MERGE in merge-on-read mode, evolves schemas (rename, drop, add, promote) and
partition specs; `icectl scan --format jsonl`, run as a child process, must return exactly the
rows Spark's SELECT returns, for several filters. Values are compared in the JSON single-value
form. (Equality deletes, which Spark SQL never writes, are covered by tests/scan/test_reader.py
with delete files committed through icectl's producer.)
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from cli_support import icectl_rows, run_icectl, spark_rows
from spark_support import IceTable, java_table, write_equality_delete

MOR = ("'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
       "'write.merge.mode'='merge-on-read'")

FILTERS = [
    None,
    "id > 120",
    "cat = 'b' or amt < 20.5",
    "d >= date '2024-01-05' and score is not null",
    "flag = true and id between 10 and 150",
    "amt is null or score > 0.5",
]


def make_mor_table(spark: Any, t: IceTable, fv: int) -> None:
    spark.sql(f"""CREATE TABLE {t.ident} (id bigint, cat string, amt decimal(10,2), d date,
                  score double, flag boolean) USING iceberg PARTITIONED BY (cat)
                  TBLPROPERTIES ('format-version'='{fv}', {MOR})""")
    spark.sql(f"""INSERT INTO {t.ident}
        SELECT id, CASE WHEN id % 3 = 0 THEN 'a' WHEN id % 3 = 1 THEN 'b' ELSE 'c' END,
               CASE WHEN id % 11 = 0 THEN NULL ELSE CAST(id / 4 AS decimal(10,2)) END,
               date_add(DATE '2024-01-01', CAST(id % 10 AS int)),
               CASE WHEN id % 13 = 0 THEN NULL ELSE (id % 17) / 10.0 END, id % 2 = 0
        FROM range(0, 200)""")
    spark.sql(f"DELETE FROM {t.ident} WHERE id % 7 = 0")
    spark.sql(f"UPDATE {t.ident} SET amt = amt + 1, flag = NOT flag WHERE id % 5 = 0")
    spark.sql(f"""MERGE INTO {t.ident} t USING (SELECT id, id * 2 AS v FROM range(190, 210)) s
        ON t.id = s.id
        WHEN MATCHED AND s.id % 2 = 0 THEN DELETE
        WHEN MATCHED THEN UPDATE SET t.score = s.v
        WHEN NOT MATCHED THEN INSERT (id, cat, amt, d, score, flag)
             VALUES (s.id, 'b', 1.25, DATE '2024-02-01', s.v, true)""")


def deletes_present(location: Any, content: str) -> bool:
    r = run_icectl("plan", str(location), "--json")
    assert r.returncode == 0, r.stderr
    return any(d["content"] == content for f in json.loads(r.stdout)["files"]
               for d in f["delete-files"])


@pytest.mark.parametrize("fv, kind", [(2, "position_deletes"), (3, "deletion_vector")])
def test_merge_on_read_rows_equal_spark(spark, ice_table, fv, kind):
    make_mor_table(spark, ice_table, fv)
    assert deletes_present(ice_table.location, kind)
    for f in FILTERS:
        assert icectl_rows(ice_table.location, f) == spark_rows(spark, ice_table.ident, f), f
    count = run_icectl("scan", str(ice_table.location), "--count", "--filter", "id > 120")
    assert count.stdout.strip() == str(len(spark_rows(spark, ice_table.ident, "id > 120")))


def test_metadata_columns_equal_spark(spark, ice_table):
    make_mor_table(spark, ice_table, 3)
    got = icectl_rows(ice_table.location, "id < 60", "--columns", "id", "--with-metadata")
    mine = sorted(((dict(r)["id"], dict(r)["_file"], dict(r)["_pos"], dict(r)["_spec_id"])
                   for r in got))
    theirs = sorted((r[0], r[1], r[2], r[3]) for r in spark.sql(
        f"SELECT id, _file, _pos, _spec_id FROM {ice_table.ident} WHERE id < 60").collect())
    assert mine == theirs


def test_schema_and_partition_evolution_rows_equal_spark(spark, ice_table):
    t = ice_table.ident
    spark.sql(f"""CREATE TABLE {t} (id int, name string, score float, old string,
                  amt decimal(8,2)) USING iceberg PARTITIONED BY (bucket(4, id))
                  TBLPROPERTIES ('format-version'='2', {MOR})""")
    spark.sql(f"""INSERT INTO {t} SELECT CAST(id AS int), concat('n', id), CAST(id / 3 AS float),
                  concat('o', id), CAST(id / 7 AS decimal(8,2)) FROM range(0, 60)""")
    spark.sql(f"DELETE FROM {t} WHERE id % 9 = 0")
    spark.sql(f"ALTER TABLE {t} RENAME COLUMN name TO label")
    spark.sql(f"ALTER TABLE {t} DROP COLUMN old")
    spark.sql(f"ALTER TABLE {t} ALTER COLUMN id TYPE bigint")
    spark.sql(f"ALTER TABLE {t} ALTER COLUMN score TYPE double")
    spark.sql(f"ALTER TABLE {t} ALTER COLUMN amt TYPE decimal(12,2)")
    spark.sql(f"ALTER TABLE {t} ADD COLUMN extra string")
    spark.sql(f"ALTER TABLE {t} ADD PARTITION FIELD truncate(2, label)")
    spark.sql(f"""INSERT INTO {t} SELECT id, concat('m', id), id / 2.0, CAST(id AS decimal(12,2)),
                  concat('x', id) FROM range(60, 90)""")
    spark.sql(f"ALTER TABLE {t} DROP PARTITION FIELD bucket(4, id)")
    spark.sql(f"UPDATE {t} SET extra = 'u' WHERE id % 4 = 0")
    spark.sql(f"DELETE FROM {t} WHERE id % 10 = 3")
    for f in [None, "label like 'n1%'", "extra is null and score > 5", "id >= 55 and amt < 80",
              "score is not null"]:
        assert icectl_rows(ice_table.location, f) == spark_rows(spark, t, f), f


def test_equality_deletes_written_by_java_rows_equal_spark(spark, ice_table):
    t = ice_table.ident
    # int keys: py4j hands Python ints to Java as Integer
    spark.sql(f"""CREATE TABLE {t} (id int, region string, v int) USING iceberg
                  TBLPROPERTIES ('format-version'='2')""")
    spark.sql(f"""INSERT INTO {t} SELECT CAST(id AS int), CASE WHEN id % 4 = 0 THEN NULL
                  WHEN id % 4 = 1 THEN 'eu' ELSE 'us' END, CAST(id * 3 AS int)
                  FROM range(0, 40)""")
    # multi-column keys; a null key matches null values
    write_equality_delete(spark, ice_table.location, ["id", "region"],
                          [(1, "eu"), (2, "us"), (4, None), (5, "us")], "eq-1")
    # rows re-inserted after the delete survive it (later data sequence number)
    spark.sql(f"INSERT INTO {t} VALUES (1, 'eu', 1000), (2, 'us', 2000)")
    # a delete keyed on a column that is dropped afterwards still applies
    write_equality_delete(spark, ice_table.location, ["region"], [("us",)], "eq-2")
    spark.sql(f"INSERT INTO {t} VALUES (50, 'us', 5)")
    assert deletes_present(ice_table.location, "equality_deletes")
    filters = [None, "id > 3", "v >= 1000 or id < 10", "region is null"]
    for f in filters:
        assert icectl_rows(ice_table.location, f) == spark_rows(spark, t, f), f
    before = spark_rows(spark, t, None, "id, v")
    assert (("id", 50), ("v", 5)) in before and (("id", 1), ("v", 1000)) in before
    # after the key column is dropped the same rows remain (Spark 3.5 + Iceberg 1.10.2 fails
    # to plan this read with an internal error, so the rows from before the drop are the oracle)
    spark.sql(f"ALTER TABLE {t} DROP COLUMN region")
    assert icectl_rows(ice_table.location, None) == before


def test_float_equality_keys_written_by_java_rows_equal_spark(spark, ice_table):
    """Java compares equality-delete keys with Double.compare: a NaN key deletes NaN rows and
    -0.0 and 0.0 are different keys (keys NaN, -0.0, 1.5 leave 0.0 and null); icectl reads the
    same rows as Spark."""
    t = ice_table.ident
    spark.sql(f"CREATE TABLE {t} (id int, k double) USING iceberg TBLPROPERTIES ('format-version'='2')")
    # Spark SQL folds the literal -0.0 to 0.0; a division keeps the sign
    spark.sql(f"""INSERT INTO {t} VALUES (0, CAST('NaN' AS double)), (1, -1.0 / CAST('Infinity' AS double)),
                  (2, CAST(0.0 AS double)), (3, 1.5), (4, NULL)""")
    nan = spark._jvm.java.lang.Double.valueOf("NaN")
    minus_zero = spark._jvm.java.lang.Double.valueOf("-0.0")
    write_equality_delete(spark, ice_table.location, ["k"], [(nan,), (minus_zero,), (1.5,)], "eq-float")
    spark.sql(f"REFRESH TABLE {t}")  # the catalog caches the table; the delete came through Java
    got = sorted(dict(r)["id"] for r in icectl_rows(ice_table.location, None))
    want = sorted(dict(r)["id"] for r in spark_rows(spark, t, None))
    assert (got, want) == ([2, 4], [2, 4])


def test_partition_column_names_a_renamed_field_as_spark(spark, ice_table, tmp_path):
    """``_partition`` is the unified partition type: a partition field renamed by a later spec
    (same field id) carries its newest name, and fields of every spec appear, as in Spark."""
    import pyarrow.parquet as pq

    t = ice_table.ident
    spark.sql(f"""CREATE TABLE {t} (id bigint, cat string) USING iceberg PARTITIONED BY (cat)
                  TBLPROPERTIES ('format-version'='2')""")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")
    java_table(spark, ice_table.location).updateSpec().renameField("cat", "category").commit()
    spark.sql(f"REFRESH TABLE {t}")
    spark.sql(f"INSERT INTO {t} VALUES (3, 'c')")
    spark.sql(f"ALTER TABLE {t} ADD PARTITION FIELD bucket(2, id) AS id_b")
    spark.sql(f"INSERT INTO {t} VALUES (4, 'd')")
    theirs = sorted((r["id"], tuple(r["_partition"].asDict().items()))
                    for r in spark.sql(f"SELECT id, _partition FROM {t}").collect())
    assert [name for name, _ in theirs[0][1]] == ["category", "id_b"]
    out = tmp_path / "rows.parquet"
    r = run_icectl("scan", str(ice_table.location), "--format", "parquet", "--output", str(out),
                   "--with-metadata")
    assert r.returncode == 0, r.stderr
    mine = sorted((row["id"], tuple(row["_partition"].items()))
                  for row in pq.read_table(out).select(["id", "_partition"]).to_pylist())
    assert mine == theirs
