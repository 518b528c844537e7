"""Conflict checks for a commit that lands on a branch that moved since the operation read it.

An operation that reads the table before it writes (a row-level delete, an upsert, a compaction)
plans against one snapshot, the *starting* snapshot. When its commit loses a race, the branch
head has moved; rather than giving up at once, the reference (``MergingSnapshotProducer`` and
its row-delta / rewrite subclasses) looks at what the snapshots committed since the start added
or removed, and lets the commit go on when none of it conflicts. The checks here are those:

* :func:`validate_files_live` - files the operation read or replaces were not removed since;
* :func:`validate_no_new_deletes` - no delete file added since applies to the data files the
  operation read (a compaction that keeps the starting sequence number can ignore equality
  deletes: they still apply to its output);
* :func:`validate_no_new_data` - no data file added since may hold rows the operation's filter
  selects (the ``serializable`` isolation level).

The isolation level is read in one place (:func:`isolation_level`), and "may a new data file hold
rows the filter selects" is decided in one place, for every operation and both delete modes
(:func:`filter_may_match`: the filter projected on the file's partition, then its column
metrics, as scan planning decides; :func:`conflict_filter` gives it for the table's level).

Each raises :class:`~icectl.errors.CommitConflict`, which ends the commit: the commit machinery
removes every file the operation wrote. Which delete files apply to which data files is decided
by the one :class:`~icectl.table.delete_index.DeleteIndex` the planner uses.

Only manifests written by the new snapshots are read (manifests are immutable and carry the id
of the snapshot that added them), so the cost grows with the concurrent changes, not the table.
"""

from __future__ import annotations

from typing import Callable, Iterable, Iterator

from icectl.errors import CommitConflict
from icectl.expr.expressions import Expression
from icectl.io.manifest import records as avro
from icectl.io.storage.files import FileIO
from icectl.spec.manifests import (
    ADDED,
    DELETED,
    EQUALITY_DELETES,
    MANIFEST_DATA,
    MANIFEST_DELETES,
    DataFile,
    ManifestEntry,
)
from icectl.spec.metadata import TableMetadata
from icectl.spec.properties import DELETE_ISOLATION_LEVEL as ISOLATION_LEVEL
from icectl.spec.properties import ISOLATION_LEVEL_DEFAULT, SERIALIZABLE, SNAPSHOT
from icectl.spec.snapshots import Snapshot
from icectl.table.delete_index import DeleteIndex, DeleteRef

__all__ = [
    "snapshots_since", "new_entries", "validate_files_live", "validate_no_new_deletes",
    "validate_no_new_data", "ISOLATION_LEVEL", "SERIALIZABLE", "SNAPSHOT", "isolation_level",
    "filter_may_match", "conflict_filter",
]



def isolation_level(md: TableMetadata, key: str = ISOLATION_LEVEL) -> str:
    """The isolation level a table property asks for (the reference's default: serializable)."""
    level = md.properties.get(key, ISOLATION_LEVEL_DEFAULT).strip().lower()
    return level if level in (SERIALIZABLE, SNAPSHOT) else SERIALIZABLE


def filter_may_match(md: TableMetadata, expr: Expression, case_sensitive: bool = False
                     ) -> Callable[[DataFile], bool]:
    """Whether a data file may hold rows matching ``expr`` (bound or not): its partition
    (inclusive projection for its spec) and its column metrics, as scan planning decides."""
    from icectl.expr.eval_metrics import MetricsEvaluator
    from icectl.expr.eval_rows import partition_matches
    from icectl.expr.projection import inclusive_projection

    schema = md.schema
    metrics = MetricsEvaluator(expr, schema, case_sensitive)
    by_spec: dict[int, tuple] = {}

    def may_match(f: DataFile) -> bool:
        got = by_spec.get(f.spec_id)
        if got is None:
            spec = md.spec_by_id(f.spec_id)
            projected = inclusive_projection(expr, spec, schema, case_sensitive)
            positions = {pf.field_id: i for i, pf in enumerate(spec.fields)}
            got = by_spec[f.spec_id] = (projected, positions)
        projected, positions = got
        if not partition_matches(projected, f.partition, positions):
            return False
        return metrics.eval(f)[0]

    return may_match


def conflict_filter(md: TableMetadata, expr: Expression, case_sensitive: bool = False,
                    key: str = ISOLATION_LEVEL) -> Callable[[DataFile], bool] | None:
    """The check new data files must pass at the table's isolation level: for
    ``serializable``, :func:`filter_may_match`; for ``snapshot``, None (new data never
    conflicts)."""
    if isolation_level(md, key) != SERIALIZABLE:
        return None
    return filter_may_match(md, expr, case_sensitive)


