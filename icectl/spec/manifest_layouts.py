"""Manifest record layouts: the ``manifest_entry`` / ``data_file`` / ``manifest_file`` structs of
format versions 1, 2 and 3 as Iceberg struct types carrying the spec's field ids, and their
conversion to Avro schemas in the shape the Java reference writes (record names
``manifest_entry``, ``r2``, ``r102``, ``manifest_file``, ``r508``; maps with non-string keys as
arrays of ``k<id>_v<id>`` records with logical type ``map``; ``field-id`` / ``element-id`` /
``key-id`` / ``value-id`` attributes; named types defined once, then referenced by name).
"""

from __future__ import annotations

from typing import Any, Mapping

from icectl.errors import ValidationError
from icectl.spec.types import (
    BINARY,
    BOOLEAN,
    INT,
    LONG,
    STRING,
    DecimalType,
    FixedType,
    GeographyType,
    GeometryType,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    field_to_json,
)

__all__ = [
    "data_file_type", "manifest_entry_type", "manifest_file_type", "field_summary_type",
    "avro_schema", "partition_avro_schema", "manifest_entry_avro_schema",
    "manifest_list_avro_schema", "iceberg_schema_json", "decimal_required_bytes",
    "sanitize_avro_name", "PARTITION_FIELD_ID", "DATA_FILE_FIELD_ID",
]


# -- record layouts (Iceberg struct types with the spec's field ids) ---------------------------


def _opt(fid: int, name: str, t: IcebergType) -> NestedField:
    return NestedField(fid, name, t, False)


def _req(fid: int, name: str, t: IcebergType) -> NestedField:
    return NestedField(fid, name, t, True)


def _int_long_map(fid: int, name: str, key_id: int, value_id: int) -> NestedField:
    return _opt(fid, name, MapType(key_id, INT, value_id, LONG, True))


def _int_binary_map(fid: int, name: str, key_id: int, value_id: int) -> NestedField:
    return _opt(fid, name, MapType(key_id, INT, value_id, BINARY, True))


_CONTENT = _req(134, "content", INT)
_FILE_PATH = _req(100, "file_path", STRING)
_FILE_FORMAT = _req(101, "file_format", STRING)
_RECORD_COUNT = _req(103, "record_count", LONG)
_FILE_SIZE = _req(104, "file_size_in_bytes", LONG)
_BLOCK_SIZE = _req(105, "block_size_in_bytes", LONG)
_COLUMN_SIZES = _int_long_map(108, "column_sizes", 117, 118)
_VALUE_COUNTS = _int_long_map(109, "value_counts", 119, 120)
_NULL_VALUE_COUNTS = _int_long_map(110, "null_value_counts", 121, 122)
_NAN_VALUE_COUNTS = _int_long_map(137, "nan_value_counts", 138, 139)
_LOWER_BOUNDS = _int_binary_map(125, "lower_bounds", 126, 127)
_UPPER_BOUNDS = _int_binary_map(128, "upper_bounds", 129, 130)
_KEY_METADATA = _opt(131, "key_metadata", BINARY)
_SPLIT_OFFSETS = _opt(132, "split_offsets", ListType(133, LONG, True))
_EQUALITY_IDS = _opt(135, "equality_ids", ListType(136, INT, True))
_SORT_ORDER_ID = _opt(140, "sort_order_id", INT)
_FIRST_ROW_ID = _opt(142, "first_row_id", LONG)
_REFERENCED_DATA_FILE = _opt(143, "referenced_data_file", STRING)
_CONTENT_OFFSET = _opt(144, "content_offset", LONG)
_CONTENT_SIZE = _opt(145, "content_size_in_bytes", LONG)

PARTITION_FIELD_ID = 102
DATA_FILE_FIELD_ID = 2


def _check_version(format_version: int) -> None:
    if format_version not in (1, 2, 3):
        from icectl.errors import UnsupportedFeature

        raise UnsupportedFeature(f"manifest format version {format_version} is not supported")


def data_file_type(partition_type: StructType, format_version: int) -> StructType:
    """The ``data_file`` struct (field 2) for a format version, in the reference's field order."""
    _check_version(format_version)
    partition = _req(PARTITION_FIELD_ID, "partition", partition_type)
    metrics = [_COLUMN_SIZES, _VALUE_COUNTS, _NULL_VALUE_COUNTS, _NAN_VALUE_COUNTS,
               _LOWER_BOUNDS, _UPPER_BOUNDS, _KEY_METADATA, _SPLIT_OFFSETS]
    if format_version == 1:
        fields = [_FILE_PATH, _FILE_FORMAT, partition, _RECORD_COUNT, _FILE_SIZE, _BLOCK_SIZE,
                  *metrics, _SORT_ORDER_ID]
    elif format_version == 2:
        fields = [_CONTENT, _FILE_PATH, _FILE_FORMAT, partition, _RECORD_COUNT, _FILE_SIZE,
                  *metrics, _EQUALITY_IDS, _SORT_ORDER_ID, _REFERENCED_DATA_FILE]
    else:
        fields = [_CONTENT, _FILE_PATH, _FILE_FORMAT, partition, _RECORD_COUNT, _FILE_SIZE,
                  *metrics, _EQUALITY_IDS, _SORT_ORDER_ID, _FIRST_ROW_ID, _REFERENCED_DATA_FILE,
                  _CONTENT_OFFSET, _CONTENT_SIZE]
    return StructType(fields)


