"""Conflict checks for commits retried on a moved branch (icectl.table.commit.validation): each check
passes for concurrent changes that do not touch what the operation read, and raises
CommitConflict for those that do. The snapshots are real commits read back from disk."""

from __future__ import annotations

import pytest

from icectl.errors import CommitConflict
from icectl.spec.manifests import (
    ADDED,
    DATA,
    DELETED,
    EQUALITY_DELETES,
    MANIFEST_DATA,
    MANIFEST_DELETES,
    POSITION_DELETES,
    DataFile,
    ManifestEntry,
)
from icectl.spec.metadata import new_table_metadata
from icectl.spec.partitioning import PartitionField, PartitionSpec
from icectl.spec.schema import Schema
from icectl.spec.transforms import IDENTITY
from icectl.table.commit.producer import SnapshotProducer
from icectl.table.table import Table
from icectl.table.commit.validation import (
    isolation_level,
    snapshots_since,
    validate_files_live,
    validate_no_new_data,
    validate_no_new_deletes,
)

from conftest import FAST_RETRY

PATH_ID = 2147483546


class Change(SnapshotProducer):
    """A snapshot that adds ``added`` (data or delete files) and marks ``removed`` deleted."""

    def __init__(self, table, added=(), removed=(), operation="overwrite"):
        super().__init__(table)
        self.added, self.removed, self.operation = list(added), {f.file_path for f in removed}, operation

    def apply(self, base, parent, attempt):
        from icectl.io.manifest import records as avro
        from dataclasses import replace

        out = []
        for content in (MANIFEST_DATA, MANIFEST_DELETES):
            files = [f for f in self.added if (f.content == DATA) == (content == MANIFEST_DATA)]
            entries = [ManifestEntry(ADDED, self.snapshot_id, None, None, f) for f in files]
            out += self.write_manifests(attempt, base, base.spec, entries, content)
        for m in self.parent_manifests(base, parent):
            entries = avro.load_manifest(self.io, m)
            if not any(e.data_file.file_path in self.removed for e in entries):
                out.append(m)
                continue
            kept = [replace(e, status=DELETED, snapshot_id=self.snapshot_id)
                    if e.data_file.file_path in self.removed else e
                    for e in entries if e.status != DELETED]
            out += self.write_manifests(attempt, base, base.spec, kept, m.content)
        return out


def data(name: str, p: int) -> DataFile:
    return DataFile(DATA, f"/data/p={p}/{name}.parquet", "PARQUET", (p,), 10, 100, spec_id=1)


def pos_delete(name: str, p: int, target: str | None) -> DataFile:
    bounds = {PATH_ID: target.encode()} if target else None
    return DataFile(POSITION_DELETES, f"/data/p={p}/{name}-deletes.parquet", "PARQUET", (p,), 1, 50,
                    lower_bounds=bounds, upper_bounds=bounds, spec_id=1)


def eq_delete(name: str, p: int) -> DataFile:
    return DataFile(EQUALITY_DELETES, f"/data/p={p}/{name}-eq.parquet", "PARQUET", (p,), 1, 50,
                    equality_ids=(1,), spec_id=1)


@pytest.fixture
def table(tmp_path):
    schema = Schema.from_json({"type": "struct", "fields": [
        {"id": 1, "name": "id", "required": True, "type": "long"},
        {"id": 2, "name": "p", "required": True, "type": "int"}]})
    spec = PartitionSpec(0, (PartitionField(2, 1000, "p", IDENTITY),))
    md = new_table_metadata(schema, spec, location=str(tmp_path / "t"),
                            properties={"format-version": "2", **FAST_RETRY})
    return Table.create(str(tmp_path / "t"), md)


def commit(table, **kw) -> int:
    return Change(table, **kw).commit().snapshot.snapshot_id


def fixed(f: DataFile, table) -> DataFile:
    """The file as a reader returns it: spec id from its manifest."""
    from dataclasses import replace
    return replace(f, spec_id=table.metadata.default_spec_id)


