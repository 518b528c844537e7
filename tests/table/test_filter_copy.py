"""The manifest filter rewrites a manifest by copying its entries' encoded data_file bytes
(table/commit/manifest_filter.py, as merges do): the copy writes what the path that encodes
the decoded entries writes, byte for byte, for both removing producers (row delta, file
rewrite), every partition value type and v1/v2/v3; removed files are deleted by the new
snapshot, the others existing with their sequence numbers explicit; older deletes are dropped."""

from __future__ import annotations

import random
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from icectl.io.manifest import records as avro
from icectl.spec.manifests import DELETED, EXISTING
from icectl.spec.metadata import with_properties
from icectl.table.commit import manifest_filter
from icectl.table.commit.rewrite import RewriteFilesProducer
from icectl.table.commit.row_delta import RowDeltaProducer
from icectl.table.table import Table

from merge_support import assert_same_entries, merging_table, without_sync

SNAPSHOT_ID = 987654321


def _table(tmp_path: Path, version: int) -> Table:
    table = merging_table(tmp_path, version, random.Random(version + 7), appends=2, files=25)
    table.commit(lambda md: with_properties(md, {"commit.manifest-merge.enabled": "false"}))
    return table


def _producer(kind: str, t: Table, victim, snapshot_id: int):
    if kind == "row-delta":
        return RowDeltaProducer(t, snapshot_id, removed=[(replace(victim, spec_id=0), "")],
                                snapshot_id=SNAPSHOT_ID)
    return RewriteFilesProducer(t, starting_snapshot_id=snapshot_id,
                                removed=[replace(victim, spec_id=0)], snapshot_id=SNAPSHOT_ID)


def _entries(table: Table):
    snap = table.metadata.current_snapshot()
    return [(m, e) for m in avro.load_manifest_list(table.io, snap.manifest_list)
            for e in avro.load_manifest(table.io, m)]


@pytest.mark.parametrize("kind", ["row-delta", "rewrite"])
@pytest.mark.parametrize("version", [1, 2, 3])
def test_a_rewritten_manifest_copies_entry_bytes_and_writes_what_encoding_writes(
        tmp_path, version, kind):
    table = _table(tmp_path, version)
    snap = table.metadata.current_snapshot()
    before = _entries(table)
    victim_manifest, victim_entry = before[30]
    victim = victim_entry.data_file
    results = {}
    for mode in ("bytes", "records"):
        loc = tmp_path / f"copy-{mode}"
        shutil.copytree(table.location, loc)
        t = Table.load(str(loc))
        producer = _producer(kind, t, victim, snap.snapshot_id)
        producer.copy_entry_bytes = mode == "bytes"
        encoded: list[int] = []
        real = manifest_filter.entry_records
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(manifest_filter, "entry_records",
                       lambda entries, *a: encoded.append(1) or real(entries, *a))
            result = producer.commit()
        # the byte path encodes no data_file of the manifest it rewrites
        assert encoded == ([] if mode == "bytes" else [1])
        (rewritten,) = [m for m in avro.load_manifest_list(t.io, result.snapshot.manifest_list)
                        if m.added_snapshot_id == SNAPSHOT_ID]
        results[mode] = (t.io.read(rewritten.manifest_path), rewritten, t)
    data, mf, t = results["bytes"]
    other, other_mf, _ = results["records"]
    assert without_sync(data) == without_sync(other)
    assert replace(mf, manifest_path="") == replace(other_mf, manifest_path="")
    after = avro.load_manifest(t.io, mf)
    assert [(e.data_file.file_path, e.snapshot_id) for e in after if e.status == DELETED] == [
        (victim.file_path, SNAPSHOT_ID)]
    source = [e for m, e in before if m.manifest_path == victim_manifest.manifest_path]
    want = [replace(e, status=DELETED, snapshot_id=SNAPSHOT_ID) if e.data_file.file_path == victim.file_path
            else replace(e, status=EXISTING) for e in source if e.status != DELETED]
    assert_same_entries(after, want)
    assert (mf.added_files_count, mf.existing_files_count, mf.deleted_files_count) == (0, 24, 1)


def test_a_second_rewrite_drops_the_older_delete(tmp_path):
    table = _table(tmp_path, 2)
    before = _entries(table)
    first, second = before[3][1].data_file, before[4][1].data_file
    for f in (first, second):
        RowDeltaProducer(table, table.metadata.current_snapshot_id,
                         removed=[(replace(f, spec_id=0), "")]).commit()
    (m,) = [m for m in avro.load_manifest_list(table.io, table.metadata.current_snapshot().manifest_list)
            if m.added_snapshot_id == table.metadata.current_snapshot_id]
    after = avro.load_manifest(table.io, m)
    assert [e.data_file.file_path for e in after if e.status == DELETED] == [second.file_path]
    assert len(after) == 24 and sum(e.status == EXISTING for e in after) == 23
