"""One SQL catalog database shared by Spark 3.5 (Iceberg 1.10.2's JdbcCatalog), pyiceberg's
SqlCatalog and icectl, on sqlite and on PostgreSQL: each writes, the others read exactly what it
wrote, in both directions."""

from __future__ import annotations

import csv

import pytest
from clirun import icectl, icectl_json

pytestmark = pytest.mark.interop


def _rows(stdout: str) -> list[tuple]:
    lines = [ln for ln in stdout.strip().splitlines()]
    reader = csv.reader(lines)
    next(reader)
    return sorted((int(r[0]), r[1]) for r in reader)


def _spark_rows(spark, table: str) -> list[tuple]:
    spark.sql(f"REFRESH TABLE {table}")
    return sorted((r[0], r[1]) for r in spark.sql(f"SELECT id, s FROM {table}").collect())


def test_spark_writes_icectl_deletes_compacts_expires_spark_reads(spark, shared):
    db, cat, opts, _ = shared
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {cat}.db")
    spark.sql(f"CREATE TABLE {cat}.db.t (id bigint, s string) USING iceberg PARTITIONED BY (bucket(2, id)) "
              "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read')")
    spark.sql(f"INSERT INTO {cat}.db.t SELECT id, CAST(id AS string) FROM range(0, 20)")
    spark.sql(f"INSERT INTO {cat}.db.t SELECT id, concat('x', id) FROM range(20, 30)")
    r = icectl("scan", "db.t", *opts, "--format", "csv")
    assert r.exit_code == 0, r.output
    assert _rows(r.stdout) == _spark_rows(spark, f"{cat}.db.t")
    assert icectl("delete", "db.t", "--filter", "id < 5 or id = 25", *opts).exit_code == 0
    assert icectl("compact", "db.t", "--min-input-files", "1", *opts).exit_code == 0
    assert icectl("expire", "db.t", "--older-than", "2100-01-01", "--retain-last", "1", *opts).exit_code == 0
    assert icectl("check", "db.t", "--deep", *opts).exit_code == 0
    expected = sorted([(i, str(i)) for i in range(5, 20)] + [(i, f"x{i}") for i in range(20, 30) if i != 25])
    assert _spark_rows(spark, f"{cat}.db.t") == expected
    assert spark.sql(f"SELECT count(*) FROM {cat}.db.t").collect()[0][0] == len(expected)
    assert len(spark.sql(f"SELECT * FROM {cat}.db.t.snapshots").collect()) == 1  # expired to one
    assert _rows(icectl("scan", "db.t", *opts, "--format", "csv").stdout) == expected


def test_icectl_creates_and_writes_spark_reads_and_writes_icectl_reads(spark, shared, tmp_path):
    db, cat, opts, warehouse = shared
    (tmp_path / "d.csv").write_text("id,s\n" + "".join(f"{i},v{i}\n" for i in range(10)))
    r = icectl("create", "a.b.t", *opts, "--warehouse", warehouse, "--schema", "id long, s string",
               "--partition", "truncate(2, s)")
    assert r.exit_code == 0, r.output
    assert icectl("write", "a.b.t", str(tmp_path / "d.csv"), *opts).exit_code == 0
    assert _spark_rows(spark, f"{cat}.a.b.t") == [(i, f"v{i}") for i in range(10)]
    assert [tuple(r) for r in spark.sql(f"SHOW NAMESPACES IN {cat}.a").collect()] == [("a.b",)]
    spark.sql(f"INSERT INTO {cat}.a.b.t VALUES (10, 'v10'), (11, 'v11')")
    spark.sql(f"DELETE FROM {cat}.a.b.t WHERE id IN (0, 1)")
    expected = [(i, f"v{i}") for i in range(2, 12)]
    assert _rows(icectl("scan", "a.b.t", *opts, "--format", "csv").stdout) == expected
    assert icectl("check", "a.b.t", "--deep", *opts).exit_code == 0
    out = icectl_json("list", *opts, "--json")
    assert [t["identifier"] for t in out["tables"]] == ["a.b.t"]


