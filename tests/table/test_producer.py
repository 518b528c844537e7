"""The snapshot producer: manifests, manifest lists, sequence numbers, row lineage, retries,
merging and branches, checked by reading back what was written."""

from __future__ import annotations

import os

import pytest

from icectl.errors import CommitConflict, ValidationError
from icectl.io.manifest import records as avro
from icectl.spec.manifests import ADDED, DATA, EXISTING, DataFile
from icectl.spec.metadata import set_ref, with_properties
from icectl.spec.snapshots import SnapshotRef, TAG
from icectl.table.commit.producer import FastAppendProducer, MergePolicy, new_snapshot_id, pack_end
from icectl.table.table import RetryPolicy, Table

from conftest import make_metadata


def df(name: str, records: int = 10, size: int = 100) -> DataFile:
    return DataFile(DATA, f"/data/{name}.parquet", "PARQUET", (), records, size)


def metadata_files(location: str) -> set[str]:
    return set(os.listdir(os.path.join(location, "metadata")))


def append(table: Table, *files: DataFile, **kw):
    p = FastAppendProducer(table, [(f, "") for f in files], **kw)
    return p.commit()


def live_entries(table: Table, snapshot=None):
    snap = snapshot or table.metadata.current_snapshot()
    out = []
    for m in avro.load_manifest_list(table.io, snap.manifest_list):
        out.extend((m, e) for e in avro.load_manifest(table.io, m))
    return out


def test_snapshot_ids_are_positive_and_random() -> None:
    ids = {new_snapshot_id() for _ in range(200)}
    assert len(ids) == 200 and all(0 < i < 2 ** 63 for i in ids)


@pytest.mark.parametrize("version", [1, 2, 3])
def test_appends_chain_snapshots_and_sequence_numbers(location, version) -> None:
    table = Table.create(location, make_metadata(location, version))
    first = append(table, df("a", 3), df("b", 4))
    second = append(table, df("c", 5))
    md = table.metadata
    s1, s2 = first.snapshot, second.snapshot
    assert s2.parent_snapshot_id == s1.snapshot_id and s1.parent_snapshot_id is None
    assert md.current_snapshot_id == s2.snapshot_id
    assert md.refs["main"].snapshot_id == s2.snapshot_id
    assert [e.snapshot_id for e in md.snapshot_log] == [s1.snapshot_id, s2.snapshot_id]
    expected_seq = (0, 0) if version == 1 else (1, 2)
    assert (s1.sequence_number, s2.sequence_number) == expected_seq
    assert s2.summary["total-records"] == "12" and s2.summary["total-data-files"] == "3"
    assert s2.summary["added-records"] == "5" and s2.summary["operation"] == "append"
    assert s1.manifest_list.endswith(f"snap-{s1.snapshot_id}-1-{os.path.basename(first.new_manifests[0]).split('-m')[0]}.avro")

    # newest manifest first, the parent's kept as they are
    manifests = avro.load_manifest_list(table.io, s2.manifest_list)
    assert [m.manifest_path for m in manifests] == [*second.new_manifests, *first.new_manifests]
    if version > 1:
        assert [m.sequence_number for m in manifests] == [2, 1]
    entries = {e.data_file.file_path: (m, e) for m, e in live_entries(table)}
    assert set(entries) == {"/data/a.parquet", "/data/b.parquet", "/data/c.parquet"}
    for path, seq, sid in (("/data/a.parquet", 1, s1.snapshot_id), ("/data/c.parquet", 2, s2.snapshot_id)):
        _, e = entries[path]
        assert e.status == ADDED and e.snapshot_id == sid
        assert e.sequence_number == (0 if version == 1 else seq)
        assert e.file_sequence_number == (0 if version == 1 else seq)
    # new entries are written without sequence numbers (inherited at read time)
    raw = avro.read_manifest(table.io.read(second.new_manifests[0]))
    assert all(e.sequence_number is None for e in raw) or version == 1


def test_v3_row_lineage(location) -> None:
    table = Table.create(location, make_metadata(location, 3))
    assert table.metadata.next_row_id == 0
    first = append(table, df("a", 3), df("b", 4))
    assert (first.snapshot.first_row_id, first.snapshot.added_rows) == (0, 7)
    assert table.metadata.next_row_id == 7
    second = append(table, df("c", 5))
    assert (second.snapshot.first_row_id, second.snapshot.added_rows) == (7, 5)
    assert table.metadata.next_row_id == 12
    manifests = avro.load_manifest_list(table.io, second.snapshot.manifest_list)
    assert [m.first_row_id for m in manifests] == [7, 0]
    ids = {e.data_file.file_path: e.data_file.first_row_id for _, e in live_entries(table)}
    assert ids == {"/data/a.parquet": 0, "/data/b.parquet": 3, "/data/c.parquet": 7}


