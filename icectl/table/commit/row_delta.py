"""The row delta: one snapshot that adds and removes data and delete files (the reference's
``RowDelta``), with the reference's re-validation when the branch moved meanwhile.

A :class:`RowDeltaProducer` carries

* added data files and added delete files (position deletes, deletion vectors, equality
  deletes), each in new manifests, one per partition spec and content;
* removed data files and removed delete files (a deletion vector replaced by a merged one),
  marked deleted in rewritten copies of the manifests listing them.

Only the manifests that can list a removed file are opened (:mod:`icectl.table.commit.manifest_filter`:
the file's ``manifest_path`` hint, else partition summaries); a retry reuses the entries read
and the rewritten manifests whose source is still in the new parent.

Manifests are then merged as the reference's merging producers merge them
(``commit.manifest-merge.enabled``, true by default for a row delta, as in the reference). As
there, a merge reads every manifest of the bins it merges: with 100 or more small manifests
(``commit.manifest.min-count-to-merge``) a one-file delete merges them all, once.

The operation is derived as the reference derives it: ``append`` when data files are only
added, ``delete`` when delete files are added (or files only removed) and no data file is added,
``overwrite`` otherwise. (A delete that only drops whole files is the reference's
``DeleteFiles``, whose operation is ``delete`` too.)

**Re-validation.** The operation read the table at ``starting_snapshot_id``. When the branch head
is still that snapshot nothing can conflict. Otherwise, on every attempt, the snapshots committed
since are checked as the reference's ``BaseRowDelta.validate`` does for the isolation level
(``write.delete.isolation-level``: ``serializable``, the default, or ``snapshot``):

* the starting snapshot must still be an ancestor of the head;
* the data files the operation read and referenced (the targets of its position deletes and
  deletion vectors, the files it removes) must still be live;
* no delete file applying to those data files may have been added (both levels);
* no deletion vector may have been added for a data file this commit gives a new one;
* ``serializable`` only: no data file may have been added that may hold rows matching the
  operation's conflict filter (``may_match``).

A failed check raises :class:`~icectl.errors.CommitConflict`; the template removes every file
the attempt wrote (the operation removes the data and delete files it wrote).
"""

from __future__ import annotations

from typing import Callable, Iterable

from icectl.errors import CommitConflict, ValidationError
from icectl.spec.manifests import (
    ADDED,
    MANIFEST_DATA,
    MANIFEST_DELETES,
    DataFile,
    ManifestEntry,
    ManifestFile,
    entry_key,
)
from icectl.spec.metadata import TableMetadata
from icectl.spec.snapshots import Snapshot
from icectl.spec.summary import SummaryBuilder
from icectl.table.commit.manifest_filter import RemovalFilter, rewrite_manifest
from icectl.table.commit.producer import MergePolicy, SnapshotProducer
from icectl.table.table import CommitAttempt, Table
from icectl.table.commit import validation as v
from icectl.table.commit.validation import SERIALIZABLE, filter_may_match, isolation_level

__all__ = ["RowDeltaProducer", "row_delta_operation", "filter_may_match"]

FileWithPath = tuple[DataFile, str]  # a file (spec_id set) and its partition path


def row_delta_operation(adds_data: bool, adds_deletes: bool, removes_data: bool) -> str:
    """The snapshot operation of a row delta, as the reference derives it."""
    if adds_data and not adds_deletes and not removes_data:
        return "append"
    if not adds_data:
        return "delete"
    return "overwrite"


