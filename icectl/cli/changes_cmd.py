"""`icectl changes`: the rows a table's snapshots inserted and deleted."""

from __future__ import annotations

from typing import Annotated, List, Optional

import typer

from icectl.cli.common import TableArg, WarehouseOpt, handle_errors, load_table
from icectl.cli.output import emit_text
from icectl.cli.rows_out import CountOpt, FormatOpt, LimitOpt, OutputOpt, check_output_options, emit_rows
from icectl.errors import InvalidInput

CHANGES_HELP = """Print the rows TABLE's snapshots inserted and deleted after snapshot --from (exclusive) up to --to (default: the current one), as Spark's create_changelog_view shows them.

Each row has the table's columns (current schema) then _change_type (INSERT or DELETE; with
--key also UPDATE_BEFORE and UPDATE_AFTER), _change_ordinal (0 for the first snapshot of the
range) and _commit_snapshot_id. Snapshots of the range's main line are taken oldest first;
`replace` snapshots (compaction) change no rows and are skipped. Rows of added data files are
inserts, rows of removed data files deletes, and rows that new position deletes, deletion
vectors or equality deletes remove are deletes. Rows a snapshot deleted and inserted unchanged
(copy-on-write rewrites) are left out. --key COLS pairs a delete and an insert of the same key
in one snapshot as an update; --net nets the changes over the whole range (a row inserted then
deleted again disappears). --net and --key cannot be combined (as in Spark).

Formats as for `icectl scan`: table, csv, jsonl, parquet (needs --output).

Examples:

\b
  icectl changes ./wh/db/users --from 123
  icectl changes ./wh/db/users --from 123 --to 456 --key id --format jsonl
  icectl changes db.users -w ./wh --from 123 --net --format csv
"""

def register(app: typer.Typer) -> None:
    app.command("changes", help=CHANGES_HELP, no_args_is_help=True)(changes)


@handle_errors
def changes(
    table: TableArg,
    from_snapshot: Annotated[Optional[int], typer.Option("--from", help="Changes after this snapshot (exclusive; default: from the first snapshot).")] = None,
    to_snapshot: Annotated[Optional[int], typer.Option("--to", help="...up to this snapshot (inclusive; default: the current one).")] = None,
    net: Annotated[bool, typer.Option("--net", help="Net the changes over the whole range.")] = False,
    key: Annotated[Optional[List[str]], typer.Option("--key", "-k", help="Key columns (comma-separated; repeat to add more): pair deletes and inserts of a key as UPDATE_BEFORE/UPDATE_AFTER.")] = None,
    limit: LimitOpt = None,
    fmt: FormatOpt = "table",
    output: OutputOpt = None,
    count: CountOpt = False,
    warehouse: WarehouseOpt = None,
) -> None:
    from icectl.ops.read.changes import read_changes

    check_output_options(fmt, limit, output, count)
    if net and key:
        raise InvalidInput("--net and --key cannot be combined (as in Spark's create_changelog_view)")
    r = read_changes(load_table(table, warehouse), from_snapshot, to_snapshot, net=net,
                     keys=key or None)
    if count:
        n = r.count()
        emit_text(str(n if limit is None else min(n, limit)))
        return
    emit_rows(r, r.batches(limit), fmt, output)
