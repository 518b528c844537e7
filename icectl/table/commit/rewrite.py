"""Replacing data files: the reference's ``RewriteFiles`` (``replace``) and ``OverwriteFiles``
(``overwrite``) snapshot producers.

Both remove data files and add data files in one snapshot; they differ in what the change means
and so in what a lost race must re-check:

* :class:`RewriteFilesProducer` (compaction) changes the layout, not the rows. Operation
  ``replace``. The new files take the data sequence number of the snapshot the rewrite started
  from (the reference's ``use-starting-sequence-number``), so an equality delete committed
  meanwhile still applies to them. On a retry on top of newer snapshots it re-validates from the
  starting snapshot: the replaced files are still live, and no position delete or deletion
  vector added since applies to them (equality deletes are fine, see above); else
  :class:`~icectl.errors.CommitConflict`.
* :class:`OverwriteFilesProducer` (copy-on-write row deletes) changes rows. Its operation is the
  reference's: ``delete`` when it only removes files, ``append`` when it only adds, else
  ``overwrite``. New files get the new snapshot's sequence number. On a retry: the replaced
  files are still live, no delete file at all was added for them since, and, at the
  ``serializable`` isolation level, no data file added since may hold rows the filter selects.

Delete files that only the replaced data files needed go in the same commit (``removed-*``
summary counts): a deletion vector or file-scoped position delete of a replaced file; and, in
the partitions the commit touches, position deletes no remaining data file can be the target of
(by sequence number and ``file_path`` bounds) and equality deletes no remaining data file is
older than (the reference's dangling-delete rules). Callers may name more delete files to remove.

The replaced files are DataFiles (bare paths are accepted, then every data manifest is read):
only the data manifests that can list them are opened (:mod:`icectl.table.commit.manifest_filter`),
and for dangling deletes only the delete manifests of the partitions the commit touches and of
unpartitioned specs (global equality deletes), with the data manifests of those partitions
once a delete file there needs them (one naming a replaced data file does not); the rule is
:func:`icectl.table.delete_index.is_dangling`. Data manifests left unread count as older than
an equality delete when their ``min_sequence_number`` is. A retry reuses what it read and the
manifests it rewrote.

Both are merging producers, as the reference's ``RewriteFiles`` and ``OverwriteFiles`` are: the
new snapshot's manifests (new ones first, data then deletes) go through the manifest merge of
:meth:`~icectl.table.commit.producer.SnapshotProducer.merge_manifests` (``commit.manifest-merge.enabled``,
true unless the table says otherwise; ``commit.manifest.min-count-to-merge``;
``commit.manifest.target-size-bytes``).

The commit machinery deletes every manifest an attempt wrote when the commit fails; the data
files the operation wrote are the operation's to remove (it knows them).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from icectl.errors import CommitConflict
from icectl.spec.partition_identity import partition_key
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
    ManifestFile,
)
from icectl.spec.manifests import entry_key as delete_file_key  # re-exported (its older name)
from icectl.spec.metadata import TableMetadata
from icectl.spec.partition_path import partition_path
from icectl.spec.snapshots import Snapshot
from icectl.spec.summary import SummaryBuilder
from icectl.table.commit import validation
from icectl.table.commit.manifest_filter import RemovalFilter, collect, rewrite_manifest
from icectl.table.delete_index import LiveDataFiles, delete_target, is_dangling
from icectl.table.commit.producer import MergePolicy, SnapshotProducer, lists_live_files
from icectl.table.table import CommitAttempt, Table

__all__ = ["RewriteFilesProducer", "OverwriteFilesProducer", "delete_file_key"]

class RewriteFilesProducer(SnapshotProducer):
    """Replace data files by others holding the same rows (see the module docs)."""

    operation = "replace"

    def __init__(self, table: Table, *, starting_snapshot_id: int | None,
                 removed: Iterable[DataFile | str], added: Iterable[tuple[DataFile, str]] = (),
                 removed_deletes: Iterable[DataFile] = (), use_starting_sequence_number: bool = True,
                 remove_dangling_deletes: bool = True, **kwargs: Any):
        super().__init__(table, **kwargs)
        self.starting_snapshot_id = starting_snapshot_id
        # DataFiles (their manifest and partition tell where to look) or bare paths (anywhere)
        self._removed = list(removed)
        self._removed_paths = {f if isinstance(f, str) else f.file_path for f in self._removed}
        self._added = list(added)  # (data file with spec_id, partition path)
        self._explicit = list(removed_deletes)
        self._explicit_deletes = {delete_file_key(f) for f in self._explicit}
        self._remove_dangling = remove_dangling_deletes
        start = table.metadata.snapshot_by_id(starting_snapshot_id) \
            if starting_snapshot_id is not None else None
        self.data_sequence_number: int | None = None
        if use_starting_sequence_number and start is not None:
            self.data_sequence_number = start.sequence_number
        self.removed_data: list[DataFile] = []  # filled by apply, for the summary
        self.removed_deletes: list[DataFile] = []

    # -- validation -----------------------------------------------------------------------

    @property
    def ignore_equality_deletes(self) -> bool:
        return self.data_sequence_number is not None

    def validate(self, base: TableMetadata, parent: Snapshot | None) -> None:
        head = parent.snapshot_id if parent is not None else None
        if head == self.starting_snapshot_id:
            return
        validation.validate_files_live(self.io, base, self.starting_snapshot_id, head,
                                       self._removed_paths)
        self._validate_more(base, head)

    def _validate_more(self, base: TableMetadata, head: int | None) -> None:
        """Checks that need the replaced files' entries: done in :meth:`apply` through
        :meth:`_check_deletes`, once the entries are read."""

    def _check_deletes(self, base: TableMetadata, parent: Snapshot | None) -> None:
        head = parent.snapshot_id if parent is not None else None
        if head == self.starting_snapshot_id:
            return
        validation.validate_no_new_deletes(self.io, base, self.starting_snapshot_id, head,
                                           self.removed_data,
                                           ignore_equality=self.ignore_equality_deletes)

    # -- the snapshot ---------------------------------------------------------------------

    def summary(self, base: TableMetadata) -> SummaryBuilder:
        b = SummaryBuilder.for_table(base.properties).added_files(self._added)
        for f in self.removed_data + self.removed_deletes:
            b.removed_file(f, _ppath(base, f))
        return b

    def apply(self, base: TableMetadata, parent: Snapshot | None,
              attempt: CommitAttempt) -> list[ManifestFile]:
        manifests = self.parent_manifests(base, parent)
        self.removed_data, self.removed_deletes = [], []
        state = _LiveState()
        loaded: dict[str, list[ManifestEntry]] = {}
        # only the data manifests that can list the replaced files (table/commit/manifest_filter.py)
        opened = RemovalFilter(base, self._removed).find(
            manifests, (MANIFEST_DATA,), self.manifest_entries, self._replaces(state),
            lambda: not self._removed_paths - {f.file_path for f in self.removed_data}, loaded)
        missing = self._removed_paths - {f.file_path for f in self.removed_data}
        if missing:
            raise CommitConflict(f"data file {sorted(missing)[0]} is no longer live in branch "
                                 f"{self.branch}; run the operation again")
        self._check_deletes(base, parent)
        new_seq = self.data_sequence_number
        for f, _ in self._added:
            state.add_file(f, new_seq if new_seq is not None else 1 << 62)
        state.touched = {(f.spec_id, partition_key(tuple(f.partition))): (f.spec_id, f.partition)
                         for f in self.removed_data}
        removing_deletes = self._deletes_to_remove(base, manifests, opened, state, loaded)
        kept = self.carry_forward(manifests, loaded, lambda m, entries: self._rewrite_manifest(
            attempt, base, m, entries, removing_deletes))
        added = self._write_added(attempt, base)
        ordered = [m for c in (MANIFEST_DATA, MANIFEST_DELETES)
                   for m in [*(a for a in added if a.content == c), *(k for k in kept if k.content == c)]]
        # the reference's RewriteFiles and OverwriteFiles are merging producers: they merge
        # manifests as its row delta does, unless the table turns it off
        return self.merge_manifests(attempt, base, ordered,
                                    MergePolicy.from_metadata(base, enabled_default=True))

    def _replaces(self, state: "_LiveState") -> Callable[[ManifestEntry], bool]:
        """Whether a live data entry is a replaced file (noted in ``removed_data``); the other
        live files go into ``state``."""
        def replaces(e: ManifestEntry) -> bool:
            f = e.data_file
            if f.file_path in self._removed_paths:
                self.removed_data.append(f)
                return True
            state.add_file(f, e.data_sequence_number)
            return False
        return replaces

    def _write_added(self, attempt: CommitAttempt, base: TableMetadata) -> list[ManifestFile]:
        by_spec: dict[int, list[ManifestEntry]] = {}
        for f, _ in self._added:
            by_spec.setdefault(f.spec_id, []).append(
                ManifestEntry(ADDED, self.snapshot_id, self.data_sequence_number, None, f))
        out: list[ManifestFile] = []
        for spec_id, entries in by_spec.items():
            out += self.write_manifests(attempt, base, base.spec_by_id(spec_id), entries)
        return out

    def _deletes_to_remove(self, base: TableMetadata, manifests: list[ManifestFile],
                           opened: list[ManifestFile], state: "_LiveState",
                           loaded: dict[str, list[ManifestEntry]]) -> set:
        """Keys of the delete files this commit removes; their manifests' entries go into
        ``loaded`` (so they are rewritten). Only delete manifests that can hold them are read:
        those of the named delete files, and, for dangling deletes, those of the partitions
        the commit touches and of unpartitioned specs (global equality deletes)."""
        unpartitioned = {s.spec_id for s in base.specs if s.is_unpartitioned()}
        finder = RemovalFilter(base, self._explicit)
        chosen = {m.manifest_path for m in finder.candidates(manifests)
                  if m.content == MANIFEST_DELETES}
        if self._remove_dangling and state.touched:
            chosen.update(m.manifest_path for m in finder.in_partitions(
                manifests, [(MANIFEST_DELETES, spec_id, p) for spec_id, p in state.touched.values()]))
            chosen.update(m.manifest_path for m in manifests if m.content == MANIFEST_DELETES
                          and m.partition_spec_id in unpartitioned and lists_live_files(m))

            def complete() -> None:
                """The live files of the touched partitions, all of them, for the dangling
                rules: read once, when a delete file needs them (one naming a replaced data
                file does not)."""
                seen = {m.manifest_path for m in opened}
                more = [m for m in finder.in_partitions(
                    manifests, [(MANIFEST_DATA, spec_id, p) for spec_id, p in state.touched.values()])
                    if m.manifest_path not in seen]
                collect(more, self.manifest_entries, self._replaces(state), loaded)
                seen.update(m.manifest_path for m in more)
                # data files not read are older than a delete when their manifest says it may be
                state.floor = min((m.min_sequence_number or 0 for m in manifests
                                   if m.content == MANIFEST_DATA and m.manifest_path not in seen
                                   and lists_live_files(m)), default=None)

            state.completion = complete
        out: set = set()

        def removes(e: ManifestEntry) -> bool:
            f = e.data_file
            key = delete_file_key(f)
            if key in self._explicit_deletes or (
                    self._remove_dangling and self._dangling(f, e.data_sequence_number or 0,
                                                             state, unpartitioned)):
                out.add(key)
                self.removed_deletes.append(f)
                return True
            return False

        collect((m for m in manifests if m.content == MANIFEST_DELETES and m.manifest_path in chosen),
                self.manifest_entries, removes, loaded)
        return out

    def _dangling(self, f: DataFile, seq: int, state: "_LiveState", unpartitioned: set) -> bool:
        """The dangling rule (:func:`~icectl.table.delete_index.is_dangling`), judged only
        where this commit knows every live data file: deletes naming a file it replaces, the
        other deletes of the partitions it touches, global equality deletes."""
        if f.content == POSITION_DELETES and (target := delete_target(f)) is not None:
            # its file replaced here: what else is live does not matter
            return target in self._removed_paths and is_dangling(f, seq, state, unpartitioned)
        if f.content == POSITION_DELETES or f.content == EQUALITY_DELETES:
            if not (state.touches(f.spec_id, f.partition)
                    if f.content == POSITION_DELETES or f.spec_id not in unpartitioned
                    else state.touched):
                return False
            state.complete()
        return is_dangling(f, seq, state, unpartitioned)

    def _rewrite_manifest(self, attempt: CommitAttempt, base: TableMetadata, m: ManifestFile,
                          entries: list[ManifestEntry], removing_deletes: set) -> list[ManifestFile]:
        def gone(f: DataFile) -> bool:
            return (f.file_path in self._removed_paths if f.content == DATA
                    else delete_file_key(f) in removing_deletes)

        # the same source and the same removals: an earlier attempt's copy is still right
        key = ("rewrite", m.manifest_path, frozenset(
            delete_file_key(e.data_file) for e in entries if e.status != DELETED and gone(e.data_file)))
        return self.reuse_or_write(attempt, key, lambda: rewrite_manifest(
            self, attempt, base, m, entries, gone))


class OverwriteFilesProducer(RewriteFilesProducer):
    """Remove data files and add the rows they keep (copy-on-write deletes; module docs)."""

    stages_with_wap_id = True

    def __init__(self, table: Table, *, starting_snapshot_id: int | None,
                 removed: Iterable[str | DataFile], added: Iterable[tuple[DataFile, str]] = (),
                 conflict_filter: Callable[[DataFile], bool] | None = None, **kwargs: Any):
        super().__init__(table, starting_snapshot_id=starting_snapshot_id, removed=removed,
                         added=added, use_starting_sequence_number=False, **kwargs)
        self._conflict_filter = conflict_filter

    @property
    def operation(self) -> str:  # type: ignore[override]
        if self._removed_paths and not self._added:
            return "delete"
        if self._added and not self._removed_paths:
            return "append"
        return "overwrite"

    def _validate_more(self, base: TableMetadata, head: int | None) -> None:
        if self._conflict_filter is not None:
            validation.validate_no_new_data(self.io, base, self.starting_snapshot_id, head,
                                            self._conflict_filter)


class _LiveState(LiveDataFiles):
    """The data files live after the commit (the dangling-delete rules' view) and the
    partitions the commit touches, by (spec id, partition key): (spec id, partition)."""

    def __init__(self) -> None:
        super().__init__()
        self.touched: dict[tuple, tuple] = {}
        self.completion: Callable[[], None] | None = None  # reads the touched partitions' files

    def complete(self) -> None:
        """Make sure every live data file of the touched partitions is here (once)."""
        done, self.completion = self.completion, None
        if done is not None:
            done()

    def add_file(self, f: DataFile, seq: int | None) -> None:
        self.add(f.spec_id, f.partition, f.file_path, seq)

    def touches(self, spec_id: int, partition: tuple) -> bool:
        return (spec_id, partition_key(tuple(partition))) in self.touched


def _ppath(md: TableMetadata, f: DataFile) -> str:
    try:
        spec = md.spec_by_id(f.spec_id)
        return partition_path(spec, md.schema, f.partition) if spec.fields else ""
    except Exception:  # noqa: BLE001 - a spec whose source column is gone: no partition path
        return ""
