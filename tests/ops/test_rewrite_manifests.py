"""`icectl rewrite-manifests`: entries clustered by partition into manifests of the target size,
a `replace` snapshot that changes no file, the reference's summary counters."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from icectl.io.manifest import records as avro
from icectl.ops.metadata.create import create_table
from icectl.ops.maintain.rewrite_manifests import rewrite_manifests
from icectl.ops.write.rows import write_rows
from icectl.table.commit.manifest_rewrite import cluster_ranges, partition_sort_key
from icectl.table.table import Table
from support.tables import empty_table, with_files
from clirun import icectl


def table_with_appends(tmp_path: Path, appends: int = 4) -> str:
    t = empty_table(tmp_path / "t", "id long, cat string", partition="cat")
    return with_files(t, appends, lambda i: {"id": [i, i + 10, i + 20], "cat": ["c", "a", None]}).location


def live_paths(loc: str) -> list[str]:
    t = Table.load(loc)
    snap = t.metadata.current_snapshot()
    out = []
    for m in avro.load_manifest_list(t.io, snap.manifest_list, t.metadata.format_version):
        out += [e.data_file.file_path for e in avro.load_manifest(t.io, m) if e.is_live]
    return sorted(out)


def manifests(loc: str):
    t = Table.load(loc)
    snap = t.metadata.current_snapshot()
    ms = avro.load_manifest_list(t.io, snap.manifest_list, t.metadata.format_version)
    return [(m, avro.load_manifest(t.io, m)) for m in ms]


def test_rewrites_into_one_manifest_sorted_by_partition(tmp_path: Path) -> None:
    loc = table_with_appends(tmp_path)
    before = live_paths(loc)
    rows_before = sorted(icectl("scan", loc, "--format", "jsonl").stdout.splitlines())
    assert len(rows_before) == 12
    r = icectl("rewrite-manifests", loc, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["committed"] is True and out["rewritten-manifests-count"] == 4
    assert out["added-manifests-count"] == 1 and out["entries-rewritten"] == 12
    s = out["summary"]
    assert s["operation"] == "replace"
    assert (s["manifests-created"], s["manifests-replaced"], s["manifests-kept"], s["entries-processed"]) == \
        ("1", "4", "0", "0")
    assert s["total-data-files"] == "12" and s["total-records"] == "12"
    assert "added-data-files" not in s and "deleted-data-files" not in s
    assert live_paths(loc) == before
    assert sorted(icectl("scan", loc, "--format", "jsonl").stdout.splitlines()) == rows_before
    [(m, entries)] = manifests(loc)
    assert m.existing_files_count == 12 and m.added_files_count == 0
    parts = [e.data_file.partition[0] for e in entries]
    assert parts == [None] * 4 + ["a"] * 4 + ["c"] * 4  # nulls first, then sorted
    # entries keep their snapshot ids and sequence numbers
    assert {e.sequence_number for e in entries} == {1, 2, 3, 4}
    assert all(e.status == 0 for e in entries)
    # a single manifest that fits: nothing to do, nothing committed
    again = icectl("rewrite-manifests", loc, "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["committed"] is False


def test_target_size_splits_by_partition_without_splitting_one(tmp_path: Path) -> None:
    loc = table_with_appends(tmp_path)
    total = sum(m.manifest_length for m, _ in manifests(loc))
    target = -(-total // 3)  # three ranges
    out = rewrite_manifests(Table.load(loc), target_size=target)
    assert out.committed and len(out.added_manifests) == 3
    seen = []
    for m, entries in manifests(loc):
        keys = {e.data_file.partition for e in entries}
        assert len(keys) == 1, keys  # one partition per manifest here
        seen += list(keys)
        assert m.partitions[0].lower_bound == m.partitions[0].upper_bound or m.partitions[0].contains_null
    assert sorted(seen, key=lambda k: (k[0] is not None, k[0])) == [(None,), ("a",), ("c",)]


def test_dry_run_writes_nothing_and_other_specs_are_kept(tmp_path: Path) -> None:
    loc = table_with_appends(tmp_path, 2)
    r = icectl("partition", "add", loc, "bucket(2, id)")
    assert r.returncode == 0, r.stderr
    write_rows(Table.load(loc), pa.table({"id": [7], "cat": ["z"]}))
    version = Table.load(loc).version
    r = icectl("rewrite-manifests", loc, "--spec-id", "0", "--dry-run", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["dry-run"] is True and out["committed"] is False and out["rewritten-manifests-count"] == 2
    assert Table.load(loc).version == version
    out = rewrite_manifests(Table.load(loc), spec_id=0)
    assert out.committed and out.kept_manifests == 1 and len(out.added_manifests) == 1
    specs = sorted(m.partition_spec_id for m, _ in manifests(loc))
    assert specs == [0, 1]
    # the current spec (1) has a single small manifest: nothing to rewrite
    assert rewrite_manifests(Table.load(loc)).committed is False


def test_bad_input_is_one_line_with_its_exit_code(tmp_path: Path) -> None:
    loc = table_with_appends(tmp_path, 1)
    r = icectl("rewrite-manifests", loc, "--spec-id", "9")
    assert r.returncode == 5 and r.stderr.strip().count("\n") == 0 and "spec with id 9" in r.stderr
    r = icectl("rewrite-manifests", str(tmp_path / "missing"))
    assert r.returncode == 3
    empty = str(tmp_path / "empty")
    create_table(empty, schema_text="id long")
    r = icectl("rewrite-manifests", empty, "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["committed"] is False


def test_cluster_ranges_never_split_a_partition() -> None:
    from icectl.spec.manifests import DATA, DataFile, ManifestEntry

    entries = [ManifestEntry(0, 1, 1, 1, DataFile(DATA, f"f{i}", "PARQUET", (k,)))
               for i, k in enumerate([3, 1, 1, 1, 2, None, 2, 3])]
    ranges = cluster_ranges(entries, 3)
    keys = [[e.data_file.partition[0] for e in r] for r in ranges]
    assert keys == [[None, 1, 1, 1], [2, 2, 3], [3]] or all(
        not (set(a) & set(b)) for i, a in enumerate(keys) for b in keys[i + 1:])
    flat = [e for r in ranges for e in r]
    assert flat == sorted(entries, key=partition_sort_key)
    assert len(ranges) <= 3
    assert cluster_ranges([], 4) == []


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__]))


def test_delete_manifests_are_rewritten_keeping_sequence_numbers(tmp_path: Path) -> None:
    from icectl.ops.delete.merge_on_read import delete_rows

    loc = str(tmp_path / "t")
    create_table(loc, schema_text="id long, cat string", partition_text="cat",
                 properties={"write.delete.mode": "merge-on-read"})
    for i in range(3):
        write_rows(Table.load(loc), pa.table({"id": [i * 10 + k for k in range(6)], "cat": ["a", "b"] * 3}))
        delete_rows(Table.load(loc), f"id = {i * 10}")  # a delete manifest per commit
    before_rows = sorted(icectl("scan", loc, "--format", "jsonl").stdout.splitlines())
    assert len(before_rows) == 15

    def entries() -> dict[str, tuple]:
        return {e.data_file.file_path: (e.data_file.content, e.sequence_number, e.file_sequence_number,
                                        e.snapshot_id)
                for _, es in manifests(loc) for e in es if e.is_live}

    before = entries()
    kinds_before = sorted(m.content for m, _ in manifests(loc))
    assert kinds_before == [0, 0, 0, 1, 1, 1]
    out = rewrite_manifests(Table.load(loc))
    assert out.committed and len(out.rewritten_manifests) == 6
    assert sorted(m.content for m, _ in manifests(loc)) == [0, 1]  # one data, one delete manifest
    assert entries() == before  # same files, same sequence numbers and snapshot ids
    assert sorted(icectl("scan", loc, "--format", "jsonl").stdout.splitlines()) == before_rows
