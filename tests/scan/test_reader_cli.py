"""`icectl scan` run as a user runs it: a child process, no TTY."""

from __future__ import annotations

import json
import subprocess

import pyarrow.parquet as pq
import pytest
from clirun import icectl as run
from support.tables import empty_table, write_text

ROWS = [
    '{"id": 1, "name": "a", "d": "2024-01-01", "ts": "2024-01-01T10:00:00+00:00", "amt": "1.50", "ok": true, "f": 0.5}',
    '{"id": 2, "name": null, "d": "2024-01-02", "ts": "2024-01-02T10:00:00+00:00", "amt": "2.25", "ok": false, "f": null}',
    '{"id": 3, "name": "c", "d": null, "ts": "2024-01-02T11:00:00.000001+00:00", "amt": null, "ok": null, "f": 1.0}',
]


def icectl(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    r = run(*args)
    if check:
        assert r.returncode == 0, r.stderr
    return r



@pytest.fixture(scope="module")
def table(tmp_path_factory) -> str:
    tmp = tmp_path_factory.mktemp("scan")
    t = empty_table(tmp / "t",
                    "id long, name string, d date, ts timestamptz, amt decimal(10,2), ok boolean, f double",
                    partition="day(ts)")
    write_text(t, "\n".join(ROWS) + "\n", suffix=".jsonl")
    return t.location


def test_jsonl_values_are_the_json_single_value_form(table):
    out = icectl("scan", table, "--format", "jsonl").stdout.splitlines()
    got = sorted((json.loads(line) for line in out), key=lambda r: r["id"])
    assert got == [
        {"id": 1, "name": "a", "d": "2024-01-01", "ts": "2024-01-01T10:00:00+00:00",
         "amt": "1.50", "ok": True, "f": 0.5},
        {"id": 2, "name": None, "d": "2024-01-02", "ts": "2024-01-02T10:00:00+00:00",
         "amt": "2.25", "ok": False, "f": None},
        {"id": 3, "name": "c", "d": None, "ts": "2024-01-02T11:00:00.000001+00:00",
         "amt": None, "ok": None, "f": 1.0},
    ]


def test_filter_columns_and_metadata(table):
    out = icectl("scan", table, "--filter", "amt > 2 or d is null", "--columns", "id,amt",
                 "--format", "jsonl", "--with-metadata").stdout.splitlines()
    got = sorted((json.loads(line) for line in out), key=lambda r: r["id"])
    assert [(r["id"], r["amt"]) for r in got] == [(2, "2.25"), (3, None)]
    assert list(got[0]) == ["id", "amt", "_file", "_pos", "_spec_id", "_partition"]
    assert got[0]["_partition"] == {"ts_day": "2024-01-02"}  # partition field names, not ids
    assert got[0]["_file"].endswith(".parquet") and got[0]["_spec_id"] == 0


def test_csv_table_count_and_limit(table):
    lines = icectl("scan", table, "--format", "csv", "--columns", "id,name").stdout.splitlines()
    assert lines[0] == "id,name" and sorted(lines[1:]) == ["1,a", "2,", "3,c"]
    text = icectl("scan", table, "--columns", "id,ok").stdout.splitlines()
    assert text[0].split() == ["id", "ok"] and len(text) == 4
    assert icectl("scan", table, "--count").stdout.strip() == "3"
    assert icectl("scan", table, "--count", "--filter", "id >= 2").stdout.strip() == "2"
    assert len(icectl("scan", table, "--format", "jsonl", "--limit", "2").stdout.splitlines()) == 2


def test_parquet_output(table, tmp_path):
    out = tmp_path / "o.parquet"
    icectl("scan", table, "--format", "parquet", "--output", str(out), "--filter", "id < 3")
    t = pq.read_table(out)
    assert sorted(t.column("id").to_pylist()) == [1, 2]
    assert t.schema.field("amt").type.scale == 2


@pytest.mark.parametrize("args, code", [(("--columns", "nope"), 3), (("--filter", "nope = 1"), 3),
                                        (("--format", "xml"), 2), (("--format", "parquet"), 2)])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(table, tmp_path, args, code):
    """A bad value is 2; an unknown column is 3 (not found), as in every command."""
    out = tmp_path / "never.jsonl"
    extra = () if args == ("--format", "parquet") else ("--output", str(out))
    r = icectl("scan", table, *args, *extra, check=False)
    assert r.returncode == code, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert r.stdout == "" and not out.exists()
    assert list(tmp_path.iterdir()) == []


def test_missing_table_is_not_found(tmp_path):
    r = icectl("scan", str(tmp_path / "none"), check=False)
    assert r.returncode == 3 and len(r.stderr.strip().splitlines()) == 1
