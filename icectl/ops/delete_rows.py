"""Deleting the rows of a table that match a filter (``icectl delete``).

1. The scan planner lists the data files the filter may match (files proven not to match are
   never read).
2. A file whose partition proves every row matches (the planner's residual is ``true``) or
   whose column metrics prove it (the strict metrics evaluator) is dropped whole, unread - the
   reference's metadata delete. Both proofs count nulls and NaN: a row whose value is null
   matches no comparison, ``in``, ``not in`` or ``starts with`` (nor their negations), so a
   null partition never proves ``x != 5`` (the reference's metadata delete says it does and
   drops the null partition: not copied). A file whose residual is ``false`` is not read.
3. In merge-on-read mode (format v2) the other candidates are read through the scan reader
   (existing deletes applied) and the positions of their matching rows are written as position
   delete files, one per data file (``write.delete.granularity=file``), rows sorted by
   position, with the ``file_path`` bounds in the manifest entry.
4. One ``delete`` snapshot commits both (a row delta, :mod:`icectl.table.row_delta`): the
   dropped files marked deleted in rewritten manifests, the new delete files in a new delete
   manifest. If the branch moved meanwhile, the row delta re-validates against the new head
   for the table's isolation level (the files read still live, no new deletes for them, and for
   ``serializable`` no new data the filter may match) and commits on top or fails with
   CommitConflict.

   On format v3 the positions go to deletion vectors instead: one Puffin file, one
   ``deletion-vector-v1`` blob per data file, merged with the file's previous deletion vector,
   whose entry the same commit removes.

The mode is ``mode``, else the table's ``write.delete.mode`` (default copy-on-write, as the
reference); copy-on-write deletes are :mod:`icectl.ops.delete_cow`'s. Not yet supported in
merge-on-read mode (refused, nothing written): row-level deletes on format v1, and on v3 a data
file that still has Parquet position deletes. Files written before a failed commit are removed.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa

from icectl import __version__
from icectl.errors import InvalidInput, NotFound, UnsupportedFeature
from icectl.expr.evaluators import StrictMetricsEvaluator
from icectl import command_files
from icectl.expr.expressions import AlwaysFalse, AlwaysTrue
from icectl.io import avro
from icectl.io.files import join
from icectl.io.parquet import footer_metrics
from icectl.io.parquet_write import ParquetWriteOptions, write_rolling
from icectl.io.puffin import (
    DV_BLOB_TYPE,
    ROW_POSITION_FIELD_ID,
    PuffinBlob,
    deletion_vector_blob,
    puffin_file,
    read_deletion_vector,
)
from icectl.spec.manifests import DELETED, POSITION_DELETES, DataFile
from icectl.spec.metrics import FULL, MetricsConfig
from icectl.spec.partition_path import partition_path
from icectl.spec.properties import COPY_ON_WRITE, DELETE_MODE, DELETE_MODE_DEFAULT, MERGE_ON_READ
from icectl.spec.reserved import POSITION_DELETE_SCHEMA
from icectl.spec.schema import Schema
from icectl.spec.snapshots import MAIN_BRANCH

__all__ = ["DeleteResult", "delete_rows", "MERGE_ON_READ", "COPY_ON_WRITE", "DELETE_MODE"]

POS_DELETE_SCHEMA = POSITION_DELETE_SCHEMA


@dataclass(frozen=True)
class DeleteResult:
    """What a delete did (or, with ``dry_run``, would do)."""

    location: str
    branch: str
    mode: str
    dry_run: bool
    committed: bool
    snapshot_id: int | None
    parent_snapshot_id: int | None
    removed_data_files: tuple[str, ...]
    removed_records: int
    position_delete_files: tuple[str, ...]
    deleted_positions: int
    files_with_row_deletes: tuple[str, ...]
    summary: dict[str, str] = field(default_factory=dict, hash=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "committed": self.committed,
            "dry-run": self.dry_run,
            "location": self.location,
            "branch": self.branch,
            "mode": self.mode,
            "snapshot-id": self.snapshot_id,
            "parent-snapshot-id": self.parent_snapshot_id,
            "operation": self.summary.get("operation") if self.committed else None,
            "removed-data-files": list(self.removed_data_files),
            "removed-records": self.removed_records,
            "position-delete-files": list(self.position_delete_files),
            "files-with-row-deletes": list(self.files_with_row_deletes),
            "deleted-positions": self.deleted_positions,
            "summary": dict(self.summary),
        }


def _resolve_mode(md: Any, mode: str | None) -> str:
    """The mode asked for, else the table's ``write.delete.mode`` (the reference's default:
    copy-on-write)."""
    if mode is not None and mode not in (MERGE_ON_READ, COPY_ON_WRITE):
        raise InvalidInput(f"{mode!r} is not merge-on-read or copy-on-write", argument="mode")
    chosen = mode or md.properties.get(DELETE_MODE, DELETE_MODE_DEFAULT)
    if chosen not in (MERGE_ON_READ, COPY_ON_WRITE):
        raise InvalidInput(f"{DELETE_MODE}={chosen!r} is not merge-on-read or copy-on-write")
    return chosen


def _whole_file_matches(planned: Any, df: DataFile, schema: Schema) -> bool:
    """Whether every row of the file provably matches: its residual is true (sound for null
    and NaN partition values) or the strict metrics evaluator proves the residual for every
    row (a null or NaN value proves nothing but ``is null`` / ``is nan``)."""
    if isinstance(planned.residual, AlwaysTrue):
        return True
    return StrictMetricsEvaluator(planned.residual, schema).eval(df)


def _data_files(table: Any, snapshot: Any, planned: list) -> dict[str, DataFile]:
    """The full manifest entries of the planned files (by path), from their manifests."""
    wanted = {p.manifest_path for p in planned}
    paths = {p.path for p in planned}
    out: dict[str, DataFile] = {}
    for m in avro.load_manifest_list(table.io, snapshot.manifest_list, table.metadata.format_version):
        if m.manifest_path in wanted:
            for e in avro.load_manifest(table.io, m):
                if e.status != DELETED and e.data_file.file_path in paths:
                    out[e.data_file.file_path] = e.data_file
    return out


def _matching_positions(table: Any, filter_text: str, branch: str, paths: set[str]
                        ) -> dict[str, list[int]]:
    """Positions of the live rows matching the filter in each file of ``paths``."""
    from icectl.scan.reader import open_scan

    scan = open_scan(table, filter_text, ref=branch, with_metadata=True)
    scan.files = [f for f in scan.files if f.path in paths]
    out: dict[str, list[int]] = {}
    for b in scan.batches():
        files = b.column("_file").to_pylist()
        for path, pos in zip(files, b.column("_pos").to_pylist()):
            out.setdefault(path, []).append(pos)
    return out


def _write_position_deletes(table: Any, md: Any, positions: dict[str, list[int]],
                            files: dict[str, DataFile], written: list[str]
                            ) -> list[tuple[DataFile, str]]:
    options = ParquetWriteOptions.from_properties(md.properties)
    config = MetricsConfig(default_mode=FULL)
    prefix = uuid.uuid4()
    out: list[tuple[DataFile, str]] = []
    for n, path in enumerate(sorted(positions)):
        df = files[path]
        spec = md.spec_by_id(df.spec_id)
        ppath = partition_path(spec, md.schema, df.partition) if spec.fields else ""
        target = join(table.location, "data", *( [ppath] if ppath else []),
                      f"{prefix}-{n:05d}-deletes.parquet")
        pos = sorted(positions[path])
        data = pa.table({"file_path": pa.array([path] * len(pos), pa.string()),
                         "pos": pa.array(pos, pa.int64())})

        def next_path(t: str = target) -> str:
            written.append(t)
            return command_files.register(table.io, t)

        opts = replace(options, target_file_size_bytes=1 << 62)
        (w,) = write_rolling(table.io, data, POS_DELETE_SCHEMA, opts, next_path)
        m = footer_metrics(w.footer, config, None, w.file_size_in_bytes, path=w.path)
        out.append((DataFile(
            content=POSITION_DELETES, file_path=w.path, file_format="PARQUET",
            partition=df.partition, record_count=m.record_count, file_size_in_bytes=w.file_size_in_bytes,
            column_sizes=m.column_sizes, value_counts=m.value_counts,
            null_value_counts=m.null_value_counts, nan_value_counts=m.nan_value_counts,
            lower_bounds=m.lower_bounds, upper_bounds=m.upper_bounds,
            split_offsets=m.split_offsets or None, referenced_data_file=path,
            spec_id=df.spec_id), ppath))
    return out


def delete_rows(table: Any, filter_text: str, *, mode: str | None = None,
                branch: str | None = None, dry_run: bool = False,
                case_sensitive: bool = False) -> DeleteResult:
    """Delete the rows of ``table`` matching ``filter_text`` (see the module docs)."""
    from icectl.scan.planner import plan_scan
    from icectl.expr.parser import parse_filter
    from icectl.table.row_delta import RowDeltaProducer, filter_may_match

    if not filter_text or not filter_text.strip():
        raise InvalidInput("the filter is empty; to delete every row the filter is: true", argument="filter_text")
    md = table.metadata
    chosen = _resolve_mode(md, mode)
    branch = branch or MAIN_BRANCH
    ref = branch if branch in md.refs else None
    if ref is None and branch != MAIN_BRANCH:
        raise NotFound(f"no branch named {branch!r}", argument="branch")
    if chosen == COPY_ON_WRITE:  # rewrites the files holding matching rows (ops/delete_cow.py)
        from icectl.ops.delete_cow import delete_copy_on_write

        return delete_copy_on_write(table, filter_text, branch=branch, dry_run=dry_run,
                                    case_sensitive=case_sensitive)
    plan = plan_scan(table, filter_text, ref=ref, case_sensitive=case_sensitive)
    snapshot = md.snapshot_by_id(plan.snapshot_id) if plan.snapshot_id is not None else None
    files = _data_files(table, snapshot, plan.files) if snapshot is not None else {}
    removed = [files[p.path] for p in plan.files if _whole_file_matches(p, files[p.path], plan.schema)]
    removed_paths = {f.file_path for f in removed}
    rest = {p.path for p in plan.files if not isinstance(p.residual, AlwaysFalse)} - removed_paths
    positions = _matching_positions(table, filter_text, branch, rest) if rest else {}
    positions = {k: v for k, v in positions.items() if v}
    if positions and md.format_version < 2:
        raise UnsupportedFeature(
            "row-level deletes need format v2 or later (icectl upgrade); on this v1 table only "
            "deletes of whole files are possible")
    old_dvs = _previous_dvs(plan.files, positions) if md.format_version >= 3 else {}
    result = dict(location=table.location, branch=branch, mode=chosen, dry_run=dry_run,
                  parent_snapshot_id=plan.snapshot_id,
                  removed_data_files=tuple(sorted(removed_paths)),
                  removed_records=sum(f.record_count for f in removed),
                  deleted_positions=sum(len(v) for v in positions.values()),
                  files_with_row_deletes=tuple(sorted(positions)))
    if dry_run or (not removed and not positions):
        return DeleteResult(committed=False, snapshot_id=None, position_delete_files=(), **result)
    written: list[str] = []
    try:
        replaced: list[tuple[DataFile, str]] = []
        if md.format_version >= 3:
            replaced = [(f, _ppath(md, f)) for f in _delete_entries(table, snapshot, old_dvs)]
            added = _write_deletion_vectors(table, md, positions, files, old_dvs, written)
        else:
            added = _write_position_deletes(table, md, positions, files, written)
        removed_with_paths = [(f, _ppath(md, f)) for f in removed]
        may_match = filter_may_match(md, parse_filter(filter_text), case_sensitive)
        produced = RowDeltaProducer(table, plan.snapshot_id, removed=removed_with_paths,
                                    added_deletes=added, removed_deletes=replaced,
                                    referenced_data_files=[files[p] for p in positions], may_match=may_match,
                                    branch=branch).commit()
    except BaseException:
        command_files.discard(table.io, written)  # (kept when the commit may have landed)
        raise
    return DeleteResult(committed=True, snapshot_id=produced.snapshot.snapshot_id,
                        position_delete_files=tuple(dict.fromkeys(f.file_path for f, _ in added)),
                        summary=dict(produced.snapshot.summary), **result)


def _previous_dvs(planned: list, positions: dict[str, list[int]]) -> dict[str, Any]:
    """The deletion vector (a planner delete reference) of each file getting new deletes;
    refused when such a file still has Parquet position deletes (they would have to be merged
    into its deletion vector, which icectl does not do yet)."""
    out: dict[str, Any] = {}
    for p in planned:
        if p.path not in positions:
            continue
        for d in p.deletes:
            if d.content != POSITION_DELETES:
                continue
            if not d.is_dv:
                raise UnsupportedFeature(
                    f"{p.path} has Parquet position deletes; merging them into a deletion "
                    "vector is not supported yet")
            out[p.path] = d
    return out


def _delete_entries(table: Any, snapshot: Any, refs: dict[str, Any]) -> list[DataFile]:
    """The manifest entries of the deletion vectors ``refs`` (planner delete references)."""
    keys = {(d.path, d.content_offset) for d in refs.values()}
    manifests = {d.manifest_path for d in refs.values()}
    out: list[DataFile] = []
    for m in avro.load_manifest_list(table.io, snapshot.manifest_list, table.metadata.format_version):
        if m.manifest_path in manifests:
            out += [e.data_file for e in avro.load_manifest(table.io, m)
                    if e.status != DELETED and (e.data_file.file_path, e.data_file.content_offset) in keys]
    if len(out) != len(keys):
        raise UnsupportedFeature("cannot find the manifest entries of the table's deletion vectors")
    return out


def _write_deletion_vectors(table: Any, md: Any, positions: dict[str, list[int]],
                            files: dict[str, DataFile], old: dict[str, Any], written: list[str]
                            ) -> list[tuple[DataFile, str]]:
    """One Puffin file holding one deletion vector per data file: its new positions merged
    with those of its previous deletion vector."""
    blobs, cards = [], []
    for path in sorted(positions):
        merged = set(positions[path])
        d = old.get(path)
        if d is not None:
            merged.update(read_deletion_vector(table.io, d.path, d.content_offset,
                                               d.content_size_in_bytes))
        cards.append(len(merged))
        blobs.append(PuffinBlob(DV_BLOB_TYPE, deletion_vector_blob(merged), (ROW_POSITION_FIELD_ID,),
                                {"referenced-data-file": path, "cardinality": str(len(merged))}))
    data, placed = puffin_file(blobs, {"created-by": f"icectl {__version__}"})
    target = join(table.location, "data", f"{uuid.uuid4()}-deletes.puffin")
    written.append(command_files.register(table.io, target))
    table.io.write_exclusive(target, data)
    out: list[tuple[DataFile, str]] = []
    for path, blob, n in zip(sorted(positions), placed, cards):
        df = files[path]
        out.append((DataFile(
            content=POSITION_DELETES, file_path=target, file_format="PUFFIN",
            partition=df.partition, record_count=n, file_size_in_bytes=len(data),
            referenced_data_file=path, content_offset=blob.offset,
            content_size_in_bytes=blob.length, spec_id=df.spec_id), _ppath(md, df)))
    return out


def _ppath(md: Any, f: DataFile) -> str:
    spec = md.spec_by_id(f.spec_id)
    return partition_path(spec, md.schema, f.partition) if spec.fields else ""
