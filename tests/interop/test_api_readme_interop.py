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


def test_readme_session_setup_starts_offline_from_the_installed_jar(tmp_path: Path) -> None:
    """The set-up block, run as written in a fresh process (its own session): the Iceberg runtime
    comes from the installed jar (``spark.jars``, nothing fetched from Maven), Spark writes a
    table through the catalog it configures and icectl reads it."""
    import json
    import os
    import subprocess
    import sys

    setup = python_api_blocks()[0]
    assert "spark.jars.packages" not in setup and "iceberg_runtime_jar()" in setup
    assert '"/data/warehouse"' in setup
    warehouse = tmp_path / "wh"
    check = (
        "spark.sparkContext.setLogLevel('FATAL')\n"
        "spark.sql('CREATE NAMESPACE IF NOT EXISTS ice.shop')\n"
        "spark.sql('CREATE TABLE ice.shop.t (id BIGINT) USING iceberg')\n"
        "spark.sql('INSERT INTO ice.shop.t VALUES (7)')\n"
        "import icectl, json\n"
        "t = icectl.load_table('shop.t', warehouse=warehouse)\n"
        "print('RESULT ' + json.dumps({'ids': t.scan().to_arrow().column('id').to_pylist(),\n"
        "      'jars': spark.conf.get('spark.jars'), 'packages': spark.conf.get('spark.jars.packages', '')}))\n"
        "spark.stop()\n")
    script = setup.replace('"/data/warehouse"', json.dumps(str(warehouse))) + check
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(root))
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads([x for x in r.stdout.splitlines() if x.startswith("RESULT ")][-1][7:])
    from icectl.engines.spark import iceberg_runtime_jar

    assert out["ids"] == [7] and out["packages"] == ""
    assert os.path.samefile(out["jars"].removeprefix("file:"), iceberg_runtime_jar())
