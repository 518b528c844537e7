"""A Parquet file's schema as Iceberg types, read from the footer only, and whether a file's
columns fit a table schema (:func:`check_file_schema`, used by ``icectl append``).

:func:`read_parquet_schema` is used by ``icectl schema union``: column names, types, nullability and nesting matter; field ids
in the file are ignored (the union matches columns by name and gives new columns fresh ids).
Arrow types map to Iceberg types as the reference reads Parquet: 8/16/32-bit integers and
unsigned 8/16-bit to ``int``, 64-bit and unsigned 32-bit to ``long``, ``timestamp`` with a zone
to ``timestamptz``, nanosecond timestamps to the v3 ``_ns`` types, 16-byte fixed with the UUID
logical type to ``uuid``. Types with no Iceberg equivalent are refused.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any, Callable, Sequence

from icectl.errors import IcectlError, InvalidInput, StorageError, UnsupportedFeature
from icectl.io.storage.files import FileIO
from icectl.io.formats.parquet import ParquetColumn, ParquetField, parquet_columns
from icectl.spec.name_mapping import NameMapping
from icectl.spec.schema import Schema
from icectl.spec.types import (
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMP_NS,
    TIMESTAMPTZ,
    TIMESTAMPTZ_NS,
    UNKNOWN,
    UUID,
    DecimalType,
    FixedType,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    is_promotion_allowed,
)

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "read_parquet_schema", "arrow_schema_to_struct", "arrow_type_to_iceberg", "check_file_schema",
    "footer_null_proof",
]


def read_parquet_schema(file_io: FileIO, path: str) -> StructType:
    """The Iceberg struct of a Parquet file's columns (placeholder ids 1, 2, ...)."""
    import pyarrow.parquet as pq

    try:
        with file_io.open(path, "rb") as f:
            arrow_schema = pq.ParquetFile(f).schema_arrow
    except IcectlError:
        raise
    except FileNotFoundError:
        from icectl.errors import NotFound

        raise NotFound(f"no such Parquet file: {path}") from None
    except OSError as e:
        raise StorageError(f"cannot read Parquet footer of {path}: {e}") from e
    except Exception as e:  # pyarrow raises ArrowInvalid & co for non-Parquet input
        raise InvalidInput(f"{path} is not a readable Parquet file: {e}") from e
    return arrow_schema_to_struct(arrow_schema)


def arrow_schema_to_struct(schema: pa.Schema) -> StructType:
    counter = itertools.count(1)
    return StructType([_field(f, lambda: next(counter)) for f in schema])


def _field(f: Any, next_id: Any) -> NestedField:
    fid = next_id()
    return NestedField(fid, f.name, arrow_type_to_iceberg(f.type, next_id, f.name), not f.nullable)


def arrow_type_to_iceberg(t: Any, next_id: Any = None, name: str = "") -> IcebergType:
    import pyarrow as pa
    import pyarrow.types as pt

    if next_id is None:
        counter = itertools.count(1)
        next_id = lambda: next(counter)  # noqa: E731
    if pt.is_struct(t):
        return StructType([_field(t.field(i), next_id) for i in range(t.num_fields)])
    if pt.is_map(t):
        kid, vid = next_id(), next_id()
        return MapType(kid, arrow_type_to_iceberg(t.key_type, next_id, name), vid,
                       arrow_type_to_iceberg(t.item_type, next_id, name), not t.item_field.nullable)
    if pt.is_list(t) or pt.is_large_list(t) or pt.is_fixed_size_list(t):
        eid = next_id()
        return ListType(eid, arrow_type_to_iceberg(t.value_type, next_id, name), not t.value_field.nullable)
    if pt.is_boolean(t):
        return BOOLEAN
    if pt.is_int8(t) or pt.is_int16(t) or pt.is_int32(t) or pt.is_uint8(t) or pt.is_uint16(t):
        return INT
    if pt.is_int64(t) or pt.is_uint32(t):
        return LONG
    if pt.is_float16(t) or pt.is_float32(t):
        return FLOAT
    if pt.is_float64(t):
        return DOUBLE
    if pt.is_decimal(t):
        if t.precision > 38:
            raise UnsupportedFeature(f"column {name!r}: decimal precision {t.precision} is over 38")
        return DecimalType(t.precision, t.scale)
    if pt.is_date32(t) or pt.is_date64(t):
        return DATE
    if pt.is_time(t):
        return TIME
    if pt.is_timestamp(t):
        if t.unit == "ns":
            return TIMESTAMPTZ_NS if t.tz else TIMESTAMP_NS
        return TIMESTAMPTZ if t.tz else TIMESTAMP
    if pt.is_string(t) or pt.is_large_string(t) or getattr(pt, "is_string_view", lambda _: False)(t):
        return STRING
    ext = getattr(t, "extension_name", None)
    if ext in ("arrow.uuid",) or (isinstance(t, pa.ExtensionType) and "uuid" in str(ext)):
        return UUID
    if pt.is_fixed_size_binary(t):
        return FixedType(t.byte_width)
    if pt.is_binary(t) or pt.is_large_binary(t):
        return BINARY
    if pt.is_null(t):
        return UNKNOWN
    raise UnsupportedFeature(f"column {name!r} has Arrow type {t}, which has no Iceberg equivalent")


# -- compatibility with a table schema ----------------------------------------------------------


