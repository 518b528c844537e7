"""Producing a snapshot: the template every snapshot-writing operation follows.

Like the reference's ``SnapshotProducer``, an operation supplies three things:

* :meth:`SnapshotProducer.validate` - checks against the metadata being committed on (re-run
  on every retry, so a concurrent writer's change is seen);
* :meth:`SnapshotProducer.apply` - the manifests of the new snapshot (writing new ones with
  :meth:`SnapshotProducer.write_manifests`, which tracks them for clean-up);
* :attr:`SnapshotProducer.operation` and :meth:`SnapshotProducer.summary` - the summary.

:meth:`SnapshotProducer.commit` then picks the target branch's head as parent, takes the next
sequence number (and, in v3, the table's next row id), writes the manifest list
``metadata/snap-<id>-<attempt>-<commit uuid>.avro``, builds the snapshot with the summary totals
carried forward, and commits through :meth:`Table.commit_transaction`, which retries on conflicts
and deletes every file a failed or lost attempt wrote - but none when the commit's outcome is
unknown (:class:`~icectl.errors.CommitStateUnknown`: the version may be in the table). Files are
registered with the running command before they are written (:mod:`icectl.command_files`), so
an interrupted command removes them too, and the files a landed commit adds are settled.

The row delta (data and delete files added and removed, re-validated on a lost race) is
:class:`icectl.table.commit.row_delta.RowDeltaProducer`, built on this template.

Parent manifests are read through :meth:`SnapshotProducer.manifest_entries` (counted in
``manifests_opened``, read once per commit); manifests an attempt writes from unchanged inputs
are reused by the next attempt through :meth:`SnapshotProducer.reuse_or_write` (merged bins too).

Manifest merging follows the reference's ``ManifestMergeManager`` (``commit.manifest-merge.enabled``,
``commit.manifest.min-count-to-merge``, ``commit.manifest.target-size-bytes``); a merged
manifest copies its entries' encoded data_file bytes (:mod:`icectl.io.manifest.copy`).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from typing import Callable, Iterable, Iterator, Mapping, Sequence

from icectl import __version__
from icectl.errors import CorruptMetadata, NotFound, ValidationError
from icectl.io.formats.avro_container import naming_file
from icectl.io.manifest import records as avro
from icectl.io.manifest import copy as manifest_copy
from icectl.io.storage.files import FileIO, join
from icectl.spec.manifests import (
    ADDED,
    MANIFEST_DATA,
    MANIFEST_DELETES,
    DataFile,
    ManifestEntry,
    ManifestFile,
    assign_manifest_first_row_ids,
    summarize_columns,
)
from icectl.spec.metadata import TableMetadata, add_snapshot, next_sequence_number, now_ms
from icectl.spec.partitioning import PartitionSpec
from icectl.spec.properties import (  # re-exported: older homes of these names
    MANIFEST_MERGE_ENABLED,
    MANIFEST_MIN_MERGE_COUNT,
    MANIFEST_MIN_MERGE_COUNT_DEFAULT,
    MANIFEST_TARGET_SIZE,
    MANIFEST_TARGET_SIZE_DEFAULT,
    property_int,
)
from icectl.spec.snapshots import MAIN_BRANCH, Snapshot
from icectl.spec.summary import SummaryBuilder, snapshot_summary
from icectl.spec.types import StructType
from icectl.spec.wap import check_can_stage, wap_summary
from icectl.spec.values import to_bytes
from icectl.table.branches import branch_to_commit
from icectl.table.commit.idempotency import IDEMPOTENCY_KEY, AlreadyCommitted, snapshot_with_key
from icectl.table.store import metadata_dir
from icectl.table.table import CommitAttempt, RetryPolicy, Table

__all__ = [
    "SnapshotProducer", "FastAppendProducer", "ProducedSnapshot", "MergePolicy",
    "new_snapshot_id", "pack_end", "ENVIRONMENT", "unreadable_current_snapshot", "lists_live_files",
    "MANIFEST_MERGE_ENABLED", "MANIFEST_MIN_MERGE_COUNT", "MANIFEST_TARGET_SIZE",
]


# Written after the totals, as the reference writes its environment context.
ENVIRONMENT = {"engine-name": "icectl", "engine-version": __version__}


def new_snapshot_id() -> int:
    """A random positive 63-bit id (the two halves of a random UUID xor-ed, as the reference)."""
    while True:
        u = uuid.uuid4().int
        sid = ((u >> 64) ^ u) & 0x7FFF_FFFF_FFFF_FFFF
        if sid:
            return sid


def lists_live_files(m: ManifestFile) -> bool:
    """Whether a parent's manifest lists an added or existing file (unknown counts: it may).
    The reference's merging producers carry only such manifests of the parent into the new
    snapshot (icectl's row delta and file rewrites do too; the fast append keeps every parent
    manifest, as the reference's does); one listing only deleted entries is dropped."""
    return (m.added_files_count is None or m.added_files_count > 0
            or m.existing_files_count is None or m.existing_files_count > 0)


def pack_end(items: Sequence, weight: Callable[[object], int], target: int) -> list[list]:
    """Bin packing with a lookback of one, filled from the end (the reference's
    ``ListPacker.packEnd``): order is kept and the under-filled bin is the first one."""
    bins: list[list] = []
    current: list = []
    current_weight = 0
    for item in reversed(items):
        w = weight(item)
        if current and current_weight + w > target:
            bins.append(current)
            current, current_weight = [], 0
        current.append(item)
        current_weight += w
    if current:
        bins.append(current)
    return [list(reversed(b)) for b in reversed(bins)]


@dataclass(frozen=True)
class MergePolicy:
    enabled: bool
    min_count_to_merge: int = MANIFEST_MIN_MERGE_COUNT_DEFAULT
    target_size_bytes: int = MANIFEST_TARGET_SIZE_DEFAULT

    @classmethod
    def from_metadata(cls, md: TableMetadata, enabled_default: bool = False) -> "MergePolicy":
        """The table's merge settings. The reference's own default for
        ``commit.manifest-merge.enabled`` is true for its merging append; icectl's append is
        a fast append unless the property says otherwise (``enabled_default``)."""
        return cls(
            enabled=md.property_as_bool(MANIFEST_MERGE_ENABLED, enabled_default),
            min_count_to_merge=max(0, property_int(md.properties, MANIFEST_MIN_MERGE_COUNT,
                                                   MANIFEST_MIN_MERGE_COUNT_DEFAULT)),
            target_size_bytes=max(1, property_int(md.properties, MANIFEST_TARGET_SIZE,
                                                  MANIFEST_TARGET_SIZE_DEFAULT)),
        )


@dataclass(frozen=True)
class ProducedSnapshot:
    """What a committed snapshot producer made."""

    snapshot: Snapshot
    metadata_location: str
    version: int
    manifests: tuple[ManifestFile, ...]
    new_manifests: tuple[str, ...]
    attempts: int
    branch: str


class SnapshotProducer:
    """Base of snapshot-producing operations (see the module docs)."""

    operation: str = "append"
    copy_entry_bytes: bool = True  # merges copy encoded data_file records (False: raw records)
    # writes data (append, overwrite, row delta): staged, not committed to the branch, when the
    # table handle has a WAP id (icectl.spec.wap); maintenance and cherry-picks never are
    stages_with_wap_id: bool = False

    def __init__(self, table: Table, *, branch: str = MAIN_BRANCH, summary_properties: Mapping[str, str] | None = None,
                 snapshot_id: int | None = None, policy: RetryPolicy | None = None):
        if not branch:
            raise ValidationError("invalid branch name: empty")
        self.table = table
        self.io = table.io
        self.branch = branch
        self.wap_id = table.wap_id if self.stages_with_wap_id else None  # staged under it when set
        self.summary_properties = {**(summary_properties or {}), **wap_summary(self.wap_id)}
        self.snapshot_id = snapshot_id if snapshot_id is not None else new_snapshot_id()
        self.commit_uuid = str(uuid.uuid4())
        self.policy = policy
        self._manifest_counter = 0
        self._present: set[str] = set()  # parent manifests seen to exist (manifests are immutable)
        self.attempts = 0
        self.new_manifest_paths: list[str] = []
        self._added_files: dict[str, None] = {}  # data and delete files the snapshot adds
        self.manifests_opened = 0  # parent manifests read (each at most once: they never change)
        self._entries: dict[str, list[ManifestEntry]] = {}
        self._raw: dict[str, bytes] = {}  # the bytes of the parent manifests in _entries
        self._reusable: dict[tuple, list[ManifestFile]] = {}  # manifests an attempt wrote

    # -- hooks ------------------------------------------------------------------------------

    def validate(self, base: TableMetadata, parent: Snapshot | None) -> None:
        """Raise ValidationError when the change cannot go on top of ``base``."""

    def apply(self, base: TableMetadata, parent: Snapshot | None, attempt: CommitAttempt) -> list[ManifestFile]:
        """The manifests of the new snapshot, in order."""
        raise NotImplementedError

    def summary(self, base: TableMetadata) -> SummaryBuilder:
        """The operation's summary counters (custom properties are added by the template)."""
        return SummaryBuilder()

    # -- helpers for apply ------------------------------------------------------------------

    def parent_manifests(self, base: TableMetadata, parent: Snapshot | None) -> list[ManifestFile]:
        """The parent's manifests; CorruptMetadata (nothing is committed) when its manifest list
        or any of its manifests is missing: a snapshot on top would carry the loss forward."""
        if parent is None:
            return []
        if parent.manifest_list is not None:
            try:
                manifests = avro.load_manifest_list(self.io, parent.manifest_list, base.format_version)
            except NotFound:
                raise CorruptMetadata(_unreadable(parent, f"its manifest list {parent.manifest_list} is missing")
                                      + "; refusing to write on top of it") from None
            for m in manifests:
                if m.manifest_path not in self._present:
                    if not self.io.exists(m.manifest_path):
                        raise CorruptMetadata(_unreadable(parent, f"its manifest {m.manifest_path} is missing")
                                              + "; refusing to write on top of it")
                    self._present.add(m.manifest_path)
            return manifests
        raise ValidationError(
            f"snapshot {parent.snapshot_id} lists manifests inline (very old v1 writer); "
            "icectl cannot append on top of it")

    def manifest_entries(self, m: ManifestFile, keep: bool = True) -> list[ManifestEntry]:
        """The entries of a parent manifest, read once per commit when ``keep`` (a retry
        reuses them; the manifests a change touches, not those a merge reads)."""
        got = self._entries.get(m.manifest_path)
        if got is None:
            self.manifests_opened += 1
            with naming_file("manifest", m.manifest_path):
                raw = self.io.read(m.manifest_path)
                got = avro.read_manifest(raw, m)
            if keep:
                self._entries[m.manifest_path] = got
                self._raw[m.manifest_path] = raw
        return got

    def manifest_bytes(self, m: ManifestFile) -> bytes | None:
        """The bytes of a parent manifest :meth:`manifest_entries` read and kept, else None."""
        return self._raw.get(m.manifest_path)

    def write_carried(self, attempt: CommitAttempt, base: TableMetadata, spec_id: int,
                      content: int, c: manifest_copy.CarriedEntries,
                      target_size: int | None = None) -> list[ManifestFile]:
        """Write carried entries as one or more manifests of this table's layout (split to
        stay near ``target_size`` as :meth:`write_manifests` splits)."""
        if not c.status:
            return []
        layout, metadata = self.layout(base, spec_id, content)
        spec = base.spec_by_id(spec_id)
        target = target_size or MergePolicy.from_metadata(base).target_size_bytes
        out: list[ManifestFile] = []
        for lo, hi, data in _rolled(len(c.status), lambda lo, hi: manifest_copy.write_carried(
                layout, metadata, c.select(list(range(lo, hi)))), target):
            p = c.select(list(range(lo, hi)))
            out.append(self._store_manifest(attempt, spec, spec.partition_type(base.schema), content,
                                            data, p.status, p.record_count, p.sequence_number,
                                            p.partitions, p.file_path))
        return out

    def layout(self, base: TableMetadata, spec_id: int, content: int) -> tuple[dict, dict[str, str]]:
        """The Avro schema and key-value metadata of a manifest this producer writes."""
        spec = base.spec_by_id(spec_id)
        return avro.manifest_header(
            spec.partition_type(base.schema), spec_id=spec.spec_id,
            partition_spec_json=spec.fields_json(), schema_json=base.schema.to_json(),
            format_version=base.format_version, content=content)

    def reuse_or_write(self, attempt: CommitAttempt, key: tuple,
                       write: Callable[[], list[ManifestFile]]) -> list[ManifestFile]:
        """The manifests ``write()`` makes, written once for ``key`` (what they are made of)
        and this snapshot id: a later attempt with the same inputs reuses them (and keeps them:
        it tracks them as its own)."""
        key = (key, self.snapshot_id)
        got = self._reusable.get(key)
        if got is None:
            got = self._reusable[key] = write()
        else:
            for m in got:
                attempt.track(m.manifest_path)
        return got

    def carry_forward(self, manifests: Sequence[ManifestFile], touched: Mapping[str, list[ManifestEntry]],
                      rewrite: Callable[[ManifestFile, list[ManifestEntry]], list[ManifestFile]]
                      ) -> list[ManifestFile]:
        """The parent's manifests in the new snapshot: those in ``touched`` (path -> entries)
        replaced by ``rewrite(m, entries)``, the others kept, except those listing only
        deleted entries (dropped, as the reference's merging producers drop them)."""
        out: list[ManifestFile] = []
        for m in manifests:
            entries = touched.get(m.manifest_path)
            if entries is not None:
                out += rewrite(m, entries)
            elif lists_live_files(m):
                out.append(m)
        return out

    def new_manifest_path(self) -> str:
        self._manifest_counter += 1
        return join(metadata_dir(self.table.location), f"{self.commit_uuid}-m{self._manifest_counter - 1}.avro")

    def write_manifests(
        self,
        attempt: CommitAttempt,
        base: TableMetadata,
        spec: PartitionSpec,
        entries: Sequence[ManifestEntry],
        content: int = MANIFEST_DATA,
        target_size: int | None = None,
    ) -> list[ManifestFile]:
        """Write ``entries`` as one or more manifests (split to stay near ``target_size``,
        as the reference's rolling writer does) and return their list entries."""
        if not entries:
            return []
        records = list(avro.entry_records(entries, spec.partition_type(base.schema),
                                          base.format_version, self.snapshot_id))
        return self.write_records(attempt, base, spec, records,
                                  [e.data_file.partition for e in entries], content, target_size)

    def write_records(
        self,
        attempt: CommitAttempt,
        base: TableMetadata,
        spec: PartitionSpec,
        records: list[dict],
        partitions: list[tuple],
        content: int = MANIFEST_DATA,
        target_size: int | None = None,
    ) -> list[ManifestFile]:
        """:meth:`write_manifests` of raw entry records (:func:`icectl.io.manifest.records.entry_records`)
        and their partition tuples."""
        target = target_size or MergePolicy.from_metadata(base).target_size_bytes
        partition_type = spec.partition_type(base.schema)
        avro_schema, metadata = self.layout(base, spec.spec_id, content)
        out: list[ManifestFile] = []
        for lo, hi, data in _rolled(len(records), lambda lo, hi: avro.write_manifest_records(
                records[lo:hi], avro_schema, metadata), target):
            chunk = records[lo:hi]
            out.append(self._store_manifest(
                attempt, spec, partition_type, content, data, [r["status"] for r in chunk],
                [r["data_file"]["record_count"] for r in chunk],
                [r.get("sequence_number") for r in chunk], partitions[lo:hi],
                [r["data_file"]["file_path"] for r in chunk]))
        return out

    def _store_manifest(self, attempt: CommitAttempt, spec: PartitionSpec,
                        partition_type: StructType, content: int, data: bytes,
                        status: list[int], record_count: list[int], sequence_number: list,
                        partitions: list[tuple], file_path: list[str]) -> ManifestFile:
        """Write a new manifest's bytes and return its list entry (summarized from its entries'
        columns)."""
        path = self.new_manifest_path()
        attempt.track(path)
        self.io.write_exclusive(path, data)
        self._added_files.update((p, None) for p, st in zip(file_path, status) if st == ADDED)
        self.new_manifest_paths.append(path)
        return summarize_columns(
            status, record_count, sequence_number, partitions,
            manifest_path=path, manifest_length=len(data), partition_spec_id=spec.spec_id,
            content=content, snapshot_id=self.snapshot_id, partition_type=partition_type,
            to_bytes=to_bytes)

    def merge_manifests(
        self,
        attempt: CommitAttempt,
        base: TableMetadata,
        manifests: list[ManifestFile],
        policy: MergePolicy,
    ) -> list[ManifestFile]:
        """Merge small manifests as the reference's ManifestMergeManager does: data manifests,
        then delete manifests, each grouped by spec (highest spec id first) and packed from the
        end by length; a bin holding the first (newest) manifest is merged only when it has at
        least ``min_count_to_merge`` manifests."""
        if not policy.enabled or not manifests:
            return manifests
        out: list[ManifestFile] = []
        for content in (MANIFEST_DATA, MANIFEST_DELETES):
            group = [m for m in manifests if m.content == content]
            if not group:
                continue
            first = group[0]
            by_spec: dict[int, list[ManifestFile]] = {}
            for m in group:
                by_spec.setdefault(m.partition_spec_id, []).append(m)
            for spec_id in sorted(by_spec, reverse=True):
                for bin_ in pack_end(by_spec[spec_id], lambda m: m.manifest_length, policy.target_size_bytes):
                    if len(bin_) == 1 or (first in bin_ and len(bin_) < policy.min_count_to_merge):
                        out.extend(bin_)
                    else:
                        out.extend(self.reuse_or_write(
                            attempt, ("merge", spec_id, content, tuple(m.manifest_path for m in bin_)),
                            lambda b=bin_, s=spec_id, c=content: self._merge_bin(attempt, base, s, c, b)))
        return out

    def _merge_bin(self, attempt: CommitAttempt, base: TableMetadata, spec_id: int, content: int,
                   bin_: list[ManifestFile]) -> list[ManifestFile]:
        """One manifest of the bin's entries (:mod:`icectl.io.manifest.copy`): encoded data_file
        records copied where a manifest is in the layout written, its raw records copied where
        they decode only with fastavro, converted from its entries otherwise."""
        with avro.cyclic_gc_paused():
            spec = base.spec_by_id(spec_id)
            partition_type = spec.partition_type(base.schema)
            layout, metadata = self.layout(base, spec_id, content)
            parts: list[manifest_copy.CarriedEntries] = []
            owned = [m.added_snapshot_id == self.snapshot_id and m.manifest_path in self.new_manifest_paths
                     for m in bin_]
            carried = (manifest_copy.read_carried_all(
                self.io, [(m.manifest_path, None if own else m, m.manifest_length)
                          for m, own in zip(bin_, owned)], layout)
                if self.copy_entry_bytes else ((None, None) for _ in bin_))
            for m, own, (got, raw) in zip(bin_, owned, carried):
                if not own:
                    self.manifests_opened += 1
                if got is None:
                    raw = self.io.read(m.manifest_path) if raw is None else raw
                    records = avro.read_manifest_records(raw, None if own else m, schema=layout)
                    if records is None:  # another layout (older schema, another writer): convert
                        entries = avro.read_manifest(raw, None if own else m)
                        records = (list(avro.entry_records(entries, partition_type,
                                                           base.format_version, None)),
                                   [e.data_file.partition for e in entries])
                    got = manifest_copy.carried_from_records(*records, layout)
                parts.append(manifest_copy.carry(got, own=own, snapshot_id=self.snapshot_id))
            c = manifest_copy.CarriedEntries.concat(parts)
            data = manifest_copy.write_carried(layout, metadata, c)
            return [self._store_manifest(attempt, spec, partition_type, content, data, c.status,
                                         c.record_count, c.sequence_number, c.partitions,
                                         c.file_path)]

    # -- the template -----------------------------------------------------------------------

    def _target_parent(self, base: TableMetadata) -> Snapshot | None:
        _, ref = branch_to_commit(base, self.branch, may_start=True)
        if ref is None:  # a new branch starts from the table's current snapshot
            if base.current_snapshot_id is not None:
                return base.snapshot_by_id(base.current_snapshot_id)
            return None
        return base.snapshot_by_id(ref.snapshot_id)

    def _update(self, base: TableMetadata, attempt: CommitAttempt) -> TableMetadata:
        self.attempts = attempt.number
        while base.snapshot_by_id(self.snapshot_id) is not None:
            self.snapshot_id = new_snapshot_id()
        parent = self._target_parent(base)
        key = self.summary_properties.get(IDEMPOTENCY_KEY)
        if key is not None:  # checked on every attempt: a concurrent writer may have used it
            done = snapshot_with_key(base, parent, key)
            if done is not None:
                raise AlreadyCommitted(key, done.snapshot_id, self.branch)
        if self.wap_id is not None:  # checked on every attempt: the property may have changed
            check_can_stage(base, self.wap_id)
        self.validate(base, parent)
        manifests = self.apply(base, parent, attempt)
        sequence_number = next_sequence_number(base)
        fv = base.format_version
        first_row_id = added_rows = None
        if fv >= 3:
            first_row_id = base.next_row_id or 0
            _, next_row_id = assign_manifest_first_row_ids(manifests, first_row_id)
            added_rows = next_row_id - first_row_id
        parent_id = parent.snapshot_id if parent is not None else None
        data = avro.write_manifest_list(manifests, fv, self.snapshot_id, parent_id, sequence_number,
                                        first_row_id)
        list_path = join(metadata_dir(self.table.location),
                         f"snap-{self.snapshot_id}-{attempt.number}-{self.commit_uuid}.avro")
        attempt.track(list_path)
        self.io.write_exclusive(list_path, data)
        attempt.refer(self._added_files)  # once it lands, the files it adds are the table's

        changes = self.summary(base)
        for k, v in self.summary_properties.items():
            changes.set(k, v)
        # Totals continue the branch head's; a branch that does not exist yet starts them from
        # zero even when its parent is main's head, as the reference does.
        head = base.refs.get(self.branch)
        previous = parent.summary if parent is not None and head is not None else None
        summary = snapshot_summary(self.operation, changes.build(), previous,
                                   has_previous=head is not None and parent is not None,
                                   environment=ENVIRONMENT)
        timestamp = max(now_ms(), base.last_updated_ms)
        snapshot = Snapshot(
            snapshot_id=self.snapshot_id,
            timestamp_ms=timestamp,
            parent_snapshot_id=parent_id,
            sequence_number=sequence_number,
            manifest_list=list_path,
            summary=summary,
            schema_id=base.current_schema_id,
            first_row_id=first_row_id,
            added_rows=added_rows,
        )
        self._manifests = tuple(manifests)
        return add_snapshot(base, snapshot, None if self.wap_id is not None else self.branch)

    def commit(self) -> ProducedSnapshot:
        """Commit the new snapshot (retrying on conflicts); the table follows the commit."""
        self.table.commit_transaction(self._update, self.policy)
        snap = self.table.metadata.snapshot_by_id(self.snapshot_id)
        if snap is None:  # pragma: no cover - commit_transaction returns only after success
            raise ValidationError("the committed metadata lacks the new snapshot")
        used = {m.manifest_path for m in self._manifests}
        for path in self.new_manifest_paths:
            if path not in used:  # merged into a bigger manifest by the winning attempt
                self.io.delete_quietly(path)
        return ProducedSnapshot(
            snapshot=snap,
            metadata_location=self.table.metadata_location,
            version=self.table.version,
            manifests=self._manifests,
            new_manifests=tuple(m.manifest_path for m in self._manifests
                                if m.added_snapshot_id == self.snapshot_id),
            attempts=self.attempts,
            branch=self.branch,
        )


def _rolled(n: int, encode: Callable[[int, int], bytes],
            target: int) -> Iterator[tuple[int, int, bytes]]:
    """``(lo, hi, encode(lo, hi))`` covering entries ``0..n`` in order, a range split in equal
    parts while its manifest is over ``target`` bytes and has more than one entry (the
    reference's rolling writer keeps manifests near the target size)."""
    chunks = [(0, n)]
    while chunks:
        lo, hi = chunks.pop(0)
        data = encode(lo, hi)
        if len(data) > target and hi - lo > 1:
            parts = min(hi - lo, -(-len(data) // target))
            step = -(-(hi - lo) // parts)
            chunks[:0] = [(i, min(i + step, hi)) for i in range(lo, hi, step)]
            continue
        yield lo, hi, data


def _unreadable(snapshot: Snapshot, why: str) -> str:
    return f"the table's current snapshot {snapshot.snapshot_id} is unreadable: {why}"


def unreadable_current_snapshot(io: FileIO, md: TableMetadata) -> str | None:
    """Why the current snapshot cannot be read (a missing manifest list or manifest), or None."""
    snap = md.current_snapshot()
    if snap is None or snap.manifest_list is None:
        return None
    try:
        manifests = avro.load_manifest_list(io, snap.manifest_list, md.format_version)
    except NotFound:
        return _unreadable(snap, f"its manifest list {snap.manifest_list} is missing")
    except CorruptMetadata as e:
        return _unreadable(snap, str(e))
    for m in manifests:
        if not io.exists(m.manifest_path):
            return _unreadable(snap, f"its manifest {m.manifest_path} is missing")
    return None


class FastAppendProducer(SnapshotProducer):
    """Append data files: one new manifest (rolled at the target size) ahead of the parent's
    manifests, which are kept as they are; merged afterwards when the table asks for it."""

    operation = "append"
    stages_with_wap_id = True

    def __init__(self, table: Table, files: Iterable[tuple[DataFile, str]] = (), *,
                 merge: bool | None = None, **kwargs):
        super().__init__(table, **kwargs)
        self._files: list[tuple[DataFile, str]] = list(files)  # (file with spec_id, partition path)
        self._merge = merge
        self._written: dict[int, list[ManifestFile]] | None = None

    def add_file(self, f: DataFile, partition_path: str = "") -> "FastAppendProducer":
        self._files.append((f, partition_path))
        self._written = None
        return self

    @property
    def files(self) -> list[DataFile]:
        return [f for f, _ in self._files]

    def summary(self, base: TableMetadata) -> SummaryBuilder:
        return SummaryBuilder.for_table(base.properties).added_files(self._files)

    def apply(self, base: TableMetadata, parent: Snapshot | None, attempt: CommitAttempt) -> list[ManifestFile]:
        if self._written is None:
            by_spec: dict[int, list[ManifestEntry]] = {}
            for f, _ in self._files:
                by_spec.setdefault(f.spec_id, []).append(
                    ManifestEntry(ADDED, self.snapshot_id, None, None, f))
            written: dict[int, list[ManifestFile]] = {}
            for spec_id, entries in by_spec.items():
                spec = base.spec_by_id(spec_id)
                written[spec_id] = self.write_manifests(attempt, base, spec, entries)
            self._written = written
        else:
            for ms in self._written.values():
                for m in ms:
                    attempt.track(m.manifest_path)  # reused by this attempt: keep it
        new = [m for ms in self._written.values() for m in ms]
        manifests = new + self.parent_manifests(base, parent)
        policy = MergePolicy.from_metadata(base)
        if self._merge is not None:
            policy = replace(policy, enabled=self._merge)
        return self.merge_manifests(attempt, base, manifests, policy)
