"""One walk over an Avro writer schema and one set of logical-type conversions.

Both manifest readers use this module: the record reader (:mod:`icectl.io.manifest.records`, through
fastavro) and the generated column decoder (:mod:`icectl.io.manifest.codegen`). They read
values "raw" (ints for dates, times and timestamps of every unit; bytes for decimals, fixed and
uuid) and turn them into Iceberg's internal representation only here, so the two cannot
disagree on a value:

========================================  =====================================================
Avro (logical type)                       internal value
========================================  =====================================================
int ``date``                              int days since 1970-01-01
long ``time-micros``                      int microseconds since midnight
long ``timestamp-micros`` (any zone)      int microseconds since the epoch
long ``timestamp-nanos`` (any zone)       int nanoseconds since the epoch
fixed / bytes ``decimal(p, s)``           ``Decimal``, exact for every precision (no 28-digit
                                          rounding of Python's default context)
fixed[16] ``uuid`` (or a uuid string)     ``uuid.UUID``
string                                    ``str`` (UTF-8, any plane)
fixed, bytes                              ``bytes``
boolean, int, long, float, double         ``bool``, ``int``, ``float`` (NaN kept)
========================================  =====================================================

Named types (records, fixed, enums) may be defined once and referenced by name later (the
reference does so when two partition fields share a decimal type); :class:`SchemaWalk` resolves
such references wherever a type is looked at, unions included.
"""

from __future__ import annotations

import functools
import uuid as uuid_module
from decimal import Context, Decimal, InvalidOperation
from typing import Any, Callable

from icectl.errors import CorruptMetadata, ValidationError
from icectl.spec.manifest_layouts import decimal_required_bytes, sanitize_avro_name
from icectl.spec.types import DecimalType, FixedType, PrimitiveType, StructType

__all__ = ["EXACT", "SchemaWalk", "PartitionField", "ManifestLayout", "strip_logical",
           "manifest_wire_schemas", "wire_schema_jsons", "converter_for", "partition_writers", "decimal_from_unscaled_bytes", "uuid_from_raw", "string_from_raw"]

# Decimal arithmetic on values read or written must be exact: the default context rounds to
# 28 significant digits, and decimal(38, s) holds 38.
EXACT = Context(prec=1000, Emax=10**6, Emin=-(10**6))

Converter = Callable[[Any], Any]


# -- conversions (raw Avro value -> internal value; None stays None) ----------------------------


def decimal_from_unscaled_bytes(scale: int) -> Converter:
    def conv(v: Any) -> Any:
        if v is None:
            return None
        return Decimal(int.from_bytes(v, "big", signed=True)).scaleb(-scale, EXACT)
    return conv


def uuid_from_raw(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, str):
        return uuid_module.UUID(v)
    if len(v) != 16:  # a uuid written as its text form in a bytes/string field
        return uuid_module.UUID(bytes(v).decode("ascii"))
    return uuid_module.UUID(bytes=bytes(v))


def string_from_raw(v: Any) -> Any:
    """fastavro hands strings over decoded, the column decoder as UTF-8 bytes."""
    if v is None or v.__class__ is str:
        return v
    return v.decode("utf-8")


# logical types whose internal value is the Avro int/long itself
_INTEGRAL_LOGICAL = {"date": ("int",), "time-millis": ("int",), "time-micros": ("long",),
                     "timestamp-millis": ("long",), "timestamp-micros": ("long",),
                     "timestamp-nanos": ("long",), "local-timestamp-micros": ("long",),
                     "local-timestamp-nanos": ("long",)}


def converter_for(resolved: Any, *, raw_strings: bool) -> Converter | None:
    """The conversion of one resolved, non-union Avro type; None when the raw value already
    is the internal one. ``raw_strings``: strings arrive as UTF-8 bytes (column decoder)."""
    if isinstance(resolved, str):
        return string_from_raw if (resolved == "string" and raw_strings) else None
    if not isinstance(resolved, dict):
        raise CorruptMetadata(f"unreadable Avro type {resolved!r}")
    base = resolved.get("type")
    logical = resolved.get("logicalType")
    if logical == "decimal" and base in ("fixed", "bytes"):
        return decimal_from_unscaled_bytes(int(resolved.get("scale", 0)))
    if logical == "uuid" and base in ("fixed", "string", "bytes"):
        return uuid_from_raw
    if logical == FIXED_AS_BYTES:
        return _fixed_length_check(int(resolved["size"]))
    if logical in _INTEGRAL_LOGICAL:
        if base not in _INTEGRAL_LOGICAL[logical]:
            raise CorruptMetadata(f"Avro logical type {logical} on {base!r}")
        return None
    if base == "string" and raw_strings:
        return string_from_raw
    return None