def manifest_entry_type(partition_type: StructType, format_version: int) -> StructType:
    """The ``manifest_entry`` struct for a format version (snapshot_id optional in all, as
    the reference writes it)."""
    df = _req(DATA_FILE_FIELD_ID, "data_file", data_file_type(partition_type, format_version))
    if format_version == 1:
        return StructType([_req(0, "status", INT), _opt(1, "snapshot_id", LONG), df])
    return StructType([
        _req(0, "status", INT), _opt(1, "snapshot_id", LONG),
        _opt(3, "sequence_number", LONG), _opt(4, "file_sequence_number", LONG), df,
    ])


def field_summary_type() -> StructType:
    return StructType([
        _req(509, "contains_null", BOOLEAN),
        _opt(518, "contains_nan", BOOLEAN),
        _opt(510, "lower_bound", BINARY),
        _opt(511, "upper_bound", BINARY),
    ])


def manifest_file_type(format_version: int) -> StructType:
    """The ``manifest_file`` struct of manifest lists for a format version."""
    _check_version(format_version)
    path = _req(500, "manifest_path", STRING)
    length = _req(501, "manifest_length", LONG)
    spec_id = _req(502, "partition_spec_id", INT)
    partitions = _opt(507, "partitions", ListType(508, field_summary_type(), True))
    key_metadata = _opt(519, "key_metadata", BINARY)
    if format_version == 1:
        return StructType([
            path, length, spec_id, _req(503, "added_snapshot_id", LONG),
            _opt(504, "added_files_count", INT), _opt(505, "existing_files_count", INT),
            _opt(506, "deleted_files_count", INT), partitions,
            _opt(512, "added_rows_count", LONG), _opt(513, "existing_rows_count", LONG),
            _opt(514, "deleted_rows_count", LONG), key_metadata,
        ])
    fields = [
        path, length, spec_id, _req(517, "content", INT), _req(515, "sequence_number", LONG),
        _req(516, "min_sequence_number", LONG), _req(503, "added_snapshot_id", LONG),
        _req(504, "added_files_count", INT), _req(505, "existing_files_count", INT),
        _req(506, "deleted_files_count", INT), _req(512, "added_rows_count", LONG),
        _req(513, "existing_rows_count", LONG), _req(514, "deleted_rows_count", LONG),
        partitions, key_metadata,
    ]
    if format_version >= 3:
        fields.append(_opt(520, "first_row_id", LONG))
    return StructType(fields)


# -- Iceberg type -> Avro schema (spec Appendix A, as the reference's TypeToSchema) ------------


def decimal_required_bytes(precision: int) -> int:
    """Fewest bytes whose two's complement holds every unscaled value of ``precision`` digits."""
    if precision <= 0:
        raise ValueError(f"invalid decimal precision {precision}")
    limit = 10 ** precision - 1
    n = 1
    while (1 << (8 * n - 1)) - 1 < limit:
        n += 1
    return n


def _valid_avro_name(name: str) -> bool:
    if not name:
        return False
    first = name[0]
    if not (first.isascii() and (first.isalpha() or first == "_")):
        return False
    return all(c.isascii() and (c.isalnum() or c == "_") for c in name[1:])


def _sanitize_char(c: str) -> str:
    if c.isdigit():
        return "_" + c
    return "_x" + format(ord(c), "X")


def sanitize_avro_name(name: str) -> str:
    """An Avro-legal field name, replacing characters the way the reference does
    (a leading digit ``d`` -> ``_d``, other characters -> ``_x<HEX>``)."""
    if _valid_avro_name(name):
        return name
    out = []
    for i, c in enumerate(name):
        ok = c.isascii() and (c.isalpha() or c == "_" or (i > 0 and c.isdigit()))
        out.append(c if ok else _sanitize_char(c))
    return "".join(out)


