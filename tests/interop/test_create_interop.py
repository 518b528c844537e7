"""`icectl create` against the reference: tables icectl creates are the tables Spark would create.

For each format version, icectl creates a table inside the Spark catalog's warehouse and Spark
SQL creates a twin with the same columns, partitioning and sort order. Iceberg Java must read
the same schema, spec and sort order from both (field ids, partition field names and ids,
transforms); Spark must describe both alike, write rows into icectl's table and read them back
exactly. Then icectl inspects what Spark wrote and agrees with Spark's metadata tables.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

pytest.register_assert_rewrite("cli_support")

from cli_support import (  # noqa: E402
    check_files,
    check_files_java,
    check_history,
    check_manifests,
    check_metadata_log,
    check_partitions_table,
    check_refs,
    check_snapshots,
    icectl_json,
    java_json,
    rows_as_dicts,
    run_icectl,
)
from spark_support import CATALOG, IceTable, java_table, sql_rows  # noqa: E402

pytestmark = pytest.mark.interop

SCHEMA = (
    "id long not null, ts timestamptz, cat string, d date, amount decimal(9, 2), "
    "point struct<x: double, y: double not null>, tags list<string>, attrs map<string, int>"
)
SPARK_COLUMNS = (
    "id bigint not null, ts timestamp, cat string, d date, amount decimal(9, 2), "
    "point struct<x: double, y: double not null>, tags array<string>, attrs map<string, int>"
)


@dataclass(frozen=True)
class CreateCase:
    label: str
    format_version: int
    partition: str  # icectl --partition text (Spark's PARTITIONED BY takes the same terms)
    sort_order: str  # icectl --sort-order text
    spark_sort_order: str  # ALTER TABLE ... WRITE ORDERED BY
    spec: list[tuple[int, str, str, int]]  # expected (field-id, name, transform, source-id)


CASES = [
    CreateCase(
        "v1",
        1,
        "years(d), bucket(8, id), truncate(10, cat)",
        "cat asc nulls first, id desc nulls last",
        "cat ASC NULLS FIRST, id DESC NULLS LAST",
        [(1000, "d_year", "year", 4), (1001, "id_bucket", "bucket[8]", 1),
         (1002, "cat_trunc", "truncate[10]", 3)],
    ),
    CreateCase(
        "v2",
        2,
        "days(ts), bucket(16, id), truncate(4, cat), cat",
        "id desc nulls last",
        "id DESC NULLS LAST",
        [(1000, "ts_day", "day", 2), (1001, "id_bucket", "bucket[16]", 1),
         (1002, "cat_trunc", "truncate[4]", 3), (1003, "cat", "identity", 3)],
    ),
    CreateCase(
        "v3",
        3,
        "hours(ts), months(d), bucket(4, cat), amount",
        "bucket(4, id) desc nulls first, days(ts), cat asc nulls last",
        "bucket(4, id) DESC NULLS FIRST, days(ts), cat ASC NULLS LAST",
        [(1000, "ts_hour", "hour", 2), (1001, "d_month", "month", 4),
         (1002, "cat_bucket", "bucket[4]", 3), (1003, "amount", "identity", 5)],
    ),
]

FIRST_ROWS = """
  (1, TIMESTAMP '2024-01-02 10:11:12.123456', 'alpha', DATE '2024-01-02', 12.34,
      named_struct('x', 1.5D, 'y', -2.0D), array('a', 'b'), map('k1', 1, 'k2', 2)),
  (2, TIMESTAMP '2024-01-02 23:59:59.999999', 'alphabet', DATE '2023-12-31', -0.01,
      named_struct('x', CAST(NULL AS DOUBLE), 'y', 0.0D), CAST(array() AS array<string>),
      CAST(map() AS map<string, int>)),
  (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
  (40, TIMESTAMP '1969-12-31 23:00:00', 'be', DATE '1969-12-31', 9999999.99,
      named_struct('x', 3.0D, 'y', 4.0D), array(NULL, 'z'), map('n', CAST(NULL AS INT)))
"""
SECOND_ROWS = """
  (-7, TIMESTAMP '2025-06-30 00:00:00', 'alpha', DATE '2025-06-30', 1.00,
      named_struct('x', 0.5D, 'y', 0.25D), array('q'), map('a', 7))
"""


def _micros(*args: int) -> int:
    t = dt.datetime(*args, tzinfo=dt.timezone.utc)
    return (t - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) // dt.timedelta(microseconds=1)


EXPECTED_ROWS = [
    (-7, _micros(2025, 6, 30), "alpha", dt.date(2025, 6, 30), Decimal("1.00"),
     {"x": 0.5, "y": 0.25}, ["q"], {"a": 7}),
    (1, _micros(2024, 1, 2, 10, 11, 12, 123456), "alpha", dt.date(2024, 1, 2), Decimal("12.34"),
     {"x": 1.5, "y": -2.0}, ["a", "b"], {"k1": 1, "k2": 2}),
    (2, _micros(2024, 1, 2, 23, 59, 59, 999999), "alphabet", dt.date(2023, 12, 31),
     Decimal("-0.01"), {"x": None, "y": 0.0}, [], {}),
    (3, None, None, None, None, None, None, None),
    (40, _micros(1969, 12, 31, 23), "be", dt.date(1969, 12, 31), Decimal("9999999.99"),
     {"x": 3.0, "y": 4.0}, [None, "z"], {"n": None}),
]

SELECT_COLUMNS = "id, unix_micros(ts) AS ts, cat, d, amount, point, tags, attrs"

_namespaces = itertools.count(1)


@pytest.fixture(scope="module")
def namespace(spark: Any) -> str:
    name = f"create_interop_{next(_namespaces)}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{name}")
    return name


@dataclass(frozen=True)
class Created:
    case: CreateCase
    table: IceTable  # created by icectl, written by Spark
    twin: IceTable  # created by Spark SQL, written by Spark
    create_json: dict[str, Any]  # `icectl create --json`
    first_metadata: dict[str, Any]  # v1.metadata.json as icectl wrote it


@pytest.fixture(scope="module", params=CASES, ids=lambda c: c.label)
def created(request: pytest.FixtureRequest, spark: Any, warehouse: Path, namespace: str) -> Created:
    case: CreateCase = request.param
    table = IceTable(CATALOG, namespace, f"icectl_{case.label}", warehouse)
    twin = IceTable(CATALOG, namespace, f"spark_{case.label}", warehouse)

    # icectl, run as a user would, with the table named through the warehouse (DB.TABLE)
    create_json = icectl_json(
        "create", f"{namespace}.{table.name}", "--warehouse", str(warehouse),
        "--schema", SCHEMA, "--partition", case.partition, "--sort-order", case.sort_order,
        "--property", "comment.by=interop-test", "--property", "write.metadata.metrics.default=full",
        "--format-version", str(case.format_version),
    )
    first_metadata = json.loads((table.metadata_dir / "v1.metadata.json").read_text("utf-8"))

    spark.sql(
        f"CREATE TABLE {twin.ident} ({SPARK_COLUMNS}) USING iceberg "
        f"PARTITIONED BY ({case.partition}) "
        f"TBLPROPERTIES ('format-version'='{case.format_version}', 'comment.by'='interop-test', "
        "'write.metadata.metrics.default'='full')"
    )
    spark.sql(f"ALTER TABLE {twin.ident} WRITE ORDERED BY {case.spark_sort_order}")

    for t in (table, twin):
        spark.sql(f"INSERT INTO {t.ident} VALUES {FIRST_ROWS}")
        spark.sql(f"INSERT INTO {t.ident} VALUES {SECOND_ROWS}")
    return Created(case, table, twin, create_json, first_metadata)


def test_create_json_describes_the_new_table(created: Created) -> None:
    out = created.create_json
    case = created.case
    assert out["location"] == str(created.table.location)
    assert out["metadata-file"] == str(created.table.metadata_dir / "v1.metadata.json")
    assert out["format-version"] == case.format_version
    assert out["current-snapshot-id"] is None and out["snapshot-count"] == 0
    assert [(f["field-id"], f["name"], f["transform"], f["source-id"]) for f in out["partition-spec"]] \
        == case.spec
    assert out["properties"]["comment.by"] == "interop-test"
    assert created.first_metadata["format-version"] == case.format_version
    assert created.first_metadata["table-uuid"] == out["table-uuid"]


def test_java_reads_the_schema_spec_and_sort_order_spark_would_create(
    created: Created, spark: Any, jvm: Any
) -> None:
    mine = java_table(spark, created.table.location)
    twin = java_table(spark, created.twin.location)

    schema = java_json(jvm, "SchemaParser", mine.schema())
    assert schema == java_json(jvm, "SchemaParser", twin.schema())
    ids = {f["name"]: f["id"] for f in schema["fields"]}
    assert ids == {"id": 1, "ts": 2, "cat": 3, "d": 4, "amount": 5, "point": 6, "tags": 7, "attrs": 8}

    spec = java_json(jvm, "PartitionSpecParser", mine.spec())
    assert spec == java_json(jvm, "PartitionSpecParser", twin.spec())
    assert [(f["field-id"], f["name"], f["transform"], f["source-id"]) for f in spec["fields"]] \
        == created.case.spec
    order = java_json(jvm, "SortOrderParser", mine.sortOrder())
    assert order == java_json(jvm, "SortOrderParser", twin.sortOrder())
    assert order["order-id"] == 1

    # icectl's own views say the same as Java
    assert icectl_json("inspect", "schema", str(created.table.location))["json"]["fields"] \
        == schema["fields"]
    parts = icectl_json("inspect", "spec", str(created.table.location))
    assert [
        {"name": f["name"], "transform": f["transform"], "source-id": f["source-id"],
         "field-id": f["field-id"]}
        for f in parts["specs"][0]["fields"]
    ] == spec["fields"]
    assert parts["last-partition-id"] == mine.operations().current().lastAssignedPartitionId()
    table_view = icectl_json("inspect", "table", str(created.table.location))
    assert [
        {"transform": f["transform"], "source-id": f["source-id"], "direction": f["direction"],
         "null-order": f["null-order"]}
        for f in table_view["sort-order"]
    ] == order["fields"]
    assert table_view["default-sort-order-id"] == order["order-id"]


def test_spark_describes_both_tables_alike(created: Created, sql: Any) -> None:
    mine = sql(f"DESCRIBE TABLE {created.table.ident}")
    twin = sql(f"DESCRIBE TABLE {created.twin.ident}")
    assert mine == twin
    assert ("# Partitioning", "", "") in mine
    for key, value in [("format-version", str(created.case.format_version)),
                       ("comment.by", "interop-test")]:
        assert sql(f"SHOW TBLPROPERTIES {created.table.ident} ('{key}')") == [(key, value)]
    assert sql(f"SHOW TBLPROPERTIES {created.table.ident} ('sort-order')") == sql(
        f"SHOW TBLPROPERTIES {created.twin.ident} ('sort-order')"
    )


def test_spark_reads_back_exactly_what_it_wrote(created: Created, spark: Any) -> None:
    def rows(t: IceTable) -> list[tuple]:
        return [
            tuple(r.values())
            for r in rows_as_dicts(spark, f"SELECT {SELECT_COLUMNS} FROM {t.ident} ORDER BY id")
        ]

    assert rows(created.table) == EXPECTED_ROWS
    assert rows(created.twin) == EXPECTED_ROWS
    # the same rows land in the same partitions of both tables
    part_query = "SELECT to_json(partition), record_count, file_count FROM {}.partitions"
    assert sorted(map(str, (spark.sql(part_query.format(created.table.ident)).collect()))) == sorted(
        map(str, spark.sql(part_query.format(created.twin.ident)).collect())
    )


def test_icectl_inspects_what_spark_wrote(created: Created, spark: Any, jvm: Any) -> None:
    ident, location = created.table.ident, str(created.table.location)
    jtable = java_table(spark, created.table.location)

    snapshots = check_snapshots(spark, ident, location, jtable)
    assert [s["operation"] for s in snapshots] == ["append", "append"]
    assert [s["summary"]["added-records"] for s in snapshots] == ["4", "1"]
    check_history(spark, ident, location)
    refs = check_refs(spark, ident, location)
    assert [(r["name"], r["snapshot-id"]) for r in refs] == [("main", snapshots[-1]["snapshot-id"])]
    check_manifests(spark, ident, location, jtable, created.case.format_version)
    files = check_files(spark, ident, location)
    # and Java's reading of the manifests, with its partition paths (hour, month, year, ...)
    assert check_files_java(jvm, jtable, location, jtable.currentSnapshot().snapshotId()) == files
    assert sum(f["record-count"] for f in files) == len(EXPECTED_ROWS)
    check_partitions_table(spark, ident, files)
    log = check_metadata_log(spark, ident, location)
    # icectl wrote the first metadata file, Spark the two after it
    assert [Path(e["metadata-file"]).name for e in log] == [f"v{n}.metadata.json" for n in (1, 2, 3)]


def test_sequence_numbers_continue_from_what_icectl_wrote(created: Created, spark: Any) -> None:
    location = str(created.table.location)
    jtable = java_table(spark, created.table.location)
    current = jtable.operations().current()
    view = icectl_json("inspect", "table", location)
    fv = created.case.format_version

    assert created.first_metadata.get("last-sequence-number", 0) == 0
    assert view["last-sequence-number"] == current.lastSequenceNumber() == (2 if fv > 1 else 0)
    assert view["current-snapshot-id"] == jtable.currentSnapshot().snapshotId()
    snapshots = icectl_json("inspect", "snapshots", location)
    assert [s["sequence-number"] for s in snapshots] == ([1, 2] if fv > 1 else [0, 0])
    seq_of = {s["snapshot-id"]: s["sequence-number"] for s in snapshots}
    for f in icectl_json("inspect", "files", location):
        assert f["data-sequence-number"] == seq_of[f["snapshot-id"]]
    assert view["totals"]["total-records"] == len(EXPECTED_ROWS)
    if fv >= 3:
        assert created.first_metadata["next-row-id"] == 0
        assert view["next-row-id"] == current.nextRowId() == len(EXPECTED_ROWS)
        assert [(s["first-row-id"], s["added-rows"]) for s in snapshots] == [(0, 4), (4, 1)]


def test_create_over_an_existing_table_is_refused_and_writes_nothing(
    spark: Any, warehouse: Path, namespace: str, sql: Any
) -> None:
    existing = IceTable(CATALOG, namespace, "existing", warehouse)
    sql(f"CREATE TABLE {existing.ident} (id bigint, v string) USING iceberg")
    sql(f"INSERT INTO {existing.ident} VALUES (1, 'one')")

    def state() -> dict[str, bytes]:
        return {
            str(p.relative_to(existing.location)): p.read_bytes()
            for p in sorted(existing.location.rglob("*"))
            if p.is_file()
        }

    before = state()
    attempts = [
        (str(existing.location),),
        (f"{namespace}.existing", "--warehouse", str(warehouse)),
    ]
    for target in attempts:
        done = run_icectl("create", *target, "--schema", "x int", "--format-version", "2")
        assert done.returncode == 4, (done.returncode, done.stderr)
        assert done.stdout == ""
        assert "exist" in done.stderr.lower()
        assert state() == before
    assert sql(f"SELECT id, v FROM {existing.ident}") == [(1, "one")]

    # and over a table icectl made itself
    made = IceTable(CATALOG, namespace, "made_twice", warehouse)
    first = run_icectl("create", str(made.location), "--schema", "id long")
    assert first.returncode == 0, first.stderr
    again = run_icectl("create", str(made.location), "--schema", "other string")
    assert again.returncode == 4, again.stderr
    assert sorted(p.name for p in made.metadata_dir.iterdir() if not p.name.startswith(".")) == [
        "v1.metadata.json", "version-hint.text"
    ]
    assert sql_rows(spark, f"SELECT count(*) FROM {made.ident}") == [(0,)]
