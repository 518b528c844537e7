"""Rows to write, read from a Parquet, CSV or JSON-lines file (or stdin): ``read_rows``.

The rules of reading (formats by extension or content, CSV nulls, JSON numbers read exactly)
are :mod:`icectl.ops.write`'s module docs; writing, appending, upserting and equality deletes
read their input rows here.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Sequence

import pyarrow as pa

from icectl.errors import IcectlError, InvalidInput, NotFound, StorageError
from icectl.io.parquet_write import arrow_type
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
    from icectl.io.files import FileIO

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
        t = _json_type(f.type, numbers_as_text)
        if t is not None:
            out.append(pa.field(f.name, t))
    return out


def _json_type(t: IcebergType, numbers_as_text: bool) -> pa.DataType | None:
    if isinstance(t, StructType):
        return pa.struct(_json_explicit(t.fields(), numbers_as_text))
    if isinstance(t, ListType):
        inner = _json_type(t.element_type, numbers_as_text)
        return pa.list_(inner) if inner is not None else None
    if isinstance(t, MapType):
        return None  # the JSON reader has no maps: objects arrive as structs
    if t == BOOLEAN or t in (INT, LONG, FLOAT, DOUBLE) and not numbers_as_text:
        return arrow_type(t)
    return pa.string()  # decimals only ever as text: a JSON number read as a double is not exact


def _has_decimal(t: IcebergType) -> bool:
    if isinstance(t, DecimalType):
        return True
    if isinstance(t, StructType):
        return any(_has_decimal(f.type) for f in t.fields())
    if isinstance(t, ListType):
        return _has_decimal(t.element_type)
    if isinstance(t, MapType):
        return _has_decimal(t.key_type) or _has_decimal(t.value_type)
    return False


def _json_numbers_as_text(data: pa.Buffer) -> pa.Buffer:
    """JSON lines with every number turned into a string of the digits it was written with,
    so that numbers reach the conversion exactly (Arrow's JSON reader would make them doubles).
    One object per line in the result, in the input's order."""
    import json

    text = data.to_pybytes().decode("utf-8")
    decoder = json.JSONDecoder(parse_float=str, parse_int=str)
    lines, i, n = [], 0, len(text)
    while True:
        while i < n and text[i] in " \t\r\n":
            i += 1
        if i >= n:
            break
        obj, i = decoder.raw_decode(text, i)
        lines.append(json.dumps(obj, ensure_ascii=False))
    return arrow_owned("\n".join(lines).encode("utf-8"))


def _csv_header(data: pa.Buffer, parse: Any) -> list[str]:
    """The column names of a CSV text (the streaming reader is closed before returning)."""
    import pyarrow.csv as pcsv

    with pcsv.open_csv(pa.BufferReader(data), parse_options=parse,
                       read_options=pcsv.ReadOptions(use_threads=False)) as reader:
        return list(reader.schema.names)


def read_rows(file_io: FileIO, source: str, fmt: str | None = None, schema: Schema | None = None,
              stdin: Any = None) -> tuple[pa.Table, str]:
    """Rows of ``source`` (a path, a URL or ``-`` for ``stdin``) and the format they were read as."""
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
            with file_io.open(source, "rb") as f:
                data = f.read()
        if source != "-" and fmt != "parquet" and any(source.lower().endswith(c) for c in (".gz", ".bz2")):
            data = _decompressed(data, source)
        buf = arrow_owned(data)
        if fmt == "parquet":
            return pq.read_table(pa.BufferReader(buf)), fmt
        if fmt == "csv":
            parse = pcsv.ParseOptions(delimiter="\t" if source.lower().endswith(".tsv") else ",")
            header = _csv_header(buf, parse)
            types = _csv_text_types(schema, header) if schema is not None else {}
            convert = pcsv.ConvertOptions(column_types=types, null_values=["", "NULL", "null"],
                                          strings_can_be_null=True, quoted_strings_can_be_null=False)
            return pcsv.read_csv(pa.BufferReader(buf), parse_options=parse, convert_options=convert), fmt
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
    2**63 for a long column), so the conversion can name the row or round it."""
    import pyarrow.json as pjson

    def read(data: pa.Buffer, numbers_as_text: bool) -> pa.Table:
        explicit = pa.schema(_json_explicit(schema.fields, numbers_as_text)) if schema is not None else None
        opts = pjson.ParseOptions(explicit_schema=explicit, unexpected_field_behavior="infer")
        return pjson.read_json(pa.BufferReader(data), parse_options=opts)

    if schema is not None and _has_decimal(schema.struct):
        return read(_json_numbers_as_text(buf), True)
    try:
        return read(buf, False)
    except pa.ArrowInvalid:
        if schema is None:
            raise
        return read(_json_numbers_as_text(buf), True)


def input_label(source: Any) -> str:
    """How errors name an input: its path, ``stdin`` or ``the input`` (an Arrow table)."""
    if isinstance(source, str):
        return "stdin" if source == "-" else source
    return "the input"
