"""Manifests as Avro container files: the record reader and the writer.

The record reader hands the writer schema to fastavro with its logical-type annotations
removed and converts partition values with :mod:`icectl.io.formats.avro_schema`, the conversions the
planner's column decoder (:mod:`icectl.io.manifest.columns`) uses as well; inheritance from the
manifest list entry is :func:`icectl.spec.manifests.inherit_columns`, also shared. The rules
(spec and Iceberg 1.10.2):

- an entry's null ``snapshot_id`` takes the manifest's ``added_snapshot_id``;
- null data / file sequence numbers take the manifest's sequence number when the entry is
  ADDED or the manifest's sequence number is 0 (v1 lists), else stay null;
- v3 ``first_row_id``: with a manifest ``first_row_id``, each non-DELETED entry whose file has
  none gets the running next row id, which then grows by the file's record count; a manifest
  without one clears the files' values (delete manifests, manifests from before v3).

A plain fixed[N] partition value is stored length-prefixed, as Iceberg Java 1.10.2 stores it;
both readers also read the plain Avro fixed older icectl wrote
(:func:`icectl.io.formats.avro_schema.manifest_wire_schemas`, the one rule).

Manifest lists live in :mod:`icectl.io.manifest.manifest_list`, generic Avro files of raw records in
:mod:`icectl.io.formats.avro_files`; both are re-exported here, the module callers import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

from icectl.errors import CorruptMetadata, ValidationError
from icectl.io.formats.avro_files import (
    RawFile,
    collect_records,
    compact_json,
    cyclic_gc_paused,
    read_avro_metadata,
    read_avro_records,
    write_avro_records,
)
from icectl.io.formats.avro_schema import ManifestLayout, manifest_wire_schemas, partition_writers
from icectl.io.manifest.manifest_list import load_manifest_list, read_manifest_list, write_manifest_list
from icectl.spec.manifests import (
    ADDED,
    DATA,
    EXISTING,
    MANIFEST_DATA,
    V1_BLOCK_SIZE,
    DataFile,
    InheritedColumns,
    ManifestEntry,
    ManifestFile,
    content_from_name,
    content_name,
    iceberg_schema_json,
    inherit_columns,
    manifest_entry_avro_schema,
    manifest_entry_type,
)
from icectl.spec.types import StructType

if TYPE_CHECKING:
    from icectl.io.storage.files import FileIO
    from icectl.spec.partitioning import PartitionSpec
    from icectl.spec.schema import Schema

__all__ = [
    "read_avro_metadata", "read_manifest_list", "read_manifest", "read_manifest_with_metadata",
    "load_manifest_list", "load_manifest", "write_manifest", "write_manifest_raw",
    "write_manifest_list", "read_avro_records", "write_avro_records", "manifest_content_of",
    "read_manifest_records", "manifest_header", "entry_records", "write_manifest_records",
    "cyclic_gc_paused", "in_layout", "require_sequence_numbers",
]


# -- reading manifests -------------------------------------------------------------------------


def _kv(items: list | None) -> dict | None:
    if items is None:
        return None
    if isinstance(items, dict):  # string-keyed Avro map
        return items
    return {kv["key"]: kv["value"] for kv in items}


def _none(items: Any) -> None:
    return None


def _tuple_or_none(v: list | None) -> tuple | None:
    return None if v is None else tuple(v)


def _spec_id_of(meta: dict[str, str]) -> int:
    try:
        return int(meta.get("partition-spec-id", 0))
    except ValueError:
        raise CorruptMetadata("invalid partition-spec-id in manifest metadata") from None


def read_manifest_with_metadata(
    source: Any, manifest_file: ManifestFile | None = None, *, include_stats: bool = True,
) -> tuple[dict[str, str], list[ManifestEntry]]:
    """Key-value metadata and entries of a manifest.

    With ``manifest_file`` (its manifest list entry) snapshot ids, sequence numbers and v3
    first row ids are inherited and files get the manifest's spec id; without it entries are
    returned exactly as stored (spec id from the ``partition-spec-id`` key).
    ``include_stats=False`` leaves the six metrics maps out (None), saving their conversion.
    """
    f = RawFile(source)
    return f.metadata, _by_wire(f, manifest_file,
                                lambda wire: _entries(f, wire, manifest_file, include_stats))


def _by_wire(f: RawFile, manifest_file: ManifestFile | None, decode: Callable[[Any], Any]) -> Any:
    """``decode(wire)`` with the first of the manifest's wire schemas that decodes it."""
    if manifest_file is not None and manifest_file.sequence_number is None:
        raise ValidationError(
            f"manifest {manifest_file.manifest_path} has no sequence number to inherit")
    wires = manifest_wire_schemas(f.schema)
    for i, wire in enumerate(wires):
        try:
            return decode(wire)
        except CorruptMetadata:
            if i == len(wires) - 1:
                raise
    raise AssertionError("unreachable")


