"""`icectl snapshot-table` into a SQL catalog: the catalog picks the location, the table
references the directory's files and has gc.enabled=false; bad input writes no catalog row."""

from __future__ import annotations

import json
import sqlite3

import pyarrow as pa
import pyarrow.parquet as pq
from clirun import icectl


def test_snapshot_table_into_a_catalog(tmp_path):
    src = tmp_path / "hive"
    for k, ids in (("-1", [1, 2]), ("__HIVE_DEFAULT_PARTITION__", [3])):
        (src / f"k={k}").mkdir(parents=True)
        pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}), src / f"k={k}" / "part-0.parquet")
    uri = f"sqlite:///{tmp_path}/c.db"
    cat = ["--catalog-uri", uri, "--warehouse", str(tmp_path / "wh")]
    r = icectl("snapshot-table", str(src), "db.snap", *cat, "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["location"] == str(tmp_path / "wh" / "db" / "snap") and out["added-records"] == 3
    scanned = icectl("scan", "db.snap", *cat, "--format", "jsonl")
    assert sorted((json.loads(x)["id"], json.loads(x)["k"]) for x in scanned.stdout.splitlines()) == \
        [(1, -1), (2, -1), (3, None)]
    props = icectl("properties", "list", "db.snap", *cat, "--json")
    assert json.loads(props.stdout)["properties"]["gc.enabled"] == "false"
    assert icectl("snapshot-table", str(src), "db.snap", *cat).exit_code == 4  # exists
    # a directory that is not Hive's layout: refused before the catalog is touched
    (src / "extra").mkdir()
    pq.write_table(pa.table({"id": pa.array([9], pa.int64())}), src / "extra" / "x.parquet")
    r = icectl("snapshot-table", str(src), "db.other", *cat)
    assert r.exit_code == 2 and "not a partition directory" in r.stderr
    with sqlite3.connect(str(tmp_path / "c.db")) as db:
        assert db.execute("SELECT table_name FROM iceberg_tables").fetchall() == [("snap",)]
