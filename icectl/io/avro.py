"""Manifests and manifest lists as Avro container files, through fastavro.

Reading decodes records "raw": the writer schema is handed to fastavro with its logical-type
annotations removed, so dates, times and timestamps arrive as the ints Iceberg uses internally
and decimals / uuids as bytes that are converted here exactly (no datetime round trips, no range
limits). Writing does the reverse: records hold raw Avro values, fastavro encodes them with the
annotation-free schema, and the file header then carries the full schema with logical types and
field ids, as the Java reference writes it.

Inheritance on read follows the spec and the reference (Iceberg 1.10.2):

- an entry's null ``snapshot_id`` takes the manifest's ``added_snapshot_id``;
- null data / file sequence numbers take the manifest's sequence number when the entry is
  ADDED or the manifest's sequence number is 0 (v1 lists), else stay null;
- v3 ``first_row_id``: with a manifest ``first_row_id``, each non-DELETED entry whose file has
  none gets the running next row id, which then grows by the file's record count; a manifest
  without one clears the files' values (delete manifests, manifests from before v3);
- v1 manifest lists read with content 0 and sequence numbers 0.
"""

from __future__ import annotations

import copy
import io
import json
import uuid as uuid_module
from decimal import Decimal, InvalidOperation
from typing import Any, Callable, Iterable, Iterator, Sequence

import fastavro

from icectl.errors import CorruptMetadata, ValidationError
from icectl.spec.manifests import (
    ADDED,
    DATA,
    DELETED,
    MANIFEST_DATA,
    V1_BLOCK_SIZE,
    DataFile,
    FieldSummary,
    ManifestEntry,
    ManifestFile,
    assign_manifest_first_row_ids,
    content_from_name,
    content_name,
    decimal_required_bytes,
    iceberg_schema_json,
    manifest_entry_avro_schema,
    manifest_entry_type,
    manifest_file_type,
    manifest_list_avro_schema,
    sanitize_avro_name,
)
from icectl.spec.types import DecimalType, FixedType, PrimitiveType, StructType

__all__ = [
    "read_avro_metadata", "read_manifest_list", "read_manifest", "read_manifest_with_metadata",
    "load_manifest_list", "load_manifest", "write_manifest", "write_manifest_raw",
    "write_manifest_list", "read_avro_records", "write_avro_records",
]

_MAGIC = b"Obj\x01"
_SYNC_SIZE = 16
_CODEC = "deflate"
_STATS_FIELDS = ("column_sizes", "value_counts", "null_value_counts", "nan_value_counts",
                 "lower_bounds", "upper_bounds")


# -- Avro container header ---------------------------------------------------------------------


def _read_long(buf: bytes, pos: int) -> tuple[int, int]:
    shift = 0
    acc = 0
    while True:
        if pos >= len(buf):
            raise CorruptMetadata("truncated Avro header")
        b = buf[pos]
        pos += 1
        acc |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
    return (acc >> 1) ^ -(acc & 1), pos


def _write_long(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z & ~0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def _read_bytes(buf: bytes, pos: int) -> tuple[bytes, int]:
    n, pos = _read_long(buf, pos)
    if n < 0 or pos + n > len(buf):
        raise CorruptMetadata("truncated Avro header")
    return bytes(buf[pos:pos + n]), pos + n


def _split_header(buf: bytes) -> tuple[dict[str, bytes], bytes, int]:
    """Header metadata, sync marker and the offset of the first data block."""
    if bytes(buf[:4]) != _MAGIC:
        raise CorruptMetadata("not an Avro container file (bad magic)")
    pos = 4
    meta: dict[str, bytes] = {}
    while True:
        count, pos = _read_long(buf, pos)
        if count == 0:
            break
        if count < 0:
            count = -count
            _, pos = _read_long(buf, pos)  # block size in bytes, unused
        for _ in range(count):
            k, pos = _read_bytes(buf, pos)
            v, pos = _read_bytes(buf, pos)
            meta[k.decode("utf-8")] = v
    sync = bytes(buf[pos:pos + _SYNC_SIZE])
    if len(sync) != _SYNC_SIZE:
        raise CorruptMetadata("truncated Avro header")
    return meta, sync, pos + _SYNC_SIZE


def _encode_header(meta: dict[str, bytes], sync: bytes) -> bytes:
    out = bytearray(_MAGIC)
    if meta:
        out += _write_long(len(meta))
        for k, v in meta.items():
            kb = k.encode("utf-8")
            out += _write_long(len(kb)) + kb + _write_long(len(v)) + v
    out += _write_long(0)
    out += sync
    return bytes(out)


def _as_bytes(source: Any) -> bytes:
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source)
    if hasattr(source, "read"):
        return source.read()
    raise TypeError(f"expected bytes or a binary file object, not {type(source).__name__}")


