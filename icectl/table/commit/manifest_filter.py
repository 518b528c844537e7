"""Which of a parent snapshot's manifests a commit opens to remove files (the gate of the
reference's ``ManifestFilterManager``): a commit costs what it changes, not the table.

A file to remove is a :class:`~icectl.spec.manifests.DataFile` (its ``spec_id``, ``partition``
and, when it was planned or read from a manifest, its ``manifest_path`` hint) or a bare path.

* A file whose ``manifest_path`` is still one of the parent's manifests is looked for there only
  (manifests never change, so it is still listed there).
* Otherwise the candidates are the manifests of the file's kind (data or deletes) and spec whose
  partition field summaries can hold its partition tuple: a null value needs ``contains_null``,
  NaN needs ``contains_nan`` (unknown counts as may), any other value must lie within the
  field's lower and upper bound. Unpartitioned specs, missing summaries and uuid fields (whose
  bounds may have been written in either order) give no pruning.
* A bare path can be anywhere: every manifest of the kind is a candidate.

Manifests without live files are never candidates (a commit drops them). A file not found in its
candidates is looked for in the rest before the commit gives up (a stale hint or a caller's
wrong partition costs a full read, never a wrong commit): :meth:`RemovalFilter.rest`.

Both removing producers (the row delta, table/commit/row_delta.py; rewrites and overwrites,
table/commit/rewrite.py) find their files and rewrite the manifests listing them through this module:
:meth:`RemovalFilter.find` (candidates first, then the rest while a file is missing),
:func:`collect` (the entries of the manifests listing a removed file) and
:func:`rewrite_manifest` (the rewritten manifest, :func:`mark_removed`: removed entries deleted
by the new snapshot, the others existing, older deletes dropped). A rewrite changes only the
entries' leading fields, so, as a merge does (:mod:`icectl.io.manifest.copy`), it copies each
entry's encoded ``data_file`` from the manifest's bytes (kept from the read that found the
files) behind newly encoded leading fields; a manifest in another layout has its entries
encoded once (:func:`carried_entries`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable, Sequence

from icectl.spec.partition_identity import partition_key
from icectl.expr.ordering import compare, is_nan
from icectl.spec.manifests import (
    DATA,
    DELETED,
    EXISTING,
    MANIFEST_DATA,
    MANIFEST_DELETES,
    DataFile,
    ManifestEntry,
    ManifestFile,
)
from icectl.spec.metadata import TableMetadata
from icectl.spec.types import UUID, PrimitiveType, StructType
from icectl.spec.values import from_bytes
from icectl.io.manifest.copy import CarriedEntries, carried_from_records, read_carried
from icectl.io.manifest.records import entry_records
from icectl.table.commit.producer import lists_live_files

if TYPE_CHECKING:
    from icectl.table.commit.producer import SnapshotProducer
    from icectl.table.table import CommitAttempt

__all__ = ["RemovalFilter", "summaries_may_contain", "collect", "mark_removed", "rewrite_manifest",
           "carried_entries"]

Read = Callable[[ManifestFile], list[ManifestEntry]]
Hits = dict[str, list[ManifestEntry]]  # manifest path -> its entries, for manifests to rewrite


def collect(manifests: Iterable[ManifestFile], read: Read, removes: Callable[[ManifestEntry], bool],
            hits: Hits) -> None:
    """Read ``manifests``; ``removes(entry)`` is asked of every live entry (it may note the
    others too), and a manifest with an entry it removes goes into ``hits`` with its entries."""
    for m in manifests:
        entries = read(m)
        hit = False
        for e in entries:
            if e.status != DELETED and removes(e):
                hit = True
        if hit:
            hits[m.manifest_path] = entries


def mark_removed(c: CarriedEntries, gone: Sequence[bool], snapshot_id: int) -> CarriedEntries:
    """The entries of a rewritten manifest (``c``, changed in place; ``gone[i]``: entry ``i``
    is removed): a removed file is deleted by ``snapshot_id``, every other live file existing
    (its sequence numbers explicit, as read); deletes of an older snapshot are not carried
    forward. Only the leading fields change: each entry's ``data_file`` is carried as it was
    encoded."""
    keep: list[int] = []
    for i, st in enumerate(c.status):
        if st == DELETED:
            continue
        if gone[i]:
            c.status[i], c.snapshot_id[i] = DELETED, snapshot_id
        else:
            c.status[i] = EXISTING
        keep.append(i)
    return c if len(keep) == len(c.status) else c.select(keep)


def rewrite_manifest(producer: SnapshotProducer, attempt: CommitAttempt, base: TableMetadata,
                     m: ManifestFile, entries: list[ManifestEntry],
                     gone: Callable[[DataFile], bool]) -> list[ManifestFile]:
    """A copy of the parent manifest ``m`` (its ``entries``, read by
    :meth:`~icectl.table.commit.producer.SnapshotProducer.manifest_entries`) with the files
    ``gone`` marked deleted by the producer's snapshot (:func:`mark_removed`); the unchanged
    entries' ``data_file`` bytes are copied, not decoded and encoded again."""
    c = mark_removed(carried_entries(producer, base, m, entries),
                     [gone(e.data_file) for e in entries], producer.snapshot_id)
    return producer.write_carried(attempt, base, m.partition_spec_id, m.content, c)


