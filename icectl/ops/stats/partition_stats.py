"""Partition statistics (`icectl stats partitions`): compute a snapshot's per-partition figures,
write them as the spec's partition statistics file and register it in the table's
``partition-statistics``; read such a file back (`icectl inspect partition-statistics`).

The figures are the reference's (Java's ``PartitionStatsHandler`` / ``PartitionStats``, which
Spark's ``compute_partition_stats`` procedure runs):

* one row per (spec id, partition): a file's partition tuple placed in the unified partition
  type of all specs (:func:`icectl.spec.partitioning.unified_partition_type`), fields of other
  specs null; partitions compare as the reference compares them (-0.0 apart from 0.0, every NaN
  one partition: :mod:`icectl.spec.partition_identity`);
* every entry of the snapshot's data and delete manifests: a live one (added or existing) adds
  its file to the counters (deletion vectors, Puffin position deletes, count in
  ``position_delete_record_count`` and ``dv_count``, not ``position_delete_file_count``); a
  deleted one only marks its partition updated; the newest snapshot of the entries (added,
  existing or deleted) that still exists is ``last_updated_at`` / ``last_updated_snapshot_id``;
* ``total_record_count`` stays null (Java's choice: counting rows after deletes reads data);
* rows sorted by partition, nulls first, values in the reference's order.

Incremental, as Java 1.10 computes it: when an ancestor of the snapshot has a registered file,
its rows are read and the manifests added by each snapshot after it are applied (added entries
count in, deleted ones count out and mark the partition updated, existing ones only create their
partition's row); an unreadable previous file falls back to the full computation. A snapshot
that already has a file is left alone (that file is the answer, nothing is committed). A
snapshot with no files gives no file.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Iterable

from icectl.errors import CommitConflict, IcectlError, NotFound, ValidationError
from icectl.expr.ordering import value_key
from icectl.io.storage.files import join
from icectl.ops.stats.partition_stats_file import (
    COUNTERS,
    read_stats_file,
    stats_schema,
    write_stats_file,
)
from icectl.spec.metadata import TableMetadata
from icectl.spec.partition_identity import partition_key
from icectl.spec.partitioning import unified_partition_type, unified_partition_values
from icectl.spec.reserved import ADDED, DATA, POSITION_DELETES
from icectl.spec.result_json import JsonResult, json_field
from icectl.spec.snapshots import Snapshot, ancestors_of, statistics_path, statistics_snapshot_id
from icectl.spec.types import StructType
from icectl.table.commit.snapshot_manifests import read_manifests
from icectl.table.versions import metadata_dir

if TYPE_CHECKING:
    from icectl.io.storage.files import FileIO
    from icectl.spec.manifests import DataFile, ManifestFile
    from icectl.table.table import CommitAttempt, Table

__all__ = ["PartitionStats", "PartitionStatsResult", "PartitionStatsView", "compute_partition_stats",
           "write_partition_stats", "read_partition_stats", "unified_type"]


@dataclass
class PartitionStats:
    """The figures of one (spec id, partition); ``partition`` maps unified field ids to values."""

    partition: dict[int, Any]
    spec_id: int
    data_record_count: int = 0
    data_file_count: int = 0
    total_data_file_size_in_bytes: int = 0
    position_delete_record_count: int = 0
    position_delete_file_count: int = 0
    equality_delete_record_count: int = 0
    equality_delete_file_count: int = 0
    total_record_count: int | None = None
    last_updated_at: int | None = None
    last_updated_snapshot_id: int | None = None
    dv_count: int = 0

    def count(self, f: DataFile, sign: int = 1) -> None:
        """Add (``sign`` 1) or take out (-1) one file."""
        if f.content == DATA:
            self.data_record_count += sign * f.record_count
            self.data_file_count += sign
            self.total_data_file_size_in_bytes += sign * f.file_size_in_bytes
        elif f.content == POSITION_DELETES:
            self.position_delete_record_count += sign * f.record_count
            if str(f.file_format).upper() == "PUFFIN":
                self.dv_count += sign
            else:
                self.position_delete_file_count += sign
        else:
            self.equality_delete_record_count += sign * f.record_count
            self.equality_delete_file_count += sign

    def touched(self, snapshot_id: int | None, timestamp_ms: int | None) -> None:
        """Mark the partition updated by a snapshot, if it is newer than the last one seen."""
        if snapshot_id is None or timestamp_ms is None:
            return
        if self.last_updated_at is None or self.last_updated_at < timestamp_ms:
            self.last_updated_at = timestamp_ms
            self.last_updated_snapshot_id = snapshot_id

    def merge(self, other: "PartitionStats") -> None:
        for name in COUNTERS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        if other.total_record_count is not None:
            self.total_record_count = (self.total_record_count or 0) + other.total_record_count
        self.touched(other.last_updated_snapshot_id, other.last_updated_at)

    def row(self) -> dict[str, Any]:
        return dict(vars(self))


def unified_type(md: TableMetadata) -> StructType:
    """The partition type of the file: every partition field of every spec whose source column
    is in the current schema, by field id."""
    return unified_partition_type(md.specs, md.schema)


class _Keys:
    """Places a file's partition in the unified type and keys (spec id, partition) pairs."""

    def __init__(self, md: TableMetadata, unified: StructType):
        self.unified = unified
        self.ids = [f.field_id for f in unified.fields()]
        self.specs = md.specs_by_id()

    def coerce(self, spec_id: int, values: tuple) -> dict[int, Any]:
        return unified_partition_values(self.specs.get(spec_id), values, self.unified)

    def key(self, spec_id: int, partition: dict[int, Any]) -> tuple:
        return spec_id, partition_key(tuple(partition.get(fid) for fid in self.ids))

    def sort_key(self, s: PartitionStats) -> tuple:
        return tuple((0,) if s.partition.get(fid) is None else (1, value_key(s.partition[fid]))
                     for fid in self.ids) + (s.spec_id,)