def _compatible_primitive(file_type: PrimitiveType, table_type: IcebergType) -> bool:
    if file_type == table_type:
        return True
    if isinstance(file_type, FixedType) and table_type == UUID:
        return file_type.length == 16
    if table_type == BINARY and (file_type == STRING or isinstance(file_type, FixedType)):
        return False
    return is_promotion_allowed(file_type, table_type)


def check_file_schema(fields: Sequence[ParquetField], schema: Schema,
                      null_proof: Callable[[ParquetField], str | None] | None = None) -> list[str]:
    """Problems that keep a file with these fields from being read as ``schema`` ([] if none).

    Every file column needs a field id, and one of its own (a duplicate field id is reported
    as such, not as the type of the second column); ids the table does not know are reported, as are
    types the table type cannot be read from, and required table columns the file lacks. A
    column optional in the file but required in the table is accepted when ``null_proof`` (see
    :func:`footer_null_proof`) proves it holds no null; otherwise its answer says why not.
    """
    problems: list[str] = []
    seen: set[int] = set()

    def kind_of(t: IcebergType) -> str:
        if isinstance(t, StructType):
            return "struct"
        if isinstance(t, ListType):
            return "list"
        if isinstance(t, MapType):
            return "map"
        return "primitive"

    def visit(f: ParquetField) -> None:
        if f.field_id is None:
            problems.append(f"column {f.path!r} has no field id and the name mapping does not map it")
            return
        seen.add(f.field_id)
        tf = schema.find_field_or_none(f.field_id)
        if tf is None:
            problems.append(f"column {f.path!r} has field id {f.field_id}, which is not in the table schema")
            return
        tname = schema.column_name(f.field_id)
        if kind_of(tf.type) != f.kind:
            problems.append(f"column {f.path!r} is a {f.kind} in the file but table column "
                            f"{tname!r} is {tf.type}")
            return
        if f.kind == "primitive":
            if f.iceberg_type is None:
                problems.append(f"column {f.path!r}: {f.problem}")
            elif not _compatible_primitive(f.iceberg_type, tf.type):
                problems.append(f"column {f.path!r} has type {f.iceberg_type} in the file "
                                f"({f.physical_type}{'/' + f.logical_type if f.logical_type else ''}), "
                                f"which cannot be read as {tf.type} (table column {tname!r})")
        if tf.required and not f.required:
            why = "has no proof of holding no nulls" if null_proof is None else null_proof(f)
            if why is not None:
                problems.append(f"column {f.path!r} is optional in the file and {why}, but table "
                                f"column {tname!r} is required (write it as required, or make "
                                f"the table column optional: icectl schema optional)")
        for c in f.children:
            visit(c)

    duplicates = _duplicate_field_ids(fields)
    if duplicates:  # the file is broken: its columns cannot be matched by id at all
        return duplicates
    for f in fields:
        visit(f)

    def missing(struct: StructType, prefix: str) -> None:
        for tf in struct.fields():
            if tf.field_id not in seen:
                if tf.required and not tf.has_initial_default:
                    problems.append(f"required table column {schema.column_name(tf.field_id)!r} "
                                    f"is missing from the file")
            elif isinstance(tf.type, StructType):
                missing(tf.type, prefix)

    missing(schema.struct, "")
    return problems


def _duplicate_field_ids(fields: Sequence[ParquetField]) -> list[str]:
    """One problem for each field id that more than one column of the file has."""
    paths: dict[int, list[str]] = {}

    def walk(f: ParquetField) -> None:
        if f.field_id is not None:
            paths.setdefault(f.field_id, []).append(f.path)
        for c in f.children:
            walk(c)

    for f in fields:
        walk(f)
    return [f"duplicate field id {fid}: the file's columns {', '.join(repr(p) for p in ps)} all have it"
            for fid, ps in paths.items() if len(ps) > 1]


def footer_null_proof(footer: Any, name_mapping: NameMapping | None = None,
                      ) -> Callable[[ParquetField], str | None]:
    """For a column of the file, None when its footer proves it holds no null (statistics with
    a null count of 0 in every row group; a struct when one of its fields is proven), else the
    reason as text ("has 3 null(s)", "has no statistics in row group 0", ...)."""
    # read on first use (most files need no proof); keyed by the dotted path, which names the
    # same column however many times the footer's fields are built (the build cache is bounded)
    columns: dict[str, ParquetColumn] = {}

    def leaf(c: ParquetColumn) -> str | None:
        groups = [footer.row_group(i) for i in range(footer.num_row_groups)]
        if c.in_list_or_map:
            return "is inside a list or map, whose nulls its statistics do not tell"
        nulls = 0
        for i, rg in enumerate(groups):
            ch = rg.column(c.index)
            stats = ch.statistics if ch.is_stats_set else None
            if stats is None or not stats.has_null_count:
                return f"has no statistics (null count) in row group {i}"
            nulls += stats.null_count
        return f"has {nulls} null(s)" if nulls else None

    def proof(f: ParquetField) -> str | None:
        if f.kind == "primitive":
            if not columns:
                columns.update((c.field.path, c) for c in parquet_columns(footer, name_mapping))
            c = columns.get(f.path)
            return "is not a column of the footer" if c is None else leaf(c)
        if f.kind == "struct":
            reasons = [proof(child) for child in f.children]
            if any(r is None for r in reasons):
                return None  # a null struct would make that field null too
            return "is a struct none of whose fields is proven free of nulls"
        return f"is a {f.kind}, whose nulls its statistics do not tell"

    return proof
