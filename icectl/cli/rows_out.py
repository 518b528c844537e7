"""Printing rows, for `icectl scan` and `icectl changes`: their output options --format, --output,
--limit and --count (declared once, here), the checks of those options, and the writers."""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Annotated, Any, Callable, Iterator, Optional, TextIO

import typer

from icectl.cli.common import values
from icectl.cli.output import emit_table
from icectl.errors import InvalidInput

if TYPE_CHECKING:
    from icectl.ops.read.changes import ChangeSet
    from icectl.scan.reader import RecordBatches, Scan

    RowSource = Scan | ChangeSet  # what the writers print: a scan or a change set

__all__ = ["FORMATS", "FormatOpt", "OutputOpt", "LimitOpt", "CountOpt", "check_output_options", "emit_rows",
           "write_file_atomically"]

FORMATS = ("table", "csv", "jsonl", "parquet")

FormatOpt = Annotated[str, typer.Option("--format", help="Output format: table, csv, jsonl or parquet.",
                                        autocompletion=values(*FORMATS))]
OutputOpt = Annotated[Optional[str], typer.Option(
    "--output", "-o", help="Write the rows to this file instead of stdout (required for parquet).")]
LimitOpt = Annotated[Optional[int], typer.Option("--limit", help="Print at most this many rows.")]
CountOpt = Annotated[bool, typer.Option("--count", help="Print only the number of rows.")]


def check_output_options(fmt: str, limit: int | None, output: str | None, count: bool) -> None:
    """The row-printing options shared by scan and changes, checked before any work."""
    if fmt not in FORMATS:
        raise InvalidInput(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    if limit is not None and limit < 0:
        raise InvalidInput("--limit must not be negative")
    if fmt == "parquet" and output is None and not count:
        raise InvalidInput("--format parquet needs --output FILE")
    if output is not None and os.path.isdir(output):
        raise InvalidInput(f"--output {output} is a directory")


def emit_rows(s: RowSource, batches: RecordBatches, fmt: str, output: str | None) -> None:
    """Print or write the rows of ``s`` (a scan or a change set) in ``fmt``."""
    if fmt == "parquet":
        assert output is not None
        write_file_atomically(output, lambda path: s.write_parquet(path, batches))
    elif output is not None:
        def write_text(path: str) -> None:
            with open(path, "w", encoding="utf-8", newline="") as fh:
                _write_text(s, batches, fmt, fh)
        write_file_atomically(output, write_text)
    elif fmt == "table":
        names, rows = _columns(s), list(_human_rows(s, batches))
        emit_table(names, rows)
    else:
        _write_text(s, batches, fmt, sys.stdout)
        sys.stdout.flush()


def write_file_atomically(path: str, write: Callable[[str], object]) -> None:
    """Write through a temporary file in the same directory renamed over ``path``: a failed
    write leaves ``path`` as it was and no temporary file."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _columns(s: RowSource) -> list[str]:
    return list(s.arrow_schema().names)


def _internal_rows(s: RowSource, batches: RecordBatches) -> Iterator[tuple[Any, ...]]:
    from icectl.scan.arrow_values import to_internal

    types = s.iceberg_types()
    for b in batches:
        cols = [to_internal(b.column(i), t) for i, t in enumerate(types)]
        yield from zip(*cols)


def _json_rows(s: RowSource, batches: RecordBatches) -> Iterator[dict[str, Any]]:
    from icectl.spec.values import to_json_value

    names, types = _columns(s), s.iceberg_types()
    for row in _internal_rows(s, batches):
        yield {n: to_json_value(t, v, names=True) for n, t, v in zip(names, types, row)}


def _human_rows(s: RowSource, batches: RecordBatches) -> Iterator[list[Any]]:
    for row in _json_rows(s, batches):
        yield [v for v in row.values()]


def _write_text(s: RowSource, batches: RecordBatches, fmt: str, fh: TextIO) -> None:
    if fmt == "table":  # to a file: tab-separated, with a header
        fh.write("\t".join(_columns(s)) + "\n")
        for row in _json_rows(s, batches):
            fh.write("\t".join(_csv_cell(v) for v in row.values()) + "\n")
        return
    if fmt == "jsonl":
        for row in _json_rows(s, batches):
            fh.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")
        return
    fh.write(_csv_line(_columns(s)))
    for row in _json_rows(s, batches):
        fh.write(_csv_line([None if v is None else _csv_cell(v) for v in row.values()]))


_CSV_SPECIAL = frozenset(',"\r\n')
_CSV_NULL_WORDS = frozenset(("", "NULL", "null"))  # what `write` reads as null when unquoted


def _csv_line(cells: list[str | None]) -> str:
    """One CSV record: a null is an empty field, a value is quoted when it holds a comma, a
    quote or a line break, or when unquoted it would read back as a null (``""``, ``"null"``,
    ``"NULL"``), so that ``write`` reads every value back as it was."""
    out = []
    for c in cells:
        if c is None:
            out.append("")
        elif c in _CSV_NULL_WORDS or not _CSV_SPECIAL.isdisjoint(c):
            out.append('"' + c.replace('"', '""') + '"')
        else:
            out.append(c)
    return ",".join(out) + "\n"


def _csv_cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (dict, list)):
        return json.dumps(v, ensure_ascii=False, separators=(",", ":"))
    return str(v)