def strip_logical(schema: Any) -> Any:
    """A copy of an Avro schema without ``logicalType`` annotations (same binary encoding)."""
    if isinstance(schema, list):
        return [strip_logical(s) for s in schema]
    if isinstance(schema, dict):
        out = {}
        for k, v in schema.items():
            if k == "logicalType":
                continue
            if k in ("type", "items", "values"):
                out[k] = strip_logical(v)
            elif k == "fields":
                out[k] = [dict(f, type=strip_logical(f["type"])) for f in v]
            else:
                out[k] = v
        return out
    return schema


# -- plain fixed partition values: how a manifest stores them ------------------------------------
#
# Iceberg Java 1.10.2 writes manifests with its InternalWriter, whose writer for a plain
# fixed[N] (ValueWriters.fixedBuffers) calls Encoder.writeBytes: the value goes to disk as Avro
# bytes (zigzag length N, then the N bytes) although the header's schema says fixed; its
# InternalReader reads every plain fixed as bytes in turn. Decimals (fixed + decimal) and uuids
# (fixed[16] + uuid) are written with writeFixed and are not affected, and only partition values
# are plain fixed in a manifest. icectl writes the length-prefixed form (the only one Java reads)
# and reads both: the length-prefixed form first, then plain Avro fixed (manifests written by
# icectl before it followed Java here) when that decode fails or gives a value of another length.

FIXED_AS_BYTES = "icectl-fixed-as-bytes"  # pseudo logical type: a fixed[size] stored as bytes


def _fixed_length_check(size: int) -> Converter:
    def conv(v: Any) -> Any:
        if v is not None and len(v) != size:
            raise CorruptMetadata(f"fixed[{size}] partition value has {len(v)} bytes")
        return v
    return conv


def _plain_fixed_size(walk: "SchemaWalk", branch: Any) -> int | None:
    r = walk.resolve(branch)
    if isinstance(r, dict) and r.get("type") == "fixed" and "logicalType" not in r:
        return int(r["size"])
    return None


def manifest_wire_schemas(schema: Any) -> list:
    """The schemas a manifest's entries may be encoded with, in the order to try.

    ``[schema]`` when its partition record has no plain fixed field; otherwise first a copy in
    which each plain fixed partition type is bytes annotated :data:`FIXED_AS_BYTES` (Java's
    encoding, checked for the length N when converted), then ``schema`` itself.
    """
    import json

    wire = json.loads(json.dumps(schema))
    walk = SchemaWalk(wire)
    entry = walk.resolve(wire)
    df = walk.field(entry, "data_file") if isinstance(entry, dict) else None
    part = walk.resolve(df["type"]) if df is not None else None
    part = walk.field(part, "partition") if isinstance(part, dict) else None
    rec = walk.resolve(part["type"]) if part is not None else None
    changed = False
    for f in rec.get("fields", []) if isinstance(rec, dict) else []:
        t = walk.resolve(f["type"])
        branches = t if isinstance(t, list) else [t]
        new = []
        for b in branches:
            size = _plain_fixed_size(walk, b)
            new.append(b if size is None else
                       {"type": "bytes", "logicalType": FIXED_AS_BYTES, "size": size})
            changed = changed or size is not None
        f["type"] = new if isinstance(t, list) else new[0]
    return [wire, schema] if changed else [schema]


@functools.lru_cache(maxsize=256)
def wire_schema_jsons(schema_json: bytes) -> tuple[bytes, ...]:
    """:func:`manifest_wire_schemas` of a header's ``avro.schema``, as compact JSON bytes."""
    import json

    schemas = manifest_wire_schemas(json.loads(schema_json))
    if len(schemas) == 1:
        return (schema_json,)
    return tuple(json.dumps(s, separators=(",", ":")).encode("utf-8") for s in schemas)


# -- the inverse: internal value -> raw Avro value (writing) -------------------------------------


def _decimal_writer(t: DecimalType) -> Converter:
    size = decimal_required_bytes(t.precision)
    scale = t.scale

    def conv(v: Any) -> Any:
        if v is None:
            return None
        try:
            d = Decimal(v).scaleb(scale, EXACT)
            unscaled = int(d)
            if d != d.to_integral_value(context=EXACT):
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


def _fixed_writer(t: FixedType) -> Converter:
    def conv(v: Any) -> Any:
        if v is None:
            return None
        b = bytes(v)
        if len(b) != t.length:
            raise ValidationError(f"{t} value has {len(b)} bytes")
        return b
    return conv


def partition_writers(partition_type: StructType) -> list[tuple[str, Converter | None]]:
    out: list[tuple[str, Converter | None]] = []
    for f in partition_type.fields():
        t = f.type
        conv: Converter | None = None
        if isinstance(t, DecimalType):
            conv = _decimal_writer(t)
        elif isinstance(t, FixedType):
            conv = _fixed_writer(t)
        elif isinstance(t, PrimitiveType) and t.name == "uuid":
            conv = _uuid_writer
        out.append((sanitize_avro_name(f.name), conv))
    return out



# -- the walk -----------------------------------------------------------------------------------


