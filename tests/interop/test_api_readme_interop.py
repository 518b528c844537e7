"""README's "Python API" example, run as written in the shared Spark session: Spark writes the
table through the Hadoop catalog, icectl plans, scans, deletes and compacts it in the same
process (compaction's tasks in that Spark session), and Spark reads the result."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from typing import Any

import icectl

README = Path(__file__).resolve().parents[2] / "README.md"


def python_api_blocks() -> list[str]:
    text = README.read_text(encoding="utf-8")
    start = text.index("\n## Python API\n")
    end = text.index("\n## ", start + 1)
    return re.findall(r"```python\n(.*?)```", text[start:end], re.S)


def test_readme_python_api_example_runs_in_a_pyspark_job(spark: Any, warehouse: Path) -> None:
    blocks = python_api_blocks()
    assert len(blocks) == 2, "the section shows the session set-up, then the job"
    setup, job = blocks
    # the set-up block configures what the shared session has: the Hadoop catalog `ice`
    for conf in ("spark.sql.catalog.ice", "spark.sql.catalog.ice.type", "spark.sql.extensions"):
        assert conf in setup
        assert spark.conf.get(conf)
    assert spark.conf.get("spark.sql.catalog.ice.type") == "hadoop"
    spark.sql("DROP TABLE IF EXISTS ice.shop.orders")  # (a rerun in the same session)

    out = io.StringIO()
    scope: dict[str, Any] = {"spark": spark, "warehouse": str(warehouse)}
    with contextlib.redirect_stdout(out):
        exec(compile(job, "README.md (Python API)", "exec"), scope)
    printed = out.getvalue().splitlines()

    plan, rows, deleted, compacted = (scope[k] for k in ("plan", "rows", "deleted", "compacted"))
    assert (plan.file_count, plan.record_count) == (2, 3)
    assert printed[0] == "2 3"
    assert plan.to_json()["summary"]["data-files-matched"] == 2
    assert sorted(rows.column("id").to_pylist()) == [2, 3, 5]
    assert printed[2] == "[2, 3, 5]"
    assert deleted.committed and deleted.to_json()["deleted-positions"] == 1
    assert printed[3] == "1"
    j = compacted.to_json()
    assert compacted.committed and j["rewritten-data-files-count"] == 2 and printed[4] == "2"
    assert printed[5] == "[1, 2, 4, 5]"

    # Spark sees icectl's commits: the compaction replaced the day's files, the delete applied
    ids = [r.id for r in spark.sql("SELECT id FROM ice.shop.orders ORDER BY id").collect()]
    assert ids == [1, 2, 4, 5]
    snaps = spark.sql("SELECT snapshot_id, operation FROM ice.shop.orders.snapshots "
                      "ORDER BY committed_at").collect()
    assert [s.operation for s in snaps][-2:] == ["delete", "replace"]
    assert snaps[-1].snapshot_id == compacted.snapshot_ids[-1]
    files = spark.sql("SELECT file_path, content FROM ice.shop.orders.files").collect()
    day2 = [f for f in files if "2024-01-02" in f.file_path]
    assert len(day2) == 1 and day2[0].content == 0  # one data file, its delete file removed
    # and icectl, loading afresh, agrees with Spark row for row
    again = icectl.load_table("shop.orders", warehouse=str(warehouse))
    assert sorted(again.scan(columns=["id"]).to_arrow().column("id").to_pylist()) == ids
