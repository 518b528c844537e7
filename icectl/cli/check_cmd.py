"""`icectl check`."""

from __future__ import annotations

from typing import Annotated

import typer

from icectl.cli.common import JsonOpt, TableArg, WarehouseOpt, handle_errors, table_catalog, table_location
from icectl.cli.output import emit_json, emit_text
from icectl.errors import EXIT_CHECK_FAILED

CHECK_HELP = """Check that TABLE follows the Iceberg spec and that every file its metadata names
exists as recorded. Nothing is written.

Checked: the newest metadata (unique field ids, last-column-id, last-partition-id and
last-sequence-number above what they bound, current schema, default spec and sort order, refs
and parent chains, sequence numbers rising along them, ordered logs, valid known properties);
every manifest list and manifest (exists, recorded length, file and row counts); snapshot
summaries against the entries; sequence numbers of entries; partition tuples against their
spec; position deletes and deletion vectors naming live data files. With --deep also every live
data and delete file: it exists with its recorded size and record count (Parquet footers,
deletion vector blobs).

Prints one problem a line (severity, code, where, message; tab-separated) and a summary line.
Exit code 0 when no error was found (warnings are allowed), 10 when one was.

Examples:

\b
  icectl check ./wh/db/events
  icectl check ./wh/db/events --deep
  icectl check db.events -w ./wh --json
"""


def register(app: typer.Typer) -> None:
    app.command("check", help=CHECK_HELP, no_args_is_help=True)(check)


@handle_errors
def check(
    table: TableArg,
    deep: Annotated[bool, typer.Option(
        "--deep", help="Also check every live data and delete file's size and record count.")] = False,
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    from icectl.ops.check import check_table
    from icectl.ops.maintain.file_removal import default_workers

    from icectl.cli.runner import table_found

    with table_found(table, warehouse):
        found = table_catalog(table, warehouse)
        # a catalog's table is checked at the metadata file its catalog names
        target = table_location(table, warehouse) if found is None else found[0].load(found[1]).metadata_location
        result = check_table(target, deep=deep, workers=default_workers())
    if json_out:
        emit_json(result.to_json())
    else:
        lines = [f"{p.severity}\t{p.code}\t{p.where}\t{p.message}" for p in result.problems]
        c = result.checked
        lines.append(
            f"{'clean' if result.clean else 'problems found'}: {result.errors} error(s), "
            f"{result.warnings} warning(s) in {result.table} ({c['snapshots']} snapshot(s), "
            f"{c['manifest-lists']} manifest list(s), {c['manifests']} manifest(s), "
            f"{c['data-files']} data file(s), {c['delete-files']} delete file(s)"
            + (f", {c['files-verified']} file(s) verified" if deep else "") + ")")
        emit_text("\n".join(lines))
    if not result.clean:
        raise typer.Exit(EXIT_CHECK_FAILED)
