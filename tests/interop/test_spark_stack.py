"""The reference stack itself works: Spark SQL on the Hadoop catalog and Iceberg Java via py4j."""

from __future__ import annotations

import json

from spark_support import java_iter, java_table


def test_create_insert_select_round_trip(spark, sql, ice_table):
    sql(
        f"CREATE TABLE {ice_table.ident} (id bigint, name string) USING iceberg "
        "PARTITIONED BY (bucket(4, id))"
    )
    sql(f"INSERT INTO {ice_table.ident} VALUES (1, 'a'), (2, 'b'), (3, NULL)")
    sql(f"INSERT INTO {ice_table.ident} VALUES (4, 'd')")

    rows = sql(f"SELECT id, name FROM {ice_table.ident} ORDER BY id")
    assert rows == [(1, "a"), (2, "b"), (3, None), (4, "d")]

    # The Hadoop catalog lays the table out at <warehouse>/<namespace>/<table>.
    hint = ice_table.metadata_dir / "version-hint.text"
    assert hint.read_text(encoding="utf-8") == "3"  # create, insert, insert
    current = json.loads((ice_table.metadata_dir / "v3.metadata.json").read_text("utf-8"))
    assert current["format-version"] == 2
    assert [f["transform"] for f in current["partition-specs"][0]["fields"]] == ["bucket[4]"]
    assert len(current["snapshots"]) == 2


def test_java_table_plans_the_files_spark_wrote(spark, sql, ice_table):
    sql(
        f"CREATE TABLE {ice_table.ident} (id bigint, part string) USING iceberg "
        "PARTITIONED BY (part)"
    )
    sql(f"INSERT INTO {ice_table.ident} VALUES (1, 'x'), (2, 'y'), (3, 'x')")

    table = java_table(spark, ice_table.location)
    assert table.currentSnapshot().summary().get("added-records") == "3"

    tasks = java_iter(table.newScan().planFiles())
    files = {t.file().location(): t.file().recordCount() for t in tasks}
    assert all(str(ice_table.location) in path for path in files)
    by_partition = {path.split("/")[-2]: count for path, count in files.items()}
    assert by_partition == {"part=x": 2, "part=y": 1}

    # A filter is pushed through Iceberg's own planning: only the part=y file remains.
    expressions = spark._jvm.org.apache.iceberg.expressions.Expressions
    filtered = java_iter(table.newScan().filter(expressions.equal("part", "y")).planFiles())
    assert [t.file().recordCount() for t in filtered] == [1]
