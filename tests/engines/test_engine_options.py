"""Engine choice from the command line, the Spark engine's pieces that need no JVM (a missing
pyspark, the shipped package, errors coming back from executors) and the many-file write."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from icectl.engines.spark import _task_error, package_zip
from icectl.errors import UnsupportedFeature, ValidationError
from icectl.table.table import Table
from support.tables import empty_table


def icectl(*args: str, pre: str = "") -> subprocess.CompletedProcess:
    code = (f"import sys; {pre}; from icectl.cli.app import main; sys.argv = ['icectl'] + sys.argv[1:]; main()"
            if pre else None)
    cmd = [sys.executable, "-c", code, *args] if code else [sys.executable, "-m", "icectl", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def table_and_inputs(tmp_path: Path, n: int = 3) -> tuple[str, list[str]]:
    loc = empty_table(tmp_path / "t", "id long not null, cat string", partition="cat").location
    files = []
    for i in range(n):
        p = tmp_path / f"in{i}.csv"
        p.write_text(f"id,cat\n{i},a\n{i + 100},b\n")
        files.append(str(p))
    return loc, files


def test_several_inputs_are_one_snapshot_written_by_worker_tasks(tmp_path: Path) -> None:
    loc, files = table_and_inputs(tmp_path, 4)
    r = icectl("write", loc, *files, "--workers", "2", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["rows-written"] == 8 and out["added-files"] == 8 and out["sequence-number"] == 1
    assert out["input-format"] == "csv"
    # each input file was a task: its index leads the names of the files it wrote
    prefixes = sorted({Path(f["file-path"]).name[:5] for f in out["files"]})
    assert prefixes == ["00000", "00001", "00002", "00003"]
    scan = icectl("scan", loc, "--format", "jsonl")
    assert sorted(json.loads(line)["id"] for line in scan.stdout.splitlines()) == [0, 1, 2, 3, 100, 101, 102, 103]


def test_a_failing_input_commits_nothing_and_leaves_no_file(tmp_path: Path) -> None:
    loc, files = table_and_inputs(tmp_path, 3)
    bad = tmp_path / "bad.csv"
    bad.write_text("id,cat\n,a\n")
    r = icectl("write", loc, *files, str(bad), "--workers", "2")
    assert r.returncode == ValidationError.exit_code, r.stderr
    assert r.stderr.strip().count("\n") == 0 and "required" in r.stderr
    assert list(Path(loc).rglob("*.parquet")) == []  # the good inputs' files were removed too
    assert Table.load(loc).metadata.current_snapshot_id is None
    r = icectl("write", loc, files[0], "-")
    assert r.returncode == 2 and "stdin" in r.stderr
    r = icectl("write", loc, files[0], str(tmp_path / "nope.csv"))
    assert r.returncode == 3 and "nope.csv" in r.stderr


def test_engine_option_errors_are_usage_errors(tmp_path: Path) -> None:
    loc, files = table_and_inputs(tmp_path, 2)
    r = icectl("write", loc, *files, "--engine", "flink")
    assert r.returncode == 2 and "--engine must be local or spark" in r.stderr
    r = icectl("write", loc, *files, "--spark-master", "local[2]")
    assert r.returncode == 2 and "--spark-master needs --engine spark" in r.stderr
    r = icectl("write", loc, *files, "--workers", "0")
    assert r.returncode == 2


def test_a_missing_pyspark_is_one_line_naming_the_extra(tmp_path: Path) -> None:
    loc, files = table_and_inputs(tmp_path, 2)
    r = icectl("write", loc, *files, "--engine", "spark", pre="sys.modules['pyspark'] = None")
    assert r.returncode == UnsupportedFeature.exit_code, r.stderr
    assert r.stderr.strip().count("\n") == 0
    assert "icectl[spark]" in r.stderr and "pyspark" in r.stderr


def test_errors_from_executors_keep_their_kind_or_become_one_line() -> None:
    java = ("An error occurred while calling o1.collect.\n: org.apache.spark.SparkException: Job aborted\n"
            "org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
            '  File "x.py", line 1, in f\n'
            "icectl.errors.ValidationError: column id is required\n\n\tat org.apache...\n")
    e = _task_error(RuntimeError(java))
    assert isinstance(e, ValidationError) and str(e) == "column id is required"
    other = _task_error(RuntimeError(java.replace("icectl.errors.ValidationError", "ZeroDivisionError")))
    assert isinstance(other, RuntimeError)
    assert str(other) == "a task failed in a Spark executor: ZeroDivisionError: column id is required"
    plain = ValueError("no traceback here")
    assert _task_error(plain) is plain


def test_the_shipped_package_holds_icectl(tmp_path: Path) -> None:
    path = package_zip(str(tmp_path))
    names = set(zipfile.ZipFile(path).namelist())
    assert {"icectl/__init__.py", "icectl/engines/spark.py", "icectl/ops/maintain/rewrite_task.py"} <= names
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__]))


def test_progress_shows_on_a_terminal_only(tmp_path: Path) -> None:
    import os
    import pty

    loc, files = table_and_inputs(tmp_path, 3)
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "icectl", "write", loc, *files, "--workers", "1"],
                            stdout=subprocess.PIPE, stderr=slave, env={**os.environ, "COLUMNS": "120"})
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=120)
    os.close(master)
    assert proc.returncode == 0
    shown = b"".join(chunks).decode("utf-8", "replace")
    assert "input files" in shown and "3/3" in shown  # tasks done of all
    assert "B/" in shown  # input bytes done of all
    piped = icectl("write", loc, *files, "--workers", "1")
    assert piped.returncode == 0 and "input files" not in piped.stderr
