"""Row-level deletes by position, from a plan: finding the positions of the rows to delete in
planned files, and writing them as position delete files (format v2) or deletion vectors (v3).

Shared by ``icectl delete`` in merge-on-read mode (:mod:`icectl.ops.delete.merge_on_read`) and the deletes
by key that find rows (:mod:`icectl.ops.delete.keyed`: ``delete --equality``, ``upsert``). Each
reads and writes from its one plan (:class:`~icectl.scan.plan_result.PlanResult`): the positions
are read through :func:`icectl.scan.reader.scan_of_plan`, and the data files and the deletion
vectors a commit references or replaces come from the plan as real ``DataFile``s (their
manifest set), never from reading the manifests again.

* position delete files: one per data file (``write.delete.granularity=file``), rows sorted by
  position, with the ``file_path`` bounds in the manifest entry;
* deletion vectors: one Puffin file, one ``deletion-vector-v1`` blob per data file, merged with
  the file's previous deletion vector, whose entry the same commit removes. A data file that
  still has Parquet position deletes is refused (merging them is not supported yet).
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Iterable, Sequence

import pyarrow as pa

from icectl import __version__, command_files
from icectl.errors import UnsupportedFeature
from icectl.io.storage.files import join
from icectl.io.formats.parquet import footer_metrics
from icectl.io.formats.parquet_write import ParquetWriteOptions, write_rolling
from icectl.io.formats.puffin import (
    DV_BLOB_TYPE,
    ROW_POSITION_FIELD_ID,
    PuffinBlob,
    deletion_vector_blob,
    puffin_file,
    read_deletion_vector,
)
from icectl.scan.plan_result import PlannedFile, PlanResult
from icectl.spec.manifests import POSITION_DELETES, DataFile
from icectl.spec.metadata import TableMetadata
from icectl.spec.metrics import FULL, MetricsConfig
from icectl.spec.partition_path import partition_path
from icectl.spec.reserved import POSITION_DELETE_SCHEMA
from icectl.table.delete_index import DeleteRef
from icectl.table.table import Table

__all__ = ["POS_DELETE_SCHEMA", "FileWithPath", "matching_positions", "previous_dvs",
           "write_row_deletes", "with_partition_paths", "partition_path_of"]

POS_DELETE_SCHEMA = POSITION_DELETE_SCHEMA

FileWithPath = tuple[DataFile, str]  # a file (spec_id set) and its partition path


def partition_path_of(md: TableMetadata, f: DataFile) -> str:
    """The partition path of a file under its own spec ("" when unpartitioned)."""
    spec = md.spec_by_id(f.spec_id)
    return partition_path(spec, md.schema, f.partition) if spec.fields else ""


def with_partition_paths(md: TableMetadata, files: Iterable[DataFile]) -> list[FileWithPath]:
    return [(f, partition_path_of(md, f)) for f in files]


def matching_positions(table: Table, plan: PlanResult, files: Sequence[PlannedFile]
                       ) -> dict[str, list[int]]:
    """Positions of the live rows of ``files`` (planned files of ``plan``) that its filter
    selects, by data file path (files without such a row are left out)."""
    from icectl.scan.reader import scan_of_plan

    out: dict[str, list[int]] = {}
    if not files:
        return out
    for b in scan_of_plan(table, plan, files, with_metadata=True).batches():
        for path, pos in zip(b.column("_file").to_pylist(), b.column("_pos").to_pylist()):
            out.setdefault(path, []).append(pos)
    return out


def previous_dvs(planned: Iterable[PlannedFile], positions: dict[str, list[int]]
                 ) -> dict[str, DeleteRef]:
    """The deletion vector (a planner delete reference) of each file getting new deletes;
    refused when such a file still has Parquet position deletes (they would have to be merged
    into its deletion vector, which icectl does not do yet)."""
    out: dict[str, DeleteRef] = {}
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


def write_row_deletes(table: Table, plan: PlanResult, positions: dict[str, list[int]],
                      files: dict[str, DataFile], old: dict[str, DeleteRef], written: list[str]
                      ) -> tuple[list[FileWithPath], list[FileWithPath]]:
    """Write ``positions`` (by data file; ``files``: their DataFiles from the plan) as position
    delete files (v2) or deletion vectors (v3, merged with ``old``, each file's previous one,
    from :func:`previous_dvs`). Returns the delete files added and those replaced (the previous
    deletion vectors, from the plan), with partition paths; paths written go to ``written``."""
    md = table.metadata
    if not positions:
        return [], []
    if md.format_version >= 3:
        replaced = with_partition_paths(md, (plan.delete_file(d) for d in old.values()))
        return _write_deletion_vectors(table, md, positions, files, old, written), replaced
    return _write_position_deletes(table, md, positions, files, written), []


def _write_position_deletes(table: Table, md: TableMetadata, positions: dict[str, list[int]],
                            files: dict[str, DataFile], written: list[str]) -> list[FileWithPath]:
    options = ParquetWriteOptions.from_properties(md.properties)
    config = MetricsConfig(default_mode=FULL)
    prefix = uuid.uuid4()
    out: list[FileWithPath] = []
    for n, path in enumerate(sorted(positions)):
        df = files[path]
        ppath = partition_path_of(md, df)
        target = join(table.location, "data", *([ppath] if ppath else []),
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


def _write_deletion_vectors(table: Table, md: TableMetadata, positions: dict[str, list[int]],
                            files: dict[str, DataFile], old: dict[str, DeleteRef],
                            written: list[str]) -> list[FileWithPath]:
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
    out: list[FileWithPath] = []
    for path, blob, n in zip(sorted(positions), placed, cards):
        df = files[path]
        out.append((DataFile(
            content=POSITION_DELETES, file_path=target, file_format="PUFFIN",
            partition=df.partition, record_count=n, file_size_in_bytes=len(data),
            referenced_data_file=path, content_offset=blob.offset,
            content_size_in_bytes=blob.length, spec_id=df.spec_id), partition_path_of(md, df)))
    return out
