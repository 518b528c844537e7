"""Commits cost what they change: removing files opens only the manifests that can list them
(the manifest hint, else partition summaries, nulls and NaN counted), and retries reuse the
manifests an earlier attempt wrote (table/commit/manifest_filter.py, row_delta.py, rewrite.py)."""

from __future__ import annotations

import math
import os
from dataclasses import replace
from pathlib import Path

import pytest

from icectl.errors import CommitConflict
from icectl.io.manifest import records as avro
from icectl.ops.metadata.create import create_table
from icectl.spec.manifests import ADDED, DATA, DELETED, POSITION_DELETES, DataFile, ManifestEntry
from icectl.spec.summary import SummaryBuilder
from icectl.table.commit.producer import FastAppendProducer, SnapshotProducer
from icectl.table.commit.rewrite import RewriteFilesProducer
from icectl.table.commit.row_delta import RowDeltaProducer
from icectl.table.table import Table
from tests.ops.ops_support import record_manifests_opened

PATH_ID = 2147483546


def _file(location: str, name: str, part: tuple, content: int = DATA, **kw) -> DataFile:
    return DataFile(content=content, file_path=f"{location}/data/{name}.parquet",
                    file_format="PARQUET", partition=part, record_count=10,
                    file_size_in_bytes=100, spec_id=0, **kw)


def _build(tmp_path: Path, partitions: list, files: int = 3, *, partition: str = "p",
           schema: str = "id long, p double") -> Table:
    """A table whose snapshot has one data manifest per value of ``partitions``."""
    location = str(tmp_path / "t")
    create_table(location, schema_text=schema, partition_text=partition, format_version=2)
    table = Table.load(location)
    spec = table.metadata.spec

    class Build(SnapshotProducer):
        def apply(self, base, parent, attempt):
            out = []
            for i, p in enumerate(partitions):
                entries = [ManifestEntry(ADDED, self.snapshot_id, None, None,
                                         _file(location, f"m{i}-f{j}", (p,) if spec.fields else ()))
                           for j in range(files)]
                out += self.write_manifests(attempt, base, spec, entries, target_size=1 << 40)
            return out

        def summary(self, base):
            return SummaryBuilder()

    Build(table).commit()
    return Table.load(location)


def _live(table: Table) -> dict[str, DataFile]:
    """Live files by path, each with the manifest that lists it as its hint."""
    out = {}
    snap = table.metadata.current_snapshot()
    for m in avro.load_manifest_list(table.io, snap.manifest_list):
        for e in avro.load_manifest(table.io, m):
            if e.status != DELETED:
                out[e.data_file.file_path] = replace(e.data_file, manifest_path=m.manifest_path)
    return out


def _delete(table: Table, f: DataFile, **kw) -> RowDeltaProducer:
    p = RowDeltaProducer(table, table.metadata.current_snapshot_id, removed=[(f, "")], **kw)
    p.commit()
    return p


def _metadata_files(table: Table) -> set[str]:
    d = os.path.join(table.location, "metadata")
    return {os.path.join(d, n) for n in os.listdir(d) if n.endswith(".avro")}


def _reachable(table: Table) -> set[str]:
    out = set()
    for s in table.metadata.snapshots:
        out.add(s.manifest_list)
        out.update(m.manifest_path for m in avro.load_manifest_list(table.io, s.manifest_list))
    return out


VALUES = [float(i) for i in range(30)]


def test_one_file_delete_on_many_manifests_opens_one(tmp_path: Path) -> None:
    t = _build(tmp_path, VALUES)
    live = _live(t)
    target = live[f"{t.location}/data/m17-f1.parquet"]
    # the hint: only the manifest that listed the file
    p = _delete(t, target)
    assert p.manifests_opened == 1
    # no hint: the partition summaries leave one manifest
    t = Table.load(t.location)
    other = replace(_live(t)[f"{t.location}/data/m5-f0.parquet"], manifest_path=None)
    p = _delete(t, other)
    assert p.manifests_opened == 1
    after = _live(Table.load(t.location))
    assert len(after) == 30 * 3 - 2 and target.file_path not in after and other.file_path not in after
    summary = Table.load(t.location).metadata.current_snapshot().summary
    assert summary["deleted-data-files"] == "1"


def test_stale_hint_or_wrong_partition_still_commits(tmp_path: Path) -> None:
    t = _build(tmp_path, VALUES[:6])
    live = _live(t)
    f = live[f"{t.location}/data/m2-f0.parquet"]
    # a hint naming a manifest no longer in the parent: partition summaries decide
    p = _delete(t, replace(f, manifest_path=f"{t.location}/metadata/gone.avro"))
    assert p.manifests_opened == 1
    # a wrong partition (and no hint): not in the candidates, found in the rest
    t = Table.load(t.location)
    g = replace(_live(t)[f"{t.location}/data/m4-f2.parquet"], manifest_path=None, partition=(99.0,))
    p = _delete(t, g)
    assert p.manifests_opened == 6  # none can hold (99.0,); then all six with live files
    assert g.file_path not in _live(Table.load(t.location))