class SchemaWalk:
    """Named-type resolution over one writer schema."""

    def __init__(self, schema: Any):
        self.schema = schema
        self.named: dict[str, Any] = {}
        self._collect(schema)

    def _collect(self, schema: Any) -> None:
        if isinstance(schema, list):
            for s in schema:
                self._collect(s)
        elif isinstance(schema, dict):
            t = schema.get("type")
            if t in ("record", "fixed", "enum") and "name" in schema:
                self.named[schema["name"]] = schema
                if "namespace" in schema:
                    self.named[f"{schema['namespace']}.{schema['name']}"] = schema
            if isinstance(t, (dict, list)):
                self._collect(t)
            if t == "record":
                for f in schema.get("fields", ()):
                    self._collect(f["type"])
            for k in ("items", "values"):
                if k in schema:
                    self._collect(schema[k])

    def resolve(self, t: Any) -> Any:
        """``t`` with name references and ``{"type": <complex>}`` wrappers followed (a union
        stays a list)."""
        while True:
            if isinstance(t, str):
                got = self.named.get(t)
                if got is None:
                    return t
                t = got
            elif isinstance(t, dict):
                inner = t.get("type")
                if isinstance(inner, (dict, list)):
                    t = inner
                elif isinstance(inner, str) and inner in self.named:
                    t = self.named[inner]
                else:
                    return t
            else:
                return t

    def kind(self, t: Any) -> str:
        """"union", a primitive name, or a complex type's name ("record", "fixed", ...)."""
        t = self.resolve(t)
        if isinstance(t, list):
            return "union"
        if isinstance(t, str):
            return t
        return t["type"]

    def optional(self, t: Any) -> tuple[Any, int | None]:
        """(resolved non-null type, index of the null branch or None) of a type that is
        either plain or a two-branch union with null."""
        t = self.resolve(t)
        if not isinstance(t, list):
            return t, None
        kinds = [self.kind(b) for b in t]
        if len(t) == 1 and kinds[0] == "null":
            return "null", 0
        if len(t) != 2 or "null" not in kinds:
            raise CorruptMetadata(f"unsupported Avro union {t!r}")
        null_index = kinds.index("null")
        return self.resolve(t[1 - null_index]), null_index

    def field(self, record: Any, name: str) -> dict | None:
        record = self.resolve(record)
        if not isinstance(record, dict):
            return None
        for f in record.get("fields", ()):
            if f.get("name") == name:
                return f
        return None

    def converter(self, t: Any, *, raw_strings: bool) -> Converter | None:
        inner, _ = self.optional(t)
        return converter_for(inner, raw_strings=raw_strings)


class PartitionField:
    """One field of a manifest's ``partition`` record."""

    __slots__ = ("name", "field_id", "avro_type", "type", "convert", "convert_raw")

    def __init__(self, walk: SchemaWalk, f: dict):
        self.name: str = f["name"]
        self.field_id: int | None = f.get("field-id")
        self.avro_type = f["type"]
        self.type, _ = walk.optional(f["type"])
        # fastavro decodes strings itself; the column decoder leaves them as bytes
        self.convert = walk.converter(f["type"], raw_strings=False)
        self.convert_raw = walk.converter(f["type"], raw_strings=True)


class ManifestLayout:
    """What both readers need to know about a manifest's writer schema."""

    def __init__(self, schema: Any):
        self.walk = walk = SchemaWalk(schema)
        self.entry = walk.resolve(schema)
        if not isinstance(self.entry, dict) or self.entry.get("type") != "record":
            raise CorruptMetadata("manifest schema is not a record")
        df = walk.field(self.entry, "data_file")
        if df is None:
            raise CorruptMetadata("manifest schema has no data_file field")
        self.data_file = walk.resolve(df["type"])
        if not isinstance(self.data_file, dict) or self.data_file.get("type") != "record":
            raise CorruptMetadata("manifest data_file is not a record")
        part = walk.field(self.data_file, "partition")
        part_rec = walk.resolve(part["type"]) if part is not None else None
        fields = part_rec.get("fields", []) if isinstance(part_rec, dict) else []
        self.partition = [PartitionField(walk, f) for f in fields]
        self.entry_fields = {f["name"] for f in self.entry["fields"]}
        self.data_file_fields = {f["name"] for f in self.data_file["fields"]}

    @property
    def partition_names(self) -> list[str]:
        return [p.name for p in self.partition]

    def partition_decoder(self) -> Callable[[dict | None], tuple]:
        """A partition record as decoded by fastavro (raw, logical types stripped) -> tuple."""
        fields = [(p.name, p.convert) for p in self.partition]
        if all(c is None for _, c in fields):
            names = [n for n, _ in fields]
            return lambda rec: () if not rec else tuple(rec.get(n) for n in names)
        return lambda rec: () if not rec else tuple(
            rec.get(n) if c is None else c(rec.get(n)) for n, c in fields)
