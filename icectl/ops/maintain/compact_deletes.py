"""Compacting delete files (``icectl compact --deletes``), as Spark's
``rewrite_position_delete_files`` procedure together with Iceberg's ``remove-dangling-deletes``.

Planning, from one plan of the branch head (the scan planner's: its live data files and every
live delete file, which the commit then removes as the plan gave them):

1. **Dangling delete files** are removed whole, nothing rewritten (the one rule,
   :func:`icectl.table.delete_index.is_dangling`): a deletion vector or a position delete file
   naming one data file (``referenced_data_file`` or equal ``file_path`` bounds) whose data file
   is no longer live; another position delete file whose partition (same spec) has no live data
   file it can apply to (data sequence number <= the delete's, path within its ``file_path``
   bounds); an equality delete file with no live data file older than it in its partition (in
   the whole table for a global one, written under an unpartitioned spec).
2. **Position delete files** (Parquet; deletion vectors are never merged, so a v3 table keeps one
   per data file, and a v3 table gets no new Parquet position deletes) are grouped by spec and
   partition, as the reference's bin-pack planner for position deletes groups them: files
   outside [0.75, 1.8] x the target size (``write.delete.target-file-size-bytes``, 64 MB) are
   candidates, and a partition's candidates are rewritten when they are at least
   ``min_input_files`` (5) many, hold more than the target size, or any is bigger than 1.8 x the
   target (``rewrite_all`` takes every file).
3. Each group is a task (:func:`run_delete_rewrite_task`, run on an engine): it reads the group's
   ``(file_path, pos)`` rows, drops those whose data file is not live in the partition (or is
   newer than the delete), and writes the rest sorted by path and position into new position
   delete files of the target size.

One ``replace`` snapshot removes the rewritten and dangling delete files and adds the new ones
(through the replace producer of :mod:`icectl.table.commit.rewrite`); the new delete files take the new
snapshot's sequence number, as the reference's rewrite adds them. On a lost race the commit is
refused (CommitConflict) when a delete file it removes is no longer live, and its files are
removed.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Sequence

from icectl import command_files
from icectl.errors import CommitConflict, InvalidInput
from icectl.spec.partition_identity import partition_key
from icectl.io.storage.files import join
from icectl.spec.manifests import MANIFEST_DELETES, POSITION_DELETES, DataFile, ManifestEntry
from icectl.spec.partition_path import partition_path
from icectl.spec.properties import DELETE_TARGET_FILE_SIZE, DELETE_TARGET_FILE_SIZE_DEFAULT, property_int
from icectl.spec.result_json import JsonResult, derived, json_field
from icectl.spec.reserved import DELETE_FILE_PATH_ID, POSITION_DELETE_SCHEMA
from icectl.table.branches import branch_to_commit
from icectl.table.delete_index import LiveDataFiles, is_dangling, targeted_path
from icectl.table.commit.rewrite import RewriteFilesProducer, delete_file_key
from icectl.table.locations import data_location

if TYPE_CHECKING:
    from icectl.engines import Engine
    from icectl.spec.manifests import ManifestFile
    from icectl.table.table import CommitAttempt
    from icectl.spec.summary import SummaryBuilder
    from icectl.spec.metadata import TableMetadata
    from icectl.table.table import Table

__all__ = ["CompactDeletesResult", "DeleteRewriteTask", "compact_deletes", "run_delete_rewrite_task",
           "DELETE_TARGET_FILE_SIZE", "DELETE_TARGET_FILE_SIZE_DEFAULT"]

MIN_INPUT_FILES_DEFAULT = 5


# -- the task -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DeleteRewriteTask:
    """One partition's position delete files to merge, as plain data."""

    inputs: tuple[str, ...]  # Parquet position delete files
    live: dict[str, int]  # live data file path -> data sequence number, in the partition
    max_sequence_number: dict[str, int]  # input path -> its data sequence number
    spec_id: int
    partition: tuple
    partition_path: str
    output_dir: str
    operation_id: str
    task_index: int
    properties: dict[str, str]
    target_file_size: int
    input_bytes: int = 0
    storage_options: dict[str, Any] | None = None


@dataclass(frozen=True)
class DeleteRewriteResult:
    task_index: int
    files: tuple[DataFile, ...]
    positions_read: int
    positions_written: int


