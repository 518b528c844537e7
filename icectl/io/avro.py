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

import io
import json
import os
import struct
import zlib
import uuid as uuid_module
from decimal import Context, Decimal, InvalidOperation
from typing import Any, Callable, Iterable, Iterator, Sequence

import fastavro

from icectl.errors import CorruptMetadata, ValidationError
from icectl.io.avro_container import (
    SYNC_SIZE,
    decompressed_body,
    encode_header,
    split_header,
    write_long,
)
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

_CODEC = "deflate"
# Decimal arithmetic here must be exact: the default context rounds to 28 digits.
_EXACT = Context(prec=1000, Emax=10**6, Emin=-(10**6))

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
        meta, sync, start = split_header(buf)
        try:
            self.schema = json.loads(meta["avro.schema"].decode("utf-8"))
        except (KeyError, ValueError) as e:
            raise CorruptMetadata(f"Avro file has no readable schema: {e}") from None
        self.metadata = {k: v.decode("utf-8", "replace") for k, v in meta.items()}
        raw_meta = dict(meta)
        raw_meta["avro.schema"] = _compact(_strip_logical(self.schema)).encode("utf-8")
        body = buf[start:]
        codec = self.metadata.get("avro.codec", "null")
        if codec not in ("null", "deflate"):
            # fastavro needs optional packages for other codecs: hand it uncompressed blocks
            body = decompressed_body(codec, buf, start, sync)
            raw_meta["avro.codec"] = b"null"
        self._buf = encode_header(raw_meta, sync) + body

    def records(self, reader_schema: Any = None) -> Iterator[dict]:
        try:
            return iter(fastavro.reader(io.BytesIO(self._buf), reader_schema=reader_schema))
        except Exception as e:  # fastavro raises assorted errors on bad input
            raise CorruptMetadata(f"cannot decode Avro file: {e}") from e


def read_avro_metadata(source: Any) -> dict[str, str]:
    """The key-value metadata of an Avro container (``avro.schema`` included)."""
    meta, _, _ = split_header(_as_bytes(source))
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


# -- writing: a small Avro encoder compiled from the schema -----------------------------------
#
# fastavro's writer validates every value of a ["null", X] union against X to pick the branch,
# which makes manifests with metrics maps several times slower to write than to read. Iceberg
# only uses nullable unions, so the encoder below picks the branch by ``is None``.

_SMALL_LONGS: dict[int, bytes] = {}


