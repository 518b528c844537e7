"""`icectl relocate`."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from icectl.cli.common import JsonOpt, TableArg, WarehouseOpt, handle_errors, load_table
from icectl.cli.output import emit_json, emit_pairs

RELOCATE_HELP = """Copy TABLE to another location with every path its metadata records rewritten, as Spark's rewrite_table_path procedure does.

The metadata versions (from --start-version, exclusive, to --end-version, default the current
one), the manifest lists and manifests they reach and the position delete files those name are
rewritten with --source-prefix (default: the table's location) replaced by NEW_LOCATION; data
files, equality delete files and statistics files are copied as they are. The rewritten files are
written at the new location, the data copied there, and the version files last, so the new table
appears only once it is whole. With --copy-plan FILE nothing is written at the new location: the
rewritten files go to a staging location (--staging, default a new copy-table-staging-<uuid>/
beside FILE) and FILE lists every copy to make, one "source,target" line each (Spark's file
list). With --start-version only what is new since that version is rewritten and copied; without
a copy plan the new location must then hold that version, relocated. The source table is never
written to; a new location that holds a table is refused (exit 4) before anything is written.

Examples:

\b
  icectl relocate ./wh/db/events --to s3://dr-bucket/wh/db/events
  icectl relocate s3://lake/wh/db/events --to s3://lake2/wh/db/events --copy-plan ./events-copies.csv
  icectl relocate ./wh/db/events --to /mnt/dr/db/events --start-version v7.metadata.json --json
"""


def register(app: typer.Typer) -> None:
    app.command("relocate", help=RELOCATE_HELP, no_args_is_help=True)(relocate_cmd)


@handle_errors(returns="icectl.ops.relocate.relocate:RelocateResult")
def relocate_cmd(
    table: TableArg,
    to: Annotated[str, typer.Option(
        "--to", metavar="NEW_LOCATION", show_default=False,
        help="The new location (the prefix that replaces --source-prefix in every path).")],
    source_prefix: Annotated[Optional[str], typer.Option(
        "--source-prefix", metavar="PREFIX",
        help="The prefix of the paths to rewrite (default: the table's location).")] = None,
    start_version: Annotated[Optional[str], typer.Option(
        "--start-version", metavar="VERSION",
        help="Rewrite and copy only what is new since this version (a metadata file name such as "
             "v3.metadata.json, or its number), relocated before.")] = None,
    end_version: Annotated[Optional[str], typer.Option(
        "--end-version", metavar="VERSION",
        help="The newest version to relocate (default: the current one).")] = None,
    copy_plan: Annotated[Optional[str], typer.Option(
        "--copy-plan", metavar="FILE",
        help="Copy nothing of the data: write the rewritten metadata to the staging location and "
             "the list of copies to make to FILE (CSV lines source,target).")] = None,
    staging: Annotated[Optional[str], typer.Option(
        "--staging", metavar="DIR",
        help="With --copy-plan: where the rewritten metadata is written (default: a new "
             "copy-table-staging-<uuid>/ beside FILE).")] = None,
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    from icectl.ops.relocate.relocate import relocate_table

    r = relocate_table(load_table(table, warehouse), to, source_prefix=source_prefix,
                       start_version=start_version, end_version=end_version, copy_plan=copy_plan,
                       staging=staging)
    if json_out:
        emit_json(r.to_json())
        return
    emit_pairs([
        ("location", r.target_location),
        ("latest-version", r.latest_version),
        ("start-version", r.start_version),
        ("rewritten-metadata-files", r.rewritten_metadata_files),
        ("rewritten-manifest-lists", r.rewritten_manifest_lists),
        ("rewritten-manifests", r.rewritten_manifests),
        ("rewritten-delete-files", r.rewritten_delete_files),
        ("files-to-copy", r.copy_plan_entries),
        *([("copied-files", r.copied_files), ("copied-bytes", r.copied_bytes),
           ("skipped-files", r.already_there), ("metadata-file", r.metadata_location)] if r.copied else
          [("staging-location", r.staging_location), ("file-list-location", r.copy_plan)]),
    ])