def _collect(io: FileIO, md: TableMetadata, manifests: Iterable[ManifestFile], keys: _Keys,
             incremental: bool, into: dict[tuple, PartitionStats]) -> None:
    from icectl.io.manifest.records import load_manifest

    for m in manifests:
        for e in load_manifest(io, m, include_stats=False):
            f = e.data_file
            part = keys.coerce(f.spec_id, f.partition)
            stats = into.setdefault(keys.key(f.spec_id, part), PartitionStats(part, f.spec_id))
            snap = md.snapshot_by_id(e.snapshot_id) if e.snapshot_id is not None else None
            when = (snap.snapshot_id, snap.timestamp_ms) if snap is not None else (None, None)
            if e.is_live:
                # incrementally, existing entries were counted by the previous file already
                if not incremental or e.status == ADDED:
                    stats.count(f)
                    stats.touched(*when)
            else:
                if incremental:
                    stats.count(f, -1)
                stats.touched(*when)


def previous_stats_entry(md: TableMetadata, snapshot_id: int) -> dict[str, Any] | None:
    """The registered partition statistics of the snapshot or of its nearest ancestor."""
    by_snapshot = {statistics_snapshot_id(e): e for e in md.partition_statistics}
    for s in ancestors_of(snapshot_id, md.snapshot_by_id):
        if s.snapshot_id in by_snapshot:
            return by_snapshot[s.snapshot_id]
    return None


def _incremental(io: FileIO, md: TableMetadata, snapshot: Snapshot, previous: dict[str, Any],
                 keys: _Keys, unified: StructType) -> dict[tuple, PartitionStats] | None:
    """The previous file's rows with the snapshots after it applied; None when that file
    cannot be read (the caller then computes in full)."""
    path = statistics_path(previous) or ""
    try:
        rows = read_stats_file(io.read(path), unified, path)
    except (IcectlError, OSError):
        return None
    out: dict[tuple, PartitionStats] = {}
    for r in rows:
        s = PartitionStats(**r)
        out[keys.key(s.spec_id, s.partition)] = s
    since = statistics_snapshot_id(previous)
    manifests = []
    for s in ancestors_of(snapshot.snapshot_id, md.snapshot_by_id):
        if s.snapshot_id == since:
            break
        manifests += [m for m in read_manifests(io, md, s) if m.added_snapshot_id == s.snapshot_id]
    diff: dict[tuple, PartitionStats] = {}
    _collect(io, md, manifests, keys, True, diff)
    for k, s in diff.items():
        if k in out:
            out[k].merge(s)
        else:
            out[k] = s
    return out


@dataclass(frozen=True)
class Computed:
    """The rows of a snapshot's partition statistics, and how they were found."""

    snapshot: Snapshot
    rows: list[PartitionStats]
    incremental_from: int | None  # the snapshot of the previous file the rows build on
    existing: dict[str, Any] | None = None  # the snapshot's own registered file, if it has one


def compute_partition_stats(io: FileIO, md: TableMetadata, snapshot_id: int | None = None) -> Computed | None:
    """The partition statistics of a snapshot (the current one by default); None when the table
    has no snapshot. ValidationError for an unpartitioned table, NotFound for an unknown id."""
    unified = unified_type(md)
    if not unified.fields():
        raise ValidationError("the table is not partitioned: partition statistics need a partitioned table")
    if snapshot_id is None:
        snapshot = md.current_snapshot()
        if snapshot is None:
            return None
    else:
        snapshot = md.snapshot_by_id(snapshot_id)
        if snapshot is None:
            raise NotFound(f"table has no snapshot with id {snapshot_id}")
    keys = _Keys(md, unified)
    previous = previous_stats_entry(md, snapshot.snapshot_id)
    if previous is not None and statistics_snapshot_id(previous) == snapshot.snapshot_id:
        return Computed(snapshot, [], statistics_snapshot_id(previous), previous)
    stats = None
    if previous is not None:
        stats = _incremental(io, md, snapshot, previous, keys, unified)
    since = statistics_snapshot_id(previous) if stats is not None and previous is not None else None
    if stats is None:
        stats = {}
        _collect(io, md, read_manifests(io, md, snapshot), keys, False, stats)
    return Computed(snapshot, sorted(stats.values(), key=keys.sort_key), since)


