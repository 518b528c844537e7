"""`icectl delete`."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from icectl.cli.common import JsonOpt, TableArg, WarehouseOpt, handle_errors, load_table
from icectl.cli.output import emit_json, emit_pairs

DELETE_HELP = """Delete the rows of TABLE that match --filter, as one `delete` snapshot.

Data files whose partition or column metrics prove that every row matches are dropped whole
without being read; files proven not to match are not read. The mode is --mode, else the table
property write.delete.mode, else copy-on-write (Iceberg's default). In copy-on-write mode the
other files holding matching rows are rewritten without them (one overwrite snapshot, no delete
files). In merge-on-read mode the matching rows of the other files are recorded in position
delete files (format v2), one per data file, or in deletion vectors (format v3), merged with
each data file's previous one.

Not supported yet in merge-on-read mode (refused with exit 9, nothing written): row-level
deletes on format v1 tables and, on v3, of data files that still have Parquet position deletes.

Examples:

\b
  icectl delete ./wh/db/events --filter "day < '2024-01-01'"
  icectl delete ./wh/db/events --filter "id in (3, 7)" --dry-run --json
"""


def register(app: typer.Typer) -> None:
    app.command("delete", help=DELETE_HELP, no_args_is_help=True)(delete)


@handle_errors
def delete(
    table: TableArg,
    filter_text: Annotated[str, typer.Option("--filter", "-f", help="Rows to delete, e.g. \"id > 5 and day = '2024-01-02'\" (the scan filter grammar).")],
    mode: Annotated[Optional[str], typer.Option("--mode", help="copy-on-write or merge-on-read (default: the table property write.delete.mode, else copy-on-write).")] = None,
    branch: Annotated[Optional[str], typer.Option("--branch", help="Delete on this branch (default: main).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Report what would be deleted; write nothing.")] = False,
    json_out: JsonOpt = False,
    warehouse: WarehouseOpt = None,
) -> None:
    from icectl.ops.delete_rows import delete_rows

    r = delete_rows(load_table(table, warehouse), filter_text, mode=mode, branch=branch,
                    dry_run=dry_run)
    if json_out:
        emit_json(r.to_json())
        return
    emit_pairs([
        ("committed", r.committed),
        ("snapshot-id", r.snapshot_id),
        ("branch", r.branch),
        ("mode", r.mode),
        ("removed data files", len(r.removed_data_files)),
        ("removed records", r.removed_records),
        ("position delete files", len(r.position_delete_files)),
        ("deleted positions", r.deleted_positions),
    ], title="dry run: nothing written" if r.dry_run else None)
