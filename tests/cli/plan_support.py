"""A partitioned table for the `icectl plan` tests, made and appended to through the CLI."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
from typer.testing import CliRunner

from icectl.cli.app import app

runner = CliRunner()


def make(tmp_path) -> str:
    """The table ``tmp_path/t`` (id long not null, cat string; partitioned by cat)."""
    loc = str(tmp_path / "t")
    r = runner.invoke(app, ["create", loc, "--schema", "id long not null, cat string",
                            "--partition", "cat"])
    assert r.exit_code == 0, r.output
    return loc


def append(tmp_path, loc: str, name: str, ids, cat: str) -> int:
    """Append the rows ``ids`` of partition ``cat`` (a Parquet file ``name``); the snapshot id."""
    p = tmp_path / "in" / name
    p.parent.mkdir(parents=True, exist_ok=True)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("cat", pa.string())])
    pq.write_table(pa.table([pa.array(ids, pa.int64()), pa.array([cat] * len(ids))], schema=schema),
                   str(p))
    r = runner.invoke(app, ["append", loc, str(p), "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)["snapshot-id"]