def test_pyiceberg_sql_catalog_and_icectl_read_each_others_commits(shared, tmp_path):
    from pyiceberg.catalog.sql import SqlCatalog as PySqlCatalog
    import pyarrow as pa

    db, cat, opts, warehouse = shared
    py = PySqlCatalog(cat, uri=db.sqlalchemy_uri, warehouse=f"file://{warehouse}")
    (tmp_path / "d.csv").write_text("id,s\n1,a\n2,b\n3,c\n")
    assert icectl("create", "ns.t", *opts, "--warehouse", warehouse, "--schema", "id long, s string").exit_code == 0
    assert icectl("write", "ns.t", str(tmp_path / "d.csv"), *opts).exit_code == 0
    t = py.load_table("ns.t")
    assert sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == \
        [{"id": 1, "s": "a"}, {"id": 2, "s": "b"}, {"id": 3, "s": "c"}]
    t.append(pa.table({"id": pa.array([4], pa.int64()), "s": ["d"]}))
    assert icectl("delete", "ns.t", "--filter", "id = 1", *opts).exit_code == 0
    t = py.load_table("ns.t")
    assert sorted(r["id"] for r in t.scan().to_arrow().to_pylist()) == [2, 3, 4]
    # pyiceberg creates, icectl writes and changes the schema
    py.create_namespace("other")
    py.create_table("other.p", schema=pa.schema([pa.field("id", pa.int64()), pa.field("s", pa.string())]),
                    location=f"{warehouse}/other/p")
    assert icectl("write", "other.p", str(tmp_path / "d.csv"), *opts).exit_code == 0
    assert icectl("schema", "add", "other.p", "note", "string", *opts).exit_code == 0
    p = py.load_table("other.p")
    assert [f.name for f in p.schema().fields] == ["id", "s", "note"]
    assert sorted(r["id"] for r in p.scan().to_arrow().to_pylist()) == [1, 2, 3]
    assert {("ns",), ("other",)} <= set(py.list_namespaces())


def test_a_hadoop_table_moves_into_the_jdbc_catalog_and_back(spark, jdbc_catalog, warehouse, new_table, tmp_path):
    """Spark's Hadoop-catalog table is registered in a SQL catalog whose warehouse is the same
    directory (nothing copied) and changed there by icectl and Spark's JdbcCatalog; and a table
    Spark's JdbcCatalog made is exported as a filesystem table that the Hadoop catalog reads."""
    t = new_table("moved")
    spark.sql(f"CREATE TABLE {t.ident} (id bigint, s string) USING iceberg")
    spark.sql(f"INSERT INTO {t.ident} VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    path = tmp_path / "catalog.db"
    cat = jdbc_catalog("sqlite", f"jdbc:sqlite:{path}", str(warehouse))
    opts = ["--catalog", cat, "--catalog-uri", f"sqlite:///{path}"]
    ident = f"{t.namespace}.{t.name}"
    r = icectl("register", ident, "--metadata", str(t.location), *opts)
    assert r.exit_code == 0, r.output
    assert _spark_rows(spark, f"{cat}.{ident}") == [(1, "a"), (2, "b"), (3, "c")]
    assert icectl("delete", ident, "--filter", "id = 1", *opts).exit_code == 0
    spark.sql(f"INSERT INTO {cat}.{ident} VALUES (4, 'd')")
    expected = [(2, "b"), (3, "c"), (4, "d")]
    assert _rows(icectl("scan", ident, *opts, "--format", "csv").stdout) == expected
    # the other way: a table Spark made in the SQL catalog (its location under the same directory,
    # no Hadoop pointer there) is exported as a filesystem table that the Hadoop catalog reads
    spark.sql(f"CREATE TABLE {cat}.{t.namespace}.born (id bigint, s string) USING iceberg")
    spark.sql(f"INSERT INTO {cat}.{t.namespace}.born VALUES (7, 'g'), (8, 'h')")
    spark.sql(f"DELETE FROM {cat}.{t.namespace}.born WHERE id = 7")
    born = f"{t.namespace}.born"
    current = icectl("inspect", "table", born, *opts, "--field", "metadata-file").stdout.strip()
    location = warehouse / t.namespace / "born"
    r = icectl("register", str(location), "--metadata", current, "--json")
    assert r.exit_code == 0, r.output
    assert (location / "metadata" / "version-hint.text").exists()
    assert _spark_rows(spark, f"ice.{born}") == [(8, "h")]
    assert icectl("check", str(location), "--deep").exit_code == 0
