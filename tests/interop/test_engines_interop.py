"""The Spark engine on the shared test session: task functions run in Spark executors' Python
workers (Spark's status tracker sees the stage and its tasks), errors keep their kind, and
`compact` gives the same rows and the same layout on Spark as on the local engine."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from cli_support import run_icectl

from icectl.engines import TaskProgress, get_engine
from icectl.engines.spark import SparkEngine, executor_probe
from icectl.errors import NotFound
from icectl.io.manifest import records as avro
from icectl.ops.maintain.compact import CompactOptions, compact_table
from icectl.ops.write.rows import WriteFileTask, run_write_task
from icectl.table.table import Table
from support.tables import empty_table, with_files


def test_tasks_run_in_spark_executors_and_the_status_tracker_sees_them(spark: Any) -> None:
    seen: list[TaskProgress] = []
    engine = get_engine("spark", session=spark, progress=seen.append)
    assert isinstance(engine, SparkEngine) and engine.name == "spark"
    out = engine.map(executor_probe, [10, 11, 12, 13], sizes=[1, 2, 3, 4])
    assert [o["task"] for o in out] == [10, 11, 12, 13]  # task order kept
    assert all(o["stage"] is not None for o in out)  # a TaskContext: ran inside a Spark task
    assert sorted(o["partition"] for o in out) == [0, 1, 2, 3]  # one partition per task
    assert os.getpid() not in {o["pid"] for o in out}  # in Python workers, not the driver
    # the driver's icectl was shipped to the executors (a zip added with addPyFile)
    assert all(o["shipped"] for o in out)
    # Spark's own record of the job: one stage, four tasks, all completed
    st = spark.sparkContext.statusTracker()
    jobs = st.getJobIdsForGroup(engine.last_job_group)
    assert len(jobs) == 1
    info = st.getJobInfo(jobs[0])
    assert info.status == "SUCCEEDED"
    stages = [st.getStageInfo(s) for s in info.stageIds]
    assert [(s.numTasks, s.numCompletedTasks, s.numFailedTasks) for s in stages] == [(4, 4, 0)]
    assert {o["stage"] for o in out} == {stages[0].stageId}
    assert seen[0] == TaskProgress(0, 4, 0, 10) and seen[-1] == TaskProgress(4, 4, 10, 10)
    engine.stop()  # a session passed in keeps running
    assert spark.sparkContext._jsc is not None
    assert spark.range(1).count() == 1


def test_an_icectl_error_in_an_executor_keeps_its_kind(spark: Any, tmp_path: Path) -> None:
    task = WriteFileTask(source=str(tmp_path / "missing.csv"), file_format="csv",
                         schema={"type": "struct", "schema-id": 0, "fields": []},
                         spec={"spec-id": 0, "fields": []}, sort_order=None, properties={},
                         table_location=str(tmp_path), operation_id="x", task_index=0)
    with pytest.raises(NotFound, match="missing.csv"):
        SparkEngine(session=spark).map(run_write_task, [task])


def _twin(tmp_path: Path, name: str) -> str:
    def rows(i: int) -> dict:
        ids = list(range(i * 100, i * 100 + 60))
        return {"id": ids, "cat": ["a" if x % 3 else "b" for x in ids], "v": [x / 7 for x in ids]}

    t = empty_table(tmp_path / name, "id long not null, cat string, v double", partition="cat")
    return with_files(t, 6, rows).location  # six appends: six small files per partition


def _layout(loc: str) -> list[tuple]:
    t = Table.load(loc)
    snap = t.metadata.current_snapshot()
    out = []
    for m in avro.load_manifest_list(t.io, snap.manifest_list, t.metadata.format_version):
        for e in avro.load_manifest(t.io, m):
            if e.is_live:
                f = e.data_file
                out.append((f.content, f.partition, f.record_count, e.sequence_number))
    return sorted(out, key=repr)


def _rows(spark: Any, loc: str) -> list[tuple]:
    return sorted(tuple(r) for r in spark.read.format("iceberg").load(loc).select("id", "cat", "v").collect())


def test_compact_on_spark_matches_the_local_engine(spark: Any, tmp_path: Path) -> None:
    local_loc, spark_loc = _twin(tmp_path, "local"), _twin(tmp_path, "spark")
    assert _layout(local_loc) == _layout(spark_loc)
    before = _rows(spark, local_loc)
    opts = CompactOptions()
    local = compact_table(Table.load(local_loc), options=opts, engine=get_engine("local", workers=2))
    engine = SparkEngine(session=spark)
    remote = compact_table(Table.load(spark_loc), options=opts, engine=engine)
    assert local.added_data_files == remote.added_data_files == 2
    assert local.rewritten_data_files == remote.rewritten_data_files == 12
    assert _layout(local_loc) == _layout(spark_loc)
    assert _rows(spark, local_loc) == _rows(spark, spark_loc) == before
    # the rewrite ran as Spark tasks, one per planned task
    st = spark.sparkContext.statusTracker()
    (job,) = st.getJobIdsForGroup(engine.last_job_group)
    (stage,) = st.getJobInfo(job).stageIds
    assert st.getStageInfo(stage).numCompletedTasks == sum(len(g.tasks) for g in remote.groups)
    # and icectl reads both alike
    a = run_icectl("scan", local_loc, "--format", "jsonl")
    b = run_icectl("scan", spark_loc, "--format", "jsonl")
    assert a.returncode == b.returncode == 0
    assert sorted(a.stdout.splitlines()) == sorted(b.stdout.splitlines())
    assert len(a.stdout.splitlines()) == 360
