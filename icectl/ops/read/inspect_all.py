"""The views of `icectl inspect` over every snapshot, shaped like the reference's
``all_manifests`` and ``all_entries`` metadata tables and its ``ancestors_of`` procedure.

Column parity: every row has the reference's columns, in the reference's order, each named by
the reference's column name with ``-`` for ``_`` (``added_data_files_count`` is
``added-data-files-count``), and the reference's values: integer codes where it has integers
(``content``, ``status``), milliseconds where it has a long timestamp, partition summary bounds as
the transform renders them, column bounds in the ``readable-metrics`` as JSON single values
(Iceberg spec, Appendix D) and as hex in the raw ``lower-bounds``/``upper-bounds`` maps.

``all-manifests`` lists a manifest once per snapshot whose manifest list names it (its
``reference-snapshot-id``); ``all-entries`` reads each manifest reachable from any snapshot of
any ref once, however many snapshots share it. Nothing here prints.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

from icectl.ops.read.inspect_tables import data_file_view, unified_partition_fields
from icectl.spec.metadata import TableMetadata
from icectl.spec.reserved import MANIFEST_DELETES
from icectl.spec.snapshots import Snapshot, ancestors_of
from icectl.spec.types import IcebergType, PrimitiveType
from icectl.spec.values import from_bytes, to_human
from icectl.spec.views import json_value_or_text
from icectl.table.commit.snapshot_manifests import read_manifests

if TYPE_CHECKING:
    from icectl.io.storage.files import FileIO
    from icectl.spec.manifests import DataFile, ManifestFile

__all__ = ["summary_bound", "all_manifests_table", "all_entries_table", "ancestors_table", "readable_metrics"]


def _snapshots(md: TableMetadata) -> list[Snapshot]:
    """Every snapshot of the table (those of every branch and tag), oldest first."""
    return sorted(md.snapshots, key=lambda s: (s.sequence_number, s.timestamp_ms, s.snapshot_id))


def summary_bound(t: IcebergType, b: bytes | None, transform: Any = None,
                   source_type: IcebergType | None = None) -> str | None:
    """A partition summary bound as text. Like the reference's ``manifests`` table, the
    transform renders it (a year bound reads ``2024``, an hour ``2024-01-02-10``, and a missing
    bound - all values null - reads ``null``, as the transform renders a null)."""
    if b is None:
        return transform.to_human_string(None, source_type) if transform is not None else None
    try:
        value = from_bytes(t, b)
        if transform is not None:
            return transform.to_human_string(value, source_type)
        return to_human(t, value)
    except Exception:  # noqa: BLE001 - an unreadable bound is shown raw, never fatal
        return b.hex()


def _partition_summaries(md: TableMetadata, m: ManifestFile) -> list[dict[str, Any]] | None:
    spec = md.specs_by_id().get(m.partition_spec_id)
    if m.partitions is None or spec is None:
        return None
    out = []
    for field, pf, fs in zip(spec.fields, spec.partition_type(md.schema).fields(), m.partitions):
        src = md.schema.find_field_or_none(field.source_id)
        src_type = src.type if src is not None else None
        out.append({
            "contains-null": fs.contains_null,
            "contains-nan": fs.contains_nan,
            "lower-bound": summary_bound(pf.type, fs.lower_bound, field.transform, src_type),
            "upper-bound": summary_bound(pf.type, fs.upper_bound, field.transform, src_type),
        })
    return out


def all_manifest_row(md: TableMetadata, m: ManifestFile, reference_snapshot_id: int) -> dict[str, Any]:
    """One row of the reference's ``all_manifests`` table: a data manifest's counts are its
    data file counts (its delete file counts 0), a delete manifest's the other way round."""
    deletes = m.content == MANIFEST_DELETES
    counts = (m.added_files_count, m.existing_files_count, m.deleted_files_count)
    zero = (0, 0, 0)
    data, dels = (zero, counts) if deletes else (counts, zero)
    return {
        "content": m.content,
        "path": m.manifest_path,
        "length": m.manifest_length,
        "partition-spec-id": m.partition_spec_id,
        "added-snapshot-id": m.added_snapshot_id,
        "added-data-files-count": data[0],
        "existing-data-files-count": data[1],
        "deleted-data-files-count": data[2],
        "added-delete-files-count": dels[0],
        "existing-delete-files-count": dels[1],
        "deleted-delete-files-count": dels[2],
        "partition-summaries": _partition_summaries(md, m),
        "reference-snapshot-id": reference_snapshot_id,
    }


