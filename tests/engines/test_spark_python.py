"""The Python icectl's Spark tasks run on, in a user's own PySpark job.

A job started from a virtual environment that is not activated, with ``PYSPARK_PYTHON`` unset,
gets Python workers running ``python3`` from the PATH - here an interpreter of the same version
without pyarrow (a bare virtual environment put first on the PATH). ``table.compact(engine=
"spark")`` must still work in local mode (icectl's tasks run on the driver's interpreter)
without changing the Python the job's own RDDs run on; and an executor Python the user chose
that lacks pyarrow must fail as one icectl error naming the setting, not a traceback. Each case
is a real job: a child process with its own Spark session.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

JOB = textwrap.dedent("""
    import json, sys
    from pyspark.sql import SparkSession
    import pyarrow as pa
    import icectl
    from icectl.engines.spark import SparkEngine

    spark = (SparkSession.builder.master("local[2]").config("spark.ui.showConsoleProgress", "false")
             .getOrCreate())
    spark.sparkContext.setLogLevel("FATAL")
    sc = spark.sparkContext

    def where(_):
        import sys
        return sys.executable

    out = {"driver": sys.executable, "exec_before": sc.pythonExec,
           "job_python": sc.parallelize([0], 1).map(where).collect()[0]}
    location = sys.argv[1]
    t = icectl.load_table(location)
    for i in range(3):
        t.write(pa.table({"id": pa.array([i], pa.int64())}))
    try:
        done = t.compact(engine="spark", min_input_files=2)
        out["compacted"] = done.to_json()["rewritten-data-files-count"]
        def probe(_):
            import sys, pyarrow
            return sys.executable
        out["task_python"] = SparkEngine(session=spark).map(probe, [1, 2])
    except icectl.IcectlError as e:
        out["error"] = [type(e).__name__, e.exit_code, str(e)]
    out["rows"] = sorted(t.refresh().scan().to_arrow().column("id").to_pylist())
    out["exec_after"] = sc.pythonExec
    out["job_python_after"] = sc.parallelize([0], 1).map(where).collect()[0]
    spark.stop()
    print("RESULT " + json.dumps(out))
""")


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ``python3`` of the driver's version without pyarrow, first on the PATH it is put in."""
    d = tmp_path_factory.mktemp("bare")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(d / "venv")], check=True)
    shim = d / "bin"
    shim.mkdir()
    (shim / "python3").symlink_to(d / "venv" / "bin" / "python3")
    r = subprocess.run([str(shim / "python3"), "-c", "import pyarrow"], capture_output=True)
    assert r.returncode != 0, "the bare Python must lack pyarrow"
    return shim


def _job(tmp_path: Path, bare: Path, env_python: str | None) -> dict:
    from clirun import icectl

    loc = tmp_path / "t"
    assert icectl("create", loc, "--schema", "id long").returncode == 0
    env = dict(os.environ, PATH=f"{bare}{os.pathsep}{os.environ.get('PATH', '')}",
               PYTHONPATH=str(ROOT), NO_COLOR="1")
    env.pop("PYSPARK_PYTHON", None)
    env.pop("PYSPARK_DRIVER_PYTHON", None)
    if env_python is not None:
        env["PYSPARK_PYTHON"] = env_python
    (tmp_path / "job.py").write_text(JOB)
    r = subprocess.run([sys.executable, str(tmp_path / "job.py"), str(loc)], env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    line = [x for x in r.stdout.splitlines() if x.startswith("RESULT ")]
    assert line, r.stdout + r.stderr[-3000:]
    return json.loads(line[-1][len("RESULT "):])


def test_compact_on_spark_in_a_local_job_runs_its_tasks_on_the_drivers_python(tmp_path: Path,
                                                                             bare_python: Path) -> None:
    out = _job(tmp_path, bare_python, None)
    assert "error" not in out, out
    assert out["compacted"] == 3 and out["rows"] == [0, 1, 2]
    assert out["task_python"] == [out["driver"]] * 2  # icectl's tasks: the driver's interpreter
    # the job's own RDDs still run where the session sends them: nothing of it was changed
    assert out["exec_before"] == out["exec_after"] == "python3"
    assert out["job_python"] == out["job_python_after"] != out["driver"]


def test_an_executor_python_without_pyarrow_is_one_error_naming_the_setting(tmp_path: Path,
                                                                            bare_python: Path) -> None:
    out = _job(tmp_path, bare_python, str(bare_python / "python3"))  # the user's own choice: kept
    kind, code, message = out["error"]
    assert (kind, code) == ("UnsupportedFeature", 9), out
    assert "cannot import pyarrow" in message and "PYSPARK_PYTHON" in message
    assert "spark.pyspark.python" in message and "\n" not in message
    assert out["rows"] == [0, 1, 2]  # nothing committed, nothing lost