class RowDeltaProducer(SnapshotProducer):
    """Commit added/removed data and delete files as one snapshot (see the module docs).

    ``starting_snapshot_id`` is the snapshot the operation read (None: the branch was empty).
    ``referenced_data_files`` are the data files (manifest entries, ``spec_id`` set) the new
    position deletes and deletion vectors point at; ``may_match(data_file)`` tells whether a newly added data file
    may hold rows the operation would have touched (serializable isolation; None: any may).
    ``check_new_data`` turns that check on (the default for the serializable level).
    """

    stages_with_wap_id = True

    def __init__(self, table: Table, starting_snapshot_id: int | None, *,
                 added_data: Iterable[FileWithPath] = (),
                 added_deletes: Iterable[FileWithPath] = (),
                 removed: Iterable[FileWithPath] = (),
                 removed_deletes: Iterable[FileWithPath] = (),
                 referenced_data_files: Iterable[DataFile] = (),
                 may_match: Callable[[DataFile], bool] | None = None,
                 isolation: str | None = None,
                 check_new_data: bool | None = None,
                 **kwargs):
        super().__init__(table, **kwargs)
        self.starting_snapshot_id = starting_snapshot_id
        self._added_data = list(added_data)
        self._added = list(added_deletes)
        self._removed = list(removed)
        self._removed_deletes = list(removed_deletes)
        self.referenced_data_files = list(referenced_data_files)
        self.may_match = may_match
        self.isolation = isolation or isolation_level(table.metadata)
        self.check_new_data = (self.isolation == SERIALIZABLE) if check_new_data is None else check_new_data
        self.operation = row_delta_operation(bool(self._added_data), bool(self._added),
                                             bool(self._removed))
        self._written: dict[tuple[int, int], list[ManifestFile]] | None = None

    # -- validation -------------------------------------------------------------------------

    def validate(self, base: TableMetadata, parent: Snapshot | None) -> None:
        head = parent.snapshot_id if parent is not None else None
        if head == self.starting_snapshot_id:
            return
        if parent is None:
            raise CommitConflict(f"branch {self.branch} was removed while the change was prepared")
        start = self.starting_snapshot_id
        read = {f.file_path: f for f in self.referenced_data_files + [f for f, _ in self._removed]}
        what = f"(isolation level {self.isolation})"
        try:
            if read:
                v.validate_files_live(self.io, base, start, head, read)
                v.validate_no_new_deletes(self.io, base, start, head, read.values())
            if self._removed_deletes:
                v.validate_files_live(self.io, base, start, head,
                                      {f.file_path for f, _ in self._removed_deletes},
                                      content=MANIFEST_DELETES)
            if self.check_new_data:
                v.validate_no_new_data(self.io, base, start, head,
                                       self.may_match or (lambda f: True))
        except (CommitConflict, ValidationError) as e:
            raise CommitConflict(f"{e} {what}") from None

    # -- the snapshot -----------------------------------------------------------------------

    def summary(self, base: TableMetadata) -> SummaryBuilder:
        b = SummaryBuilder.for_table(base.properties).added_files(self._added_data + self._added)
        for f, path in self._removed + self._removed_deletes:
            b.removed_file(f, path)
        return b

    def _new_manifests(self, base: TableMetadata, attempt: CommitAttempt) -> dict[tuple[int, int], list[ManifestFile]]:
        """The manifests of the added files, written once and reused by later attempts."""
        if self._written is not None:
            for ms in self._written.values():
                for m in ms:
                    attempt.track(m.manifest_path)  # reused by this attempt: keep it
            return self._written
        groups: dict[tuple[int, int], list[ManifestEntry]] = {}
        for content, files in ((MANIFEST_DATA, self._added_data), (MANIFEST_DELETES, self._added)):
            for f, _ in files:
                groups.setdefault((content, f.spec_id), []).append(
                    ManifestEntry(ADDED, self.snapshot_id, None, None, f))
        self._written = {
            key: self.write_manifests(attempt, base, base.spec_by_id(key[1]), entries, key[0])
            for key, entries in sorted(groups.items())}
        return self._written

    def apply(self, base: TableMetadata, parent: Snapshot | None, attempt: CommitAttempt) -> list[ManifestFile]:
        written = self._new_manifests(base, attempt)
        targets = [f for f, _ in self._removed + self._removed_deletes]
        removing = {entry_key(f) for f in targets}
        parents = self.parent_manifests(base, parent)
        hits: dict[str, list[ManifestEntry]] = {}  # opened manifests listing a file to remove
        found: set[tuple] = set()

        def removes(e: ManifestEntry) -> bool:
            key = entry_key(e.data_file)
            if key in removing:
                found.add(key)
                return True
            return False

        if removing:
            # only the manifests that can list the removed files (table/commit/manifest_filter.py)
            RemovalFilter(base, targets).find(parents, (MANIFEST_DATA, MANIFEST_DELETES),
                                              self.manifest_entries, removes,
                                              lambda: not removing - found, hits)
        missing = {k[1] for k in removing - found}
        if missing:
            raise CommitConflict(f"cannot remove {sorted(missing)[0]}: it is no longer live in "
                                 f"branch {self.branch}; nothing was committed")
        kept = self.carry_forward(parents, hits, lambda m, entries: self.reuse_or_write(
            attempt, ("remove", m.manifest_path),
            lambda: self._rewrite(attempt, base, m, entries, removing)))
        new_data = [m for (c, _), ms in written.items() if c == MANIFEST_DATA for m in ms]
        new_deletes = [m for (c, _), ms in written.items() if c == MANIFEST_DELETES for m in ms]
        manifests = (new_data + [m for m in kept if m.content == MANIFEST_DATA]
                     + new_deletes + [m for m in kept if m.content != MANIFEST_DATA])
        # the reference's row delta merges manifests unless the table turns it off
        return self.merge_manifests(attempt, base, manifests,
                                    MergePolicy.from_metadata(base, enabled_default=True))

    def _rewrite(self, attempt: CommitAttempt, base: TableMetadata, m: ManifestFile,
                 entries: list[ManifestEntry], removing: set[tuple]) -> list[ManifestFile]:
        """A copy of ``m`` with the removed files marked deleted (older deletes dropped)."""
        return rewrite_manifest(self, attempt, base, m, entries, lambda f: entry_key(f) in removing)