def _columns(records: list[dict], manifest_file: ManifestFile | None
             ) -> tuple[list[dict], list[int], InheritedColumns]:
    """The data_file records, statuses and (inherited, with ``manifest_file``) columns."""
    files = [rec["data_file"] for rec in records]
    status = [rec["status"] for rec in records]
    cols = InheritedColumns([rec.get("snapshot_id") for rec in records],
                            [rec.get("sequence_number") for rec in records],
                            [rec.get("file_sequence_number") for rec in records],
                            [d.get("first_row_id") for d in files])
    if manifest_file is not None:
        cols = inherit_columns(
            status, cols.snapshot_id, cols.sequence_number, cols.file_sequence_number,
            cols.first_row_id, [d["record_count"] for d in files],
            added_snapshot_id=manifest_file.added_snapshot_id,
            manifest_sequence_number=manifest_file.sequence_number,
            manifest_first_row_id=manifest_file.first_row_id)
    return files, status, cols


def _entries(f: RawFile, wire: Any, manifest_file: ManifestFile | None,
             include_stats: bool) -> list[ManifestEntry]:
    """The entries of ``f`` decoded as encoded by the schema ``wire``."""
    meta = f.metadata
    decode_partition = ManifestLayout(wire).partition_decoder()
    records = collect_records(f.records(wire_schema=wire))
    spec_id = manifest_file.partition_spec_id if manifest_file is not None else _spec_id_of(meta)
    try:
        files, status, cols = _columns(records, manifest_file)
        kv = _kv if include_stats else _none
        out = [ManifestEntry(status[i], cols.snapshot_id[i], cols.sequence_number[i],
                             cols.file_sequence_number[i],
                             _data_file(d, decode_partition, kv, spec_id, cols.first_row_id[i]))
               for i, d in enumerate(files)]
    except CorruptMetadata:
        raise
    except Exception as e:  # malformed records: missing required fields, bad encodings
        raise CorruptMetadata(f"cannot decode manifest entries: {e!r}") from e
    return out


def _without_docs(x: Any) -> Any:
    """An Avro schema without its ``doc`` attributes (Java writes them; the encoding is the same)."""
    if isinstance(x, dict):
        return {k: _without_docs(v) for k, v in x.items() if k != "doc"}
    if isinstance(x, list):
        return [_without_docs(v) for v in x]
    return x


def in_layout(file_schema: Any, schema: dict) -> bool:
    """Whether a manifest's Avro schema is ``schema`` (its ``doc`` attributes aside): its
    entries are encoded as entries written with ``schema`` are."""
    return file_schema == schema or _without_docs(file_schema) == schema


def read_manifest_records(source: Any, manifest_file: ManifestFile | None = None, *,
                          schema: dict | None = None) -> tuple[list[dict], list[tuple]] | None:
    """A manifest's entries as raw Avro records (as decoded: metrics maps as key/value
    records, partition values in Avro form) with their partition tuples, for copying them
    into another manifest without building DataFiles (a merge).

    Snapshot ids, sequence numbers and v3 first row ids are written into the records,
    inherited from ``manifest_file`` when given (the spec wants them explicit in EXISTING
    entries), as :func:`read_manifest` inherits them. ``None`` when the manifest's Avro schema
    is not ``schema``: its records are not in the layout being written.
    """
    f = RawFile(source)
    if schema is not None and not in_layout(f.schema, schema):
        return None

    def decode(wire: Any) -> tuple:
        records = collect_records(f.records(wire_schema=wire))
        decode_partition = ManifestLayout(wire).partition_decoder()
        try:
            files, _, cols = _columns(records, manifest_file)
            return records, files, cols, [decode_partition(d.get("partition")) for d in files]
        except CorruptMetadata:
            raise
        except Exception as e:  # malformed records, as in _entries
            raise CorruptMetadata(f"cannot decode manifest entries: {e!r}") from e

    records, files, cols, partitions = _by_wire(f, manifest_file, decode)
    for rec, d, sid, seq, fseq, row in zip(records, files, cols.snapshot_id, cols.sequence_number,
                                           cols.file_sequence_number, cols.first_row_id):
        rec["snapshot_id"] = sid
        rec["sequence_number"] = seq
        rec["file_sequence_number"] = fseq
        d["first_row_id"] = row
    return records, partitions


