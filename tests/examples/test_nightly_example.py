"""The shipped cron example runs as cron runs it: no TTY, no HOME, no configuration, twice."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from clirun import icectl
from support.tables import empty_table

ROOT = Path(__file__).resolve().parent.parent.parent
SCRIPT = ROOT / "icectl" / "examples" / "nightly.sh"


def _cron_env(**extra: str) -> dict[str, str]:
    # what cron gives a job: a short PATH, no HOME configuration, no warehouse variable
    env = {"PATH": "/usr/bin:/bin", "HOME": "", "ICECTL": f"{shlex.quote(sys.executable)} -m icectl"}
    env.update(extra)
    return env


def _run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(["/bin/sh", str(SCRIPT), *args], capture_output=True, text=True, env=env,
                          stdin=subprocess.DEVNULL, timeout=300, cwd="/")


def test_nightly_script_appends_then_is_a_no_op(tmp_path: Path) -> None:
    table = tmp_path / "wh" / "db" / "events"
    create = subprocess.run([sys.executable, "-m", "icectl", "create", str(table), "--schema", "id long, cat string"],
                            capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    assert create.returncode == 0, create.stderr
    landing = tmp_path / "landing"
    (landing / "2024-06-01").mkdir(parents=True)
    for i, day in enumerate(["2024-06-01", "2024-06-01", "."]):
        pq.write_table(pa.table({"id": pa.array([i, i + 10], pa.int64()), "cat": ["a", "b"]}),
                       landing / day / f"part-{i}.parquet")
    env = _cron_env()

    first = _run(str(table), str(landing), env=env)
    assert first.returncode == 0, first.stderr + first.stdout
    [line] = first.stdout.splitlines()
    log = json.loads(line)
    assert (log["status"], log["appended"], log["added-files"], log["added-records"]) == ("ok", True, 3, 6)
    assert isinstance(log["snapshot-id"], str)  # kept exact as a string
    current = json.loads(subprocess.run([sys.executable, "-m", "icectl", "inspect", "table", str(table), "--json"],
                                        capture_output=True, text=True, timeout=120).stdout)
    assert str(current["current-snapshot-id"]) == log["snapshot-id"]
    assert current["totals"]["total-data-files"] == 3

    second = _run(str(table), str(landing), env=env)
    assert second.returncode == 0, second.stderr + second.stdout
    [line] = second.stdout.splitlines()
    log = json.loads(line)
    assert (log["status"], log["appended"], log["added-files"], log["snapshot-id"]) == ("ok", False, 0, None)
    assert (log["expired-snapshots"], log["deleted-orphans"]) == (0, 0)


def test_nightly_script_reports_a_failing_step(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    landing.mkdir()
    r = _run(str(tmp_path / "no-such-table"), str(landing), env=_cron_env())
    log = json.loads(r.stdout.splitlines()[-1])
    assert r.returncode == 3 and log["exit-code"] == 3  # not found, the documented code
    assert (log["status"], log["step"]) == ("failed", "append") and log["error"]


def test_readme_shows_the_shipped_script() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("```sh\n#!/bin/sh\n# Nightly ingestion") + len("```sh\n")
    assert readme[start:readme.index("```", start)] == SCRIPT.read_text(encoding="utf-8")


# -- the run survives what happens to landing directories -------------------------------------------


def _icectl(*args: str) -> subprocess.CompletedProcess:
    return icectl(*args)



def _table(tmp_path: Path, partition: str | None = None) -> Path:
    table = tmp_path / "wh" / "db" / "events"
    empty_table(table, "id long, cat string", partition=partition)
    return table


def _land(path: Path, ids: list[int], cats: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "cat": cats}), path)
    return path


def _log(r: subprocess.CompletedProcess) -> dict:
    lines = r.stdout.splitlines()
    assert len(lines) == 1, r.stdout + r.stderr
    return json.loads(lines[0])


def _rows(table: Path) -> list[tuple[int, str]]:
    r = _icectl("scan", str(table), "--format", "csv")
    assert r.returncode == 0, r.stderr
    out = []
    for line in r.stdout.splitlines()[1:]:
        i, c = line.split(",")
        out.append((int(i), c))
    return sorted(out)


def test_moving_or_deleting_landing_files_does_not_hurt_the_table(tmp_path: Path) -> None:
    table = _table(tmp_path)
    landing = tmp_path / "landing"
    a = _land(landing / "day59.parquet", [1, 2], ["a", "b"])
    b = _land(landing / "day60.parquet", [3], ["c"])
    log = _log(_run(str(table), str(landing), env=_cron_env()))
    assert (log["status"], log["added-files"], log["added-records"]) == ("ok", 2, 3)
    # the usual housekeeping: archive one file, delete the other
    (tmp_path / "archive").mkdir()
    a.rename(tmp_path / "archive" / a.name)
    b.unlink()
    assert _rows(table) == [(1, "a"), (2, "b"), (3, "c")]
    r = _icectl("check", str(table), "--deep", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["clean"], r.stdout
    # every file the table names is under its location
    files = json.loads(_icectl("inspect", "files", str(table), "--json").stdout)
    paths = [f["file-path"] for f in (files["files"] if isinstance(files, dict) else files)]
    assert paths and all(str(table) in p for p in paths), paths
    again = _run(str(table), str(landing), env=_cron_env())
    assert again.returncode == 0 and _log(again)["status"] == "ok" and _log(again)["appended"] is False


def test_expire_after_a_delete_deletes_no_file_outside_the_table(tmp_path: Path) -> None:
    table = _table(tmp_path)
    landing = tmp_path / "landing"
    _land(landing / "jan04.parquet", [1, 2], ["a", "b"])
    assert _run(str(table), str(landing), env=_cron_env()).returncode == 0
    # a file someone registered in place, outside the table, the old way
    outside = _land(tmp_path / "elsewhere" / "jan05.parquet", [5, 6], ["e", "f"])
    assert _icectl("append", str(table), str(outside)).returncode == 0
    r = _icectl("delete", str(table), "--filter", "id >= 1")
    assert r.returncode == 0, r.stderr
    log = _log(_run(str(table), str(landing), env=_cron_env(KEEP="0s")))
    assert log["status"] == "ok" and log["expired-snapshots"] >= 1
    assert outside.exists() and (landing / "jan04.parquet").exists()
    assert _rows(table) == []
    r = _icectl("expire", str(table), "--older-than", "0s", "--json")
    assert r.returncode == 0 and outside.exists()


def test_the_same_file_under_a_new_name_is_skipped(tmp_path: Path) -> None:
    table = _table(tmp_path)
    landing = tmp_path / "landing"
    first = _land(landing / "export-1.parquet", [1, 2], ["a", "b"])
    assert _log(_run(str(table), str(landing), env=_cron_env()))["added-files"] == 1
    (landing / "retry").mkdir()
    (landing / "retry" / "export-1-copy.parquet").write_bytes(first.read_bytes())
    _land(landing / "export-2.parquet", [3], ["c"])
    log = _log(_run(str(table), str(landing), env=_cron_env()))
    assert (log["status"], log["added-files"], log["skipped-files"]) == ("ok", 1, 2)
    assert _rows(table) == [(1, "a"), (2, "b"), (3, "c")]


def test_a_corrupt_and_a_spanning_file_do_not_block_the_others(tmp_path: Path) -> None:
    table = _table(tmp_path, partition="cat")
    landing = tmp_path / "landing"
    _land(landing / "good.parquet", [1, 2], ["a", "a"])
    _land(landing / "spans.parquet", [3, 4, 5], ["a", "b", None])
    (landing / "corrupt.parquet").write_bytes(b"PAR1 this is not parquet" * 10)
    r = _run(str(table), str(landing), env=_cron_env())
    log = _log(r)
    assert r.returncode == 15 and log["exit-code"] == 15 and log["status"] == "partial", r.stdout
    assert log["quarantined-files"] == [str(landing / "corrupt.parquet")]
    assert (log["added-files"], log["rewritten-files"], log["added-records"]) == (4, 1, 5)
    assert _rows(table) == [(1, "a"), (2, "a"), (3, "a"), (4, "b"), (5, "")]
    parts = json.loads(_icectl("inspect", "partitions", str(table), "--json").stdout)
    assert len(parts if isinstance(parts, list) else parts["partitions"]) == 3
    # the next night: the corrupt file is still quarantined, nothing else appended again
    r = _run(str(table), str(landing), env=_cron_env())
    log = _log(r)
    assert r.returncode == 15 and log["added-files"] == 0 and log["quarantined-files"]


def test_a_rerun_of_the_same_run_commits_nothing(tmp_path: Path) -> None:
    table = _table(tmp_path)
    landing = tmp_path / "landing"
    _land(landing / "a.parquet", [1], ["a"])
    env = _cron_env(RUN_ID="2024-06-01")
    assert _log(_run(str(table), str(landing), env=env))["added-files"] == 1
    _land(landing / "b.parquet", [2], ["b"])  # arrives after the run: tomorrow's
    r = _run(str(table), str(landing), env=env)
    log = _log(r)
    assert r.returncode == 0 and (log["status"], log["appended"], log["added-files"]) == ("ok", False, 0)
    assert _rows(table) == [(1, "a")]
    log = _log(_run(str(table), str(landing), env=_cron_env(RUN_ID="2024-06-02")))
    assert log["added-files"] == 1 and _rows(table) == [(1, "a"), (2, "b")]


def test_a_failing_step_logs_the_error_as_an_object(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    landing.mkdir()
    log = _log(_run(str(tmp_path / "no-such-table"), str(landing), env=_cron_env()))
    assert isinstance(log["error"], dict) and log["error"]["kind"] == "not-found"
    assert log["error"]["exit-code"] == 3 and "no-such-table" in log["error"]["message"]
