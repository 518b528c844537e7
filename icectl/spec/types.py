"""Iceberg data types (format versions 1, 2 and 3) and their JSON form (spec Appendix C).

Every type is an immutable value. Primitive types render to and parse from the spec's type
strings (``"decimal(9,2)"``, ``"fixed[16]"``, ``"geometry(srid:4326)"``); nested types to and from
the JSON objects of Appendix C.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterator

from icectl.errors import CorruptMetadata

__all__ = [
    "IcebergType", "PrimitiveType", "DecimalType", "FixedType", "GeometryType", "GeographyType",
    "NestedField", "StructType", "ListType", "MapType",
    "BOOLEAN", "INT", "LONG", "FLOAT", "DOUBLE", "DATE", "TIME", "TIMESTAMP", "TIMESTAMPTZ",
    "TIMESTAMP_NS", "TIMESTAMPTZ_NS", "STRING", "UUID", "BINARY", "UNKNOWN", "VARIANT",
    "type_from_json", "type_to_json", "primitive_from_string", "field_from_json", "field_to_json",
    "is_promotion_allowed", "MIN_FORMAT_VERSION",
]


class IcebergType:
    """Base of all types."""

    is_primitive = False
    is_nested = False

    def __str__(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError


@dataclass(frozen=True)
class PrimitiveType(IcebergType):
    """A primitive type without parameters, identified by its spec name (``"long"``)."""

    name: str
    is_primitive = True

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self)!r})"


@dataclass(frozen=True, repr=False)
class DecimalType(PrimitiveType):
    precision: int = 38
    scale: int = 0

    def __init__(self, precision: int, scale: int):
        object.__setattr__(self, "name", "decimal")
        object.__setattr__(self, "precision", precision)
        object.__setattr__(self, "scale", scale)

    def __str__(self) -> str:
        return f"decimal({self.precision}, {self.scale})"


@dataclass(frozen=True, repr=False)
class FixedType(PrimitiveType):
    length: int = 0

    def __init__(self, length: int):
        object.__setattr__(self, "name", "fixed")
        object.__setattr__(self, "length", length)

    def __str__(self) -> str:
        return f"fixed[{self.length}]"


DEFAULT_CRS = "OGC:CRS84"
DEFAULT_EDGE_ALGORITHM = "spherical"


@dataclass(frozen=True, repr=False)
class GeometryType(PrimitiveType):
    crs: str = DEFAULT_CRS

    def __init__(self, crs: str = DEFAULT_CRS):
        object.__setattr__(self, "name", "geometry")
        object.__setattr__(self, "crs", crs)

    def __str__(self) -> str:
        return "geometry" if self.crs == DEFAULT_CRS else f"geometry({self.crs})"


@dataclass(frozen=True, repr=False)
class GeographyType(PrimitiveType):
    crs: str = DEFAULT_CRS
    algorithm: str = DEFAULT_EDGE_ALGORITHM

    def __init__(self, crs: str = DEFAULT_CRS, algorithm: str = DEFAULT_EDGE_ALGORITHM):
        object.__setattr__(self, "name", "geography")
        object.__setattr__(self, "crs", crs)
        object.__setattr__(self, "algorithm", algorithm)

    def __str__(self) -> str:
        if self.algorithm != DEFAULT_EDGE_ALGORITHM:
            return f"geography({self.crs}, {self.algorithm})"
        if self.crs != DEFAULT_CRS:
            return f"geography({self.crs})"
        return "geography"


BOOLEAN = PrimitiveType("boolean")
INT = PrimitiveType("int")
LONG = PrimitiveType("long")
FLOAT = PrimitiveType("float")
DOUBLE = PrimitiveType("double")
DATE = PrimitiveType("date")
TIME = PrimitiveType("time")
TIMESTAMP = PrimitiveType("timestamp")
TIMESTAMPTZ = PrimitiveType("timestamptz")
TIMESTAMP_NS = PrimitiveType("timestamp_ns")
TIMESTAMPTZ_NS = PrimitiveType("timestamptz_ns")
STRING = PrimitiveType("string")
UUID = PrimitiveType("uuid")
BINARY = PrimitiveType("binary")
UNKNOWN = PrimitiveType("unknown")
VARIANT = PrimitiveType("variant")

_SIMPLE: dict[str, PrimitiveType] = {
    t.name: t
    for t in (BOOLEAN, INT, LONG, FLOAT, DOUBLE, DATE, TIME, TIMESTAMP, TIMESTAMPTZ,
              TIMESTAMP_NS, TIMESTAMPTZ_NS, STRING, UUID, BINARY, UNKNOWN, VARIANT)
}

# The first format version in which a type may be written.
MIN_FORMAT_VERSION: dict[str, int] = {
    "timestamp_ns": 3, "timestamptz_ns": 3, "unknown": 3, "variant": 3,
    "geometry": 3, "geography": 3,
}

_DECIMAL_RE = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$")
_FIXED_RE = re.compile(r"^fixed\[\s*(\d+)\s*\]$")
_GEOMETRY_RE = re.compile(r"^geometry\s*\(\s*([^)]*?)\s*\)$", re.IGNORECASE)
_GEOGRAPHY_RE = re.compile(r"^geography\s*\(\s*([^,)]*?)\s*(?:,\s*([^)]*?)\s*)?\)$",
                           re.IGNORECASE)


def primitive_from_string(text: str) -> PrimitiveType | None:
    """The primitive type for a spec type string, or None when it is not one."""
    s = text.strip()
    low = s.lower()
    t = _SIMPLE.get(low)
    if t is not None:
        return t
    if low == "geometry":
        return GeometryType()
    if low == "geography":
        return GeographyType()
    m = _DECIMAL_RE.match(low)
    if m:
        return DecimalType(int(m.group(1)), int(m.group(2)))
    m = _FIXED_RE.match(low)
    if m:
        return FixedType(int(m.group(1)))
    m = _GEOMETRY_RE.match(s)
    if m and s[:8].lower() == "geometry":
        return GeometryType(m.group(1) or DEFAULT_CRS)
    m = _GEOGRAPHY_RE.match(s)
    if m and s[:9].lower() == "geography":
        return GeographyType(m.group(1) or DEFAULT_CRS, (m.group(2) or DEFAULT_EDGE_ALGORITHM).lower())
    return None


@dataclass(frozen=True)
class NestedField:
    """A struct field: id, name, type, required flag, optional doc and v3 default values.

    ``initial_default`` and ``write_default`` hold the JSON single-value form (Appendix D)
    exactly as read, so a rewrite keeps them byte for byte.
    """

    field_id: int
    name: str
    type: IcebergType
    required: bool = False
    doc: str | None = None
    initial_default: Any = None
    write_default: Any = None
    has_initial_default: bool = field(default=False, compare=False)
    has_write_default: bool = field(default=False, compare=False)

    @property
    def optional(self) -> bool:
        return not self.required


class _Nested(IcebergType):
    is_nested = True

    def fields(self) -> tuple[NestedField, ...]:  # pragma: no cover - overridden
        raise NotImplementedError


@dataclass(frozen=True)
class StructType(_Nested):
    fields_: tuple[NestedField, ...] = ()

    def __init__(self, fields: tuple[NestedField, ...] | list[NestedField] = ()):
        object.__setattr__(self, "fields_", tuple(fields))

    def fields(self) -> tuple[NestedField, ...]:
        return self.fields_

    def field_by_name(self, name: str) -> NestedField | None:
        for f in self.fields_:
            if f.name == name:
                return f
        return None

    def field_by_id(self, field_id: int) -> NestedField | None:
        for f in self.fields_:
            if f.field_id == field_id:
                return f
        return None

    def __iter__(self) -> Iterator[NestedField]:
        return iter(self.fields_)

    def __len__(self) -> int:
        return len(self.fields_)

    def __str__(self) -> str:
        inner = ", ".join(f"{f.name}: {f.type}" for f in self.fields_)
        return f"struct<{inner}>"


@dataclass(frozen=True)
class ListType(_Nested):
    element_id: int
    element_type: IcebergType
    element_required: bool = False

    @property
    def element_field(self) -> NestedField:
        return NestedField(self.element_id, "element", self.element_type, self.element_required)

    def fields(self) -> tuple[NestedField, ...]:
        return (self.element_field,)

    def __str__(self) -> str:
        return f"list<{self.element_type}>"


@dataclass(frozen=True)
class MapType(_Nested):
    key_id: int
    key_type: IcebergType
    value_id: int
    value_type: IcebergType
    value_required: bool = False

    @property
    def key_field(self) -> NestedField:
        return NestedField(self.key_id, "key", self.key_type, True)

    @property
    def value_field(self) -> NestedField:
        return NestedField(self.value_id, "value", self.value_type, self.value_required)

    def fields(self) -> tuple[NestedField, ...]:
        return (self.key_field, self.value_field)

    def __str__(self) -> str:
        return f"map<{self.key_type}, {self.value_type}>"


# ----------------------------------------------------------------------------------------------
# JSON (Appendix C)


def _need(obj: dict, key: str, what: str) -> Any:
    try:
        return obj[key]
    except (KeyError, TypeError):
        raise CorruptMetadata(f"{what} is missing required key {key!r}") from None


def type_from_json(obj: Any) -> IcebergType:
    """Parse a type from its Appendix C JSON form (a string or an object)."""
    if isinstance(obj, str):
        t = primitive_from_string(obj)
        if t is None:
            raise CorruptMetadata(f"unknown Iceberg type {obj!r}")
        return t
    if not isinstance(obj, dict):
        raise CorruptMetadata(f"invalid type JSON: {obj!r}")
    kind = obj.get("type")
    if kind == "struct":
        return StructType([field_from_json(f) for f in _need(obj, "fields", "struct type")])
    if kind == "list":
        return ListType(
            int(_need(obj, "element-id", "list type")),
            type_from_json(_need(obj, "element", "list type")),
            bool(_need(obj, "element-required", "list type")),
        )
    if kind == "map":
        return MapType(
            int(_need(obj, "key-id", "map type")),
            type_from_json(_need(obj, "key", "map type")),
            int(_need(obj, "value-id", "map type")),
            type_from_json(_need(obj, "value", "map type")),
            bool(_need(obj, "value-required", "map type")),
        )
    raise CorruptMetadata(f"unknown nested type {kind!r}")


def field_from_json(obj: dict) -> NestedField:
    if not isinstance(obj, dict):
        raise CorruptMetadata(f"invalid field JSON: {obj!r}")
    return NestedField(
        field_id=int(_need(obj, "id", "field")),
        name=str(_need(obj, "name", "field")),
        type=type_from_json(_need(obj, "type", "field")),
        required=bool(_need(obj, "required", "field")),
        doc=obj.get("doc"),
        initial_default=obj.get("initial-default"),
        write_default=obj.get("write-default"),
        has_initial_default="initial-default" in obj,
        has_write_default="write-default" in obj,
    )


def _primitive_json(t: PrimitiveType) -> str:
    if isinstance(t, DecimalType):
        return f"decimal({t.precision}, {t.scale})"
    return str(t)


def type_to_json(t: IcebergType) -> Any:
    if isinstance(t, PrimitiveType):
        return _primitive_json(t)
    if isinstance(t, StructType):
        return {"type": "struct", "fields": [field_to_json(f) for f in t.fields()]}
    if isinstance(t, ListType):
        return {
            "type": "list",
            "element-id": t.element_id,
            "element": type_to_json(t.element_type),
            "element-required": t.element_required,
        }
    if isinstance(t, MapType):
        return {
            "type": "map",
            "key-id": t.key_id,
            "key": type_to_json(t.key_type),
            "value-id": t.value_id,
            "value": type_to_json(t.value_type),
            "value-required": t.value_required,
        }
    raise TypeError(f"not an Iceberg type: {t!r}")


def field_to_json(f: NestedField) -> dict:
    out: dict[str, Any] = {
        "id": f.field_id,
        "name": f.name,
        "required": f.required,
        "type": type_to_json(f.type),
    }
    if f.doc is not None:
        out["doc"] = f.doc
    if f.has_initial_default or f.initial_default is not None:
        out["initial-default"] = f.initial_default
    if f.has_write_default or f.write_default is not None:
        out["write-default"] = f.write_default
    return out


# ----------------------------------------------------------------------------------------------
# Promotion rules (spec "Schema Evolution")


def is_promotion_allowed(old: IcebergType, new: IcebergType, format_version: int = 2) -> bool:
    """Whether a column of type ``old`` may be changed to ``new``."""
    if old == new:
        return True
    if isinstance(old, PrimitiveType) and old.name == "unknown":
        return True  # unknown may become any type
    if old == INT and new == LONG:
        return True
    if old == FLOAT and new == DOUBLE:
        return True
    if isinstance(old, DecimalType) and isinstance(new, DecimalType):
        return new.scale == old.scale and new.precision >= old.precision
    if format_version >= 3 and old == DATE and new in (TIMESTAMP, TIMESTAMP_NS):
        return True
    return False
