"""`icectl upsert`."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from icectl.cli.common import values, JsonOpt, TableArg, WarehouseOpt, handle_errors, load_table
from icectl.cli.output import emit_json, emit_pairs

UPSERT_HELP = """Upsert rows from DATA into TABLE by key: rows with the same key are replaced, new keys added.

One `overwrite` snapshot holds equality delete files for the incoming keys and the new rows
(written as `icectl write` writes them). The deletes apply only to older rows, so the new rows
survive while older rows with those keys disappear - Iceberg's upsert (CDC) pattern, as its
Flink writer commits it. Format v2 or v3; every partition source column must be a key column
(unless the table is unpartitioned). DATA is a Parquet, CSV (with a header row) or JSON-lines
file, or - for stdin. Refused, with nothing written: a key on more than one input row, a key
column that is not a top-level primitive column, rows that do not fit the table.

Examples:

\b
  icectl upsert ./wh/db/users changes.csv --key id
  icectl upsert db.events -w ./wh batch.parquet --key id,region --json
  cat rows.jsonl | icectl upsert ./wh/db/users - --key id --format json --dry-run
"""


def register(app: typer.Typer) -> None:
    app.command("upsert", help=UPSERT_HELP, no_args_is_help=True)(upsert)


@handle_errors
def upsert(
    table: TableArg,
    data: Annotated[str, typer.Argument(
        metavar="DATA", help="Parquet, CSV or JSON-lines file with the rows; - reads stdin.",
        show_default=False)],
    key: Annotated[str, typer.Option("--key", "-k", help="Key columns, comma-separated (e.g. id or id,region).")],
    file_format: Annotated[Optional[str], typer.Option(
        "--format", help="Input format when the name does not say: parquet, csv, json.",
        autocompletion=values("parquet", "csv", "json"))] = None,
    branch: Annotated[Optional[str], typer.Option("--branch", "-b", help="Branch to upsert into (default: main).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Check the input and report; write nothing.")] = False,
    idempotency_key: Annotated[Optional[str], typer.Option(
        "--idempotency-key", metavar="KEY", help="Commit nothing (exit 0) when KEY was already "
        "committed on the branch; recorded in the snapshot summary.")] = None,
    json_out: JsonOpt = False,
    warehouse: WarehouseOpt = None,
) -> None:
    from icectl.ops.upsert import upsert_rows

    tbl = load_table(table, warehouse)
    summary: dict[str, str] | None = None
    if idempotency_key is not None:
        from icectl.cli.append_cmd import idempotent_no_op

        summary = idempotent_no_op(tbl, branch or "main", idempotency_key, {}, json_out)
        if summary is None:
            return
    from icectl.table.producer import AlreadyCommitted

    try:
        r = upsert_rows(tbl, data, key, file_format=file_format, branch=branch, dry_run=dry_run,
                        stdin=sys.stdin.buffer if data == "-" else None, summary_properties=summary)
    except AlreadyCommitted as e:  # a concurrent run committed the key while this one wrote
        from icectl.cli.append_cmd import report_key_committed

        report_key_committed(tbl, branch or "main", e.key, e.snapshot_id, json_out)
        return
    if json_out:
        emit_json(r.to_json())
        return
    emit_pairs([
        ("committed", r.committed),
        ("snapshot-id", r.snapshot_id),
        ("branch", r.branch),
        ("operation", r.summary.get("operation") if r.committed else None),
        ("key columns", ",".join(r.key_columns)),
        ("rows", r.rows),
        ("data files", len(r.data_files)),
        ("equality delete files", len(r.equality_delete_files)),
    ], title="dry run: nothing written" if r.dry_run else None)