def snapshots_since(md: TableMetadata, start_id: int | None, head_id: int | None) -> list[Snapshot]:
    """The snapshots committed on top of ``start_id`` up to ``head_id``, oldest first.

    ``start_id`` None means the operation read an empty branch: every ancestor of the head is
    new. Raises CommitConflict when the start is no longer an ancestor of the head (the branch
    was rolled back or replaced) or when the chain between them is no longer known (expired):
    nothing can then be proven about what changed.
    """
    out: list[Snapshot] = []
    current = None if head_id is None else md.snapshot_by_id(head_id)
    seen: set[int] = set()
    while current is not None and current.snapshot_id != start_id and current.snapshot_id not in seen:
        seen.add(current.snapshot_id)
        out.append(current)
        parent = current.parent_snapshot_id
        current = None if parent is None else md.snapshot_by_id(parent)
    if start_id is not None and (current is None or current.snapshot_id != start_id):
        raise CommitConflict(
            f"snapshot {start_id}, which the operation read, is no longer an ancestor of the "
            f"branch head {head_id}; run it again")
    if head_id is not None and md.snapshot_by_id(head_id) is None:
        raise CommitConflict(f"the branch head {head_id} is not a known snapshot; run it again")
    out.reverse()
    return out


def new_entries(io: FileIO, md: TableMetadata, snapshots: Iterable[Snapshot], content: int,
                statuses: tuple[int, ...] = (ADDED,)) -> Iterator[tuple[Snapshot, ManifestEntry]]:
    """Entries with one of ``statuses`` that ``snapshots`` wrote into manifests of ``content``
    (:data:`MANIFEST_DATA` or :data:`MANIFEST_DELETES`), with the snapshot that wrote each."""
    by_id = {s.snapshot_id: s for s in snapshots}
    seen: set[str] = set()
    for snap in by_id.values():
        if snap.manifest_list is None:
            continue
        for m in avro.load_manifest_list(io, snap.manifest_list, md.format_version):
            if m.content != content or m.added_snapshot_id not in by_id or m.manifest_path in seen:
                continue
            seen.add(m.manifest_path)
            for e in avro.load_manifest(io, m):
                if e.status in statuses and e.snapshot_id in by_id:
                    yield by_id[e.snapshot_id], e


def _describe(snap: Snapshot) -> str:
    op = snap.summary.get("operation") if snap.summary else None
    return f"snapshot {snap.snapshot_id}" + (f" ({op})" if op else "")


def validate_files_live(io: FileIO, md: TableMetadata, start_id: int | None, head_id: int | None,
                        paths: Iterable[str], *, content: int = MANIFEST_DATA) -> None:
    """CommitConflict when a snapshot since the start removed one of ``paths`` (data files when
    ``content`` is :data:`MANIFEST_DATA`, delete files for :data:`MANIFEST_DELETES`)."""
    wanted = set(paths)
    if not wanted:
        return
    for snap, e in new_entries(io, md, snapshots_since(md, start_id, head_id), content, (DELETED,)):
        if e.data_file.file_path in wanted:
            kind = "data file" if content == MANIFEST_DATA else "delete file"
            raise CommitConflict(
                f"{kind} {e.data_file.file_path} was removed by {_describe(snap)}, committed after "
                f"snapshot {start_id} which the operation read; run it again")


def validate_no_new_deletes(io: FileIO, md: TableMetadata, start_id: int | None, head_id: int | None,
                            data_files: Iterable[DataFile], *, ignore_equality: bool = False) -> None:
    """CommitConflict when a delete file added since the start applies to one of ``data_files``
    (each with its ``spec_id`` set). Equality deletes are skipped with ``ignore_equality``."""
    files = list(data_files)
    if not files:
        return
    snaps = snapshots_since(md, start_id, head_id)
    refs: list[DeleteRef] = []
    made_by: dict[str, Snapshot] = {}
    for snap, e in new_entries(io, md, snaps, MANIFEST_DELETES):
        if ignore_equality and e.data_file.content == EQUALITY_DELETES:
            continue
        refs.append(DeleteRef.from_data_file(e.data_file, e.data_sequence_number or 0))
        made_by[e.data_file.file_path] = snap
    if not refs:
        return
    schema = md.schema
    unpartitioned = {s.spec_id for s in md.specs if s.is_unpartitioned()}

    def field_type(fid: int):
        f = schema.find_field_or_none(fid)
        return f.type if f is not None else None

    index = DeleteIndex(refs, unpartitioned, field_type)
    start = md.snapshot_by_id(start_id) if start_id is not None else None
    # a file live at the start has a data sequence number no higher than the start's
    seq = start.sequence_number if start is not None and start.sequence_number is not None else 0
    for f in files:
        hits = index.for_data_file(f.file_path, f.spec_id, f.partition, seq)
        if hits:
            d = hits[0]
            raise CommitConflict(
                f"{_describe(made_by[d.path])} added {d.content_name.replace('_', ' ')} {d.path} "
                f"for data file {f.file_path}, which the operation read; run it again")


def validate_no_new_data(io: FileIO, md: TableMetadata, start_id: int | None, head_id: int | None,
                         may_match: Callable[[DataFile], bool]) -> None:
    """CommitConflict when a data file added since the start may hold rows the operation's
    filter selects (``may_match`` decides from the file's partition and metrics)."""
    for snap, e in new_entries(io, md, snapshots_since(md, start_id, head_id), MANIFEST_DATA):
        if may_match(e.data_file):
            raise CommitConflict(
                f"{_describe(snap)} added data file {e.data_file.file_path}, which may hold rows "
                f"the operation's filter selects; run it again")