def run_delete_rewrite_task(task: DeleteRewriteTask) -> DeleteRewriteResult:
    """Merge the task's position delete files, keeping only positions of live data files
    (module docs); its own files are deleted again if it fails."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from icectl.errors import CorruptMetadata
    from icectl.io.storage.files import FileIO
    from icectl.io.formats.parquet import footer_metrics
    from icectl.io.formats.parquet_write import ParquetWriteOptions, write_rolling
    from icectl.ops.compute.arrow_values import arrow_owned
    from icectl.spec.metrics import FULL, MetricsConfig

    io = FileIO(task.storage_options or None)
    parts = []
    read = 0
    for path in task.inputs:
        try:
            t = pq.read_table(pa.BufferReader(arrow_owned(io.read(path))), columns=["file_path", "pos"])
        except (pa.ArrowException, KeyError) as e:
            raise CorruptMetadata(f"position delete file {path} is unreadable: {e}") from None
        read += t.num_rows
        seq = task.max_sequence_number[path]
        applies = [p for p, s in task.live.items() if s <= seq]
        t = t.filter(pc.is_in(t.column("file_path"), value_set=pa.array(applies, pa.string())))
        parts.append(t.cast(pa.schema([("file_path", pa.string()), ("pos", pa.int64())])))
    rows = pa.concat_tables(parts) if parts else None
    if rows is None or rows.num_rows == 0:
        return DeleteRewriteResult(task.task_index, (), read, 0)
    rows = rows.group_by(["file_path", "pos"]).aggregate([])  # a position deleted twice: once
    rows = rows.sort_by([("file_path", "ascending"), ("pos", "ascending")])
    options = replace(ParquetWriteOptions.from_properties(task.properties),
                      target_file_size_bytes=task.target_file_size)
    directory = join(task.output_dir, task.partition_path) if task.partition_path else task.output_dir
    written: list[str] = []

    def next_path() -> str:
        p = join(directory, f"{task.task_index:05d}-{len(written)}-{task.operation_id}-deletes.parquet")
        written.append(p)
        return p

    out: list[DataFile] = []
    try:
        for w in write_rolling(io, rows, POSITION_DELETE_SCHEMA, options, next_path):
            m = footer_metrics(w.footer, MetricsConfig(default_mode=FULL), None, w.file_size_in_bytes, path=w.path)
            out.append(DataFile(
                content=POSITION_DELETES, file_path=w.path, file_format="PARQUET", partition=task.partition,
                record_count=m.record_count, file_size_in_bytes=w.file_size_in_bytes,
                column_sizes=m.column_sizes, value_counts=m.value_counts,
                null_value_counts=m.null_value_counts, nan_value_counts=m.nan_value_counts,
                lower_bounds=m.lower_bounds, upper_bounds=m.upper_bounds,
                split_offsets=m.split_offsets or None,
                referenced_data_file=targeted_path(None, (m.lower_bounds or {}).get(DELETE_FILE_PATH_ID),
                                                   (m.upper_bounds or {}).get(DELETE_FILE_PATH_ID)),
                spec_id=task.spec_id))
    except BaseException:
        command_files.discard(io, written)
        raise
    return DeleteRewriteResult(task.task_index, tuple(out), read, rows.num_rows)


# -- planning ----------------------------------------------------------------------------------------


@dataclass
class _Head:
    """The branch head's live files, from one plan of it."""

    data: LiveDataFiles = field(default_factory=LiveDataFiles)
    deletes: list[tuple[DataFile, int]] = field(default_factory=list)  # (file, data sequence number)


def _plan_head(table: Table, branch: str) -> _Head:
    """One unfiltered plan of the branch head: its live data files and every live delete file
    (DataFiles that know their manifest, for the commit)."""
    from icectl.scan.planner import plan_scan

    head = _Head()
    plan = plan_scan(table, ref=branch)
    for p in plan.files:
        head.data.add(p.spec_id, p.partition, p.path, p.data_sequence_number)
    for e in plan.delete_entries():
        head.deletes.append((e.data_file, e.sequence_number or 0))
    return head


@dataclass(frozen=True)
class _Group:
    spec_id: int
    partition: tuple
    files: tuple[tuple[DataFile, int], ...]


def _plan_groups(candidates: list[tuple[DataFile, int]], target: int, min_input_files: int,
                 rewrite_all: bool) -> list[_Group]:
    lo, hi = int(target * 0.75), int(target * 1.8)
    by_part: dict[tuple, list[tuple[DataFile, int]]] = {}
    for f, seq in candidates:  # -0.0 and 0.0 are two partitions
        by_part.setdefault((f.spec_id, partition_key(tuple(f.partition))), []).append((f, seq))
    groups = []
    for (spec_id, _), files in sorted(by_part.items(), key=lambda kv: repr(kv[0])):
        part = files[0][0].partition
        chosen = files if rewrite_all else [
            (f, s) for f, s in files if f.file_size_in_bytes < lo or f.file_size_in_bytes > hi]
        size = sum(f.file_size_in_bytes for f, _ in chosen)
        if not chosen:
            continue
        if rewrite_all or len(chosen) >= min_input_files or (len(chosen) > 1 and size > target) or any(
                f.file_size_in_bytes > hi for f, _ in chosen):
            groups.append(_Group(spec_id, part, tuple(chosen)))
    return groups