def test_removing_a_file_not_found_is_a_conflict(tmp_path: Path) -> None:
    t = _build(tmp_path, VALUES[:4])
    ghost = _file(t.location, "ghost", (1.0,))
    before = _metadata_files(t)
    with pytest.raises(CommitConflict, match="ghost"):
        _delete(t, ghost)
    assert _metadata_files(Table.load(t.location)) == before  # nothing written is left behind


@pytest.mark.parametrize("value, opened", [
    (None, 1),  # only the manifest whose summary has contains_null
    (math.nan, 1),  # only the one with contains_nan
    (0.0, 1),  # 0.0 is not within [-0.0, -0.0]
    (-0.0, 1),
    (-5.5, 1),  # negative values compare as numbers
])
def test_nulls_nan_and_signed_zero_partitions_are_pruned_exactly(tmp_path: Path, value, opened) -> None:
    values = [None, math.nan, -0.0, 0.0, -5.5, 3.25, 1e300]
    t = _build(tmp_path, values)
    i = next(k for k, v in enumerate(values) if v is value or (v == value and
                                                                math.copysign(1, v) == math.copysign(1, value)))
    f = replace(_live(t)[f"{t.location}/data/m{i}-f0.parquet"], manifest_path=None)
    p = _delete(t, f)
    assert p.manifests_opened == opened
    assert f.file_path not in _live(Table.load(t.location))


def test_unpartitioned_opens_every_manifest_of_the_spec(tmp_path: Path) -> None:
    t = _build(tmp_path, [None] * 4, partition="")
    f = replace(_live(t)[f"{t.location}/data/m3-f0.parquet"], manifest_path=None)
    assert _delete(t, f).manifests_opened == 4


def test_retry_reuses_the_rewritten_manifest_and_leaks_nothing(tmp_path: Path) -> None:
    t = _build(tmp_path, VALUES[:10])
    f = replace(_live(t)[f"{t.location}/data/m6-f1.parquet"], manifest_path=None)
    raced: list[int] = []

    class Racing(RowDeltaProducer):
        def apply(self, base, parent, attempt):
            out = super().apply(base, parent, attempt)
            if not raced:  # another writer lands first: this attempt loses the race
                raced.append(attempt.number)
                other = Table.load(base_location)
                FastAppendProducer(other, [(_file(base_location, "late", (50.0,)), "p=50.0")]).commit()
            return out

    base_location = t.location
    p = Racing(t, t.metadata.current_snapshot_id, removed=[(f, "")], check_new_data=False)
    p.commit()
    assert p.attempts == 2
    assert p.manifests_opened == 1  # the second attempt read nothing again
    rewritten = [m for m in p.new_manifest_paths]
    assert len(rewritten) == 1  # written once, reused by the winning attempt
    final = Table.load(t.location)
    assert rewritten[0] in {m.manifest_path for m in avro.load_manifest_list(
        final.io, final.metadata.current_snapshot().manifest_list)}
    live = _live(final)
    assert f.file_path not in live and f"{t.location}/data/late.parquet" in live
    assert _metadata_files(final) == _reachable(final)  # the lost attempt's list is gone


def test_retry_rewrites_when_the_source_manifest_changed(tmp_path: Path) -> None:
    """A concurrent commit replaced the manifest listing the file: the new one is read."""
    t = _build(tmp_path, VALUES[:5])
    f = _live(t)[f"{t.location}/data/m1-f0.parquet"]
    raced: list[int] = []

    class Racing(RowDeltaProducer):
        def apply(self, base, parent, attempt):
            out = super().apply(base, parent, attempt)
            if not raced:  # another writer removes a neighbour of f: its manifest is replaced
                raced.append(1)
                other = Table.load(t.location)
                _delete(other, _live(other)[f"{t.location}/data/m1-f2.parquet"])
            return out

    p = Racing(t, t.metadata.current_snapshot_id, removed=[(f, "")])
    p.commit()
    assert p.attempts == 2 and p.manifests_opened == 2  # the hint is stale: summaries decide
    final = Table.load(t.location)
    live = _live(final)
    assert f.file_path not in live and f"{t.location}/data/m1-f2.parquet" not in live
    assert len(live) == 13
    assert _metadata_files(final) == _reachable(final)


