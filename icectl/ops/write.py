"""Write rows into a table: ``write_rows(table, source, ...)``.

Rows come from a Parquet, CSV or JSON-lines file (or stdin), are cast to the table's schema, split
by the default partition spec, sorted by the table's sort order, written as Parquet data files
under ``<data location>/<partition path>/`` and committed as ONE ``append`` snapshot through the
same producer as ``icectl append`` (summaries, manifests, sequence numbers, v3 row lineage,
branches and extra summary entries behave the same).

Input columns are matched to the table's columns by name: an exact match first, otherwise a
case-insensitive one (as Spark does by default); an ambiguous case-insensitive match is refused.
Nested struct fields are matched the same way. A missing optional column is written as nulls; a
missing required column, a null in a required column, an input column the table does not have
(unless ``ignore_extra_columns``) and a value that does not fit its column's type are refused;
a value is refused with the input's name, its row (1-based) and its column. Numbers are stored
exactly or refused (:mod:`icectl.ops.compute.fit`): ``2.999`` does not fit ``decimal(12,2)`` nor
``2.5`` an ``int``, unless ``rounding`` is given. JSON numbers are read exactly: when the table
has a decimal column (or a JSON number does not fit the fast reader's types) every number is
taken as the text it was written as, so ``0.1`` is 0.1 and not the double nearest to it. Text
values (CSV, JSON strings) are parsed as icectl parses literals: ISO dates, times and timestamps
(for ``timestamptz`` an offset is converted to UTC and none means UTC), numbers, canonical UUIDs;
``binary`` and ``fixed`` text is hex (as ``scan`` prints them). In CSV an unquoted empty field,
``NULL`` or ``null`` is a null, and struct, list and map cells are JSON text. A map is given as
``{"keys": [...], "values": [...]}`` (as ``scan`` prints it) or as a JSON object keyed by its
keys (keys with null values are left out). What ``scan --format jsonl`` or ``--format csv``
prints, ``write`` reads back as the same values.

Partition values are computed on whole Arrow columns (bucket hashing on integers too) and equal
:mod:`icectl.spec.transforms` value by value. Files are named as the reference names them
(``00000-0-<operation uuid>-00001.parquet``, the last number counting files) and rolled at
``write.target-file-size-bytes``. Rows inside each file are ordered by the sort order's
transformed keys with its directions and null orders (NaN above every number, as the reference's
comparators). If anything fails - bad input, a write error, a failed commit - the data files
this call wrote are deleted and nothing is committed.
"""

from __future__ import annotations

import os
import uuid as _uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import pyarrow as pa

from icectl.errors import IcectlError, InvalidInput, NotFound, StorageError
from icectl import command_files
from icectl.io.files import join
from icectl.io.parquet_write import arrow_type
from icectl.ops.append import AppendResult, append_data_files
from icectl.ops.compute.arrow_values import arrow_owned
from icectl.ops.compute import conform_to_schema
from icectl.ops.compute.conform import match_column
from icectl.ops.compute.fit import DoesNotFit, check_rounding
from icectl.spec.properties import WRITE_DATA_PATH, WRITE_FOLDER_STORAGE_PATH
from icectl.ops.data_sink import DataFileSink
from icectl.spec.manifests import DataFile
from icectl.spec.schema import Schema
from icectl.spec.snapshots import MAIN_BRANCH
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
    from icectl.table.table import Table
    from icectl.spec.partitioning import PartitionSpec
    from icectl.spec.sorting import SortOrder

__all__ = ["WriteResult", "write_rows", "write_data_files", "read_rows", "data_location", "FORMATS"]

FORMATS = ("parquet", "csv", "json")
_EXTENSIONS = {
    ".parquet": "parquet", ".parq": "parquet", ".pq": "parquet",
    ".csv": "csv", ".tsv": "csv", ".txt": "csv",
    ".json": "json", ".jsonl": "json", ".ndjson": "json",
}


@dataclass(frozen=True)
class WriteResult:
    """What a write committed: the append's result plus the rows read."""

    append: AppendResult
    rows_read: int
    input_format: str

    def to_json(self) -> dict[str, Any]:
        out = self.append.to_json()
        out["rows-written"] = self.rows_read
        out["input-format"] = self.input_format
        return out


# -- reading input --------------------------------------------------------------------------------


def _detect_format(source: str, data: bytes | None, fmt: str | None) -> str:
    if fmt:
        f = fmt.strip().lower()
        if f in ("jsonl", "ndjson"):
            f = "json"
        if f not in FORMATS:
            raise InvalidInput(f"unknown input format {fmt!r} (use parquet, csv or json)")
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
    fmt = _detect_format(source, data, fmt)
    try:
        if data is None:
            if not file_io.exists(source):
                raise NotFound(f"input file not found: {source}")
            with file_io.open(source, "rb") as f:
                data = f.read()
        if source != "-" and fmt != "parquet" and any(source.lower().endswith(c) for c in (".gz", ".bz2")):
            codec = "gzip" if source.lower().endswith(".gz") else "bz2"
            data = pa.CompressedInputStream(pa.BufferReader(data), codec).read()
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


