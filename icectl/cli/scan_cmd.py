"""`icectl scan`: read a table's rows through its deletes, as Iceberg readers do."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from icectl.cli.cache_cmd import NoCacheOpt, apply_no_cache
from icectl.cli.common import TableArg, WarehouseOpt, handle_errors, load_table, parse_time_option
from icectl.cli.output import emit_text
from icectl.cli.rows_out import CountOpt, FormatOpt, LimitOpt, OutputOpt, check_output_options, emit_rows
from icectl.expr.parser import FILTER_HELP

SCAN_HELP = """Read the rows of TABLE: the planned data files with their position deletes,
deletion vectors (v3) and equality deletes applied, then the rows filtered by --filter.

Columns are found by field id, so renamed, dropped, added (null or their initial default) and
promoted columns read as Iceberg readers read them; files without field ids are read through
the table's name mapping (schema.name-mapping.default).

Formats: table (aligned columns; a rich table on a terminal), csv, jsonl (one JSON object per
row, values in the Iceberg JSON single-value form: dates, times and timestamps as ISO text,
decimals as strings, binary as hex, struct fields by their current names, maps as
{"keys": [...], "values": [...]}) and parquet (needs --output).
--with-metadata adds _file, _pos, _spec_id, _partition (when the table has partition fields)
and, on format v3, _row_id and _last_updated_sequence_number. --count prints the number of
rows only; it is answered from the manifests when no delete file or residual filter needs
reading. --from-snapshot A [--to-snapshot B] reads incrementally, as Spark's start-snapshot-id /
end-snapshot-id read: the rows of the data files appended after A up to B (default: the current
snapshot), deletes not applied; refused when a snapshot in the range is not an append.

Examples:

\b
  icectl scan ./wh/db/events --filter "id > 5" --format jsonl
  icectl scan db.events -w ./wh --columns id,ts --limit 10
  icectl scan ./wh/db/events --as-of 2024-05-01T12:00:00 --count
  icectl scan ./wh/db/events --format parquet --output events.parquet
  icectl scan ./wh/db/events --from-snapshot 123 --to-snapshot 456 --format jsonl

\b
""" + FILTER_HELP

def register(app: typer.Typer) -> None:
    app.command("scan", help=SCAN_HELP, no_args_is_help=True)(scan)


@handle_errors
def scan(
    table: TableArg,
    filter_text: Annotated[Optional[str], typer.Option("--filter", "-f", help="Row filter, e.g. \"id > 5 and day = '2024-01-02'\" (grammar below).")] = None,
    columns: Annotated[Optional[str], typer.Option("--columns", help="Columns to read, comma-separated (default: all); a dotted name (info.a) reads the struct with only the named fields.")] = None,
    snapshot: Annotated[Optional[int], typer.Option("--snapshot", help="Read the snapshot with this id (time travel).")] = None,
    ref: Annotated[Optional[str], typer.Option("--ref", help="Read the snapshot a branch or tag points at.")] = None,
    as_of: Annotated[Optional[str], typer.Option("--as-of", help="Read the snapshot current at this time: an ISO timestamp (UTC unless it has a zone), epoch milliseconds or a duration ago (36h).")] = None,
    from_snapshot: Annotated[Optional[int], typer.Option("--from-snapshot", help="Incremental: read only the rows appended after this snapshot (exclusive)...")] = None,
    to_snapshot: Annotated[Optional[int], typer.Option("--to-snapshot", help="...up to this snapshot (inclusive; default: the current one).")] = None,
    limit: LimitOpt = None,
    fmt: FormatOpt = "table",
    output: OutputOpt = None,
    with_metadata: Annotated[bool, typer.Option("--with-metadata", help="Add the metadata columns _file, _pos, _spec_id, _partition (and _row_id, _last_updated_sequence_number on v3).")] = False,
    count: CountOpt = False,
    case_sensitive: Annotated[bool, typer.Option("--case-sensitive", help="Match column names case-sensitively (default: case-insensitive).")] = False,
    warehouse: WarehouseOpt = None,
    no_cache: NoCacheOpt = False,
) -> None:
    from icectl.scan.reader import open_scan

    check_output_options(fmt, limit, output, count)
    apply_no_cache(no_cache)
    t = load_table(table, warehouse)
    s = open_scan(t, filter_text, columns=columns, snapshot_id=snapshot, ref=ref, as_of=None if as_of is None else parse_time_option(as_of, "--as-of"),
                  case_sensitive=case_sensitive, with_metadata=with_metadata,
                  from_snapshot=from_snapshot, to_snapshot=to_snapshot)
    if count:
        n = s.count()
        emit_text(str(n if limit is None else min(n, limit)))
        return
    from icectl.cli.common import Progress

    with Progress() as progress:  # (shown only on a terminal, and only when rows go to a file)
        batches = s.batches(limit=limit, progress=progress.phase("reading data files") if output else None)
        try:
            emit_rows(s, batches, fmt, output)
        finally:
            batches.close()