def _data_file(d: dict, decode_partition: Any, kv: Any, spec_id: int,
               first_row_id: int | None) -> DataFile:
    tup = _tuple_or_none
    return DataFile(
        d.get("content", DATA),
        d["file_path"],
        d["file_format"],
        decode_partition(d.get("partition")),
        d["record_count"],
        d["file_size_in_bytes"],
        kv(d.get("column_sizes")),
        kv(d.get("value_counts")),
        kv(d.get("null_value_counts")),
        kv(d.get("nan_value_counts")),
        kv(d.get("lower_bounds")),
        kv(d.get("upper_bounds")),
        d.get("key_metadata"),
        tup(d.get("split_offsets")),
        tup(d.get("equality_ids")),
        d.get("sort_order_id"),
        first_row_id,
        d.get("referenced_data_file"),
        d.get("content_offset"),
        d.get("content_size_in_bytes"),
        spec_id,
    )


def read_manifest(
    source: Any, manifest_file: ManifestFile | None = None, *, include_stats: bool = True,
) -> list[ManifestEntry]:
    """Entries of a manifest (see :func:`read_manifest_with_metadata`)."""
    return read_manifest_with_metadata(source, manifest_file, include_stats=include_stats)[1]


def load_manifest(file_io: FileIO, manifest_file: ManifestFile, *,
                  include_stats: bool = True) -> list[ManifestEntry]:
    """Read a manifest through a FileIO, inheriting from its manifest list entry."""
    from icectl.io.formats.avro_container import naming_file

    with naming_file("manifest", manifest_file.manifest_path):
        return read_manifest(file_io.read(manifest_file.manifest_path), manifest_file,
                             include_stats=include_stats)


# -- writing manifests -------------------------------------------------------------------------


def _list_or_none(v: Sequence | None) -> list | None:
    return None if v is None else list(v)


def manifest_header(partition_type: StructType, *, spec_id: int, partition_spec_json: list,
                    schema_json: dict, format_version: int,
                    content: int = MANIFEST_DATA) -> tuple[dict, dict[str, str]]:
    """The Avro schema and key-value metadata of a manifest written in this layout."""
    struct = manifest_entry_type(partition_type, format_version)
    metadata = {
        "schema": compact_json(schema_json),
        "schema-id": str(schema_json.get("schema-id", 0)),
        "partition-spec": compact_json(partition_spec_json),
        "partition-spec-id": str(spec_id),
        "format-version": str(format_version),
        "iceberg.schema": compact_json(iceberg_schema_json(struct)),
    }
    if format_version >= 2:
        metadata["content"] = content_name(content)
    return manifest_entry_avro_schema(partition_type, format_version), metadata


def entry_records(entries: Iterable[ManifestEntry], partition_type: StructType,
                  format_version: int, snapshot_id: int | None) -> Iterator[dict]:
    """Manifest entries as the raw Avro records of a manifest (the one conversion); a missing
    snapshot id takes ``snapshot_id``."""
    writers = partition_writers(partition_type)
    n_part = len(writers)

    def partition_record(values: tuple) -> dict:
        if len(values) != n_part:
            raise ValidationError(
                f"partition tuple has {len(values)} values, the spec has {n_part} fields")
        return {name: (conv(v) if conv is not None else v)
                for (name, conv), v in zip(writers, values)}

    for e in entries:
        f = e.data_file
        sid = e.snapshot_id if e.snapshot_id is not None else snapshot_id
        d: dict[str, Any] = {
            "file_path": f.file_path,
            "file_format": f.file_format.upper(),
            "partition": partition_record(tuple(f.partition)),
            "record_count": f.record_count,
            "file_size_in_bytes": f.file_size_in_bytes,
            "column_sizes": f.column_sizes,
            "value_counts": f.value_counts,
            "null_value_counts": f.null_value_counts,
            "nan_value_counts": f.nan_value_counts,
            "lower_bounds": f.lower_bounds,
            "upper_bounds": f.upper_bounds,
            "key_metadata": f.key_metadata,
            "split_offsets": _list_or_none(f.split_offsets),
            "sort_order_id": f.sort_order_id,
        }
        if format_version == 1:
            if f.content != DATA:
                raise ValidationError("format version 1 manifests hold only data files")
            d["block_size_in_bytes"] = V1_BLOCK_SIZE
            yield {"status": e.status, "snapshot_id": sid, "sequence_number": e.sequence_number,
                   "data_file": d}
            continue
        d["content"] = f.content
        d["equality_ids"] = _list_or_none(f.equality_ids)
        d["referenced_data_file"] = f.referenced_data_file
        if format_version >= 3:
            d["first_row_id"] = f.first_row_id
            d["content_offset"] = f.content_offset
            d["content_size_in_bytes"] = f.content_size_in_bytes
        yield {
            "status": e.status,
            "snapshot_id": sid,
            "sequence_number": e.sequence_number,
            "file_sequence_number": e.file_sequence_number,
            "data_file": d,
        }


