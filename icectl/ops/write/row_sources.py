"""Rows to write, read from a Parquet, CSV or JSON-lines file (or stdin): ``read_rows``.

The rules of reading (formats by extension or content, CSV nulls, JSON numbers read exactly)
are :mod:`icectl.ops.write.rows`'s module docs; writing, appending, upserting and equality deletes
read their input rows here.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Callable, Sequence

import pyarrow as pa

from icectl.errors import IcectlError, InvalidInput, NotFound, StorageError
from icectl.io.formats.parquet_write import arrow_type
from icectl.ops.compute.arrow_values import arrow_owned
from icectl.ops.compute.conform import match_column
from icectl.spec.schema import Schema
from icectl.spec.types import (
    BOOLEAN,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    DecimalType,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    StructType,
)

if TYPE_CHECKING:
    from icectl.io.storage.files import FileIO

__all__ = ["FORMATS", "read_rows", "input_label", "detect_format"]

FORMATS = ("parquet", "csv", "json")
_EXTENSIONS = {
    ".parquet": "parquet", ".parq": "parquet", ".pq": "parquet",
    ".csv": "csv", ".tsv": "csv", ".txt": "csv",
    ".json": "json", ".jsonl": "json", ".ndjson": "json",
}



# -- reading input --------------------------------------------------------------------------------


def detect_format(source: str, data: bytes | None, fmt: str | None) -> str:
    if fmt:
        f = fmt.strip().lower()
        if f in ("jsonl", "ndjson"):
            f = "json"
        if f not in FORMATS:
            raise InvalidInput(f"unknown input format {fmt!r} (use parquet, csv or json)",
                               argument="file_format")
        return f
    if source != "-":
        name = source.lower()
        for comp in (".gz", ".bz2", ".zst", ".lz4"):
            if name.endswith(comp):
                name = name[: -len(comp)]
        ext = os.path.splitext(name)[1]
        if ext in _EXTENSIONS:
            return _EXTENSIONS[ext]
        raise InvalidInput(f"cannot tell the format of {source} from its name: give the input format "
                           "(parquet, csv or json)", argument="file_format")
    head = (data or b"")[:64].lstrip()
    if (data or b"").startswith(b"PAR1"):
        return "parquet"
    if head.startswith(b"{"):
        return "json"
    if head:
        return "csv"
    raise InvalidInput("no input on stdin")


def _csv_text_types(schema: Schema, names: Sequence[str]) -> dict[str, pa.DataType]:
    """Every CSV column the table knows is read as text; conform() parses it by type."""
    out = {}
    for n in names:
        if match_column(schema.struct, n) is not None:
            out[n] = pa.string()
    return out


def _json_explicit(fields: Sequence[NestedField], numbers_as_text: bool) -> list[pa.Field]:
    out = []
    for f in fields:
        out.append(pa.field(f.name, _json_type(f.type, numbers_as_text)))
    return out


def _json_type(t: IcebergType, numbers_as_text: bool) -> pa.DataType:
    if isinstance(t, StructType):
        return pa.struct(_json_explicit(t.fields(), numbers_as_text))
    if isinstance(t, ListType):
        return pa.list_(_json_type(t.element_type, numbers_as_text))
    if isinstance(t, MapType):  # the JSON reader has no maps: read in the keys/values form
        return pa.struct([("keys", pa.list_(_json_type(t.key_type, numbers_as_text))),
                          ("values", pa.list_(_json_type(t.value_type, numbers_as_text)))])
    if t == BOOLEAN or t in (INT, LONG, FLOAT, DOUBLE) and not numbers_as_text:
        return arrow_type(t)
    return pa.string()  # decimals only ever as text: a JSON number read as a double is not exact


def _has(t: IcebergType, kind: type) -> bool:
    """Whether ``t`` is or holds a type of this kind."""
    if isinstance(t, kind):
        return True
    if isinstance(t, StructType):
        return any(_has(f.type, kind) for f in t.fields())
    if isinstance(t, ListType):
        return _has(t.element_type, kind)
    if isinstance(t, MapType):
        return _has(t.key_type, kind) or _has(t.value_type, kind)
    return False


def _json_normalized(value: Any, t: IcebergType) -> Any:
    """A parsed JSON value with its maps in the keys/values form the reader is given: a map
    given as an object keyed by its keys becomes ``{"keys": [...], "values": [...]}`` (members
    whose value is null left out); one already in that form (exactly two arrays, ``keys`` and
    ``values``: what scan prints) is kept. Struct members are matched to fields as columns are."""
    if isinstance(t, StructType) and isinstance(value, dict):
        for k, v in value.items():
            f = match_column(t, k)
            if f is not None:
                value[k] = _json_normalized(v, f.type)
        return value
    if isinstance(t, ListType) and isinstance(value, list):
        return [_json_normalized(v, t.element_type) for v in value]
    if isinstance(t, MapType) and isinstance(value, dict):
        if set(value) == {"keys", "values"} and all(isinstance(v, list) for v in value.values()):
            pairs = list(zip(value["keys"], value["values"]))
            if len(value["keys"]) != len(value["values"]):
                return value  # refused, with its row, when converted
        else:
            pairs = [(k, v) for k, v in value.items() if v is not None]
        return {"keys": [_json_normalized(k, t.key_type) for k, _ in pairs],
                "values": [_json_normalized(v, t.value_type) for _, v in pairs]}
    return value


def _json_lines(objs: Sequence[Any], struct: StructType) -> pa.Buffer:
    """JSON lines of these parsed objects (one a line, in order), maps normalized."""
    import json

    lines = (json.dumps(_json_normalized(obj, struct), ensure_ascii=False) for obj in objs)
    return arrow_owned("\n".join(lines).encode("utf-8"))


def _json_objects(data: pa.Buffer, numbers_as_text: bool) -> list[Any]:
    """The JSON values of JSON-lines text, in order; ``numbers_as_text``: every number as the
    string of the digits it was written with, so that numbers reach the conversion exactly
    (Arrow's JSON reader would make them doubles)."""
    import json

    text = data.to_pybytes().decode("utf-8")
    decoder = json.JSONDecoder(parse_float=str, parse_int=str) if numbers_as_text else json.JSONDecoder()
    objs, i, n = [], 0, len(text)
    while True:
        while i < n and text[i] in " \t\r\n":
            i += 1
        if i >= n:
            break
        obj, i = decoder.raw_decode(text, i)
        objs.append(obj)
    return objs


def _csv_header(data: pa.Buffer, parse: Any) -> list[str]:
    """The column names of a CSV text (the streaming reader is closed before returning)."""
    import pyarrow.csv as pcsv

    with pcsv.open_csv(pa.BufferReader(data), parse_options=parse,
                       read_options=pcsv.ReadOptions(use_threads=False)) as reader:
        return list(reader.schema.names)


READ_CHUNK = 8 * 1024 * 1024  # an input is read in pieces of this size when progress is shown


def _read_all(file_io: FileIO, source: str, progress: Callable[[int, int], None] | None) -> bytes:
    with file_io.open(source, "rb") as f:
        if progress is None:
            return f.read()
        total = int(file_io.info(source).size)
        parts = []
        done = 0
        progress(0, total)
        while True:
            piece = f.read(READ_CHUNK)
            if not piece:
                break
            parts.append(piece)
            done += len(piece)
            progress(min(done, total), total)
        return b"".join(parts)


def read_rows(file_io: FileIO, source: str, fmt: str | None = None, schema: Schema | None = None,
              stdin: Any = None, progress: Callable[[int, int], None] | None = None) -> tuple[pa.Table, str]:
    """Rows of ``source`` (a path, a URL or ``-`` for ``stdin``) and the format they were read as;
    ``progress(bytes read, bytes)`` is called as a file is read."""
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    data: bytes | None = None
    if source == "-":
        stream = stdin
        if stream is None:
            raise InvalidInput("no stdin to read rows from")
        data = stream.read() if hasattr(stream, "read") else bytes(stream)
        if isinstance(data, str):
            data = data.encode("utf-8")
    fmt = detect_format(source, data, fmt)
    try:
        if data is None:
            if not file_io.exists(source):
                raise NotFound(f"input file not found: {source}")
            data = _read_all(file_io, source, progress)
        if source != "-" and fmt != "parquet" and any(source.lower().endswith(c) for c in (".gz", ".bz2")):
            data = _decompressed(data, source)
        buf = arrow_owned(data)
        if fmt == "parquet":
            return pq.read_table(pa.BufferReader(buf)), fmt
        if fmt == "csv":
            parse = pcsv.ParseOptions(delimiter="\t" if source.lower().endswith(".tsv") else ",",
                                      newlines_in_values=True)
            header = _csv_header(buf, parse)
            types = _csv_text_types(schema, header) if schema is not None else {}
            convert = pcsv.ConvertOptions(column_types=types, null_values=["", "NULL", "null"],
                                          strings_can_be_null=True, quoted_strings_can_be_null=False)
            rows = pcsv.read_csv(pa.BufferReader(buf), parse_options=parse, convert_options=convert)
            return (_csv_nested_from_json(rows, schema, input_label(source)) if schema is not None else rows), fmt
        return _read_json(buf, schema), fmt
    except IcectlError:
        raise
    except (pa.ArrowInvalid, ValueError) as e:  # json's JSONDecodeError is a ValueError
        raise InvalidInput(f"cannot read {fmt} rows from {'stdin' if source == '-' else source}: {e}") from None
    except OSError as e:
        raise StorageError(f"cannot read {source}: {e}") from None


def _decompressed(data: bytes, source: str) -> bytes:
    """The bytes of a .gz or .bz2 input file, decompressed; a file that does not decompress
    (truncated, or not compressed as its name says) is bad input (InvalidInput), not a storage
    failure: the bytes were read."""
    codec = "gzip" if source.lower().endswith(".gz") else "bz2"
    try:
        return pa.CompressedInputStream(pa.BufferReader(data), codec).read()
    except (OSError, pa.ArrowInvalid) as e:
        raise InvalidInput(f"cannot read {source}: not a complete {codec} file ({e})") from None


def _read_json(buf: pa.Buffer, schema: Schema | None) -> pa.Table:
    """JSON lines as Arrow: numbers as text when the table has a decimal column, else Arrow's
    own number types, read again with numbers as text when those do not take a value (1.5 or
    2**63 for a long column, "NaN" for a double), so the conversion can name the row or round
    it. Tables with a map column are read through Python's JSON parser, maps normalized."""
    import pyarrow.json as pjson

    def read(data: pa.Buffer, numbers_as_text: bool) -> pa.Table:
        explicit = pa.schema(_json_explicit(schema.fields, numbers_as_text)) if schema is not None else None
        opts = pjson.ParseOptions(explicit_schema=explicit, unexpected_field_behavior="infer")
        return pjson.read_json(pa.BufferReader(data), parse_options=opts)

    if schema is None:
        return read(buf, False)
    numbers_as_text = _has(schema.struct, DecimalType)
    if not numbers_as_text and not _has(schema.struct, MapType):
        try:
            return read(buf, False)
        except pa.ArrowInvalid:
            numbers_as_text = True
    try:
        return read(_json_lines(_json_objects(buf, numbers_as_text), schema.struct), numbers_as_text)
    except pa.ArrowInvalid:
        if numbers_as_text:
            raise
        return read(_json_lines(_json_objects(buf, True), schema.struct), True)


def _csv_nested_from_json(table: pa.Table, schema: Schema, label: str) -> pa.Table:
    """CSV cells of struct, list and map columns hold JSON text (as ``scan --format csv``
    prints them): each such column read as JSON values of its type (numbers as text, so they
    reach the conversion exactly)."""
    import json

    nested = [(i, name, f) for i, name in enumerate(table.column_names)
              if (f := match_column(schema.struct, name)) is not None and not f.type.is_primitive
              and pa.types.is_string(table.column(i).type)]
    if not nested:
        return table
    decoder = json.JSONDecoder(parse_float=str, parse_int=str)
    for i, name, f in nested:
        objs = []
        for row, cell in enumerate(table.column(i).to_pylist()):
            try:
                objs.append({name: None if cell is None else decoder.decode(cell)})
            except ValueError as e:
                raise InvalidInput(f"{label}: row {row + 1}, column {name}: a {f.type} value must be "
                                   f"JSON text (as scan prints it in CSV): {e}") from None
        one = StructType([NestedField(f.field_id, name, f.type, f.required)])
        explicit = pa.schema([pa.field(name, _json_type(f.type, True))])
        import pyarrow.json as pjson

        col = pjson.read_json(pa.BufferReader(_json_lines(objs, one)),
                              parse_options=pjson.ParseOptions(explicit_schema=explicit)).column(name)
        table = table.set_column(i, name, col)
    return table


def input_label(source: Any) -> str:
    """How errors name an input: its path, ``stdin`` or ``the input`` (an Arrow table)."""
    if isinstance(source, str):
        return "stdin" if source == "-" else source
    return "the input"