def _primitive_avro(t: PrimitiveType, named: set[str]) -> Any:
    def named_type(name: str, body: dict) -> Any:
        if name in named:
            return name
        named.add(name)
        return body

    n = t.name
    if isinstance(t, DecimalType):
        name = f"decimal_{t.precision}_{t.scale}"
        return named_type(name, {
            "type": "fixed", "name": name, "size": decimal_required_bytes(t.precision),
            "logicalType": "decimal", "precision": t.precision, "scale": t.scale,
        })
    if isinstance(t, FixedType):
        name = f"fixed_{t.length}"
        return named_type(name, {"type": "fixed", "name": name, "size": t.length})
    if isinstance(t, (GeometryType, GeographyType)):
        return "bytes"
    simple = {
        "boolean": "boolean", "int": "int", "long": "long", "float": "float",
        "double": "double", "string": "string", "binary": "bytes", "unknown": "null",
    }
    if n in simple:
        return simple[n]
    if n == "date":
        return {"type": "int", "logicalType": "date"}
    if n == "time":
        return {"type": "long", "logicalType": "time-micros"}
    if n in ("timestamp", "timestamptz"):
        return {"type": "long", "logicalType": "timestamp-micros",
                "adjust-to-utc": n == "timestamptz"}
    if n in ("timestamp_ns", "timestamptz_ns"):
        return {"type": "long", "logicalType": "timestamp-nanos",
                "adjust-to-utc": n == "timestamptz_ns"}
    if n == "uuid":
        return named_type("uuid_fixed", {
            "type": "fixed", "name": "uuid_fixed", "size": 16, "logicalType": "uuid"})
    raise ValidationError(f"type {t} cannot be stored in Avro")


def _option(schema: Any) -> list:
    return ["null", schema]


def _avro(t: IcebergType, record_name: str, named: set[str], names: Mapping[int, str],
          field_id: int | None) -> Any:
    if isinstance(t, StructType):
        fields = []
        for f in t.fields():
            sub_name = names.get(f.field_id, f"r{f.field_id}")
            ftype = _avro(f.type, sub_name, named, names, f.field_id)
            avro_name = sanitize_avro_name(f.name)
            entry: dict[str, Any] = {"name": avro_name}
            if f.required:
                entry["type"] = ftype
            else:
                entry["type"] = _option(ftype)
                entry["default"] = None
            if avro_name != f.name:
                entry["iceberg-field-name"] = f.name
            entry["field-id"] = f.field_id
            fields.append(entry)
        named.add(record_name)
        return {"type": "record", "name": record_name, "fields": fields}
    if isinstance(t, ListType):
        element = _avro(t.element_type, names.get(t.element_id, f"r{t.element_id}"), named,
                        names, t.element_id)
        return {"type": "array", "items": element if t.element_required else _option(element),
                "element-id": t.element_id}
    if isinstance(t, MapType):
        key = _avro(t.key_type, f"r{t.key_id}", named, names, t.key_id)
        value = _avro(t.value_type, f"r{t.value_id}", named, names, t.value_id)
        if not t.value_required:
            value = _option(value)
        if key == "string":
            return {"type": "map", "values": value, "key-id": t.key_id, "value-id": t.value_id}
        rec = f"k{t.key_id}_v{t.value_id}"
        named.add(rec)
        return {
            "type": "array",
            "items": {"type": "record", "name": rec, "fields": [
                {"name": "key", "type": key, "field-id": t.key_id},
                {"name": "value", "type": value, "field-id": t.value_id},
            ]},
            "logicalType": "map",
        }
    if isinstance(t, PrimitiveType):
        if t.name == "variant":
            named.add(record_name)
            return {"type": "record", "name": record_name, "logicalType": "variant", "fields": [
                {"name": "metadata", "type": "bytes"}, {"name": "value", "type": "bytes"}]}
        return _primitive_avro(t, named)
    raise ValidationError(f"type {t!r} cannot be stored in Avro")


def avro_schema(struct: StructType, record_name: str,
                names: Mapping[int, str] | None = None) -> dict:
    """The Avro record schema for an Iceberg struct.

    Nested records are named ``r<field id>`` unless ``names`` maps that field id to a name;
    named types (fixed, decimal, uuid) are defined once and referenced by name afterwards.
    """
    return _avro(struct, record_name, set(), names or {}, None)


def partition_avro_schema(partition_type: StructType) -> dict:
    """The ``r102`` record for a partition type (every partition field optional)."""
    return avro_schema(partition_type, f"r{PARTITION_FIELD_ID}")


def manifest_entry_avro_schema(partition_type: StructType, format_version: int) -> dict:
    return avro_schema(manifest_entry_type(partition_type, format_version), "manifest_entry")


def manifest_list_avro_schema(format_version: int) -> dict:
    return avro_schema(manifest_file_type(format_version), "manifest_file")


def iceberg_schema_json(struct: StructType) -> dict:
    """The Iceberg schema JSON of a record layout (the ``iceberg.schema`` Avro metadata key)."""
    return {"type": "struct", "schema-id": 0, "fields": [field_to_json(f) for f in struct.fields()]}