def test_compaction_of_one_partition_reads_only_it(tmp_path: Path) -> None:
    t = _build(tmp_path, VALUES[:20])
    loc = t.location
    # position deletes: one for a replaced file (dangling afterwards), one in another partition
    dangling = _file(loc, "del-7", (7.0,), POSITION_DELETES, referenced_data_file=f"{loc}/data/m7-f0.parquet")
    elsewhere = _file(loc, "del-9", (9.0,), POSITION_DELETES, referenced_data_file=f"{loc}/data/m9-f0.parquet")
    for d in (dangling, elsewhere):
        RowDeltaProducer(t, t.metadata.current_snapshot_id, added_deletes=[(d, "")]).commit()
        t = Table.load(loc)
    live = _live(t)
    removed = [live[f"{loc}/data/m7-f{j}.parquet"] for j in range(3)]
    new = _file(loc, "compacted-7", (7.0,))
    p = RewriteFilesProducer(t, starting_snapshot_id=t.metadata.current_snapshot_id,
                             removed=[replace(f, manifest_path=None) for f in removed],
                             added=[(new, "p=7.0")])
    p.commit()
    # the one data manifest of the partition and the delete manifest of that partition
    assert p.manifests_opened == 2
    assert [f.file_path for f in p.removed_deletes] == [dangling.file_path]
    after = _live(Table.load(loc))
    assert new.file_path in after and elsewhere.file_path in after and dangling.file_path not in after
    assert not any(f"{loc}/data/m7-f{j}.parquet" in after for j in range(3))


def test_compaction_by_paths_still_works_without_pruning(tmp_path: Path) -> None:
    t = _build(tmp_path, VALUES[:4])
    loc = t.location
    paths = [f"{loc}/data/m2-f{j}.parquet" for j in range(3)]
    p = RewriteFilesProducer(t, starting_snapshot_id=t.metadata.current_snapshot_id,
                             removed=paths, added=[(_file(loc, "c2", (2.0,)), "p=2.0")])
    p.commit()
    assert p.manifests_opened == 4
    assert not set(paths) & set(_live(Table.load(loc)))


def test_retry_reuses_the_merged_manifest_and_leaks_nothing(tmp_path: Path) -> None:
    """Merging (here from 2 manifests on) reads every manifest, as the reference's merge does;
    a retry whose bin is unchanged reuses the merged manifest instead of writing it again."""
    from icectl.spec.metadata import with_properties

    t = _build(tmp_path, VALUES[:4])
    t.commit(lambda md: with_properties(md, {"commit.manifest.min-count-to-merge": "2"}))
    t = Table.load(t.location)
    f = _live(t)[f"{t.location}/data/m2-f0.parquet"]
    raced: list[int] = []

    class Racing(RowDeltaProducer):
        def apply(self, base, parent, attempt):
            out = super().apply(base, parent, attempt)
            if not raced:  # a commit that changes no manifest: the bin stays the same
                raced.append(1)
                other = Table.load(t.location)
                other.commit(lambda md: with_properties(md, {"x": "1"}))
            return out

    p = Racing(t, t.metadata.current_snapshot_id, removed=[(f, "")])
    p.commit()
    assert p.attempts == 2
    assert p.manifests_opened == 1 + 3  # the file's manifest, then the others for the merge
    assert len(p.new_manifest_paths) == 2  # the rewritten manifest and the merged one, once each
    final = Table.load(t.location)
    (merged,) = avro.load_manifest_list(final.io, final.metadata.current_snapshot().manifest_list)
    assert merged.existing_files_count == 11 and merged.deleted_files_count == 1
    assert f.file_path not in _live(final) and len(_live(final)) == 11
    assert _metadata_files(final) == _reachable(final)  # the rewritten input of the merge is gone


@pytest.mark.parametrize("older_elsewhere", [False, True])
def test_global_equality_delete_dangles_only_when_no_unread_manifest_may_be_older(
        tmp_path: Path, older_elsewhere: bool) -> None:
    """An equality delete of an unpartitioned spec applies to every partition: the compaction of
    one partition removes it only when no data file left may be older, judged for the data
    manifests it does not read by their min_sequence_number."""
    from icectl.ops.metadata.partition_spec import add_partition_field
    from icectl.spec.manifests import EQUALITY_DELETES

    loc = str(tmp_path / "t")
    create_table(loc, schema_text="id long, p double", partition_text="", format_version=2)
    add_partition_field(Table.load(loc), "p")

    def append(name: str, value: float) -> None:
        t = Table.load(loc)
        f = replace(_file(loc, name, (value,)), spec_id=1)
        FastAppendProducer(t, [(f, f"p={value}")]).commit()

    def global_delete() -> DataFile:
        t = Table.load(loc)
        d = _file(loc, "eq-global", (), EQUALITY_DELETES, equality_ids=(1,))
        RowDeltaProducer(t, t.metadata.current_snapshot_id, added_deletes=[(d, "")]).commit()
        return d

    append("two-a", 2.0)
    if older_elsewhere:
        append("five", 5.0)  # older than the delete: the delete still applies to it
    d = global_delete()
    if not older_elsewhere:
        append("five", 5.0)  # newer than the delete
    t = Table.load(loc)
    f = _live(t)[f"{loc}/data/two-a.parquet"]
    p = RewriteFilesProducer(t, starting_snapshot_id=t.metadata.current_snapshot_id, removed=[f],
                             added=[(replace(f, file_path=f"{loc}/data/two-c.parquet"), "p=2.0")])
    p.commit()
    assert p.manifests_opened == 2  # the partition's data manifest and the global delete's
    live = _live(Table.load(loc))
    assert (d.file_path in live) == older_elsewhere
    assert [x.file_path for x in p.removed_deletes] == ([] if older_elsewhere else [d.file_path])


