"""Commands on a table whose current snapshot is unreadable (its manifest list or a manifest is
missing): metadata-only changes commit with a warning so the table stays repairable; writes
refuse (exit 8) and leave nothing behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icectl.io.manifest import records as avro
from icectl.table.table import Table
from clirun import icectl

ICECTL = [sys.executable, "-m", "icectl"]


def run(*args: str) -> subprocess.CompletedProcess:
    return icectl(*args)



def files(loc: str) -> set[str]:
    return {str(p) for p in Path(loc).rglob("*") if p.is_file()}


@pytest.fixture(params=["manifest-list", "manifest"])
def broken(request, tmp_path: Path) -> str:
    loc = str(tmp_path / "t")
    assert run("create", loc, "--schema", "id long, name string").returncode == 0
    rows = tmp_path / "rows.csv"
    rows.write_text("id,name\n1,a\n2,b\n")
    assert run("write", loc, str(rows)).returncode == 0
    t = Table.load(loc)
    snap = t.metadata.current_snapshot()
    if request.param == "manifest-list":
        os.unlink(snap.manifest_list)
    else:
        os.unlink(avro.load_manifest_list(t.io, snap.manifest_list)[0].manifest_path)
    return loc


def test_write_and_append_refuse_and_write_nothing(broken: str, tmp_path: Path) -> None:
    rows = tmp_path / "more.csv"
    rows.write_text("id,name\n3,c\n")
    before = files(broken)
    r = run("write", broken, str(rows))
    assert r.returncode == 8, r.stderr
    assert "current snapshot" in r.stderr and "unreadable" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert files(broken) == before
    data = str(tmp_path / "more.parquet")
    pq.write_table(pa.table({"id": pa.array([4], pa.int64()), "name": pa.array(["d"])}), data)
    before = files(broken)
    r = run("append", broken, data)
    assert r.returncode == 8 and "unreadable" in r.stderr, r.stderr
    assert files(broken) == before


def test_metadata_only_changes_commit_with_a_warning(broken: str) -> None:
    version = Table.load(broken).version
    r = run("properties", "set", broken, "owner=me", "--json")
    assert r.returncode == 0, r.stderr
    warnings = json.loads(r.stdout)["warnings"]
    assert len(warnings) == 1 and "current snapshot" in warnings[0] and "unreadable" in warnings[0]
    r = run("schema", "add", broken, "extra", "int")
    assert r.returncode == 0, r.stderr
    assert "warning: the table's current snapshot" in r.stderr
    t = Table.load(broken)
    assert t.version == version + 2 and t.metadata.schema.find_field("extra") is not None