def _zigzag(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    if z < 0x80:
        return bytes((z,))
    out = bytearray()
    while z & ~0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


for _n in range(-4096, 4096):
    _SMALL_LONGS[_n] = _zigzag(_n)


def _long_bytes(n: int) -> bytes:
    b = _SMALL_LONGS.get(n)
    if b is None:
        if not -(1 << 63) <= n < (1 << 63):
            raise ValidationError(f"value {n} does not fit a 64-bit long")
        b = _zigzag(n)
    return b


_Enc = Callable[[Any, list], None]


def named_record(schema: Any, named: dict[str, Any]) -> dict:
    if isinstance(schema, dict) and schema.get("type") == "record":
        named.setdefault(schema["name"], [None])
        return schema
    raise ValidationError(f"a logical map needs key/value records, not {schema!r}")


def _compile(schema: Any, named: dict[str, Any]) -> _Enc:
    pack_float = struct.Struct("<f").pack
    pack_double = struct.Struct("<d").pack
    lb = _long_bytes
    if isinstance(schema, str):
        if schema in named:
            cell = named[schema]
            return lambda v, out: cell[0](v, out)
        schema = {"type": schema}
    if isinstance(schema, list):
        branches = list(schema)
        if len(branches) == 2 and "null" in branches:
            null_index = branches.index("null")
            inner = _compile(branches[1 - null_index], named)
            null_tag = lb(null_index)
            value_tag = lb(1 - null_index)

            def enc_option(v: Any, out: list) -> None:
                if v is None:
                    out.append(null_tag)
                else:
                    out.append(value_tag)
                    inner(v, out)
            return enc_option
        if branches == ["null"]:
            tag = lb(0)
            return lambda v, out: out.append(tag)
        raise ValidationError(f"unsupported Avro union {schema!r}")
    t = schema["type"]
    if isinstance(t, (dict, list)):
        return _compile(t, named)
    if t == "null":
        return lambda v, out: None
    if t == "boolean":
        return lambda v, out: out.append(b"\x01" if v else b"\x00")
    if t in ("int", "long"):
        return lambda v, out: out.append(lb(v))
    if t == "float":
        return lambda v, out: out.append(pack_float(v))
    if t == "double":
        return lambda v, out: out.append(pack_double(v))
    if t == "string":
        def enc_string(v: Any, out: list) -> None:
            b = v.encode("utf-8")
            out.append(lb(len(b)))
            out.append(b)
        return enc_string
    if t == "bytes":
        def enc_bytes(v: Any, out: list) -> None:
            out.append(lb(len(v)))
            out.append(bytes(v))
        return enc_bytes
    if t == "fixed":
        size = schema["size"]
        named[schema["name"]] = [None]

        def enc_fixed(v: Any, out: list) -> None:
            if len(v) != size:
                raise ValidationError(f"fixed[{size}] value has {len(v)} bytes")
            out.append(bytes(v))
        named[schema["name"]][0] = enc_fixed
        return enc_fixed
    if t == "array" and schema.get("logicalType") == "map":
        # Iceberg's map as an array of key/value records: encode straight from a dict.
        kv_fields = {f["name"]: f["type"] for f in named_record(schema["items"], named)["fields"]}
        key_enc = _compile(kv_fields["key"], named)
        val_enc = _compile(kv_fields["value"], named)

        def enc_kv_map(v: Any, out: list) -> None:
            if v:
                out.append(lb(len(v)))
                for k, x in v.items():
                    key_enc(k, out)
                    val_enc(x, out)
            out.append(b"\x00")
        return enc_kv_map
    if t == "array":
        item = _compile(schema["items"], named)

        def enc_array(v: Any, out: list) -> None:
            if v:
                out.append(lb(len(v)))
                for x in v:
                    item(x, out)
            out.append(b"\x00")
        return enc_array
    if t == "map":
        value = _compile(schema["values"], named)

        def enc_map(v: Any, out: list) -> None:
            if v:
                out.append(lb(len(v)))
                for k, x in v.items():
                    b = k.encode("utf-8")
                    out.append(lb(len(b)))
                    out.append(b)
                    value(x, out)
            out.append(b"\x00")
        return enc_map
    if t == "record":
        cell: list = [None]
        named[schema["name"]] = cell
        fields = [(f["name"], _compile(f["type"], named)) for f in schema["fields"]]

        def enc_record(v: Any, out: list) -> None:
            get = v.get
            for name, enc in fields:
                enc(get(name), out)
        cell[0] = enc_record
        return enc_record
    raise ValidationError(f"unsupported Avro type {t!r}")


_BLOCK_BYTES = 64 * 1024


def write_avro_records(schema: dict, records: Iterable[dict], metadata: dict[str, str]) -> bytes:
    """An Avro container (deflate) of raw records; the header keeps ``schema`` as given.

    Values must already be in Avro form (ints for dates and timestamps, bytes for fixed).
    """
    encode = _compile(schema, {})
    sync = os.urandom(SYNC_SIZE)
    meta = {"avro.schema": _compact(schema).encode("utf-8"), "avro.codec": _CODEC.encode()}
    for k, v in metadata.items():
        meta[k] = v.encode("utf-8")
    out = [encode_header(meta, sync)]
    chunks: list = []
    pending = bytearray()
    count = 0

    def flush() -> None:
        nonlocal count
        comp = zlib.compressobj(6, zlib.DEFLATED, -15)
        body = comp.compress(bytes(pending)) + comp.flush()
        out.append(write_long(count) + write_long(len(body)) + body + sync)
        pending.clear()
        count = 0

    try:
        for rec in records:
            encode(rec, chunks)
            count += 1
            if len(chunks) > 4096:
                pending += b"".join(chunks)
                chunks.clear()
                if len(pending) >= _BLOCK_BYTES:
                    flush()
    except ValidationError:
        raise
    except (TypeError, AttributeError, KeyError, ValueError, struct.error,
            OverflowError) as e:
        raise ValidationError(f"cannot encode Avro record: {e!r}") from e
    pending += b"".join(chunks)
    if count:
        flush()
    return b"".join(out)


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
        return Decimal(int.from_bytes(v, "big", signed=True)).scaleb(-scale, _EXACT)
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


def read_manifest_with_metadata(
    source: Any, manifest_file: ManifestFile | None = None, *, include_stats: bool = True,
) -> tuple[dict[str, str], list[ManifestEntry]]:
    """Key-value metadata and entries of a manifest.

    With ``manifest_file`` (its manifest list entry) snapshot ids, sequence numbers and v3
    first row ids are inherited and files get the manifest's spec id; without it entries are
    returned exactly as stored (spec id from the ``partition-spec-id`` key).
    ``include_stats=False`` leaves the six metrics maps out (None), saving their conversion.
    """
    f = _RawFile(source)
    meta = f.metadata
    layout = _PartitionLayout(f.schema)
    records = f.records()

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
    kv = _kv if include_stats else _none
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
            d = Decimal(v).scaleb(scale, _EXACT)
            unscaled = int(d)
            if d != d.to_integral_value(context=_EXACT):
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
