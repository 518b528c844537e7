"""One pass over a snapshot's manifests, column-wise: the facts every dimension judges.

Manifests are decoded by the planner's columnar path (:func:`icectl.scan.parallel.load_in_order`:
the decoded-manifest caches, in memory and on disk, and worker processes for cold ones); no
data file is opened. Delete manifests are decoded first, so the data manifests are decoded once
with every statistic wanted: the equality-delete key columns (for the delete index's pruning)
and the layout columns (their lower and upper bounds).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

from icectl.io.manifest.columns import ManifestColumns, manifest_request
from icectl.io.manifest.manifest_list import load_manifest_list
from icectl.scan.parallel import load_in_order
from icectl.spec.manifests import DATA, DELETED, EQUALITY_DELETES, MANIFEST_DELETES, ManifestFile
from icectl.spec.partition_identity import partition_key
from icectl.spec.types import DOUBLE, FLOAT
from icectl.table.commit.snapshot_manifests import read_manifests
from icectl.table.delete_index import DELETE_FILE_PATH_ID

if TYPE_CHECKING:
    from icectl.io.storage.files import FileIO
    from icectl.spec.metadata import TableMetadata
    from icectl.spec.snapshots import Snapshot

__all__ = ["FileFacts", "PartitionFacts", "TableFacts", "collect_facts", "decode_manifests", "Progress"]

Progress = Callable[[str, int, int], None]


class FileFacts:
    """One live data file, as compaction's rules see it (``deletes``: the delete files that
    apply to it, set by the deletes dimension)."""

    __slots__ = ("file_size_in_bytes", "record_count", "deletes")

    def __init__(self, size: int, records: int) -> None:
        self.file_size_in_bytes = size
        self.record_count = records
        self.deletes: tuple = ()


@dataclass
class PartitionFacts:
    """Live files of one partition (of one spec), as Spark's ``partitions`` table counts them,
    plus their sizes against the small-file bound."""

    spec_id: int
    values: tuple
    data_files: int = 0
    data_bytes: int = 0
    records: int = 0
    small_files: int = 0
    small_bytes: int = 0
    position_delete_files: int = 0
    position_delete_records: int = 0
    equality_delete_files: int = 0
    equality_delete_records: int = 0
    delete_bytes: int = 0
    files: list[FileFacts] = field(default_factory=list)


@dataclass
class TableFacts:
    """What the manifests of a snapshot hold; ``data`` and ``deletes`` are the decoded manifests
    with their manifest list entries, in manifest-list order."""

    md: TableMetadata
    snapshot: Snapshot | None
    manifests: list[ManifestFile]
    data: list[tuple[ManifestFile, ManifestColumns]] = field(default_factory=list)
    deletes: list[tuple[ManifestFile, ManifestColumns]] = field(default_factory=list)
    partitions: dict[tuple, PartitionFacts] = field(default_factory=dict)
    data_sizes: list[int] = field(default_factory=list)
    files: list[FileFacts] = field(default_factory=list)  # the live data files, in live_data() order
    layout_ids: tuple[int, ...] = ()
    equality_ids: frozenset[int] = frozenset()

    def live_data(self) -> Any:
        """(manifest, columns, position) of every live data entry."""
        for m, mc in self.data:
            status, content = mc.status, mc.content
            for i in range(mc.count):
                if status[i] != DELETED and content[i] == DATA:
                    yield m, mc, i

    def live_deletes(self) -> Any:
        """(manifest, columns, position) of every live delete entry."""
        for m, mc in self.deletes:
            status, content = mc.status, mc.content
            for i in range(mc.count):
                if status[i] != DELETED and content[i] != DATA:
                    yield m, mc, i


def _request(m: ManifestFile, wanted: frozenset[int], nan: frozenset[int] = frozenset()) -> Any:
    return manifest_request(m.manifest_path, m.manifest_length, wanted_stats=wanted, nan_stats=nan,
                            added_snapshot_id=m.added_snapshot_id, sequence_number=m.sequence_number,
                            first_row_id=m.first_row_id)


def decode_manifests(io: FileIO, manifests: Sequence[ManifestFile], wanted: frozenset[int], workers: int | None,
             progress: Progress | None, done: list[int], total: int,
             nan: frozenset[int] = frozenset()) -> list[tuple[ManifestFile, ManifestColumns]]:
    out = []
    for m, mc in zip(manifests, load_in_order(io, [_request(m, wanted, nan) for m in manifests], workers)):
        out.append((m, mc))
        done[0] += 1
        if progress is not None:
            progress("reading manifests", done[0], total)
    return out


def collect_facts(io: FileIO, md: TableMetadata, snapshot: Snapshot | None, *, small_file_size: int,
                  layout_ids: Sequence[int] = (), workers: int | None = None,
                  progress: Progress | None = None) -> TableFacts:
    """The facts of ``snapshot``'s manifests (none for no snapshot)."""
    if snapshot is not None and snapshot.manifest_list:
        manifests = load_manifest_list(io, snapshot.manifest_list, md.format_version, cached=True)
    else:
        manifests = read_manifests(io, md, snapshot)
    facts = TableFacts(md, snapshot, manifests, layout_ids=tuple(layout_ids))
    delete_ms = [m for m in manifests if m.content == MANIFEST_DELETES]
    data_ms = [m for m in manifests if m.content != MANIFEST_DELETES]
    done = [0]
    facts.deletes = decode_manifests(io, delete_ms, frozenset({DELETE_FILE_PATH_ID}), workers, progress, done,
                             len(manifests))
    eq_ids: set[int] = set()
    for _, mc, i in facts.live_deletes():
        if mc.content[i] == EQUALITY_DELETES and mc.equality_ids[i]:
            eq_ids.update(mc.equality_ids[i])
    facts.equality_ids = frozenset(eq_ids)
    # the equality keys' statistics on both sides (NaN counts of float keys too) prune equality
    # deletes per data file as the planner's delete index does
    eq_nan = frozenset(fid for fid in eq_ids if (f := md.schema.find_field_or_none(fid)) is not None
                       and f.type in (FLOAT, DOUBLE))
    if eq_ids:
        facts.deletes = decode_manifests(io, delete_ms, frozenset({DELETE_FILE_PATH_ID}) | facts.equality_ids,
                                         workers, None, [0], 0, eq_nan)
    wanted = frozenset(layout_ids) | facts.equality_ids
    # decoded with the delete manifests' equality ids as well: a table whose delete manifests
    # also hold data entries (never written so) would otherwise miss nothing but statistics
    facts.data = decode_manifests(io, data_ms, wanted, workers, progress, done, len(manifests), eq_nan)
    parts = facts.partitions
    sizes, files = facts.data_sizes, facts.files
    for m, mc in facts.data:
        spec_id = m.partition_spec_id
        columns = mc.partitions
        tuples = list(zip(*columns)) if columns else [()] * mc.count
        # a tuple is its own partition key unless a float is in it (-0.0 and 0.0 apart)
        floats = any(isinstance(v, float) for col in columns for v in col)
        for values, status, content, size, records in zip(tuples, mc.status, mc.content,
                                                          mc.file_size_in_bytes, mc.record_count):
            if status == DELETED or content != DATA:
                continue
            key = (spec_id, partition_key(values) if floats else values)
            p = parts.get(key)
            if p is None:
                p = parts[key] = PartitionFacts(spec_id, values)
            p.data_files += 1
            p.data_bytes += size
            p.records += records
            if size < small_file_size:
                p.small_files += 1
                p.small_bytes += size
            f = FileFacts(size, records)
            p.files.append(f)
            files.append(f)
            sizes.append(size)
    for m, mc, i in facts.live_deletes():
        key = (m.partition_spec_id, partition_key(mc.partition_tuple(i)))
        p = parts.get(key)
        if p is None:
            p = parts[key] = PartitionFacts(m.partition_spec_id, mc.partition_tuple(i))
        if mc.content[i] == EQUALITY_DELETES:
            p.equality_delete_files += 1
            p.equality_delete_records += mc.record_count[i]
        else:
            p.position_delete_files += 1
            p.position_delete_records += mc.record_count[i]
        p.delete_bytes += mc.file_size_in_bytes[i]
    return facts