def test_snapshots_since_walks_from_the_start_to_the_head(table) -> None:
    a, b = data("a", 1), data("b", 2)
    s1 = commit(table, added=[a], operation="append")
    s2 = commit(table, added=[b], operation="append")
    s3 = commit(table, removed=[a], operation="delete")
    md = table.metadata
    assert [s.snapshot_id for s in snapshots_since(md, s1, s3)] == [s2, s3]
    assert [s.snapshot_id for s in snapshots_since(md, None, s3)] == [s1, s2, s3]
    assert snapshots_since(md, s3, s3) == []
    with pytest.raises(CommitConflict, match="no longer an ancestor"):
        snapshots_since(md, s3, s1)


def test_files_live_sees_removals_since_the_start_only(table) -> None:
    a, b = fixed(data("a", 1), table), fixed(data("b", 2), table)
    s0 = commit(table, added=[a, b], operation="append")
    validate_files_live(table.io, table.metadata, s0, s0, [a.file_path])
    s1 = commit(table, removed=[a], operation="delete")
    md = table.metadata
    validate_files_live(table.io, md, s0, s1, [b.file_path])
    with pytest.raises(CommitConflict, match=f"data file {a.file_path} was removed by snapshot {s1} \\(delete\\)"):
        validate_files_live(table.io, md, s0, s1, [a.file_path, b.file_path])
    # a removal before the start is not a conflict: the operation read the table without it
    s2 = commit(table, added=[data("c", 3)], operation="append")
    validate_files_live(table.io, table.metadata, s1, s2, [a.file_path])


def test_new_position_deletes_conflict_by_path_or_partition(table) -> None:
    a, b = fixed(data("a", 1), table), fixed(data("b", 2), table)
    s0 = commit(table, added=[a, b], operation="append")
    s1 = commit(table, added=[fixed(pos_delete("x", 1, a.file_path), table)])
    md = table.metadata
    validate_no_new_deletes(table.io, md, s0, s1, [b])  # targets a only
    with pytest.raises(CommitConflict, match=f"position deletes .* for data file {a.file_path}"):
        validate_no_new_deletes(table.io, md, s0, s1, [a, b])
    # a partition-scoped position delete file (no single target) touches every file of p=2
    s2 = commit(table, added=[fixed(pos_delete("y", 2, None), table)])
    with pytest.raises(CommitConflict, match=b.file_path):
        validate_no_new_deletes(table.io, table.metadata, s1, s2, [b])
    # deletes committed before the start are what the operation read: no conflict
    validate_no_new_deletes(table.io, table.metadata, s2, s2, [a, b])


def test_new_equality_deletes_conflict_unless_ignored(table) -> None:
    a, b = fixed(data("a", 1), table), fixed(data("b", 2), table)
    s0 = commit(table, added=[a, b], operation="append")
    s1 = commit(table, added=[fixed(eq_delete("e", 1), table)])
    md = table.metadata
    validate_no_new_deletes(table.io, md, s0, s1, [b])  # other partition
    with pytest.raises(CommitConflict, match="equality deletes"):
        validate_no_new_deletes(table.io, md, s0, s1, [a])
    validate_no_new_deletes(table.io, md, s0, s1, [a], ignore_equality=True)


def test_new_data_conflicts_when_it_may_match(table) -> None:
    s0 = commit(table, added=[data("a", 1)], operation="append")
    s1 = commit(table, added=[data("b", 2)], operation="append")
    md = table.metadata
    validate_no_new_data(table.io, md, s0, s1, lambda f: f.partition == (3,))
    with pytest.raises(CommitConflict, match="p=2/b.parquet"):
        validate_no_new_data(table.io, md, s0, s1, lambda f: f.partition == (2,))
    # files that were there at the start are not new
    validate_no_new_data(table.io, md, s1, s1, lambda f: True)


def test_isolation_level_defaults_to_serializable(table) -> None:
    md = table.metadata
    assert isolation_level(md) == "serializable"
    from icectl.spec.metadata import with_properties
    assert isolation_level(with_properties(md, {"write.delete.isolation-level": "snapshot"})) == "snapshot"
