"""Evolution against the reference (Spark 3.5 + Iceberg 1.10.2 Java).

Two twin tables are created by Spark. Each change is made by icectl on one table and by Spark's
``ALTER TABLE`` on the other, with rows inserted by Spark between changes. After every step:
Iceberg Java reads the same schema (field ids, names, types, docs), the same partition specs
(field ids, names, transforms) and the same sort order from both tables; Spark reads the same rows
from both, including files written before the change (renamed columns keep their data, dropped
columns vanish, new columns are null, promoted columns widen); and icectl's own view of the
table Spark evolved matches what Java reports.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest

pytest.register_assert_rewrite("cli_support")

from cli_support import icectl_json, java_json, rows_as_dicts  # noqa: E402
from spark_support import IceTable, java_table  # noqa: E402

pytestmark = pytest.mark.interop

# (icectl arguments after TABLE is inserted at position 2, Spark ALTER TABLE clause)
STEPS: list[tuple[list[str], str]] = [
    (["schema", "add", "{t}", "score", "double"], "ADD COLUMN score double"),
    (["schema", "add", "{t}", "loc.alt", "float"], "ADD COLUMN loc.alt float"),
    (["schema", "rename", "{t}", "name", "full_name"], "RENAME COLUMN name TO full_name"),
    (["schema", "promote", "{t}", "id", "long"], "ALTER COLUMN id TYPE bigint"),
    (["schema", "promote", "{t}", "loc.lat", "double"], "ALTER COLUMN loc.lat TYPE double"),
    (["schema", "drop", "{t}", "loc.lon"], "DROP COLUMN loc.lon"),
    (["schema", "move", "{t}", "score", "--after", "id"], "ALTER COLUMN score AFTER id"),
    (["schema", "doc", "{t}", "score", "a score"], "ALTER COLUMN score COMMENT 'a score'"),
    (["schema", "add", "{t}", "tags", "list<string>", "--first"], "ADD COLUMN tags array<string> FIRST"),
    (["partition", "add", "{t}", "bucket(8, id)"], "ADD PARTITION FIELD bucket(8, id)"),
    (["partition", "drop", "{t}", "ts_day"], "DROP PARTITION FIELD days(ts)"),
    (["partition", "add", "{t}", "truncate(2, full_name)"], "ADD PARTITION FIELD truncate(2, full_name)"),
    (["partition", "add", "{t}", "days(ts)"], "ADD PARTITION FIELD days(ts)"),
    (["partition", "replace", "{t}", "id_bucket_8", "bucket(4, id)"],
     "REPLACE PARTITION FIELD bucket(8, id) WITH bucket(4, id)"),
    (["partition", "add", "{t}", "identity(full_name)", "--name", "fname"],
     "ADD PARTITION FIELD full_name AS fname"),
    (["sort-order", "set", "{t}", "id desc nulls last, full_name"],
     "WRITE ORDERED BY id DESC NULLS LAST, full_name"),
]


def _insert(spark: Any, t: IceTable, n: int) -> None:
    schema = spark.table(t.ident).schema
    values = []
    for f in schema.fields:
        values.append(_value(f.name, f.dataType.simpleString(), n))
    spark.sql(f"INSERT INTO {t.ident} VALUES ({', '.join(values)})")


def _value(name: str, type_text: str, n: int) -> str:
    if type_text in ("int", "bigint"):
        return str(n)
    if type_text == "double" or type_text == "float":
        return f"CAST({n}.5 AS {type_text})"
    if type_text == "string":
        return f"'{name}-{n}'"
    if type_text == "timestamp":
        return f"TIMESTAMP '2024-01-{n + 1:02d} 10:00:00'"
    if type_text.startswith("array"):
        return f"array('t{n}')"
    if type_text.startswith("struct"):
        inner = type_text[len("struct<"):-1]
        parts = []
        for item in inner.split(","):
            fname, ftype = item.split(":", 1)
            parts.append(f"'{fname}', {_value(fname, ftype, n)}")
        return f"named_struct({', '.join(parts)})"
    raise AssertionError(f"no test value for {type_text}")


def _java_specs(jvm: Any, jt: Any) -> list[Any]:
    specs = jt.specs()
    ids = sorted(int(i) for i in specs.keySet().toArray())
    return [java_json(jvm, "PartitionSpecParser", specs.get(i)) for i in ids]


def _compare(spark: Any, jvm: Any, mine: IceTable, twin: IceTable) -> None:
    jm, jt = java_table(spark, mine.location), java_table(spark, twin.location)
    assert java_json(jvm, "SchemaParser", jm.schema()) == java_json(jvm, "SchemaParser", jt.schema())
    assert _java_specs(jvm, jm) == _java_specs(jvm, jt)
    assert java_json(jvm, "SortOrderParser", jm.sortOrder()) == java_json(jvm, "SortOrderParser", jt.sortOrder())
    assert int(jm.operations().current().lastColumnId()) == int(jt.operations().current().lastColumnId())
    assert int(jm.operations().current().lastAssignedPartitionId()) == \
        int(jt.operations().current().lastAssignedPartitionId())
    # icectl reads the table Spark evolved as Java does
    view = icectl_json("inspect", "schema", str(twin.location))
    assert view["json"]["fields"] == java_json(jvm, "SchemaParser", jt.schema())["fields"]
    parts = icectl_json("inspect", "spec", str(twin.location))
    java_specs = _java_specs(jvm, jt)
    assert [[{k: f[k] for k in ("field-id", "name", "source-id", "transform")} for f in s["fields"]]
            for s in parts["specs"]] == [s["fields"] for s in java_specs]
    # Spark reads the same rows from both, old files included
    order = "ORDER BY id"
    assert rows_as_dicts(spark, f"SELECT * FROM {mine.ident} {order}") == \
        rows_as_dicts(spark, f"SELECT * FROM {twin.ident} {order}")


@pytest.mark.parametrize("format_version", [1, 2])
def test_evolution_matches_spark_alter_table(spark: Any, jvm: Any, new_table: Callable[[str], IceTable],
                                             format_version: int) -> None:
    mine, twin = new_table("mine"), new_table("twin")
    for t in (mine, twin):
        spark.sql(f"CREATE TABLE {t.ident} (id int NOT NULL, name string, loc struct<lat: float, lon: float>, "
                  f"ts timestamp) USING iceberg PARTITIONED BY (days(ts)) "
                  f"TBLPROPERTIES ('format-version'='{format_version}')")
        _insert(spark, t, 0)
    for n, (args, clause) in enumerate(STEPS, start=1):
        out = icectl_json(*[a.format(t=str(mine.location)) for a in args])
        assert out["committed"], out
        spark.sql(f"REFRESH TABLE {mine.ident}")
        spark.sql(f"ALTER TABLE {twin.ident} {clause}")
        for t in (mine, twin):
            _insert(spark, t, n)
        _compare(spark, jvm, mine, twin)
    rows = rows_as_dicts(spark, f"SELECT * FROM {mine.ident} ORDER BY id")
    assert len(rows) == len(STEPS) + 1
    first = rows[0]
    assert first["full_name"] == "name-0"  # renamed column kept its data
    assert first["score"] is None and first["tags"] is None  # added later: null in old files
    assert first["loc"] == {"lat": 0.5, "alt": None}  # promoted float, dropped lon, new alt
    assert isinstance(first["id"], int)


def test_schema_union_and_name_mapping_against_spark(spark: Any, jvm: Any, new_table: Callable[[str], IceTable],
                                                    tmp_path: Any) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    t = new_table("u")
    spark.sql(f"CREATE TABLE {t.ident} (id int, name string) USING iceberg "
              f"TBLPROPERTIES ('format-version'='2')")
    spark.sql(f"INSERT INTO {t.ident} VALUES (1, 'a')")
    # a name mapping is kept up to date, as Java's MappingUtil.update does
    mapping = '[{"field-id": 1, "names": ["id"]}, {"field-id": 2, "names": ["name"]}]'
    icectl_json("properties", "set", str(t.location), f"schema.name-mapping.default={mapping}")
    f = tmp_path / "more.parquet"
    pq.write_table(pa.table({"id": pa.array([2], pa.int64()), "extra": pa.array([1.5])}), f)
    icectl_json("schema", "union", str(t.location), str(f))
    icectl_json("schema", "rename", str(t.location), "name", "label")
    spark.sql(f"REFRESH TABLE {t.ident}")
    jt = java_table(spark, t.location)
    schema = java_json(jvm, "SchemaParser", jt.schema())
    assert [(c["id"], c["name"], c["type"]) for c in schema["fields"]] == \
        [(1, "id", "long"), (2, "label", "string"), (3, "extra", "double")]
    jmapping = jvm.org.apache.iceberg.mapping.NameMappingParser.fromJson(
        jt.properties().get("schema.name-mapping.default"))
    assert int(jmapping.find(["name"]).id()) == 2 and int(jmapping.find(["label"]).id()) == 2
    assert int(jmapping.find(["extra"]).id()) == 3
    spark.sql(f"INSERT INTO {t.ident} VALUES (2, 'b', 2.5)")
    assert rows_as_dicts(spark, f"SELECT * FROM {t.ident} ORDER BY id") == [
        {"id": 1, "label": "a", "extra": None}, {"id": 2, "label": "b", "extra": 2.5}]


def test_upgrade_is_read_by_java(spark: Any, new_table: Callable[[str], IceTable]) -> None:
    t = new_table("up")
    spark.sql(f"CREATE TABLE {t.ident} (id int) USING iceberg TBLPROPERTIES ('format-version'='1')")
    spark.sql(f"INSERT INTO {t.ident} VALUES (1)")
    icectl_json("upgrade", str(t.location), "--format-version", "2")
    spark.sql(f"REFRESH TABLE {t.ident}")
    spark.sql(f"INSERT INTO {t.ident} VALUES (2)")
    icectl_json("upgrade", str(t.location), "--format-version", "3")
    spark.sql(f"REFRESH TABLE {t.ident}")
    spark.sql(f"INSERT INTO {t.ident} VALUES (3)")
    jt = java_table(spark, t.location)
    assert int(jt.operations().current().formatVersion()) == 3
    assert [r["id"] for r in rows_as_dicts(spark, f"SELECT id FROM {t.ident} ORDER BY id")] == [1, 2, 3]
