"""`icectl upsert`."""

from __future__ import annotations

import sys
from typing import Annotated, List, Optional

import typer

from icectl.cli.common import values, JsonOpt, TableArg, WapIdOpt, WarehouseOpt, handle_errors, load_table, note_staged, stage_wap_id
from icectl.cli.output import emit_json, emit_pairs
from icectl.cli.write_cmd import RoundOpt

UPSERT_HELP = """Upsert rows from DATA into TABLE by key: rows with the same key are replaced, new keys added.

One `overwrite` snapshot holds the new rows (written as `icectl write` writes them) and the
deletes of the older rows with those keys. When the key columns include every partition source
column (or the table is unpartitioned) the deletes are equality delete files for the incoming
keys (Iceberg's upsert/CDC pattern, as its Flink writer commits it); otherwise the rows holding
the keys are found and their positions deleted - position delete files (v2) or deletion vectors
(v3), as Spark's merge-on-read MERGE writes them. Keys follow SQL MERGE rules: a null key
matches no row. Format v2 or v3. DATA is a Parquet, CSV (with a header row) or JSON-lines file,
or - for stdin. Refused, with nothing written: a key on more than one input row, a key column
that is not a top-level primitive column, rows that do not fit the table (a value that does
not fit its column exactly is refused as `icectl write` refuses it; --round rounds it).

Examples:

\b
  icectl upsert ./wh/db/users changes.csv --key id
  icectl upsert db.events -w ./wh batch.parquet --key id,region --json
  icectl upsert ./wh/db/events batch.parquet --key event_id --key source
  cat rows.jsonl | icectl upsert ./wh/db/users - --key id --format json --dry-run
"""


def register(app: typer.Typer) -> None:
    app.command("upsert", help=UPSERT_HELP, no_args_is_help=True)(upsert)


@handle_errors(returns="icectl.ops.delete.upsert:UpsertResult")
def upsert(
    table: TableArg,
    data: Annotated[str, typer.Argument(
        metavar="DATA", help="Parquet, CSV or JSON-lines file with the rows; - reads stdin.",
        show_default=False)],
    key: Annotated[List[str], typer.Option("--key", "-k", help="Key columns, comma-separated (e.g. id or id,region); repeat to add more.")],
    file_format: Annotated[Optional[str], typer.Option(
        "--format", help="Input format when the name does not say: parquet, csv, json.",
        autocompletion=values("parquet", "csv", "json"))] = None,
    branch: Annotated[Optional[str], typer.Option("--branch", "-b", help="Branch to upsert into (default: main).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Check the input and report; write nothing.")] = False,
    rounding: RoundOpt = None,
    idempotency_key: Annotated[Optional[str], typer.Option(
        "--idempotency-key", metavar="KEY", help="Commit nothing (exit 0) when KEY was already "
        "committed on the branch; recorded in the snapshot summary.")] = None,
    wap_id: WapIdOpt = None,
    json_out: JsonOpt = False,
    warehouse: WarehouseOpt = None,
) -> None:
    from icectl.ops.delete.upsert import upsert_rows

    tbl = load_table(table, warehouse)
    stage_wap_id(tbl, wap_id, idempotency_key)
    summary: dict[str, str] | None = None
    if idempotency_key is not None:
        from icectl.cli.append_cmd import idempotent_no_op

        summary = idempotent_no_op(tbl, branch or "main", idempotency_key, {}, json_out)
        if summary is None:
            return
    from icectl.table.commit.idempotency import AlreadyCommitted

    try:
        r = upsert_rows(tbl, data, key, file_format=file_format, branch=branch, dry_run=dry_run,
                        stdin=sys.stdin.buffer if data == "-" else None, rounding=rounding,
                        summary_properties=summary)
    except AlreadyCommitted as e:  # a concurrent run committed the key while this one wrote
        from icectl.cli.append_cmd import report_key_committed

        report_key_committed(tbl, branch or "main", e.key, e.snapshot_id, json_out)
        return
    note_staged(tbl, r.snapshot_id if r.committed else None)
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
        ("method", r.method),
        ("equality delete files", len(r.equality_delete_files)),
        ("position delete files", len(r.position_delete_files)),
        ("replaced rows", r.replaced_rows),
    ], title="dry run: nothing written" if r.dry_run else None)