def _strip_logical(schema: Any) -> Any:
    """A copy of an Avro schema without ``logicalType`` annotations (same binary encoding)."""
    if isinstance(schema, list):
        return [_strip_logical(s) for s in schema]
    if isinstance(schema, dict):
        out = {}
        for k, v in schema.items():
            if k == "logicalType":
                continue
            if k in ("type", "items", "values"):
                out[k] = _strip_logical(v)
            elif k == "fields":
                out[k] = [dict(f, type=_strip_logical(f["type"])) for f in v]
            else:
                out[k] = v
        return out
    return schema


def _compact(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


class _RawFile:
    """An Avro container opened for raw decoding."""

    def __init__(self, source: Any):
        buf = _as_bytes(source)
        meta, sync, start = _split_header(buf)
        try:
            self.schema = json.loads(meta["avro.schema"].decode("utf-8"))
        except (KeyError, ValueError) as e:
            raise CorruptMetadata(f"Avro file has no readable schema: {e}") from None
        self.metadata = {k: v.decode("utf-8", "replace") for k, v in meta.items()}
        raw_meta = dict(meta)
        raw_meta["avro.schema"] = _compact(_strip_logical(self.schema)).encode("utf-8")
        self._buf = _encode_header(raw_meta, sync) + buf[start:]

    def records(self, reader_schema: Any = None) -> Iterator[dict]:
        try:
            return iter(fastavro.reader(io.BytesIO(self._buf), reader_schema=reader_schema))
        except Exception as e:  # fastavro raises assorted errors on bad input
            raise CorruptMetadata(f"cannot decode Avro file: {e}") from e


def read_avro_metadata(source: Any) -> dict[str, str]:
    """The key-value metadata of an Avro container (``avro.schema`` included)."""
    meta, _, _ = _split_header(_as_bytes(source))
    return {k: v.decode("utf-8", "replace") for k, v in meta.items()}


def read_avro_records(source: Any) -> tuple[dict[str, str], list[dict]]:
    """Metadata and raw records (logical types not applied) of any Avro container file."""
    f = _RawFile(source)
    return f.metadata, _collect(f.records())


def _collect(records: Iterable[dict]) -> list[dict]:
    try:
        return list(records)
    except CorruptMetadata:
        raise
    except Exception as e:
        raise CorruptMetadata(f"cannot decode Avro records: {e}") from e


def write_avro_records(schema: dict, records: Iterable[dict], metadata: dict[str, str]) -> bytes:
    """An Avro container (deflate) of raw records; the header keeps ``schema`` as given."""
    buf = io.BytesIO()
    try:
        parsed = fastavro.parse_schema(_strip_logical(schema))
        fastavro.writer(buf, parsed, records, codec=_CODEC)
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise ValidationError(f"cannot encode Avro records: {e}") from e
    data = buf.getvalue()
    meta, sync, start = _split_header(data)
    out_meta = {"avro.schema": _compact(schema).encode("utf-8"),
                "avro.codec": meta.get("avro.codec", _CODEC.encode())}
    for k, v in metadata.items():
        out_meta[k] = v.encode("utf-8")
    return _encode_header(out_meta, sync) + data[start:]


# -- partition value conversion ----------------------------------------------------------------


def _collect_named(schema: Any, out: dict[str, dict]) -> None:
    if isinstance(schema, list):
        for s in schema:
            _collect_named(s, out)
    elif isinstance(schema, dict):
        if "name" in schema and schema.get("type") in ("record", "fixed", "enum"):
            out[schema["name"]] = schema
        t = schema.get("type")
        if isinstance(t, (dict, list)):
            _collect_named(t, out)
        for f in schema.get("fields", ()) if t == "record" else ():
            _collect_named(f["type"], out)
        for k in ("items", "values"):
            if k in schema:
                _collect_named(schema[k], out)


def _resolve(t: Any, named: dict[str, dict]) -> Any:
    if isinstance(t, list):
        branches = [b for b in t if b != "null"]
        t = branches[0] if branches else "null"
    if isinstance(t, str) and t in named:
        return named[t]
    if isinstance(t, dict) and isinstance(t.get("type"), (dict, list)):
        return _resolve(t["type"], named)
    return t


def _decimal_reader(scale: int) -> Callable[[Any], Any]:
    def conv(v: Any) -> Any:
        if v is None:
            return None
        return Decimal(int.from_bytes(v, "big", signed=True)).scaleb(-scale)
    return conv


def _uuid_reader(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, str):
        return uuid_module.UUID(v)
    return uuid_module.UUID(bytes=bytes(v))


def _reader_for(avro_type: Any) -> Callable[[Any], Any] | None:
    """Raw Avro value -> internal value for one partition field; None when they coincide."""
    if not isinstance(avro_type, dict):
        return None
    logical = avro_type.get("logicalType")
    if logical == "decimal":
        return _decimal_reader(int(avro_type.get("scale", 0)))
    if logical == "uuid":
        return _uuid_reader
    return None


def _find_field(record: dict, name: str) -> dict | None:
    for f in record.get("fields", ()):
        if f.get("name") == name:
            return f
    return None


class _PartitionLayout:
    """Where the partition record sits in a manifest's writer schema and how to decode it."""

    def __init__(self, schema: dict):
        named: dict[str, dict] = {}
        _collect_named(schema, named)
        df = _find_field(schema, "data_file")
        if df is None:
            raise CorruptMetadata("manifest schema has no data_file field")
        df_rec = _resolve(df["type"], named)
        part = _find_field(df_rec, "partition") if isinstance(df_rec, dict) else None
        part_rec = _resolve(part["type"], named) if part is not None else None
        fields = part_rec.get("fields", []) if isinstance(part_rec, dict) else []
        self.names = [f["name"] for f in fields]
        self.field_ids = [f.get("field-id") for f in fields]
        self.readers = [_reader_for(_resolve(f["type"], named)) for f in fields]
        self.identity = all(r is None for r in self.readers)
        self.data_file_fields = {f["name"] for f in df_rec.get("fields", [])} \
            if isinstance(df_rec, dict) else set()

    def decode(self, p: dict | None) -> tuple:
        if not p:
            return ()
        if self.identity:
            return tuple(p.values())
        return tuple(r(p.get(n)) if r is not None else p.get(n)
                     for n, r in zip(self.names, self.readers))


def _projection_without_stats(schema: dict) -> dict:
    """The raw reader schema minus the six metrics maps of ``data_file``."""
    out = copy.deepcopy(_strip_logical(schema))
    for f in out["fields"]:
        if f["name"] == "data_file" and isinstance(f["type"], dict):
            f["type"]["fields"] = [g for g in f["type"]["fields"]
                                   if g["name"] not in _STATS_FIELDS]
    return out


# -- reading manifests -------------------------------------------------------------------------


def _kv(items: list | None) -> dict | None:
    if items is None:
        return None
    if isinstance(items, dict):  # string-keyed Avro map
        return items
    return {kv["key"]: kv["value"] for kv in items}


def _tuple_or_none(v: list | None) -> tuple | None:
    return None if v is None else tuple(v)


def read_manifest_with_metadata(
    source: Any, manifest_file: ManifestFile | None = None, *, include_stats: bool = True,
) -> tuple[dict[str, str], list[ManifestEntry]]:
    """Key-value metadata and entries of a manifest.

    With ``manifest_file`` (its manifest list entry) snapshot ids, sequence numbers and v3
    first row ids are inherited and files get the manifest's spec id; without it entries are
    returned exactly as stored (spec id from the ``partition-spec-id`` key).
    ``include_stats=False`` skips decoding the six metrics maps (they come back as None).
    """
    f = _RawFile(source)
    meta = f.metadata
    layout = _PartitionLayout(f.schema)
    reader_schema = _projection_without_stats(f.schema) if not include_stats else None
    records = f.records(reader_schema)

    if manifest_file is not None:
        spec_id = manifest_file.partition_spec_id
        inherit_snapshot = manifest_file.added_snapshot_id
        manifest_seq = manifest_file.sequence_number
        if manifest_seq is None:
            raise ValidationError(
                f"manifest {manifest_file.manifest_path} has no sequence number to inherit")
        next_row_id = manifest_file.first_row_id
        clear_row_ids = next_row_id is None
    else:
        try:
            spec_id = int(meta.get("partition-spec-id", 0))
        except ValueError:
            raise CorruptMetadata("invalid partition-spec-id in manifest metadata") from None
        inherit_snapshot = None
        manifest_seq = None
        next_row_id = None
        clear_row_ids = False

    decode_partition = layout.decode
    kv = _kv
    tup = _tuple_or_none
    out: list[ManifestEntry] = []
    append = out.append
    try:
        for rec in records:
            d = rec["data_file"]
            status = rec["status"]
            snapshot_id = rec.get("snapshot_id")
            seq = rec.get("sequence_number")
            file_seq = rec.get("file_sequence_number")
            record_count = d["record_count"]
            first_row_id = d.get("first_row_id")
            if manifest_seq is not None:
                if snapshot_id is None:
                    snapshot_id = inherit_snapshot
                if seq is None and (manifest_seq == 0 or status == ADDED):
                    seq = manifest_seq
                if file_seq is None and (manifest_seq == 0 or status == ADDED):
                    file_seq = manifest_seq
                if clear_row_ids:
                    first_row_id = None
                elif first_row_id is None and status != DELETED:
                    first_row_id = next_row_id
                    next_row_id += record_count
            data_file = DataFile(
                d.get("content", DATA),
                d["file_path"],
                d["file_format"],
                decode_partition(d.get("partition")),
                record_count,
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
            append(ManifestEntry(status, snapshot_id, seq, file_seq, data_file))
    except CorruptMetadata:
        raise
    except Exception as e:  # malformed records: missing required fields, bad encodings
        raise CorruptMetadata(f"cannot decode manifest entries: {e!r}") from e
    return meta, out


def read_manifest(
    source: Any, manifest_file: ManifestFile | None = None, *, include_stats: bool = True,
) -> list[ManifestEntry]:
    """Entries of a manifest (see :func:`read_manifest_with_metadata`)."""
    return read_manifest_with_metadata(source, manifest_file, include_stats=include_stats)[1]


def _summary(s: dict) -> FieldSummary:
    return FieldSummary(s["contains_null"], s.get("contains_nan"), s.get("lower_bound"),
                        s.get("upper_bound"))


def read_manifest_list(source: Any, format_version: int | None = None) -> list[ManifestFile]:
    """Entries of a manifest list, with v1 defaults applied (content 0, sequence numbers 0).

    ``format_version`` is the table's; the file's own fields decide what is present, so a
    list written by an older version reads correctly in a newer table.
    """
    f = _RawFile(source)
    out: list[ManifestFile] = []
    try:
        for r in f.records():
            parts = r.get("partitions")
            out.append(ManifestFile(
                manifest_path=r["manifest_path"],
                manifest_length=r["manifest_length"],
                partition_spec_id=r["partition_spec_id"],
                content=r.get("content") or MANIFEST_DATA,
                sequence_number=r.get("sequence_number") or 0,
                min_sequence_number=r.get("min_sequence_number") or 0,
                added_snapshot_id=r.get("added_snapshot_id"),
                added_files_count=r.get("added_files_count"),
                existing_files_count=r.get("existing_files_count"),
                deleted_files_count=r.get("deleted_files_count"),
                added_rows_count=r.get("added_rows_count"),
                existing_rows_count=r.get("existing_rows_count"),
                deleted_rows_count=r.get("deleted_rows_count"),
                partitions=None if parts is None else tuple(_summary(s) for s in parts),
                key_metadata=r.get("key_metadata"),
                first_row_id=r.get("first_row_id"),
            ))
    except CorruptMetadata:
        raise
    except Exception as e:
        raise CorruptMetadata(f"cannot decode manifest list entries: {e!r}") from e
    return out


def load_manifest_list(file_io: Any, path: str, format_version: int | None = None) -> list[ManifestFile]:
    """Read a manifest list through a FileIO."""
    return read_manifest_list(file_io.read(path), format_version)


def load_manifest(file_io: Any, manifest_file: ManifestFile, *,
                  include_stats: bool = True) -> list[ManifestEntry]:
    """Read a manifest through a FileIO, inheriting from its manifest list entry."""
    return read_manifest(file_io.read(manifest_file.manifest_path), manifest_file,
                         include_stats=include_stats)


# -- writing manifests -------------------------------------------------------------------------


def _decimal_writer(t: DecimalType) -> Callable[[Any], Any]:
    size = decimal_required_bytes(t.precision)
    scale = t.scale

    def conv(v: Any) -> Any:
        if v is None:
            return None
        try:
            d = Decimal(v).scaleb(scale)
            unscaled = int(d)
            if d != unscaled:
                raise ValidationError(f"decimal {v} has more than {scale} fraction digits")
            return unscaled.to_bytes(size, "big", signed=True)
        except (OverflowError, InvalidOperation) as e:
            raise ValidationError(f"decimal {v} does not fit {t}: {e}") from None
    return conv


def _uuid_writer(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, uuid_module.UUID):
        return v.bytes
    if isinstance(v, str):
        return uuid_module.UUID(v).bytes
    b = bytes(v)
    if len(b) != 16:
        raise ValidationError(f"uuid value must be 16 bytes, not {len(b)}")
    return b


def _fixed_writer(t: FixedType) -> Callable[[Any], Any]:
    def conv(v: Any) -> Any:
        if v is None:
            return None
        b = bytes(v)
        if len(b) != t.length:
            raise ValidationError(f"{t} value has {len(b)} bytes")
        return b
    return conv


def _partition_writers(partition_type: StructType) -> list[tuple[str, Callable[[Any], Any] | None]]:
    out: list[tuple[str, Callable[[Any], Any] | None]] = []
    for f in partition_type.fields():
        t = f.type
        conv: Callable[[Any], Any] | None = None
        if isinstance(t, DecimalType):
            conv = _decimal_writer(t)
        elif isinstance(t, FixedType):
            conv = _fixed_writer(t)
        elif isinstance(t, PrimitiveType) and t.name == "uuid":
            conv = _uuid_writer
        out.append((sanitize_avro_name(f.name), conv))
    return out


def _map_items(m: dict | None) -> list | None:
    if m is None:
        return None
    return [{"key": k, "value": v} for k, v in m.items()]


def _list_or_none(v: Sequence | None) -> list | None:
    return None if v is None else list(v)


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
    struct = manifest_entry_type(partition_type, format_version)
    avro = manifest_entry_avro_schema(partition_type, format_version)
    writers = _partition_writers(partition_type)
    n_part = len(writers)

    def partition_record(values: tuple) -> dict:
        if len(values) != n_part:
            raise ValidationError(
                f"partition tuple has {len(values)} values, the spec has {n_part} fields")
        return {name: (conv(v) if conv is not None else v)
                for (name, conv), v in zip(writers, values)}

    def records() -> Iterator[dict]:
        for e in entries:
            f = e.data_file
            sid = e.snapshot_id if e.snapshot_id is not None else snapshot_id
            d: dict[str, Any] = {
                "file_path": f.file_path,
                "file_format": f.file_format.upper(),
                "partition": partition_record(tuple(f.partition)),
                "record_count": f.record_count,
                "file_size_in_bytes": f.file_size_in_bytes,
                "column_sizes": _map_items(f.column_sizes),
                "value_counts": _map_items(f.value_counts),
                "null_value_counts": _map_items(f.null_value_counts),
                "nan_value_counts": _map_items(f.nan_value_counts),
                "lower_bounds": _map_items(f.lower_bounds),
                "upper_bounds": _map_items(f.upper_bounds),
                "key_metadata": f.key_metadata,
                "split_offsets": _list_or_none(f.split_offsets),
                "sort_order_id": f.sort_order_id,
            }
            if format_version == 1:
                if f.content != DATA:
                    raise ValidationError("format version 1 manifests hold only data files")
                d["block_size_in_bytes"] = V1_BLOCK_SIZE
                yield {"status": e.status, "snapshot_id": sid, "data_file": d}
                continue
            if e.status != ADDED and (e.sequence_number is None or e.file_sequence_number is None):
                raise ValidationError(
                    f"{e.status_name} entry for {f.file_path} needs explicit sequence numbers")
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

    metadata = {
        "schema": _compact(schema_json),
        "schema-id": str(schema_json.get("schema-id", 0)),
        "partition-spec": _compact(partition_spec_json),
        "partition-spec-id": str(spec_id),
        "format-version": str(format_version),
        "iceberg.schema": _compact(iceberg_schema_json(struct)),
    }
    if format_version >= 2:
        metadata["content"] = content_name(content)
    return write_avro_records(avro, records(), metadata)


def write_manifest(
    entries: Iterable[ManifestEntry],
    spec: Any,
    schema: Any,
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


def _summary_record(s: FieldSummary) -> dict:
    return {"contains_null": bool(s.contains_null), "contains_nan": s.contains_nan,
            "lower_bound": s.lower_bound, "upper_bound": s.upper_bound}


def write_manifest_list(
    manifests: Sequence[ManifestFile],
    format_version: int,
    snapshot_id: int,
    parent_id: int | None,
    sequence_number: int,
    first_row_id: int | None = None,
) -> bytes:
    """A manifest list's bytes, in the reference's layout for ``format_version``.

    Manifests with no sequence number (written by this commit) get ``sequence_number``, and
    ``min_sequence_number`` likewise. For v3, data manifests without a first row id are
    assigned ids from ``first_row_id`` on (see
    :func:`icectl.spec.manifests.assign_manifest_first_row_ids`, which also gives the
    snapshot's added-rows).
    """
    if format_version >= 3:
        if first_row_id is None:
            raise ValidationError("a v3 manifest list needs the snapshot's first row id")
        manifests, _ = assign_manifest_first_row_ids(manifests, first_row_id)

    def records() -> Iterator[dict]:
        for m in manifests:
            parts = None if m.partitions is None else [_summary_record(s) for s in m.partitions]
            if format_version == 1:
                yield {
                    "manifest_path": m.manifest_path,
                    "manifest_length": m.manifest_length,
                    "partition_spec_id": m.partition_spec_id,
                    "added_snapshot_id": m.added_snapshot_id
                    if m.added_snapshot_id is not None else snapshot_id,
                    "added_files_count": m.added_files_count,
                    "existing_files_count": m.existing_files_count,
                    "deleted_files_count": m.deleted_files_count,
                    "partitions": parts,
                    "added_rows_count": m.added_rows_count,
                    "existing_rows_count": m.existing_rows_count,
                    "deleted_rows_count": m.deleted_rows_count,
                    "key_metadata": m.key_metadata,
                }
                continue
            seq = m.sequence_number
            min_seq = m.min_sequence_number
            added_by = m.added_snapshot_id if m.added_snapshot_id is not None else snapshot_id
            if seq is None or min_seq is None:
                if added_by != snapshot_id:
                    raise ValidationError(
                        f"manifest {m.manifest_path} from snapshot {added_by} has no sequence "
                        "number")
                seq = sequence_number if seq is None else seq
                min_seq = sequence_number if min_seq is None else min_seq
            counts = (m.added_files_count, m.existing_files_count, m.deleted_files_count,
                      m.added_rows_count, m.existing_rows_count, m.deleted_rows_count)
            if any(c is None for c in counts):
                raise ValidationError(
                    f"manifest {m.manifest_path} lacks file or row counts (required from v2)")
            rec = {
                "manifest_path": m.manifest_path,
                "manifest_length": m.manifest_length,
                "partition_spec_id": m.partition_spec_id,
                "content": m.content,
                "sequence_number": seq,
                "min_sequence_number": min_seq,
                "added_snapshot_id": added_by,
                "added_files_count": m.added_files_count,
                "existing_files_count": m.existing_files_count,
                "deleted_files_count": m.deleted_files_count,
                "added_rows_count": m.added_rows_count,
                "existing_rows_count": m.existing_rows_count,
                "deleted_rows_count": m.deleted_rows_count,
                "partitions": parts,
                "key_metadata": m.key_metadata,
            }
            if format_version >= 3:
                rec["first_row_id"] = m.first_row_id
            yield rec

    metadata = {
        "snapshot-id": str(snapshot_id),
        "parent-snapshot-id": "null" if parent_id is None else str(parent_id),
    }
    if format_version >= 2:
        metadata["sequence-number"] = str(sequence_number)
    if format_version >= 3:
        metadata["first-row-id"] = str(first_row_id)
    metadata["format-version"] = str(format_version)
    metadata["iceberg.schema"] = _compact(iceberg_schema_json(manifest_file_type(format_version)))
    return write_avro_records(manifest_list_avro_schema(format_version), records(), metadata)


def manifest_content_of(metadata: dict[str, str]) -> int:
    """The manifest content (0 data, 1 deletes) named by a manifest's key-value metadata."""
    return content_from_name(metadata.get("content"))
