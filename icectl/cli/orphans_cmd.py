"""`icectl orphans`."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from icectl.cli.common import JsonOpt, Progress, TableArg, WarehouseOpt, handle_errors, load_table, parse_time_option
from icectl.cli.output import emit_json, emit_text, err

ORPHANS_HELP = """List files under TABLE's location that the table's metadata does not reference; delete
them only with --delete.

Referenced: every data and delete file of every snapshot, manifests, manifest lists, the current
and logged metadata files, version-hint.text and statistics files. Names starting with _ or .
are skipped (as Iceberg's remove_orphan_files does), and only files last modified before
--older-than count (default 3 days, so files of commits still in flight are never touched).
Nothing outside the table location is listed or deleted.

Examples:

\b
  icectl orphans ./wh/db/events
  icectl orphans ./wh/db/events --older-than 7d --delete
  icectl orphans db.events -w ./wh --older-than 2024-06-01T00:00:00Z --json
"""


def register(app: typer.Typer) -> None:
    app.command("orphans", help=ORPHANS_HELP, no_args_is_help=True)(orphans)


@handle_errors
def orphans(
    table: TableArg,
    older_than: Annotated[str, typer.Option(
        "--older-than", help="Only files modified before this timestamp or duration (3d, 36h, "
        "2024-06-01T00:00:00Z, epoch millis).")] = "3d",
    delete: Annotated[bool, typer.Option("--delete", help="Delete the orphan files (default: only list them).")] = False,
    workers: Annotated[Optional[int], typer.Option(
        "--workers", min=1, help="Parallel reads and deletes (default: 4 per CPU, at most 32).",
        show_default=False)] = None,
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    from icectl.ops.expire import default_workers
    from icectl.ops.orphans import delete_orphan_files, find_orphan_files

    cutoff = parse_time_option(older_than, "--older-than")
    tbl = load_table(table, warehouse)
    op = delete_orphan_files if delete else find_orphan_files
    with Progress() as progress:
        result = op(tbl, older_than_ms=cutoff, workers=workers or default_workers(), progress=progress)
    for path, error in result.failed:
        err(f"icectl: warning: could not delete {path}: {error}")
    if json_out:
        emit_json(result.to_json())
    else:
        n = len(result.orphan_files)
        if delete:
            err(f"deleted {n - len(result.failed)} orphan file(s) of {result.location}")
        else:
            err(f"found {n} orphan file(s) in {result.location} (use --delete to remove them)")
        if result.orphan_files:
            emit_text("\n".join(result.orphan_files))
    if result.failed:
        raise typer.Exit(7)
