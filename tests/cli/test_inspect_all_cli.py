"""`inspect all-manifests / all-entries / ancestors` run as a user runs them, on a table with a
branch that moves on its own; each manifest is read once by all-entries however many snapshots
share it."""

from __future__ import annotations

import json
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


def _parquet(path: Path, ids: list[int]) -> str:
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "cat": pa.array([f"c{i % 2}" for i in ids])}), path)
    return str(path)


def _table(tmp_path: Path) -> tuple[str, list[int], int]:
    """Three appends on main, then a branch with one append of its own; (location, main's
    snapshot ids oldest first, the branch's head)."""
    loc = str(tmp_path / "t")
    assert run("create", loc, "--schema", "id long, cat string").returncode == 0
    main = [jrun("append", loc, _parquet(tmp_path / f"{i}.parquet", [i * 10, i * 10 + 1]))["snapshot-id"]
            for i in range(3)]
    assert run("branch", "create", loc, "audit").returncode == 0
    head = jrun("append", loc, _parquet(tmp_path / "b.parquet", [99]), "--branch", "audit")["snapshot-id"]
    return loc, main, head


def test_all_manifests_lists_each_snapshots_manifests(tmp_path: Path) -> None:
    loc, main, head = _table(tmp_path)
    rows = jrun("inspect", "all-manifests", loc)
    by_snapshot: dict[int, list[dict]] = {}
    for r in rows:
        by_snapshot.setdefault(r["reference-snapshot-id"], []).append(r)
    # fast appends keep the earlier manifests: snapshot n lists n manifests; the branch's head
    # lists main's three and its own
    assert {s: len(ms) for s, ms in by_snapshot.items()} == {main[0]: 1, main[1]: 2, main[2]: 3, head: 4}
    assert list(rows[0]) == [
        "content", "path", "length", "partition-spec-id", "added-snapshot-id", "added-data-files-count",
        "existing-data-files-count", "deleted-data-files-count", "added-delete-files-count",
        "existing-delete-files-count", "deleted-delete-files-count", "partition-summaries",
        "reference-snapshot-id"]
    for ms in by_snapshot.values():
        for m in ms:
            assert (m["content"], m["added-data-files-count"], m["added-delete-files-count"]) == (0, 1, 0)
            assert m["partition-summaries"] == []  # unpartitioned
    # the same view as `inspect manifests` of each snapshot
    for sid, ms in by_snapshot.items():
        assert sorted(m["path"] for m in ms) == sorted(
            m["path"] for m in jrun("inspect", "manifests", loc, "--snapshot", str(sid)))
    text = run("inspect", "all-manifests", loc)
    assert text.returncode == 0 and str(head) in text.stdout


def test_all_entries_reads_each_manifest_once(tmp_path: Path, monkeypatch) -> None:
    from icectl.io.manifest import records
    from icectl.ops.read.inspect_all import all_entries_table
    from icectl.table.table import Table

    loc, main, head = _table(tmp_path)
    reads: list[str] = []
    real = records.load_manifest

    def counting(io, m, *a, **k):
        reads.append(m.manifest_path)
        return real(io, m, *a, **k)

    monkeypatch.setattr(records, "load_manifest", counting)
    t = Table.load(loc)
    rows = all_entries_table(t.io, t.metadata)
    assert len(reads) == len(set(reads)) == 4  # ten (snapshot, manifest) pairs, four manifests
    assert sorted(r["data-file"]["record-count"] for r in rows) == [1, 2, 2, 2]
    assert {r["snapshot-id"] for r in rows} == {*main, head}
    monkeypatch.undo()
    cli = jrun("inspect", "all-entries", loc)
    assert cli == json.loads(json.dumps(rows))
    m = cli[0]["readable-metrics"]
    assert list(m) == ["cat", "id"]  # by column name, as the reference orders them
    assert set(m["id"]) == {"column-size", "value-count", "null-value-count", "nan-value-count",
                            "lower-bound", "upper-bound"}
    lows = sorted(r["readable-metrics"]["id"]["lower-bound"] for r in cli)
    assert lows == [0, 10, 20, 99]  # bounds as values, not bytes


def test_ancestors_of_the_current_snapshot_an_id_and_a_ref(tmp_path: Path) -> None:
    loc, main, head = _table(tmp_path)
    times = {s["snapshot-id"]: s["timestamp-ms"] for s in jrun("inspect", "snapshots", loc)}
    assert jrun("inspect", "ancestors", loc) == [{"snapshot-id": s, "timestamp": times[s]} for s in main[::-1]]
    assert [a["snapshot-id"] for a in jrun("inspect", "ancestors", loc, str(main[1]))] == [main[1], main[0]]
    assert [a["snapshot-id"] for a in jrun("inspect", "ancestors", loc, "--ref", "audit")] == [head, *main[::-1]]
    missing = run("inspect", "ancestors", loc, "42", "--json")
    assert missing.returncode == 3 and missing.stdout == "" and "42" in missing.stderr
    both = run("inspect", "ancestors", loc, str(main[0]), "--ref", "audit")
    assert both.returncode != 0 and both.stdout == ""
    text = run("inspect", "ancestors", loc)
    assert text.returncode == 0 and str(main[0]) in text.stdout
