"""`icectl health --html` on a table Spark (Iceberg 1.10 Java) wrote: the page's timeline and
per-partition figures are Spark's metadata tables' numbers.

Spark SQL builds a table partitioned by a string column whose values hold markup characters,
with several INSERTs, a merge-on-read DELETE and ``rewrite_data_files`` (a replace). Then
``icectl health --json --html`` judges it once, and:
- the snapshots dimension's ``timeline`` is Spark's ``snapshots`` table: the same snapshots in
  commit order with their operation and summary totals, and the page draws one dot per total;
- the partition bars are Spark's ``partitions`` table (record and file counts per partition);
- every figure element of the page holds the JSON's value at its pointer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from clirun import icectl
from health_page import Dom, check_figures, dimension, resolve
from spark_support import CATALOG, IceTable

pytestmark = pytest.mark.interop

VALUES = ["a<b", "x&y", 'q"t', "<i>"]
TOTALS = ("total-records", "total-data-files", "total-delete-files", "total-files-size")


def build(sql, t: IceTable) -> None:
    sql(f"CREATE TABLE {t.ident} (id bigint, cat string) USING iceberg PARTITIONED BY (cat) "
        "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read')")
    for i in range(3):
        rows = ", ".join(f"({i * 100 + k * 10 + j}, '{v}')" for j, v in enumerate(VALUES) for k in range(2))
        sql(f"INSERT INTO {t.ident} VALUES {rows}")
    sql(f"CALL ice.system.rewrite_data_files(table => '{t.namespace}.{t.name}', "
        "options => map('min-input-files', '2'))")
    sql(f"INSERT INTO {t.ident} VALUES (900, 'a<b'), (901, 'a<b')")
    sql(f"DELETE FROM {t.ident} WHERE id = 900")


@pytest.fixture(scope="module")
def judged(spark, warehouse: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, IceTable, dict, Path]:
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.health_html")
    t = IceTable(CATALOG, "health_html", "t", warehouse)
    build(lambda q: spark.sql(q).collect(), t)
    page = tmp_path_factory.mktemp("health-html-interop") / "report.html"
    done = icectl("health", t.location, "--json", "--html", page, env={"NO_COLOR": "1"})
    assert done.returncode in (0, 14), done.stderr
    return spark, t, json.loads(done.stdout), page


def test_the_timeline_is_sparks_snapshots_table(judged) -> None:
    spark, t, doc, page = judged
    rows = spark.sql(f"SELECT snapshot_id, operation, summary, committed_at FROM {t.ident}.snapshots "
                     "ORDER BY committed_at, snapshot_id").collect()
    i, snaps = dimension(doc, "snapshots")
    timeline = snaps["figures"]["timeline"]
    assert [(r["snapshot-id"], r["operation"]) for r in timeline] == [(r.snapshot_id, r.operation) for r in rows]
    assert {r.operation for r in rows} == {"append", "replace", "delete"}
    for mine, theirs in zip(timeline, rows):
        assert [mine[k] for k in TOTALS] == [int(theirs.summary[k]) for k in TOTALS], theirs.snapshot_id
    dom = Dom(page.read_text(encoding="utf-8"))
    dots = [e for e in dom.select("circle", "dot") if e["attrs"]["data-figure"].startswith(
        f"/dimensions/{i}/figures/timeline/")]
    assert len(dots) == len(TOTALS) * len(rows)
    for e in dots:
        assert json.loads(e["attrs"]["data-value"]) == resolve(doc, e["attrs"]["data-figure"])


def test_the_partition_bars_are_sparks_partitions_table(judged) -> None:
    spark, t, doc, page = judged
    theirs = {r.partition.cat: (r.record_count, r.file_count) for r in
              spark.sql(f"SELECT partition, record_count, file_count FROM {t.ident}.partitions").collect()}
    i, files = dimension(doc, "data-files")
    parts = files["figures"]["partitions"]
    assert {p["partition"]["cat"]: (p["records"], p["data-files"]) for p in parts} == theirs
    dom = Dom(page.read_text(encoding="utf-8"))
    bars = {}
    for e in dom.select("rect", "bar"):
        ptr = e["attrs"].get("data-figure", "")
        if ptr.startswith(f"/dimensions/{i}/figures/partitions/") and ptr.endswith("/data-files"):
            bars[resolve(doc, ptr.rsplit("/", 1)[0])["partition"]["cat"]] = json.loads(e["attrs"]["data-value"])
    assert bars == {cat: n for cat, (_, n) in theirs.items()}
    assert {e["text"] for e in dom.select("text", "label")} >= {f"cat={v}" for v in VALUES}
    assert check_figures(dom, doc) > 50
