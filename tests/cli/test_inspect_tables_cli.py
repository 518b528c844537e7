"""`inspect partitions / entries / all-files / position-deletes` run as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from clirun import icectl


def run(*args: str) -> subprocess.CompletedProcess:
    return icectl(*args, env={"ICECTL_WAREHOUSE": None, "ICECTL_DEBUG": None})



def jrun(*args: str):
    r = run(*args, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _parquet(path: Path, ids: list[int], cat: str) -> str:
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "cat": pa.array([cat] * len(ids))}), path)
    return str(path)


def test_partition_stats_entries_and_all_files(tmp_path: Path) -> None:
    loc = str(tmp_path / "t")
    assert run("create", loc, "--schema", "id long, cat string", "--partition", "cat").returncode == 0
    a = _parquet(tmp_path / "a.parquet", [1, 2, 3], "x")
    b = _parquet(tmp_path / "b.parquet", [4, 5], "y")
    c = _parquet(tmp_path / "c.parquet", [6], "x")
    first = jrun("append", loc, a, b)
    second = jrun("append", loc, c)

    parts = {p["partition"]["cat"]: p for p in jrun("inspect", "partitions", loc)}
    assert set(parts) == {"x", "y"}
    x, y = parts["x"], parts["y"]
    assert (x["record-count"], x["file-count"], y["record-count"], y["file-count"]) == (4, 2, 2, 1)
    assert x["total-data-file-size-in-bytes"] == os.path.getsize(a) + os.path.getsize(c)
    assert x["last-updated-snapshot-id"] == second["snapshot-id"]
    assert y["last-updated-snapshot-id"] == first["snapshot-id"]
    assert x["spec-id"] == 0 and x["position-delete-file-count"] == 0
    # the first snapshot's view, chosen with --snapshot, knows only its own files
    old = jrun("inspect", "partitions", loc, "--snapshot", str(first["snapshot-id"]))
    assert sorted((p["partition"]["cat"], p["record-count"]) for p in old) == [("x", 3), ("y", 2)]

    entries = jrun("inspect", "entries", loc)
    # a fast append keeps the first manifest: its entries still say "added" in snapshot 1
    assert sorted((e["data-file"]["file-path"], e["status"], e["sequence-number"]) for e in entries) == [
        (a, 1, 1), (b, 1, 1), (c, 1, 2)]
    by_path = {e["data-file"]["file-path"]: e for e in entries}
    assert by_path[c]["snapshot-id"] == second["snapshot-id"]
    assert by_path[a]["data-file"]["record-count"] == 3
    assert by_path[a]["data-file"]["value-counts"] == {"1": 3, "2": 3}

    # every manifest read once: a, b from the first snapshot's manifest, c from the second's
    assert sorted(f["file-path"] for f in jrun("inspect", "all-files", loc)) == sorted([a, b, c])
    assert jrun("inspect", "position-deletes", loc) == []

    text = run("inspect", "partitions", loc)
    assert text.returncode == 0 and "cat=x" in text.stdout
    assert run("inspect", "partitions", loc, "--spec").stdout == run("inspect", "spec", loc).stdout
