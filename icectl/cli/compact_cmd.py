"""`icectl compact`."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from icectl.cli.common import (
    DryRunOpt,
    JsonOpt,
    Progress,
    TableArg,
    WarehouseOpt,
    handle_errors,
    load_table,
)
from icectl.cli.output import emit_json, emit_pairs, emit_table

COMPACT_HELP = """Compact the data files of TABLE: rewrite small (or too big) files and files with many deleted rows into files of the target size, as Spark's rewrite_data_files procedure does, committed as one `replace` snapshot.

Files are grouped by partition (files of older partition specs together, rewritten into the
current spec); a group is rewritten when it has at least --min-input-files files, more data
than the target size, or files with --delete-file-threshold delete files or more. Deletes
(position deletes, deletion vectors, equality deletes) are applied while rewriting, and delete
files left with nothing to delete are removed in the same commit. The new files keep the data
sequence number of the snapshot the compaction started from, so equality deletes committed
meanwhile still apply to them. If a concurrent commit removed an input file or added position
deletes for one, the compaction fails with exit 6 and removes the files it wrote.

The work runs on --workers processes of this machine (default: one per CPU).

Examples:

\b
  icectl compact ./wh/db/events
  icectl compact ./wh/db/events --filter "day >= '2024-01-01'" --target-file-size 134217728
  icectl compact ./wh/db/events --strategy sort --sort-order "id desc" --dry-run --json
"""


def register(app: typer.Typer) -> None:
    app.command("compact", help=COMPACT_HELP, no_args_is_help=True)(compact)


@handle_errors
def compact(
    table: TableArg,
    filter_text: Annotated[Optional[str], typer.Option("--filter", "-f", help="Only files that may hold rows matching this filter (the scan filter grammar).")] = None,
    strategy: Annotated[str, typer.Option("--strategy", help="binpack (default) or sort.")] = "binpack",
    sort_order: Annotated[Optional[str], typer.Option("--sort-order", help="Sort order for --strategy sort, e.g. \"id desc nulls last, day\" (default: the table's).")] = None,
    target_file_size: Annotated[Optional[int], typer.Option("--target-file-size", help="Target size of output files in bytes (default: write.target-file-size-bytes, 512 MB).")] = None,
    min_input_files: Annotated[int, typer.Option("--min-input-files", help="Rewrite a group when it has at least this many files.")] = 5,
    delete_file_threshold: Annotated[Optional[int], typer.Option("--delete-file-threshold", help="Rewrite files with at least this many delete files (default: no limit).")] = None,
    partial_progress: Annotated[Optional[int], typer.Option("--partial-progress", help="Commit after every N file groups (default: one commit).")] = None,
    branch: Annotated[Optional[str], typer.Option("--branch", help="Compact this branch (default: main).")] = None,
    engine: Annotated[str, typer.Option("--engine", help="Where the work runs: local (worker processes on this machine).")] = "local",
    workers: Annotated[Optional[int], typer.Option("--workers", help="Worker processes of the local engine (default: one per CPU).")] = None,
    dry_run: DryRunOpt = False,
    json_out: JsonOpt = False,
    warehouse: WarehouseOpt = None,
) -> None:
    from icectl.errors import InvalidInput
    from icectl.ops.compact import DELETE_FILE_THRESHOLD_DEFAULT, CompactOptions, compact_table

    if workers is not None and workers < 1:
        raise InvalidInput(f"--workers must be at least 1 (got {workers})")
    opts = CompactOptions(
        strategy=strategy.strip().lower(), sort_order=sort_order,
        target_file_size=target_file_size, min_input_files=min_input_files,
        delete_file_threshold=DELETE_FILE_THRESHOLD_DEFAULT if delete_file_threshold is None
        else delete_file_threshold,
        partial_progress=partial_progress)
    with Progress() as progress:  # file groups committed, on a terminal only
        r = compact_table(load_table(table, warehouse), filter_text, opts, engine=engine,
                          workers=workers, branch=branch, dry_run=dry_run,
                          progress=progress.phase("file groups"))
    if json_out:
        emit_json(r.to_json())
        return
    j = r.to_json()
    emit_pairs([
        ("committed", r.committed),
        ("snapshot-ids", ", ".join(str(s) for s in r.snapshot_ids) or None),
        ("branch", r.branch),
        ("strategy", r.strategy),
        ("file groups", len(r.groups)),
        ("rewritten data files", j["rewritten-data-files-count"]),
        ("added data files", r.added_data_files),
        ("rewritten bytes", j["rewritten-bytes-count"]),
        ("added bytes", r.added_bytes),
        ("removed delete files", r.removed_delete_files),
    ], title="dry run: nothing written" if r.dry_run else None)
    if r.dry_run and r.groups:
        emit_table(["group", "partition", "input files", "input bytes", "tasks"],
                   [[g.index, "(older specs)" if g.partition is None else g.partition_path or "(none)",
                     len(g.input_files), g.input_bytes, len(g.tasks)] for g in r.groups])
