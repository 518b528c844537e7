"""Write-audit-publish through the CLI: `--wap-id` on every command that writes data, `inspect
snapshots`, `scan --snapshot`, `snapshot publish`, and the refusals (exit codes, nothing written)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from clirun import icectl, icectl_json

EXIT_VALIDATION, EXIT_NOT_FOUND, EXIT_INVALID, EXIT_DUPLICATE = 5, 3, 2, 16


def ok(*args) -> str:
    r = icectl(*map(str, args))
    assert r.exit_code == 0, r.output
    return r.stdout


def rows(loc, *extra) -> list[dict]:
    out = ok("scan", loc, "--format", "jsonl", *extra)
    return sorted((json.loads(line) for line in out.splitlines() if line), key=lambda r: r["id"])


def snapshots(loc) -> dict[int, dict]:
    return {s["snapshot-id"]: s for s in icectl_json("inspect", "snapshots", str(loc))}


def main_head(loc) -> int:
    return icectl_json("inspect", "table", str(loc))["current-snapshot-id"]


def state(root: Path) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def table(tmp_path):
    loc = tmp_path / "t"
    ok("create", loc, "--schema", "id long not null, p string", "--partition", "p",
       "--property", "write.wap.enabled=true")
    (tmp_path / "a.csv").write_text("id,p\n1,a\n2,b\n3,a\n")
    ok("write", loc, tmp_path / "a.csv")
    return loc


def staged_by(loc, wap_id) -> dict:
    found = [s for s in snapshots(loc).values() if s["wap-id"] == wap_id]
    assert len(found) == 1, found
    return found[0]


def test_every_data_command_stages_and_main_stays(table, tmp_path):
    head = main_head(table)
    before = rows(table)
    (tmp_path / "b.csv").write_text("id,p\n10,a\n")
    (tmp_path / "u.csv").write_text("id,p\n2,c\n11,b\n")
    (tmp_path / "k.csv").write_text("id\n3\n")
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": pa.array([20], pa.int64()), "p": ["a"]}), tmp_path / "x.parquet")
    runs = {
        "w-write": ["write", table, tmp_path / "b.csv"],
        "w-append": ["append", table, tmp_path / "x.parquet"],
        "w-cow": ["delete", table, "--filter", "id = 1", "--mode", "copy-on-write"],
        "w-mor": ["delete", table, "--filter", "id = 1", "--mode", "merge-on-read"],
        "w-drop": ["delete", table, "--filter", "p = 'b'"],  # whole files: metadata-only
        "w-eq": ["delete", table, "--equality", "id", "--from", tmp_path / "k.csv"],
        "w-upsert": ["upsert", table, tmp_path / "u.csv", "--key", "id"],
    }
    for wap_id, args in runs.items():
        r = icectl(*map(str, args), "--wap-id", wap_id)
        assert r.exit_code == 0, r.output
        assert f"with WAP id {wap_id!r}" in r.stderr
        s = staged_by(table, wap_id)
        assert s["staged"] is True and s["refs"] == [] and s["summary"]["wap.id"] == wap_id
        assert s["parent-snapshot-id"] == head  # on top of main's head, which did not move
        assert main_head(table) == head and rows(table) == before
    # the audit: each staged snapshot reads as main plus its change
    assert [r["id"] for r in rows(table, "--snapshot", staged_by(table, "w-write")["snapshot-id"])] == [1, 2, 3, 10]
    assert [r["id"] for r in rows(table, "--snapshot", staged_by(table, "w-cow")["snapshot-id"])] == [2, 3]
    assert [r["id"] for r in rows(table, "--snapshot", staged_by(table, "w-drop")["snapshot-id"])] == [1, 3]
    assert [r["id"] for r in rows(table, "--snapshot", staged_by(table, "w-upsert")["snapshot-id"])] == [1, 2, 3, 11]
    text = ok("inspect", "snapshots", table)
    assert "w-write (staged)" in text


def test_publish_fast_forwards_then_refuses_the_same_id(table, tmp_path):
    (tmp_path / "b.csv").write_text("id,p\n10,a\n")
    ok("write", table, tmp_path / "b.csv", "--wap-id", "w1")
    staged = staged_by(table, "w1")["snapshot-id"]
    head = main_head(table)
    out = icectl_json("snapshot", "publish", str(table), "w1")
    assert out == {"location": str(table), "wap-id": "w1", "source-snapshot-id": staged, "snapshot-id": staged,
                   "previous-snapshot-id": head, "created-snapshot": False, "metadata-file": out["metadata-file"]}
    assert main_head(table) == staged and staged_by(table, "w1")["staged"] is False
    assert [r["id"] for r in rows(table)] == [1, 2, 3, 10]
    before = state(table)
    r = icectl("snapshot", "publish", str(table), "w1")
    assert r.exit_code == EXIT_DUPLICATE and r.stderr.count("\n") == 1 and "already published" in r.stderr
    r = icectl("snapshot", "cherry-pick", str(table), str(staged))  # by id: main's head already
    assert r.exit_code == EXIT_DUPLICATE, r.output
    assert state(table) == before


def test_publish_after_main_moved_cherry_picks(table, tmp_path):
    (tmp_path / "b.csv").write_text("id,p\n10,a\n")
    (tmp_path / "c.csv").write_text("id,p\n30,b\n")
    ok("write", table, tmp_path / "b.csv", "--wap-id", "w1")
    staged = staged_by(table, "w1")["snapshot-id"]
    ok("write", table, tmp_path / "c.csv")  # main moves on: no fast-forward possible
    head = main_head(table)
    out = icectl_json("snapshot", "publish", str(table), "w1")
    assert out["created-snapshot"] is True and out["source-snapshot-id"] == staged
    assert out["previous-snapshot-id"] == head and out["snapshot-id"] == main_head(table) != staged
    new = snapshots(table)[out["snapshot-id"]]
    assert new["operation"] == "append" and new["parent-snapshot-id"] == head
    assert new["summary"]["published-wap-id"] == "w1" and new["summary"]["source-snapshot-id"] == str(staged)
    assert "wap.id" not in new["summary"] and new["wap-id"] is None
    assert new["summary"]["added-records"] == "1" and new["summary"]["total-records"] == "5"
    assert new["summary"]["changed-partition-count"] == "1"
    assert staged_by(table, "w1")["staged"] is True  # never reached by main itself
    assert [r["id"] for r in rows(table)] == [1, 2, 3, 10, 30]
    before = state(table)
    for args in (["snapshot", "publish", table, "w1"], ["snapshot", "cherry-pick", table, staged]):
        r = icectl(*map(str, args))
        assert r.exit_code == EXIT_DUPLICATE, r.output
    assert state(table) == before


def test_refusals_write_nothing(table, tmp_path):
    (tmp_path / "b.csv").write_text("id,p\n10,a\n")
    ok("properties", "set", table, "write.wap.enabled=false")
    before = state(tmp_path)
    r = icectl("write", str(table), str(tmp_path / "b.csv"), "--wap-id", "w1")
    assert r.exit_code == EXIT_VALIDATION and "write.wap.enabled" in r.stderr and r.stderr.count("\n") == 1
    r = icectl("delete", str(table), "--filter", "id = 1", "--wap-id", "w1")
    assert r.exit_code == EXIT_VALIDATION and "write.wap.enabled" in r.stderr
    ok("properties", "unset", table, "write.wap.enabled")
    before = state(tmp_path)
    r = icectl("append", str(table), str(tmp_path / "b.csv"), "--wap-id", "w1")
    assert r.exit_code == EXIT_VALIDATION and "write.wap.enabled" in r.stderr
    ok("properties", "set", table, "write.wap.enabled=true")
    before = state(tmp_path)
    r = icectl("write", str(table), str(tmp_path / "b.csv"), "--wap-id", " ")
    assert r.exit_code == EXIT_INVALID and "--wap-id" in r.stderr
    r = icectl("write", str(table), str(tmp_path / "b.csv"), "--wap-id", "w1", "--idempotency-key", "k")
    assert r.exit_code == EXIT_INVALID and "--idempotency-key" in r.stderr
    r = icectl("snapshot", "publish", str(table), "nope")
    assert r.exit_code == EXIT_NOT_FOUND and "'nope'" in r.stderr and r.stderr.count("\n") == 1
    assert state(tmp_path) == before
