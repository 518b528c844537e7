"""`--engine` of expire, orphans and rewrite-manifests from the command line: bad choices are
usage errors, a missing pyspark is one line naming the extra (exit 9), and in every case the
table is left exactly as it was (no new metadata, no file deleted)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from icectl.errors import UnsupportedFeature
from support.tables import small_files

COMMANDS = [("expire", "--older-than", "0d", "--retain-last", "1"),
            ("orphans", "--older-than", "0d", "--delete", "--allow-recent"),
            ("rewrite-manifests",)]


def run(*args: str, pre: str = "pass") -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    code = f"import sys; {pre}; from icectl.cli.app import main; sys.argv = ['icectl'] + sys.argv[1:]; main()"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120,
                          env=env)


def tree(loc: str) -> list[tuple[str, int]]:
    return sorted((os.path.relpath(os.path.join(r, n), loc), os.stat(os.path.join(r, n)).st_mtime_ns)
                  for r, _, ns in os.walk(loc) for n in ns)


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> str:
    loc = str(tmp_path_factory.mktemp("t") / "t")
    small_files(loc, 3)
    Path(loc, "data", "stray.parquet").write_bytes(b"x")  # an orphan for `orphans --delete`
    return loc


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: c[0])
def test_engine_choices_are_checked_before_anything_is_written(table, cmd):
    before = tree(table)
    r = run(cmd[0], table, *cmd[1:], "--engine", "flink")
    assert r.returncode == 2 and "--engine must be local or spark" in r.stderr, r.stderr
    r = run(cmd[0], table, *cmd[1:], "--spark-master", "local[2]")
    assert r.returncode == 2 and "--spark-master needs --engine spark" in r.stderr, r.stderr
    r = run(cmd[0], table, *cmd[1:], "--engine", "spark", pre="sys.modules['pyspark'] = None")
    assert r.returncode == UnsupportedFeature.exit_code, r.stderr
    assert r.stderr.strip().count("\n") == 0 and "icectl[spark]" in r.stderr
    assert tree(table) == before