def test_retry_after_a_lost_race_reuses_manifests_and_cleans_the_lost_list(location) -> None:
    table = Table.create(location, make_metadata(location, 2))
    append(table, df("base"))
    other = Table.load(location)

    class Racing(FastAppendProducer):
        def validate(self, base, parent):
            if self.attempts == 1:  # another writer commits while we work on attempt 1
                append(other, df("theirs"))

    p = Racing(table, [(df("mine"), "")])
    result = p.commit()
    assert result.attempts == 2
    md = table.metadata
    assert len(md.snapshots) == 3
    theirs = md.snapshot_by_id(result.snapshot.parent_snapshot_id)
    assert theirs.summary["added-data-files"] == "1"
    assert result.snapshot.sequence_number == 3
    assert result.snapshot.summary["total-data-files"] == "3"
    names = metadata_files(location)
    # the first attempt's manifest list is gone, the manifest was kept and reused
    assert not any(n.startswith(f"snap-{p.snapshot_id}-1-") for n in names)
    assert any(n.startswith(f"snap-{p.snapshot_id}-2-") for n in names)
    assert os.path.basename(result.new_manifests[0]) in names
    paths = {e.data_file.file_path for _, e in live_entries(table)}
    assert paths == {"/data/base.parquet", "/data/theirs.parquet", "/data/mine.parquet"}


def test_validation_is_rerun_on_retry_and_a_failure_leaves_nothing(location) -> None:
    table = Table.create(location, make_metadata(location, 2))
    other = Table.load(location)
    seen = []

    class Checked(FastAppendProducer):
        def validate(self, base, parent):
            seen.append(parent.snapshot_id if parent else None)
            if self.attempts == 1:
                append(other, df("theirs"))
            elif parent is not None:
                raise ValidationError("conflicting change")

    before = metadata_files(location)
    with pytest.raises(ValidationError):
        Checked(table, [(df("mine"), "")]).commit()
    after = metadata_files(location)
    assert seen[0] is None and seen[1] is not None
    # only the other writer's files are new: its manifest, its list, its metadata version
    new = after - before
    assert len([n for n in new if n.startswith("snap-")]) == 1
    assert len([n for n in new if n.endswith("-m0.avro")]) == 1


def test_retries_exhausted_remove_every_file_written(location) -> None:
    table = Table.create(location, make_metadata(location, 2))
    other = Table.load(location)

    class Loser(FastAppendProducer):
        def validate(self, base, parent):
            append(other, df(f"theirs{self.attempts}"))

    before = metadata_files(location)
    p = Loser(table, [(df("mine"), "")], policy=RetryPolicy(num_retries=2, min_wait_ms=1, max_wait_ms=2))
    with pytest.raises(CommitConflict):
        p.commit()
    left = {n for n in metadata_files(location) - before if p.commit_uuid in n or str(p.snapshot_id) in n}
    assert left == set()


def test_append_to_a_branch_leaves_main_alone(location) -> None:
    table = Table.create(location, make_metadata(location, 2))
    main1 = append(table, df("a", 2)).snapshot
    staged = append(table, df("b", 3), branch="staging").snapshot
    md = table.metadata
    assert md.current_snapshot_id == main1.snapshot_id
    assert md.refs["staging"].snapshot_id == staged.snapshot_id
    assert staged.parent_snapshot_id == main1.snapshot_id  # a new branch starts from main's head
    # as the reference: a new branch's first totals count only what it added
    assert staged.summary["total-records"] == "3"
    again = append(table, df("c", 1), branch="staging").snapshot
    assert again.parent_snapshot_id == staged.snapshot_id and again.summary["total-records"] == "4"
    paths = {e.data_file.file_path for _, e in live_entries(table, again)}
    assert paths == {"/data/a.parquet", "/data/b.parquet", "/data/c.parquet"}
    assert table.metadata.current_snapshot_id == main1.snapshot_id
    assert [e.snapshot_id for e in table.metadata.snapshot_log] == [main1.snapshot_id]