def carried_entries(producer: SnapshotProducer, base: TableMetadata, m: ManifestFile,
                    entries: list[ManifestEntry]) -> CarriedEntries:
    """The entries of the parent manifest ``m`` (``entries``, as read) as a merge carries them
    into a manifest of the table's layout: their encoded ``data_file`` bytes copied when ``m``
    is in that layout (:func:`icectl.io.manifest.copy.read_carried`, on the bytes the read
    kept), else ``entries`` encoded once; in the order of ``entries``. A producer that does
    not copy entry bytes (``copy_entry_bytes``) encodes them."""
    layout = producer.layout(base, m.partition_spec_id, m.content)[0]
    raw = producer.manifest_bytes(m) if producer.copy_entry_bytes else None
    got = None if raw is None else read_carried(raw, m, layout, path=m.manifest_path)
    if got is None:
        partition_type = base.spec_by_id(m.partition_spec_id).partition_type(base.schema)
        got = carried_from_records(
            list(entry_records(entries, partition_type, base.format_version, None)),
            [e.data_file.partition for e in entries], layout)
    return got


def summaries_may_contain(m: ManifestFile, ptype: StructType | None, partition: tuple) -> bool:
    """Whether the partition summaries of ``m`` allow an entry with ``partition``."""
    summaries = m.partitions
    if not partition or not summaries or ptype is None:
        return True
    fields = ptype.fields()
    if len(summaries) != len(partition) or len(fields) != len(partition):
        return True
    for s, f, v in zip(summaries, fields, partition):
        if v is None:
            if not s.contains_null:
                return False
            continue
        if is_nan(v):
            if s.contains_nan is not None and not s.contains_nan:
                return False
            continue
        if s.lower_bound is None and s.upper_bound is None:
            if s.contains_null or s.contains_nan:  # only nulls and NaN there
                return False
            continue
        t = f.type
        if t == UUID or not isinstance(t, PrimitiveType):
            continue
        try:
            if s.lower_bound is not None and compare(v, from_bytes(t, s.lower_bound)) < 0:
                return False
            if s.upper_bound is not None and compare(v, from_bytes(t, s.upper_bound)) > 0:
                return False
        except Exception:  # noqa: BLE001 - an undecodable bound or an odd value: it may hold it
            continue
    return True


def _kind(f: DataFile) -> int:
    return MANIFEST_DATA if f.content == DATA else MANIFEST_DELETES


