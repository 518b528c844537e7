"""`icectl orphans`."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from icectl.cli.common import (EngineOpt, JsonOpt, Progress, SparkMasterOpt, TableArg, WarehouseOpt,
                               handle_errors, load_table, parse_time_option)
from icectl.cli.expire_cmd import maintenance_engine, naming_overrides, note_skipped, warn_refused
from icectl.cli.output import emit_json, emit_text, err

ORPHANS_HELP = """List files under TABLE's location that the table's metadata does not reference; delete
them only with --delete.

Referenced: every data and delete file of every snapshot, manifests, manifest lists, the current
and logged metadata files, version-hint.text and statistics files. Names starting with _ or .
are skipped (as Iceberg's remove_orphan_files does), and only files last modified before
--older-than count (default 3 days, so files of commits still in flight are never touched).
Nothing outside the table location is listed or deleted: symbolic links are never followed
(they are reported, not deleted), and a table whose metadata records another location (a copy
made with cp -r) is refused (exit 5). Files inside another table's directory (a table nested
in TABLE's location) are not orphans of TABLE: they are kept and reported as skipped.

--delete is refused (exit 5) when gc.enabled=false, and when --older-than is less than 24 hours
ago or in the future, as Iceberg's remove_orphan_files procedure refuses it: a concurrent writer
may still be committing younger files, and deleting them loses its commit. --allow-recent lifts
the 24-hour rule; use it only when no other writer can be at work on the table.

With --engine spark the directories below the first levels of the location are listed, the
manifests read and the orphans deleted in Spark tasks on the session (the active one, or one
started with --spark-master); the rules and the result are the same as with the local engine.

Examples:

\b
  icectl orphans ./wh/db/events
  icectl orphans ./wh/db/events --older-than 7d --delete
  icectl orphans db.events -w ./wh --older-than 2024-06-01T00:00:00Z --json
  icectl orphans ./wh/db/events --older-than 7d --delete --engine spark
"""


def register(app: typer.Typer) -> None:
    app.command("orphans", help=ORPHANS_HELP, no_args_is_help=True)(orphans)


@handle_errors(returns="icectl.ops.maintain.orphans:OrphanResult")
def orphans(
    table: TableArg,
    older_than: Annotated[str, typer.Option(
        "--older-than", help="Only files modified before this timestamp or duration (3d, 36h, "
        "2024-06-01T00:00:00Z, epoch millis).")] = "3d",
    delete: Annotated[bool, typer.Option("--delete", help="Delete the orphan files (default: only list them).")] = False,
    allow_recent: Annotated[bool, typer.Option(
        "--allow-recent", help="With --delete, accept an --older-than less than 24 hours ago (or in "
        "the future). Files a concurrent writer has not committed yet can be deleted, losing its "
        "commit.")] = False,
    workers: Annotated[Optional[int], typer.Option(
        "--workers", min=1, help="Parallel reads and deletes (default: 4 per CPU, at most 32, on "
        "object stores and network filesystems; 1 on a local disk, where more are slower; with "
        "--engine spark: deleting threads per Spark task).", show_default=False)] = None,
    engine: EngineOpt = "local",
    spark_master: SparkMasterOpt = None,
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    from icectl.ops.maintain.file_removal import default_workers
    from icectl.ops.maintain.orphans import delete_orphan_files, find_orphan_files

    cutoff = parse_time_option(older_than, "--older-than")
    tbl = load_table(table, warehouse)
    n_workers = workers or default_workers(tbl)
    with maintenance_engine(engine, spark_master) as eng, Progress() as progress, naming_overrides():
        if delete:
            result = delete_orphan_files(tbl, older_than_ms=cutoff, workers=n_workers, progress=progress,
                                         allow_recent=allow_recent, engine=eng)
        else:
            result = find_orphan_files(tbl, older_than_ms=cutoff, workers=n_workers, progress=progress,
                                       engine=eng)
    for link in result.skipped_links:
        err(f"icectl: warning: not following the symbolic link {link} (links under a table are "
            "neither followed nor deleted)")
    for path, error in result.failed:
        err(f"icectl: warning: could not delete {path}: {error}")
    warn_refused(result.refused)
    note_skipped(result.skipped_other_tables)
    if json_out:
        emit_json(result.to_json())
    else:
        n = len(result.orphan_files)
        if delete:
            err(f"deleted {result.deleted_count} orphan file(s) of {result.location}")
        else:
            err(f"found {n} orphan file(s) in {result.location} (use --delete to remove them)")
        if result.orphan_files:
            emit_text("\n".join(result.orphan_files))
    if result.failed:
        raise typer.Exit(7)
    if result.refused:
        raise typer.Exit(5)