# -- committing -------------------------------------------------------------------------------------


class _DeleteRewriteProducer(RewriteFilesProducer):
    """The replace producer, removing delete files and adding the merged ones (in a delete
    manifest, inheriting the new snapshot's sequence number). Refused when a delete file to
    remove is no longer live (a concurrent commit removed or replaced it)."""

    def __init__(self, table: Table, *, starting_snapshot_id: int | None, removed_deletes: Sequence[DataFile],
                 added_deletes: Sequence[tuple[DataFile, str]], branch: str) -> None:
        super().__init__(table, starting_snapshot_id=starting_snapshot_id, removed=(), added=(),
                         removed_deletes=removed_deletes, use_starting_sequence_number=False,
                         remove_dangling_deletes=False, branch=branch)
        self._wanted = {delete_file_key(f) for f in removed_deletes}
        self._added_deletes = list(added_deletes)

    def summary(self, base: TableMetadata) -> SummaryBuilder:
        return super().summary(base).added_files(self._added_deletes)

    def _write_added(self, attempt: CommitAttempt, base: TableMetadata) -> list[ManifestFile]:
        """The merged delete files' manifests (the replace producer merges them with the
        rest); refused first when a delete file to remove was not found live."""
        missing = self._wanted - {delete_file_key(f) for f in self.removed_deletes}
        if missing:
            raise CommitConflict(f"delete file {sorted(k[1] for k in missing)[0]} is no longer live in branch "
                                 f"{self.branch}; run the operation again")
        by_spec: dict[int, list[ManifestEntry]] = {}
        for f, _ in self._added_deletes:
            by_spec.setdefault(f.spec_id, []).append(ManifestEntry(1, self.snapshot_id, None, None, f))
        new = []
        for spec_id, entries in by_spec.items():
            new += self.write_manifests(attempt, base, base.spec_by_id(spec_id), entries, MANIFEST_DELETES)
        return super()._write_added(attempt, base) + new


@dataclass(frozen=True, kw_only=True)
class CompactDeletesResult(JsonResult):
    """What a delete-file compaction did (or, with ``dry_run``, would do)."""

    committed: bool = derived(lambda r: r.snapshot_id is not None)
    dry_run: bool
    location: str
    branch: str
    starting_snapshot_id: int | None
    snapshot_id: int | None = None
    sequence_number: int | None = None
    target_file_size: int = json_field(key="target-file-size-bytes")
    groups: int = json_field(default=0, key="file-groups")
    rewritten_delete_files_count: int = derived(lambda r: len(r.rewritten_delete_files))
    added_delete_files_count: int = derived(lambda r: len(r.added_delete_files))
    dangling_delete_files_count: int = derived(lambda r: len(r.dangling_delete_files))
    rewritten_bytes: int = json_field(default=0, key="rewritten-bytes-count")
    added_bytes: int = json_field(default=0, key="added-bytes-count")
    positions_read: int = 0
    positions_written: int = 0
    rewritten_delete_files: tuple[str, ...] = ()
    dangling_delete_files: tuple[str, ...] = ()
    added_delete_files: tuple[str, ...] = ()
    metadata_location: str | None = json_field(default=None, key="metadata-file")
    summary: dict[str, str] = field(default_factory=dict)