# -- writing and registering -----------------------------------------------------------------


@dataclass(frozen=True)
class PartitionStatsResult(JsonResult):
    """What `stats partitions` did: the file registered for the snapshot (none when the table
    has no snapshot or the snapshot no files), its rows, and whether a commit happened."""

    location: str
    snapshot_id: int | None
    statistics_path: str | None
    file_size_in_bytes: int | None
    partition_count: int | None  # rows written (None: the snapshot's existing file was kept)
    incremental_from_snapshot_id: int | None
    committed: bool
    metadata_file: str | None = None
    warnings: tuple[str, ...] = ()
    rows: tuple[PartitionStats, ...] = json_field(default=(), omit=True)


def _with_entry(base: TableMetadata, entry: dict[str, Any]) -> TableMetadata:
    """``base`` with ``entry`` as its snapshot's partition statistics (replacing an earlier one
    of that snapshot, as the reference's setPartitionStatistics does)."""
    sid = entry["snapshot-id"]
    kept = [e for e in base.partition_statistics if statistics_snapshot_id(e) != sid]
    return replace(base, partition_statistics=tuple(kept) + (entry,))


def write_partition_stats(table: Table, snapshot_id: int | None = None) -> PartitionStatsResult:
    """Compute a snapshot's partition statistics, write the file
    (``metadata/partition-stats-<snapshot id>-<uuid>.parquet``) and commit it to the table's
    ``partition-statistics``."""
    md = table.metadata
    computed = compute_partition_stats(table.io, md, snapshot_id)
    if computed is None:
        return PartitionStatsResult(table.location, None, None, None, 0, None, False,
                                    warnings=("the table has no snapshot: no partition statistics written",))
    sid = computed.snapshot.snapshot_id
    if computed.existing is not None:
        e = computed.existing
        return PartitionStatsResult(table.location, sid, statistics_path(e), e.get("file-size-in-bytes"),
                                    None, None, False,
                                    warnings=(f"snapshot {sid} already has partition statistics: kept",))
    if not computed.rows:
        return PartitionStatsResult(table.location, sid, None, None, 0, None, False,
                                    warnings=(f"snapshot {sid} has no files: no partition statistics written",))
    data = write_stats_file([s.row() for s in computed.rows], stats_schema(unified_type(md), md.format_version))
    path = join(metadata_dir(table.location), f"partition-stats-{sid}-{uuid.uuid4()}.parquet")
    entry = {"snapshot-id": sid, "statistics-path": path, "file-size-in-bytes": len(data)}
    written: list[bool] = []

    def update(base: TableMetadata, attempt: CommitAttempt) -> TableMetadata:
        if base.snapshot_by_id(sid) is None:
            raise CommitConflict(f"snapshot {sid} was removed while its partition statistics were "
                                 f"being committed; nothing was changed")
        attempt.track(path)
        if not written:
            table.io.write_exclusive(path, data)
            written.append(True)
        return _with_entry(base, entry)

    table.commit_transaction(update)
    return PartitionStatsResult(table.location, sid, path, len(data), len(computed.rows),
                                computed.incremental_from, True, table.metadata_location,
                                tuple(table.warnings), tuple(computed.rows))


# -- reading ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class PartitionStatsView(JsonResult):
    """A registered partition statistics file and its rows (partition values in JSON form)."""

    snapshot_id: int
    statistics_path: str
    file_size_in_bytes: int | None
    rows: list[dict[str, Any]] = field(default_factory=list)


def read_partition_stats(io: FileIO, md: TableMetadata, snapshot_id: int | None = None) -> list[PartitionStatsView]:
    """The table's registered partition statistics files (of one snapshot only, with
    ``snapshot_id``), each with its rows; NotFound when that snapshot has none."""
    from icectl.spec.views import json_value_or_text

    unified = unified_type(md)
    names = {f.field_id: (f.name, f.type) for f in unified.fields()}
    out = []
    for e in md.partition_statistics:
        sid = statistics_snapshot_id(e)
        if snapshot_id is not None and sid != snapshot_id:
            continue
        path = statistics_path(e) or ""
        try:
            data = io.read(path)
        except OSError as exc:
            raise NotFound(f"partition statistics file {path} cannot be read: {exc}") from exc
        rows = []
        for r in read_stats_file(data, unified, path):
            r["partition"] = {names[fid][0]: (None if r["partition"].get(fid) is None else
                                              json_value_or_text(names[fid][1], r["partition"][fid]))
                              for fid in names}
            rows.append({k.replace("_", "-"): v for k, v in r.items()})
        out.append(PartitionStatsView(sid, path, e.get("file-size-in-bytes"), rows))
    if snapshot_id is not None and not out:
        raise NotFound(f"snapshot {snapshot_id} has no partition statistics")
    return out
