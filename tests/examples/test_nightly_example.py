"""The shipped cron example runs as cron runs it: no TTY, no HOME, no configuration, twice."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

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
    start = readme.index("```sh\n#!/bin/sh\n# Nightly maintenance") + len("```sh\n")
    assert readme[start:readme.index("```", start)] == SCRIPT.read_text(encoding="utf-8")
