"""Small things a user meets: Spark's timestamp type names, times in messages, day partitions in
--explain, a full disk on stdout, a missing branch, a misspelt column, completion values."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from clirun import icectl
from support.tables import empty_table, write_text


def _icectl(*args: str) -> subprocess.CompletedProcess:
    return icectl(*args)



@pytest.fixture
def events(tmp_path: Path) -> str:
    t = empty_table(tmp_path / "wh" / "db" / "events", "id long, ts timestamptz, cat string",
                    partition="day(ts)")
    write_text(t, "id,ts,cat\n1,2024-02-27T10:00:00Z,a\n2,2024-02-28T10:00:00Z,b\n")
    return t.location


def test_spark_timestamp_names_are_accepted(tmp_path: Path) -> None:
    loc = str(tmp_path / "t")
    r = _icectl("create", loc, "--schema", "a timestamp_ntz, b timestamp with time zone, "
                "c timestamp without time zone not null, d timestamp", "--json")
    assert r.returncode == 0, r.stderr
    r = _icectl("inspect", "schema", loc, "--json")
    types = {f["name"]: f["type"] for f in json.loads(r.stdout)["columns"]}
    assert types == {"a": "timestamp", "b": "timestamptz", "c": "timestamp", "d": "timestamp"}
    bad = _icectl("create", str(tmp_path / "u"), "--schema", "a timestamp with zone")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1


def test_explain_shows_a_day_as_a_date(events: str) -> None:
    r = _icectl("plan", events, "--filter", "ts >= '2024-02-28T00:00:00Z'", "--explain")
    assert r.returncode == 0, r.stderr
    text = r.stdout + r.stderr
    assert "ts_day=2024-02-27" in text and "ts_day=19780" not in text


def test_a_typed_time_is_shown_as_a_time(events: str) -> None:
    r = _icectl("scan", events, "--as-of", "2000-01-01")
    assert r.returncode == 3
    assert "2000-01-01T00:00:00Z" in r.stderr and "946684800000" not in r.stderr
    r = _icectl("snapshot", "rollback", events, "--to-timestamp", "2000-01-01T00:00:00.250Z")
    assert r.returncode == 5 and "2000-01-01T00:00:00.250Z" in r.stderr, r.stderr


def test_a_full_disk_on_stdout_is_a_storage_error(events: str) -> None:
    with open("/dev/full", "w") as full:
        r = subprocess.run([sys.executable, "-m", "icectl", "inspect", "files", events, "--json"],
                           stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert r.returncode == 7, r.stderr
    line, obj = r.stderr.strip().splitlines()  # the error line, and with --json its object
    assert "No space left" in line and json.loads(obj)["error"]["kind"] == "storage"
    with open("/dev/full", "w") as full:
        r = subprocess.run([sys.executable, "-m", "icectl", "plan", events], stdout=full,
                           stderr=subprocess.PIPE, text=True, timeout=120)
    assert r.returncode == 7 and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_a_missing_branch_is_not_found(events: str) -> None:
    r = _icectl("delete", events, "--filter", "id = 1", "--branch", "nob")
    assert r.returncode == 3 and "nob" in r.stderr


def test_a_misspelt_column_gets_a_suggestion(events: str) -> None:
    r = _icectl("scan", events, "--filter", "idd = 1")
    assert r.returncode == 3 and "did you mean 'id'" in r.stderr
    r = _icectl("plan", events, "--columns", "catt")
    assert r.returncode == 3 and "did you mean 'cat'" in r.stderr, r.stderr
    r = _icectl("scan", events, "--filter", "zzzzzz = 1")
    assert r.returncode == 3 and "did you mean" not in r.stderr


def _complete(words: str) -> list[str]:
    cword = len(words.split()) - (0 if words.endswith(" ") else 1)
    env = dict(os.environ, _ICECTL_COMPLETE="complete_bash", COMP_WORDS=words, COMP_CWORD=str(cword))
    r = subprocess.run([sys.executable, "-m", "icectl"], capture_output=True, text=True, env=env, timeout=60)
    return r.stdout.split()


@pytest.mark.parametrize("words, expected", [
    ("icectl append t f --format ", {"parquet", "orc", "avro"}),
    ("icectl write t f --format ", {"parquet", "csv", "json"}),
    ("icectl delete t --mode ", {"merge-on-read", "copy-on-write"}),
    ("icectl compact t --engine ", {"local", "spark"}),
    ("icectl append t f --on-error ", {"fail", "skip"}),
])
def test_completion_offers_option_values(words: str, expected: set[str]) -> None:
    assert expected <= set(_complete(words))


def test_fish_completion_completes_paths() -> None:
    root = Path(__file__).resolve().parent.parent.parent
    fish = (root / "completions" / "icectl.fish").read_text(encoding="utf-8")
    assert "--no-files" not in fish