def test_tags_are_not_append_targets(location) -> None:
    table = Table.create(location, make_metadata(location, 2))
    s = append(table, df("a")).snapshot
    table.commit(lambda md: set_ref(md, "v1", SnapshotRef(s.snapshot_id, TAG)))
    before = metadata_files(location)
    with pytest.raises(ValidationError, match="tag"):
        append(table, df("b"), branch="v1")
    assert metadata_files(location) == before


def test_pack_end_keeps_order_and_underfills_the_first_bin() -> None:
    assert pack_end([5, 5, 5, 5, 5], lambda x: x, 10) == [[5], [5, 5], [5, 5]]
    assert pack_end([1, 9, 3], lambda x: x, 10) == [[1, 9], [3]]
    assert pack_end([20, 1], lambda x: x, 10) == [[20], [1]]
    assert pack_end([], lambda x: x, 10) == []


def test_merge_policy_from_properties(location) -> None:
    md = make_metadata(location, 2)
    assert MergePolicy.from_metadata(md) == MergePolicy(False, 100, 8 * 1024 * 1024)
    md = with_properties(md, {"commit.manifest-merge.enabled": "true",
                              "commit.manifest.min-count-to-merge": "3",
                              "commit.manifest.target-size-bytes": "1000"})
    assert MergePolicy.from_metadata(md) == MergePolicy(True, 3, 1000)


@pytest.mark.parametrize("version", [2, 3])
def test_manifests_merge_at_the_minimum_count(location, version) -> None:
    md = make_metadata(location, version, **{"commit.manifest-merge.enabled": "true",
                                             "commit.manifest.min-count-to-merge": "3"})
    table = Table.create(location, md)
    s1 = append(table, df("a", 1)).snapshot
    s2 = append(table, df("b", 2)).snapshot
    assert len(avro.load_manifest_list(table.io, s2.manifest_list)) == 2
    third = append(table, df("c", 3))
    s3 = third.snapshot
    manifests = avro.load_manifest_list(table.io, s3.manifest_list)
    assert len(manifests) == 1
    m = manifests[0]
    assert (m.added_files_count, m.existing_files_count) == (1, 2)
    assert (m.added_rows_count, m.existing_rows_count) == (3, 3)
    assert m.sequence_number == 3 and m.min_sequence_number == 1
    entries = {e.data_file.file_path: e for e in avro.load_manifest(table.io, m)}
    assert entries["/data/c.parquet"].status == ADDED
    assert entries["/data/c.parquet"].sequence_number == 3
    assert entries["/data/a.parquet"].status == EXISTING
    assert (entries["/data/a.parquet"].snapshot_id, entries["/data/a.parquet"].sequence_number) == (s1.snapshot_id, 1)
    assert (entries["/data/b.parquet"].snapshot_id, entries["/data/b.parquet"].sequence_number) == (s2.snapshot_id, 2)
    # the unmerged manifest this commit wrote first is not left behind
    assert not os.path.exists(third.new_manifests[0]) or third.new_manifests[0] == m.manifest_path
    assert s3.summary["total-data-files"] == "3"
    if version == 3:
        ids = {p: e.data_file.first_row_id for p, e in entries.items()}
        assert ids["/data/a.parquet"] == 0 and ids["/data/b.parquet"] == 1
        assert s3.first_row_id == 3 and ids["/data/c.parquet"] >= 3


def test_merge_can_be_forced_off(location) -> None:
    md = make_metadata(location, 2, **{"commit.manifest-merge.enabled": "true",
                                       "commit.manifest.min-count-to-merge": "2"})
    table = Table.create(location, md)
    append(table, df("a"))
    s = append(table, df("b"), merge=False).snapshot
    assert len(avro.load_manifest_list(table.io, s.manifest_list)) == 2


def test_large_appends_roll_manifests_at_the_target_size(location) -> None:
    md = make_metadata(location, 2, **{"commit.manifest.target-size-bytes": "4000"})
    table = Table.create(location, md)
    files = [df(f"f{i:04d}-" + "x" * 60, i + 1) for i in range(300)]
    result = append(table, *files)
    manifests = avro.load_manifest_list(table.io, result.snapshot.manifest_list)
    assert len(manifests) > 1
    assert sum(m.added_files_count for m in manifests) == 300
    assert all(m.manifest_length <= 8000 for m in manifests)
    got = [e.data_file.file_path for m in manifests for e in avro.load_manifest(table.io, m)]
    assert got == [f.file_path for f in files]