# -- locations ----------------------------------------------------------------------------------


def data_location(table_location: str, properties: Mapping[str, str]) -> str:
    """Where new data files go: ``write.data.path``, else the legacy folder-storage path, else
    ``<table location>/data``."""
    for key in (WRITE_DATA_PATH, WRITE_FOLDER_STORAGE_PATH):
        v = properties.get(key)
        if v:
            return v.rstrip("/")
    return join(table_location, "data")


# -- the operation ------------------------------------------------------------------------------


def write_rows(
    table: Table,
    source: str | pa.Table,
    *,
    file_format: str | None = None,
    summary_properties: Mapping[str, str] | None = None,
    branch: str = MAIN_BRANCH,
    ignore_extra_columns: bool = False,
    merge: bool | None = None,
    stdin: Any = None,
    rounding: str | None = None,
) -> WriteResult:
    """Write the rows of ``source`` (a path/URL, ``-`` for ``stdin``, or an Arrow table) to
    ``table`` as one append snapshot of ``branch`` (see the module docs). ``rounding``
    (half-even, half-up or down) rounds numbers with more digits than their column keeps."""
    schema = table.metadata.schema
    if isinstance(source, pa.Table):
        raw, fmt = source, "arrow"
    else:
        raw, fmt = read_rows(table.io, source, file_format, schema, stdin)
    if raw.num_rows == 0:
        raise InvalidInput("the input has no rows: nothing to write")
    data = conform_to_schema(raw, schema, ignore_extra_columns=ignore_extra_columns, rounding=rounding,
                             source=input_label(source))
    data = data.combine_chunks()

    written_paths: list[str] = []
    try:
        files = write_data_files(table, data, written_paths)
        result = append_data_files(table, files, summary_properties=summary_properties,
                                   branch=branch, merge=merge)
    except BaseException as e:
        command_files.discard(table.io, written_paths)  # (kept when the commit may have landed)
        if isinstance(e, DoesNotFit):  # a partition value that cannot be stored
            raise InvalidInput(f"{input_label(source)}: {e}") from None
        raise
    return WriteResult(result, data.num_rows, fmt)


def write_data_files(table: Table, data: pa.Table, written_paths: list[str], *,
                     operation_id: str | None = None, task_index: int = 0) -> list[tuple[DataFile, str]]:
    """Write ``data`` (conformed to the table's schema) as Parquet data files of the default
    spec, split by partition and sorted by the sort order; returns each file with its partition
    path. Every path is appended to ``written_paths`` and registered with the command
    (:mod:`icectl.command_files`) before its file is created (the caller removes them if
    anything fails). Files are named ``<task index>-0-<operation id>-<n>.parquet`` (a new
    operation id unless one is given: the tasks of one operation share it). The rows given in
    pieces instead: :class:`icectl.ops.data_sink.DataFileSink`."""
    sink = DataFileSink(table, data_location(table.location, table.metadata.properties), written_paths,
                        operation_id=operation_id, task_index=task_index)
    try:
        sink.write(data, whole=True)
        return sink.close()
    except BaseException:
        sink.abort()
        raise


# -- many inputs: per-file work on an engine -------------------------------------------------------


@dataclass(frozen=True)
class WriteFileTask:
    """One input file of a many-file write, as plain data (an engine task)."""

    source: str
    file_format: str | None
    schema: dict[str, Any]  # Schema.to_json()
    spec: dict[str, Any]  # PartitionSpec.to_json()
    sort_order: dict[str, Any] | None
    properties: dict[str, str]
    table_location: str
    operation_id: str
    task_index: int
    ignore_extra_columns: bool = False
    input_bytes: int = 0
    storage_options: dict[str, Any] | None = None
    rounding: str | None = None