def require_sequence_numbers(status: int, sequence_number: int | None,
                             file_sequence_number: int | None, file_path: str) -> None:
    """A non-ADDED entry of a v2+ manifest must carry both sequence numbers."""
    if status != ADDED and (sequence_number is None or file_sequence_number is None):
        name = "existing" if status == EXISTING else "deleted"
        raise ValidationError(f"{name} entry for {file_path} needs explicit sequence numbers")


def write_manifest_records(records: Iterable[dict], avro_schema: dict,
                           metadata: dict[str, str]) -> bytes:
    """A manifest file's bytes from raw entry records (:func:`entry_records`, or those of
    :func:`read_manifest_records`) and its :func:`manifest_header`. Non-ADDED entries must
    carry both sequence numbers (v2+)."""
    checked = records
    if metadata.get("format-version", "1") != "1":
        def checked_records() -> Iterator[dict]:
            for r in records:
                if r["status"] != ADDED:
                    require_sequence_numbers(r["status"], r.get("sequence_number"),
                                             r.get("file_sequence_number"),
                                             r["data_file"]["file_path"])
                yield r
        checked = checked_records()
    return write_avro_records(avro_schema, checked, metadata,
                              wire_schema=manifest_wire_schemas(avro_schema)[0])


def write_manifest_raw(
    entries: Iterable[ManifestEntry],
    *,
    partition_type: StructType,
    spec_id: int,
    partition_spec_json: list,
    schema_json: dict,
    format_version: int,
    snapshot_id: int | None,
    content: int = MANIFEST_DATA,
) -> bytes:
    """A manifest file's bytes (see :func:`write_manifest`); needs no PartitionSpec object."""
    avro, metadata = manifest_header(
        partition_type, spec_id=spec_id, partition_spec_json=partition_spec_json,
        schema_json=schema_json, format_version=format_version, content=content)
    return write_manifest_records(entry_records(entries, partition_type, format_version, snapshot_id),
                                  avro, metadata)


def write_manifest(
    entries: Iterable[ManifestEntry],
    spec: PartitionSpec,
    schema: Schema,
    format_version: int,
    snapshot_id: int | None,
    content: int = MANIFEST_DATA,
) -> bytes:
    """A manifest file's bytes, in the reference's layout for ``format_version``.

    ``spec`` is a PartitionSpec (``spec_id``, ``partition_type(schema)``, ``fields_json()``),
    ``schema`` the table Schema. Entries are written as given, except that a missing snapshot
    id takes ``snapshot_id``; non-ADDED entries must carry both sequence numbers (v2+). Null
    sequence numbers (and v3 first row ids) are inherited when the manifest is read.
    """
    return write_manifest_raw(
        entries,
        partition_type=spec.partition_type(schema),
        spec_id=spec.spec_id,
        partition_spec_json=spec.fields_json(),
        schema_json=schema.to_json(),
        format_version=format_version,
        snapshot_id=snapshot_id,
        content=content,
    )


# -- writing manifest lists --------------------------------------------------------------------


def manifest_content_of(metadata: dict[str, str]) -> int:
    """The manifest content (0 data, 1 deletes) named by a manifest's key-value metadata."""
    return content_from_name(metadata.get("content"))
