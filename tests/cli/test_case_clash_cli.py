"""Names differing only in case (`id` and `ID`) are refused as Spark refuses them (exit 5,
nothing written), unless the user asks for case-sensitive names with --case-sensitive."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from clirun import icectl

from icectl.ops.metadata.create import create_table
from icectl.table.table import Table


def invoke(*args: str):
    return icectl(*args)


def metadata_files(loc: str) -> dict[str, bytes]:
    d = Path(loc) / "metadata"
    return {p.name: p.read_bytes() for p in d.iterdir()}


@pytest.fixture()
def table(tmp_path: Path) -> str:
    loc = str(tmp_path / "t")
    create_table(loc, schema_text="id long, name string, loc struct<lat: double, lon: double>")
    return loc


def _changes(tmp_path: Path) -> str:
    p = tmp_path / "changes.json"
    p.write_text(json.dumps([{"op": "add", "column": "Name", "type": "string"}]))
    return str(p)


def _parquet(tmp_path: Path) -> str:
    p = tmp_path / "upper.parquet"
    pq.write_table(pa.table({"ID": pa.array([1], pa.int64())}), p)
    return str(p)


CLASHES = [
    ("schema", "add", "{t}", "ID", "string"),
    ("schema", "add", "{t}", "loc.LAT", "double"),
    ("schema", "rename", "{t}", "name", "ID"),
    ("schema", "apply", "{t}", "{changes}"),
    ("schema", "union", "{t}", "{parquet}"),
]


@pytest.mark.parametrize("args", CLASHES, ids=[" ".join(a[:2] + a[3:]) for a in CLASHES])
def test_clashing_names_are_refused_unless_case_sensitive(table: str, tmp_path: Path, args) -> None:
    argv = [a.format(t=table, changes=_changes(tmp_path), parquet=_parquet(tmp_path)) for a in args]
    before = metadata_files(table)
    r = invoke(*argv)
    assert r.exit_code == 5, r.output
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "differ only in case" in lines[0]
    assert metadata_files(table) == before
    r = invoke(*argv, "--case-sensitive")
    assert r.exit_code == 0, r.output


def test_a_table_with_a_clash_still_takes_unrelated_changes(table: str) -> None:
    assert invoke("schema", "add", table, "ID", "string", "--case-sensitive").exit_code == 0
    r = invoke("schema", "add", table, "other", "int")
    assert r.exit_code == 0, r.output
    names = [f.name for f in Table.load(table).metadata.schema.fields]
    assert names == ["id", "name", "loc", "ID", "other"]


def test_create_refuses_clashing_names(tmp_path: Path) -> None:
    loc = str(tmp_path / "t")
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "id", "required": False, "type": "long"},
        {"id": 2, "name": "ID", "required": False, "type": "string"}]}))
    r = subprocess.run([sys.executable, "-m", "icectl", "create", loc, "--schema-file", str(schema)],
                       capture_output=True, text=True)
    assert r.returncode == 5, r.stderr
    assert "differ only in case" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not os.path.exists(os.path.join(loc, "metadata", "v1.metadata.json"))


def test_schema_add_as_a_user_runs_it(table: str) -> None:
    r = subprocess.run([sys.executable, "-m", "icectl", "schema", "add", table, "ID", "string"],
                       capture_output=True, text=True)
    assert r.returncode == 5 and "'id' and 'ID' differ only in case" in r.stderr, r.stderr