def run_write_task(task: WriteFileTask) -> tuple[list[tuple[DataFile, str]], int, str]:
    """Read one input file, conform it to the schema and write its data files (the engine task
    of :func:`write_files`): ``(files with partition paths, rows read, input format)``. Its own
    files are deleted again if it fails."""
    from icectl.io.files import FileIO
    from icectl.spec.partitioning import PartitionSpec
    from icectl.spec.sorting import SortOrder

    io = FileIO(task.storage_options or None)
    schema = Schema.from_json(task.schema)
    spec = PartitionSpec.from_json(task.spec)
    order = SortOrder.from_json(task.sort_order) if task.sort_order else None
    raw, fmt = read_rows(io, task.source, task.file_format, schema)
    if raw.num_rows == 0:
        return [], 0, fmt
    data = conform_to_schema(raw, schema, ignore_extra_columns=task.ignore_extra_columns,
                             rounding=task.rounding, source=input_label(task.source)).combine_chunks()
    written: list[str] = []
    table = _TaskTable(io, task.table_location, schema, spec, order, task.properties)
    try:
        files = write_data_files(table, data, written, operation_id=task.operation_id,
                                 task_index=task.task_index)
    except BaseException as e:
        command_files.discard(io, written)
        if isinstance(e, DoesNotFit):  # a partition value that cannot be stored
            raise InvalidInput(f"{input_label(task.source)}: {e}") from None
        raise
    return files, data.num_rows, fmt


def write_files(table: Table, sources: Sequence[str], *, engine: Any = None, file_format: str | None = None,
                summary_properties: Mapping[str, str] | None = None, branch: str = MAIN_BRANCH,
                ignore_extra_columns: bool = False, merge: bool | None = None, stdin: Any = None,
                rounding: str | None = None) -> WriteResult:
    """Write the rows of several input files as ONE append snapshot. Each file is read and
    written by a task on ``engine`` (default: the local engine, one worker per CPU); a single
    input is written in this process, as :func:`write_rows`. Refused as a whole (nothing
    committed, every file written removed) when any input fails."""
    if not sources:
        raise InvalidInput("no input files given")
    if len(sources) == 1 or "-" in sources:
        if len(sources) > 1:
            raise InvalidInput("stdin (-) cannot be combined with other input files")
        return write_rows(table, sources[0], file_format=file_format, summary_properties=summary_properties,
                          branch=branch, ignore_extra_columns=ignore_extra_columns, merge=merge, stdin=stdin,
                          rounding=rounding)
    if len(set(sources)) != len(sources):
        dup = next(s for s in sources if sources.count(s) > 1)
        raise InvalidInput(f"input file given twice: {dup}")
    md = table.metadata
    check_rounding(rounding)
    for s in sources:
        _detect_format(s, None, file_format)  # refuse an unknown format before any work starts
        if not table.io.exists(s):
            raise NotFound(f"input file not found: {s}")
    if engine is None:
        from icectl.engines import get_engine

        engine = get_engine("local")
    operation_id = str(_uuid.uuid4())
    base_dir = data_location(table.location, md.properties)
    tasks = [WriteFileTask(
        source=s, file_format=file_format, schema=md.schema.to_json(), spec=md.spec.to_json(),
        sort_order=md.sort_order.to_json() if md.sort_order is not None else None,
        properties=dict(md.properties), table_location=table.location, operation_id=operation_id, task_index=i,
        ignore_extra_columns=ignore_extra_columns, input_bytes=_size_or_zero(table.io, s),
        storage_options=table.io.storage_options or None, rounding=rounding)
        for i, s in enumerate(sources)]
    command_files.register_operation(table.io, base_dir, operation_id)
    try:
        results = engine.map(run_write_task, tasks)
        files = [f for r in results for f in r[0]]
        rows = sum(r[1] for r in results)
        if rows == 0:
            raise InvalidInput("the inputs have no rows: nothing to write")
        formats = sorted({r[2] for r in results})
        result = append_data_files(table, files, summary_properties=summary_properties,
                                   branch=branch, merge=merge)
    except BaseException:
        # every task's files, also of tasks whose results never came back (nothing when the
        # commit landed or may have landed)
        command_files.discard_operation(table.io, base_dir, operation_id)
        raise
    return WriteResult(result, rows, formats[0] if len(formats) == 1 else "mixed")


class _TaskTable:
    """What :func:`write_data_files` needs of a table, rebuilt from a task's plain data."""

    def __init__(self, io: FileIO, location: str, schema: Schema, spec: PartitionSpec, order: SortOrder | None,
                 properties: Mapping[str, str]) -> None:
        from types import SimpleNamespace

        self.io = io
        self.location = location
        self.metadata = SimpleNamespace(schema=schema, spec=spec, sort_order=order,
                                        properties=dict(properties))


def _size_or_zero(io: FileIO, path: str) -> int:
    try:
        return int(io.info(path).size)
    except Exception:  # noqa: BLE001 - only for progress
        return 0


def remove_operation_files(io: FileIO, base_dir: str, operation_id: str) -> None:
    """Delete every file under ``base_dir`` of one operation (its tasks name their files with the
    operation's id), also those of tasks whose results never came back; none when a commit's
    outcome is unknown, and none a commit took (see :mod:`icectl.command_files`)."""
    command_files.register_operation(io, base_dir, operation_id)
    command_files.discard_operation(io, base_dir, operation_id)