def compact_deletes(table: Table, *, engine: Engine | str | None = None, branch: str | None = None,
                    target_file_size: int | None = None, min_input_files: int = MIN_INPUT_FILES_DEFAULT,
                    rewrite_all: bool = False, remove_dangling: bool = True,
                    dry_run: bool = False) -> CompactDeletesResult:
    """Rewrite ``table``'s position delete files and remove its dangling delete files (module
    docs). ``engine`` is an engine object or name (default: the local engine)."""
    from icectl.errors import InvalidInput

    if min_input_files < 1:
        raise InvalidInput(f"the minimum number of input files must be at least 1 (got {min_input_files})")
    if target_file_size is not None and target_file_size < 1:
        raise InvalidInput(f"the target file size must be at least 1 byte (got {target_file_size})")
    md = table.metadata
    branch, ref = branch_to_commit(md, branch, may_start=True)
    snapshot = md.snapshot_by_id(ref.snapshot_id) if ref is not None else None
    target = target_file_size or max(1, property_int(md.properties, DELETE_TARGET_FILE_SIZE,
                                                     DELETE_TARGET_FILE_SIZE_DEFAULT))
    head = _plan_head(table, branch) if snapshot is not None else _Head()
    unpartitioned = {s.spec_id for s in md.specs if s.is_unpartitioned()}
    dangling = [f for f, s in head.deletes if remove_dangling and is_dangling(f, s, head.data, unpartitioned)]
    gone = {delete_file_key(f) for f in dangling}
    mergeable = [(f, s) for f, s in head.deletes
                 if f.content == POSITION_DELETES and not f.is_deletion_vector
                 and str(f.file_format).upper() == "PARQUET" and delete_file_key(f) not in gone]
    groups = [] if md.format_version >= 3 else _plan_groups(mergeable, target, min_input_files, rewrite_all)
    start = snapshot.snapshot_id if snapshot is not None else None
    common = dict(location=table.location, branch=branch, starting_snapshot_id=start, target_file_size=target,
                  dangling_delete_files=tuple(f.file_path for f in dangling),
                  rewritten_delete_files=tuple(f.file_path for g in groups for f, _ in g.files),
                  rewritten_bytes=sum(f.file_size_in_bytes for g in groups for f, _ in g.files),
                  groups=len(groups))
    if dry_run or (not groups and not dangling):
        return CompactDeletesResult(dry_run=dry_run, **common)
    tasks = _tasks(table, md, head, groups, target)
    if engine is None or isinstance(engine, str):
        from icectl.engines import get_engine

        engine = get_engine(engine or "local")
    results = []
    try:
        results = engine.map(run_delete_rewrite_task, tasks) if tasks else []
        added = [(f, t.partition_path) for t, r in zip(tasks, results) for f in r.files]
        removed = list(dangling) + [f for g in groups for f, _ in g.files]
        producer = _DeleteRewriteProducer(table, starting_snapshot_id=start, removed_deletes=removed,
                                          added_deletes=added, branch=branch)
        produced = producer.commit()
    except BaseException:
        command_files.discard(table.io, [f.file_path for r in results for f in r.files])
        if tasks:  # also the files of tasks whose results never came back
            from icectl.ops.write.rows import remove_operation_files

            remove_operation_files(table.io, tasks[0].output_dir, tasks[0].operation_id)
        raise
    snap = produced.snapshot
    return CompactDeletesResult(
        dry_run=False, **common,
        added_delete_files=tuple(f.file_path for f, _ in added),
        added_bytes=sum(f.file_size_in_bytes for f, _ in added),
        positions_read=sum(r.positions_read for r in results),
        positions_written=sum(r.positions_written for r in results),
        snapshot_id=snap.snapshot_id, sequence_number=snap.sequence_number,
        metadata_location=produced.metadata_location, summary=dict(snap.summary))


def _tasks(table: Table, md: TableMetadata, head: _Head, groups: list[_Group], target: int) -> list[DeleteRewriteTask]:
    operation_id = str(uuid.uuid4())
    out = []
    for i, g in enumerate(groups):
        spec = md.spec_by_id(g.spec_id)
        try:
            ppath = partition_path(spec, md.schema, g.partition) if spec.fields else ""
        except Exception:  # noqa: BLE001 - a spec whose source column was dropped
            ppath = ""
        out.append(DeleteRewriteTask(
            inputs=tuple(f.file_path for f, _ in g.files),
            live=dict(head.data.in_partition(g.spec_id, g.partition)),
            max_sequence_number={f.file_path: s for f, s in g.files},
            spec_id=g.spec_id, partition=g.partition, partition_path=ppath,
            output_dir=data_location(table.location, md.properties), operation_id=operation_id,
            task_index=i, properties=dict(md.properties), target_file_size=target,
            input_bytes=sum(f.file_size_in_bytes for f, _ in g.files),
            storage_options=table.io.storage_options or None))
    return out


# what each data-compaction argument that compacting delete files does not take is, by the
# Python API's keyword (the CLI names its option for it)
_NOT_FOR_DELETES = {"filter": "a row filter", "sort_order": "a sort order",
                    "delete_file_threshold": "a delete file threshold",
                    "partial_progress": "partial progress",
                    "strategy": "a strategy other than binpack"}


def refuse_options_not_for_deletes(filter_text: str | None = None, sort_order: str | None = None,
                                   delete_file_threshold: int | None = None,
                                   partial_progress: int | None = None,
                                   strategy: str = "binpack") -> None:
    """Refuse the first data-compaction option given (not None, or a strategy other than
    binpack) that compacting delete files does not take: one InvalidInput, the same for the
    command line (which names its option) and the Python API (``argument`` is its keyword)."""
    given = [n for n, v in (("filter", filter_text), ("sort_order", sort_order),
                            ("delete_file_threshold", delete_file_threshold),
                            ("partial_progress", partial_progress)) if v is not None]
    given += ["strategy"] if strategy.strip().lower() != "binpack" else []
    if given:
        raise InvalidInput(f"{_NOT_FOR_DELETES[given[0]]} does not apply to compacting delete files",
                           argument=given[0])
