"""`icectl plan`: which files a filtered scan reads, and why.

The one declaration of plan's options (names, types, help, defaults). Two others follow it and
are checked against it by tests/cli/test_entry.py: the body ``plan_run.run_plan`` (the same
parameters, the same defaults) and the typer-free fast parser's table ``entry.PLAN_OPTIONS``.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from icectl.cli.cache_cmd import NoCacheOpt
from icectl.cli.common import values, JsonOpt, TableArg, WarehouseOpt, handle_errors
from icectl.expr.parser import FILTER_HELP

PLAN_HELP = """Plan a scan of TABLE: the data files a filter reads, with residual filters and
the delete files that apply, as Iceberg's scan planning (Java newScan().filter(...).planFiles())
computes them.

Manifests are pruned by their partition summaries, files by their partition values and column
metrics (inclusive projection of the filter through every partition transform); the residual
is what remains to check on the rows of each file. --tasks prints the combined read tasks
instead (files split at their split offsets or every --split-size bytes, then bin-packed as
Iceberg does). --explain says, for every manifest and every file, why it was kept or skipped.

Examples:

\b
  icectl plan ./wh/db/events --filter "ts >= '2024-01-02' and ts < '2024-01-03'"
  icectl plan db.events -w ./wh --filter "id in (1, 2, 3)" --explain
  icectl plan ./wh/db/events --as-of 2024-05-01T12:00:00 --tasks --split-size 67108864
  icectl plan ./wh/db/events --from-snapshot 123 --to-snapshot 456 --json

\b
""" + FILTER_HELP


def register(app: typer.Typer) -> None:
    app.command("plan", help=PLAN_HELP, no_args_is_help=True)(plan)


@handle_errors
def plan(
    table: TableArg,
    filter_text: Annotated[Optional[str], typer.Option("--filter", "-f", help="Row filter, e.g. \"id > 5 and day = '2024-01-02'\" (grammar below).")] = None,
    snapshot: Annotated[Optional[int], typer.Option("--snapshot", help="Plan the snapshot with this id (time travel).")] = None,
    ref: Annotated[Optional[str], typer.Option("--ref", help="Plan the snapshot a branch or tag points at.")] = None,
    as_of: Annotated[Optional[str], typer.Option("--as-of", help="Plan the snapshot current at this time: an ISO timestamp (UTC unless it has a zone), epoch milliseconds or a duration ago (36h).")] = None,
    columns: Annotated[Optional[str], typer.Option("--columns", help="Columns the scan reads, comma-separated (checked against the schema; shown in the output).")] = None,
    tasks: Annotated[bool, typer.Option("--tasks", help="Print the combined read tasks instead of the files.")] = False,
    explain: Annotated[bool, typer.Option("--explain", help="Say for every manifest and file why it was kept or skipped.")] = False,
    case_sensitive: Annotated[bool, typer.Option("--case-sensitive", help="Match column names case-sensitively (default: case-insensitive).")] = False,
    from_snapshot: Annotated[Optional[int], typer.Option("--from-snapshot", help="Incremental: plan only files appended after this snapshot (exclusive)...")] = None,
    to_snapshot: Annotated[Optional[int], typer.Option("--to-snapshot", help="...up to this snapshot (inclusive; default: the current one).")] = None,
    split_size: Annotated[Optional[int], typer.Option("--split-size", help="Target split size in bytes (default: read.split.target-size, 128 MiB).")] = None,
    open_file_cost: Annotated[Optional[int], typer.Option("--open-file-cost", help="Weight of opening a file in bytes (default: read.split.open-file-cost, 4 MiB).")] = None,
    lookback: Annotated[Optional[int], typer.Option("--lookback", help="Open bins considered when packing (default: read.split.planning-lookback, 10).")] = None,
    warehouse: WarehouseOpt = None,
    workers: Annotated[Optional[int], typer.Option("--workers", help="Processes decoding manifests the cache does not hold and rendering a large --json plan (default: the machine's cores).")] = None,
    out_format: Annotated[Optional[str], typer.Option("--format", help="Output: text, json (as --json) or jsonl (one planned file per line, written as planned).", autocompletion=values("text", "json", "jsonl"))] = None,
    summary: Annotated[bool, typer.Option("--summary", help="Print counts only (files, records, bytes, delete files, tasks), no per-file output.")] = False,
    no_cache: NoCacheOpt = False,
    json_out: JsonOpt = False,
) -> None:
    options = dict(locals())  # the parameters above, as run_plan takes them (tests/cli/test_entry.py)
    from icectl.cli.plan_run import run_plan

    run_plan(**options)
