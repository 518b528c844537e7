"""`icectl write`."""

from __future__ import annotations

import sys
from typing import Annotated, List, Optional

import typer

from icectl.cli.common import (values, EngineOpt, EngineProgress, Progress, JsonOpt, SparkMasterOpt, TableArg, WarehouseOpt, WorkersOpt,
                               emit_snapshot_result, handle_errors, load_table, make_engine, parse_key_values)
from icectl.cli.output import emit_json, err

WRITE_HELP = """Write rows from DATA into TABLE as Parquet data files, committed as one new snapshot.

DATA is a Parquet, CSV (with a header row) or JSON-lines file, or - for stdin; the format comes
from the file name or --format. Several DATA files are read and written in parallel on the
engine (--engine local, one worker process per CPU unless --workers says otherwise; or --engine
spark) and committed together as one snapshot; a single file is written in this process. Columns are matched to the table's by name (exact, else
case-insensitive) and cast to the table's types; missing optional columns become nulls. Refused,
with nothing committed and no file left behind: a missing required column, a null in a required
column, an input column the table lacks (unless --ignore-extra-columns), a value that does not
fit its column exactly (exit code 2, naming the file, the row and the column): 2.999 or 12.555
into decimal(12,2), 2.5 or 3000000000 into int. Numbers are rounded only with --round
(half-even, half-up: ties away from zero, or down: toward zero); float and double columns take
the nearest value of their type. Text for binary and fixed columns is hex (0aff: the bytes 0a
ff); CSV cells of struct, list and map columns are JSON text; what scan --format jsonl or csv
prints is read back as the same values. Rows are split by the partition spec, sorted by the table's sort order and
written under <location>/data/<partition path>/ with the table's Parquet settings
(write.parquet.compression-codec, write.parquet.row-group-size-bytes,
write.target-file-size-bytes).

Examples:

\b
  icectl write ./wh/db/events events.csv
  icectl write db.events -w ./wh rows.parquet --summary pipeline=nightly --json
  cat rows.jsonl | icectl write ./wh/db/events - --format json
  icectl write ./wh/db/events rows.csv --branch staging --ignore-extra-columns
  icectl write ./wh/db/events day1.parquet day2.parquet day3.parquet --workers 2
  icectl write ./wh/db/prices prices.json --round half-even
"""

RoundOpt = Annotated[Optional[str], typer.Option(
    "--round", metavar="half-even|half-up|down", autocompletion=values("half-even", "half-up", "down"),
    help="Round numbers with more digits than their column keeps (decimal scale, integers) instead "
         "of refusing them: half-even, half-up (ties away from zero) or down (toward zero).")]


def register(app: typer.Typer) -> None:
    app.command("write", help=WRITE_HELP, no_args_is_help=True)(write)


@handle_errors(returns="icectl.ops.write.rows:WriteResult")
def write(
    table: TableArg,
    data: Annotated[List[str], typer.Argument(
        metavar="DATA...", help="Parquet, CSV or JSON-lines files with the rows; - reads stdin.",
        show_default=False)],
    file_format: Annotated[Optional[str], typer.Option(
        "--format", help="Input format when the name does not say: parquet, csv, json.",
        autocompletion=values("parquet", "csv", "json"))] = None,
    summary: Annotated[Optional[List[str]], typer.Option(
        "--summary", help="Extra snapshot summary entry KEY=VALUE (repeatable).")] = None,
    branch: Annotated[str, typer.Option("--branch", "-b", help="Branch to write to.")] = "main",
    ignore_extra_columns: Annotated[bool, typer.Option(
        "--ignore-extra-columns", help="Drop input columns the table does not have instead of "
        "refusing the input.")] = False,
    rounding: RoundOpt = None,
    idempotency_key: Annotated[Optional[str], typer.Option(
        "--idempotency-key", metavar="KEY", help="Commit nothing (exit 0) when KEY was already "
        "committed on the branch; recorded in the snapshot summary.")] = None,
    engine: EngineOpt = "local",
    workers: WorkersOpt = None,
    spark_master: SparkMasterOpt = None,
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    from icectl.ops.compute.fit import check_rounding
    from icectl.ops.write.rows import write_files

    from icectl.ops.write.append import check_summary_properties

    extras = parse_key_values(summary, "--summary")
    check_summary_properties(extras)
    check_rounding(rounding)  # before any work starts
    tbl = load_table(table, warehouse)
    if idempotency_key is not None:
        from icectl.cli.append_cmd import idempotent_no_op

        extras = idempotent_no_op(tbl, branch, idempotency_key, extras, json_out)
        if extras is None:
            return
    from icectl.table.commit.idempotency import AlreadyCommitted

    try:
        with EngineProgress("input files") as progress, Progress() as one_file, \
                make_engine(engine, workers, spark_master, progress) as eng:
            result = write_files(
                tbl, data, engine=eng, file_format=file_format, summary_properties=extras, branch=branch,
                ignore_extra_columns=ignore_extra_columns, stdin=sys.stdin.buffer if "-" in data else None,
                rounding=rounding, progress=one_file if not json_out else None,
            )
    except AlreadyCommitted as e:  # a concurrent run committed the key while this one wrote
        from icectl.cli.append_cmd import report_key_committed

        report_key_committed(tbl, branch, e.key, e.snapshot_id, json_out)
        return
    a = result.append
    if json_out:
        emit_json(result.to_json())
        return
    err(f"wrote {result.rows_read} row(s) in {a.added_files} file(s) to {a.location} ({a.branch})")
    emit_snapshot_result(a, [("rows-written", result.rows_read), ("added-files", a.added_files),
                             ("added-files-size", a.added_files_size)])
    if len(a.files) <= 20:
        for f in a.files:
            err(f"  {f['file-path']} ({f['record-count']} row(s))")
