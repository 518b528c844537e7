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

import uuid as _uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import pyarrow as pa

from icectl.errors import InvalidInput, NotFound
from icectl import command_files
from icectl.ops.write.append import AppendResult, append_data_files
from icectl.ops.compute import conform_to_schema
from icectl.ops.compute.fit import DoesNotFit, check_rounding
from icectl.ops.write.data_sink import write_data_files
from icectl.ops.write.row_sources import detect_format, input_label, read_rows
from icectl.spec.manifests import DataFile
from icectl.spec.schema import Schema
from icectl.spec.snapshots import MAIN_BRANCH
from icectl.table.locations import data_location

if TYPE_CHECKING:
    from icectl.io.storage.files import FileIO
    from icectl.table.table import Table
    from icectl.spec.partitioning import PartitionSpec
    from icectl.spec.sorting import SortOrder

__all__ = ["WriteResult", "write_rows", "write_files", "run_write_task", "WriteFileTask"]

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
    progress: Callable[[str, int, int], None] | None = None,
) -> WriteResult:
    """Write the rows of ``source`` (a path/URL, ``-`` for ``stdin``, or an Arrow table) to
    ``table`` as one append snapshot of ``branch`` (see the module docs). ``rounding``
    (half-even, half-up or down) rounds numbers with more digits than their column keeps.
    ``progress(phase, done, total)`` is told how far reading (bytes) and writing (rows) are."""
    schema = table.metadata.schema
    if isinstance(source, pa.Table):
        raw, fmt = source, "arrow"
    else:
        reading = (lambda done, total: progress("reading input bytes", done, total)) if progress else None
        raw, fmt = read_rows(table.io, source, file_format, schema, stdin, progress=reading)
    if raw.num_rows == 0:
        raise InvalidInput("the input has no rows: nothing to write")
    data = conform_to_schema(raw, schema, ignore_extra_columns=ignore_extra_columns, rounding=rounding,
                             source=input_label(source))
    data = data.combine_chunks()

    written_paths: list[str] = []
    try:
        writing = (lambda done, total: progress("writing rows", done, total)) if progress else None
        files = write_data_files(table, data, written_paths, progress=writing)
        result = append_data_files(table, files, summary_properties=summary_properties,
                                   branch=branch, merge=merge)
    except BaseException as e:
        command_files.discard(table.io, written_paths)  # (kept when the commit may have landed)
        if isinstance(e, DoesNotFit):  # a partition value that cannot be stored
            raise InvalidInput(f"{input_label(source)}: {e}") from None
        raise
    return WriteResult(result, data.num_rows, fmt)


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
    from icectl.io.storage.files import FileIO
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
                rounding: str | None = None, progress: Callable[[str, int, int], None] | None = None
                ) -> WriteResult:
    """Write the rows of several input files as ONE append snapshot. Each file is read and
    written by a task on ``engine`` (default: the local engine, one worker per CPU); a single
    input is written in this process, as :func:`write_rows` (which tells ``progress`` how far it
    is; many inputs report through the engine's own progress). Refused as a whole (nothing
    committed, every file written removed) when any input fails."""
    if not sources:
        raise InvalidInput("no input files given")
    if len(sources) == 1 or "-" in sources:
        if len(sources) > 1:
            raise InvalidInput("stdin (-) cannot be combined with other input files")
        return write_rows(table, sources[0], file_format=file_format, summary_properties=summary_properties,
                          branch=branch, ignore_extra_columns=ignore_extra_columns, merge=merge, stdin=stdin,
                          rounding=rounding, progress=progress)
    if len(set(sources)) != len(sources):
        dup = next(s for s in sources if sources.count(s) > 1)
        raise InvalidInput(f"input file given twice: {dup}")
    md = table.metadata
    check_rounding(rounding)
    for s in sources:
        detect_format(s, None, file_format)  # refuse an unknown format before any work starts
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
