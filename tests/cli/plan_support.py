"""A partitioned table for the `icectl plan` and cache tests (support.tables.empty_table), appended
to through the CLI (tests/clirun.py)."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
from clirun import icectl

from support.tables import empty_table


def make(tmp_path) -> str:
    """The table ``tmp_path/t`` (id long not null, cat string; partitioned by cat)."""
    return empty_table(tmp_path / "t", "id long not null, cat string", partition="cat").location


def append(tmp_path, loc: str, name: str, ids, cat: str) -> int:
    """Append the rows ``ids`` of partition ``cat`` (a Parquet file ``name``); the snapshot id."""
    p = tmp_path / "in" / name
    p.parent.mkdir(parents=True, exist_ok=True)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("cat", pa.string())])
    pq.write_table(pa.table([pa.array(ids, pa.int64()), pa.array([cat] * len(ids))], schema=schema),
                   str(p))
    r = icectl("append", loc, str(p), "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["snapshot-id"]