@pytest.mark.parametrize("schema, partition, column, values", [
    ("id long, s string", "s", "s", ["b", None, "a", ""]),
    ("id long, d date", "d", "d", [-1, 0, 19000, None]),
    ("id long, ts timestamp", "day(ts)", "ts", [-86_400_000_001, 0, 1_700_000_000_000_000, None]),
    ("id long, ts timestamp", "hour(ts)", "ts", [-1, 0, 3_600_000_000, None]),
    ("id long, n long", "truncate(n, 10)", "n", [-15, -1, 0, 99]),
    ("id long, x decimal(9,2)", "x", "x", ["-1.50", "0.00", "2.25", None]),
    ("id long, b boolean", "b", "b", [True, False, None, True]),
    ("id long, n long", "bucket(n, 4)", "n", [1, 2, 3, 4]),
])
def test_files_written_by_icectl_are_found_through_their_partition(
        tmp_path: Path, schema, partition, column, values) -> None:
    """For each type and transform, a removed file (no hint) is looked for only in the
    manifests whose summaries hold its partition, and is found there (no fallback)."""
    import datetime
    import decimal

    import pyarrow as pa

    from icectl.ops.write.rows import write_rows
    from icectl.table.commit.manifest_filter import RemovalFilter

    loc = str(tmp_path / "t")
    create_table(loc, schema_text=schema, partition_text=partition, format_version=2)
    for i, v in enumerate(values):  # one manifest (of one file) per write
        if "date" in schema and v is not None:
            v = datetime.date(1970, 1, 1) + datetime.timedelta(days=v)
        if "timestamp" in schema and v is not None:
            v = datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=v)
        if "decimal" in schema and v is not None:
            v = decimal.Decimal(v)
        write_rows(Table.load(loc), pa.table({"id": pa.array([i], pa.int64()), column: [v]}))
    t = Table.load(loc)
    manifests = avro.load_manifest_list(t.io, t.metadata.current_snapshot().manifest_list)
    assert len(manifests) == len(values)
    live = _live(t).values()
    for f in live:
        opened = RemovalFilter(t.metadata, [replace(f, manifest_path=None)]).candidates(manifests)
        # exactly the manifests listing a file of the same partition (single-value summaries)
        assert {m.manifest_path for m in opened} == {g.manifest_path for g in live
                                                     if g.partition == f.partition}


def test_delete_rows_of_one_partition_opens_one_manifest(tmp_path: Path, monkeypatch) -> None:
    """Through the operation: ``delete`` of one partition's rows (whole files, no data read)
    on a 30-manifest table commits after opening one manifest."""
    from icectl.ops.delete.merge_on_read import delete_rows

    t = _build(tmp_path, VALUES)
    opened = record_manifests_opened(monkeypatch, RowDeltaProducer)
    r = delete_rows(t, "p = 17.0", mode="merge-on-read")
    assert r.committed and len(r.removed_data_files) == 3
    assert opened == [1]
    live = _live(Table.load(t.location))
    assert len(live) == 87 and not any("/m17-" in path for path in live)


def test_signed_zero_partitions_removed_together_open_their_two_manifests(tmp_path: Path) -> None:
    # -0.0 and 0.0 are equal in Python: as one key, one of the two partitions was looked for and
    # the other file found only by reading every manifest
    values = [None, math.nan, -0.0, 0.0, -5.5, 3.25, 1e300]
    t = _build(tmp_path, values)
    live = _live(t)
    files = [replace(live[f"{t.location}/data/m{i}-f0.parquet"], manifest_path=None) for i in (2, 3)]
    p = RowDeltaProducer(t, t.metadata.current_snapshot_id, removed=[(f, "") for f in files])
    p.commit()
    assert p.manifests_opened == 2
    after = _live(Table.load(t.location))
    assert all(f.file_path not in after for f in files)
