"""A table pyiceberg's SqlCatalog wrote into the Hadoop catalog's warehouse: after `icectl
register`, Spark reads it through the Hadoop catalog, with the rows pyiceberg reads; icectl's
later commits are read by Spark too. Also `icectl list` and `icectl drop` seen from Spark."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from clirun import icectl as _icectl


def _pyiceberg_table(tmp_path: Path, warehouse: Path, namespace: str):
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import DoubleType, LongType, NestedField, StringType

    cat = SqlCatalog("py", uri=f"sqlite:///{tmp_path / 'py.db'}", warehouse=f"file://{warehouse}")
    cat.create_namespace(namespace)
    schema = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "cat", StringType(), required=False),
                    NestedField(3, "v", DoubleType(), required=False))
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="cat"))
    t = cat.create_table(f"{namespace}.events", schema=schema, partition_spec=spec)
    for k in range(2):
        t.append(pa.table({"id": pa.array(range(10 * k, 10 * k + 10), pa.int64()),
                           "cat": pa.array([["a", "b", None][i % 3] for i in range(10)], pa.string()),
                           "v": pa.array([i / 2 if i % 4 else None for i in range(10)], pa.float64())}))
    t.delete("id = 3")
    return cat.load_table(f"{namespace}.events")


def test_spark_reads_a_registered_pyiceberg_table(spark: Any, sql: Any, warehouse: Path, new_table: Any,
                                                  tmp_path: Path) -> None:
    ns = new_table("events").namespace  # a namespace of this test's own, in Spark's warehouse
    t = _pyiceberg_table(tmp_path, warehouse, ns)
    location = Path(t.location().removeprefix("file://"))
    assert location == warehouse / ns / "events"
    expected = sorted((r["id"], r["cat"], r["v"]) for r in t.scan().to_arrow().to_pylist())
    assert len(expected) == 19

    # before registering: icectl reads it, lists it as a catalog's table, refuses to change it
    r = _icectl("list", ns, "--warehouse", str(warehouse), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["tables"][0]["kind"] == "catalog"
    r = _icectl("scan", str(location), "--format", "jsonl")
    assert r.returncode == 0, r.stderr
    assert sorted(tuple(json.loads(x).values()) for x in r.stdout.splitlines()) == expected

    metadata = t.metadata_location.removeprefix("file://")
    r = _icectl("register", f"{ns}.events", "--warehouse", str(warehouse), "--metadata", metadata, "--json")
    assert r.returncode == 0, r.stderr

    spark.sql(f"REFRESH TABLE ice.{ns}.events")
    got = sorted(sql(f"SELECT id, cat, v FROM ice.{ns}.events"))
    assert got == expected
    # the history came along: Spark sees pyiceberg's snapshots
    snaps = sql(f"SELECT snapshot_id FROM ice.{ns}.events.snapshots")
    assert {s[0] for s in snaps} == {s.snapshot_id for s in t.metadata.snapshots}

    # icectl now commits to it, and Spark reads that commit
    f = tmp_path / "more.parquet"
    pq.write_table(pa.table({"id": pa.array([100, 101], pa.int64()), "cat": ["a", "z"],
                             "v": pa.array([1.5, None], pa.float64())}), f)
    r = _icectl("append", str(location), str(f), "--rewrite-spanning")  # rows of two partitions
    assert r.returncode == 0, r.stderr
    spark.sql(f"REFRESH TABLE ice.{ns}.events")
    assert sql(f"SELECT count(*) FROM ice.{ns}.events")[0][0] == 21
    # and Spark commits on top, which icectl reads
    sql(f"INSERT INTO ice.{ns}.events VALUES (200, 'b', 2.0)")
    r = _icectl("scan", str(location), "--filter", "id >= 100", "--format", "jsonl")
    assert sorted(json.loads(x)["id"] for x in r.stdout.splitlines()) == [100, 101, 200]

    r = _icectl("list", ns, "--warehouse", str(warehouse), "--json")
    assert json.loads(r.stdout)["tables"][0]["kind"] == "filesystem"


def test_a_table_icectl_drops_is_gone_for_spark(spark: Any, sql: Any, new_table: Any) -> None:
    t = new_table("gone")
    sql(f"CREATE TABLE {t.ident} (id bigint, s string) USING iceberg")
    sql(f"INSERT INTO {t.ident} VALUES (1, 'a'), (2, 'b')")
    dry = _icectl("drop", str(t.location), "--purge", "--dry-run", "--json")
    assert dry.returncode == 0 and json.loads(dry.stdout)["deleted-files"], dry.stderr
    r = _icectl("drop", str(t.location), "--purge", "--json")
    assert r.returncode == 0, r.stderr
    tables = [row[1] for row in sql(f"SHOW TABLES IN {t.catalog}.{t.namespace}")]
    assert t.name not in tables