def all_manifests_table(io: FileIO, md: TableMetadata) -> list[dict[str, Any]]:
    """The reference's ``all_manifests`` table: the manifests of every snapshot's manifest list,
    one row per (snapshot, manifest); only the manifest lists are read."""
    return [all_manifest_row(md, m, s.snapshot_id) for s in _snapshots(md) for m in read_manifests(io, md, s)]


def reachable_manifests(io: FileIO, md: TableMetadata) -> Iterator[ManifestFile]:
    """Each manifest reachable from any snapshot, once (the first manifest list naming it)."""
    seen: set[str] = set()
    for s in _snapshots(md):
        for m in read_manifests(io, md, s):
            if m.manifest_path not in seen:
                seen.add(m.manifest_path)
                yield m


def readable_metrics(md: TableMetadata, f: DataFile) -> dict[str, dict[str, Any]]:
    """The reference's ``readable_metrics``: per primitive column of the current schema, by full
    name in name order, the file's size, counts and bounds of it (bounds as JSON values)."""
    out: dict[str, dict[str, Any]] = {}
    for name, field in sorted(md.schema.leaf_fields(), key=lambda nf: nf[0]):
        fid, t = field.field_id, field.type
        assert isinstance(t, PrimitiveType)
        out[name] = {
            "column-size": _get(f.column_sizes, fid),
            "value-count": _get(f.value_counts, fid),
            "null-value-count": _get(f.null_value_counts, fid),
            "nan-value-count": _get(f.nan_value_counts, fid),
            "lower-bound": _bound(t, _get(f.lower_bounds, fid)),
            "upper-bound": _bound(t, _get(f.upper_bounds, fid)),
        }
    return out


def _get(m: dict[int, Any] | None, key: int) -> Any:
    return None if m is None else m.get(key)


def _bound(t: Any, b: bytes | None) -> Any:
    if b is None:
        return None
    try:
        return json_value_or_text(t, from_bytes(t, b))
    except Exception:  # noqa: BLE001 - an unreadable bound reads as its hex, never fatal
        return b.hex()


def all_entries_table(io: FileIO, md: TableMetadata) -> list[dict[str, Any]]:
    """The reference's ``all_entries`` table: every entry (deleted ones too) of every manifest
    reachable from any snapshot, each manifest read once."""
    from icectl.io.manifest.records import load_manifest

    unified = unified_partition_fields(md)
    rows = []
    for m in reachable_manifests(io, md):
        for e in load_manifest(io, m, include_stats=True):
            rows.append({
                "status": e.status,
                "snapshot-id": e.snapshot_id,
                "sequence-number": e.sequence_number,
                "file-sequence-number": e.file_sequence_number,
                "data-file": data_file_view(md, e.data_file, unified),
                "readable-metrics": readable_metrics(md, e.data_file),
            })
    return rows


def ancestors_table(md: TableMetadata, snapshot: Snapshot | None) -> list[dict[str, Any]]:
    """The reference's ``ancestors_of`` procedure: the snapshot and its ancestors, newest first,
    each with its timestamp in milliseconds, as far as the table still has them."""
    if snapshot is None:
        return []
    return [{"snapshot-id": s.snapshot_id, "timestamp": s.timestamp_ms}
            for s in ancestors_of(snapshot.snapshot_id, md.snapshot_by_id)]