class RemovalFilter:
    """The manifests to open for removing ``files`` (DataFiles or bare paths; module docs)."""

    def __init__(self, md: TableMetadata, files: Iterable[DataFile | str]):
        self._md = md
        self.files: list[DataFile] = []
        self.path_only: set[int] = set()  # manifest kinds a bare path forces fully open
        for f in files:
            if isinstance(f, str):
                self.path_only.add(MANIFEST_DATA)
            else:
                self.files.append(f)
        self._ptypes: dict[int, StructType | None] = {}

    def __bool__(self) -> bool:
        return bool(self.files or self.path_only)

    def _ptype(self, spec_id: int) -> StructType | None:
        if spec_id not in self._ptypes:
            try:
                spec = self._md.spec_by_id(spec_id)
                self._ptypes[spec_id] = (None if spec.is_unpartitioned()
                                         else spec.partition_type(self._md.schema))
            except Exception:  # noqa: BLE001 - an unknown spec: no pruning
                self._ptypes[spec_id] = None
        return self._ptypes[spec_id]

    def candidates(self, manifests: Sequence[ManifestFile]) -> list[ManifestFile]:
        """The manifests (in their order) that may list a file to remove."""
        live = [m for m in manifests if lists_live_files(m)]
        by_path = {m.manifest_path for m in live}
        chosen: set[str] = set()
        # (kind, spec id, partition) to look for, keyed so that -0.0 and 0.0 stay apart
        wanted: dict[tuple, tuple[int, int, tuple]] = {}
        for f in self.files:
            if f.manifest_path is not None and f.manifest_path in by_path:
                chosen.add(f.manifest_path)
            else:
                part = tuple(f.partition)
                wanted[(_kind(f), f.spec_id, partition_key(part))] = (_kind(f), f.spec_id, part)
        chosen.update(m.manifest_path for m in live if m.content in self.path_only)
        chosen.update(m.manifest_path for m in self.in_partitions(live, wanted.values()))
        return [m for m in live if m.manifest_path in chosen]

    def in_partitions(self, manifests: Sequence[ManifestFile],
                      wanted: Iterable[tuple[int, int, tuple]]) -> list[ManifestFile]:
        """The manifests with live files whose kind and spec match one of ``wanted``
        (kind, spec id, partition tuple) and whose summaries can hold that partition."""
        groups: dict[tuple[int, int], dict[tuple, tuple]] = {}
        for kind, spec_id, partition in wanted:
            groups.setdefault((kind, spec_id), {})[partition_key(partition)] = partition
        out = []
        for m in manifests:
            parts = groups.get((m.content, m.partition_spec_id))
            if parts and lists_live_files(m) and any(
                    summaries_may_contain(m, self._ptype(m.partition_spec_id), p)
                    for p in parts.values()):
                out.append(m)
        return out

    def find(self, manifests: Sequence[ManifestFile], kinds: Iterable[int], read: Read,
             removes: Callable[[ManifestEntry], bool], all_found: Callable[[], bool],
             hits: Hits) -> list[ManifestFile]:
        """Look for the files in the candidate manifests of ``kinds``, then, while
        ``all_found()`` is false (a stale hint, a wrong partition), in the rest of them;
        :func:`collect` fills ``hits``. Returns the manifests read."""
        wanted = set(kinds)
        opened = [m for m in self.candidates(manifests) if m.content in wanted]
        collect(opened, read, removes, hits)
        if not all_found():
            rest = self.rest(manifests, opened, wanted)
            collect(rest, read, removes, hits)
            opened += rest
        return opened

    @staticmethod
    def rest(manifests: Sequence[ManifestFile], opened: Iterable[ManifestFile],
             kinds: Iterable[int]) -> list[ManifestFile]:
        """The manifests of ``kinds`` with live files not among ``opened``: where a file not
        found in its candidates may still be."""
        seen = {m.manifest_path for m in opened}
        wanted = set(kinds)
        return [m for m in manifests
                if m.content in wanted and m.manifest_path not in seen and lists_live_files(m)]
