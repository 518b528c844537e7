"""`icectl compact`."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from icectl.cli.common import (values, DryRunOpt, EngineOpt, EngineProgress, JsonOpt, SparkMasterOpt, TableArg, WarehouseOpt,
                               WorkersOpt, handle_errors, load_table, make_engine)
from icectl.cli.output import emit_json, emit_pairs, emit_table, err

COMPACT_HELP = """Compact the data files of TABLE: rewrite small (or too big) files and files with many deleted rows into files of the target size, as Spark's rewrite_data_files procedure does, committed as one `replace` snapshot.

Files are grouped by partition (files of older partition specs together, rewritten into the
current spec); a group is rewritten when it has at least --min-input-files files, more data
than the target size, or files with --delete-file-threshold delete files or more. Deletes
(position deletes, deletion vectors, equality deletes) are applied while rewriting, and delete
files left with nothing to delete are removed in the same commit. The new files keep the data
sequence number of the snapshot the compaction started from, so equality deletes committed
meanwhile still apply to them. If a concurrent commit removed an input file or added position
deletes for one, the compaction fails with exit 6 and removes the files it wrote.

The work runs on --workers processes of this machine (default: one per CPU), or with --engine
spark in Spark executors (--spark-master URL or ICECTL_SPARK_MASTER; local[N] needs no cluster);
either way, icectl plans and commits. A progress bar (tasks, bytes) shows on a terminal.

With --deletes, the delete files are compacted instead, as Spark's
rewrite_position_delete_files procedure with remove-dangling-deletes: dangling delete files
(nothing left to apply to) are removed, and each partition's small position delete files are
merged (at least --min-input-files of them; --target-file-size defaults to
write.delete.target-file-size-bytes, 64 MB), keeping only positions of live data files.
Deletion vectors (v3) stay one per data file. --filter, --strategy, --sort-order,
--delete-file-threshold, --partial-progress and the z-order options do not apply to --deletes.

--strategy zorder --columns a,b (or --strategy sort --sort-order "zorder(a, b)", as Spark's
procedure takes it) sorts each group by the columns' bits interleaved, as Iceberg's z-order
does: rows close in every column land in the same files, so filters on any of the columns skip
more files. Identity partition columns are ignored (constant within a partition);
--var-length-contribution N takes N bytes of each string or binary value (default 8) and
--max-output-size N cuts the interleaved value to N bytes (default: no limit).

Examples:

\b
  icectl compact ./wh/db/events
  icectl compact ./wh/db/events --filter "day >= '2024-01-01'" --target-file-size 134217728
  icectl compact ./wh/db/events --strategy sort --sort-order "id desc" --dry-run --json
  icectl compact ./wh/db/events --strategy zorder --columns lat,lon
  icectl compact ./wh/db/events --engine spark --spark-master "local[4]"
  icectl compact ./wh/db/events --deletes --min-input-files 2
"""


def register(app: typer.Typer) -> None:
    app.command("compact", help=COMPACT_HELP, no_args_is_help=True)(compact)


@handle_errors(returns=(
    "icectl.ops.maintain.compact:CompactResult",
    "icectl.ops.maintain.compact_deletes:CompactDeletesResult",
))
def compact(
    table: TableArg,
    filter_text: Annotated[Optional[str], typer.Option("--filter", "-f", help="Only files that may hold rows matching this filter (the scan filter grammar).")] = None,
    strategy: Annotated[str, typer.Option("--strategy", metavar="binpack|sort|zorder", autocompletion=values("binpack", "sort", "zorder"), help="binpack (default), sort or zorder.")] = "binpack",
    sort_order: Annotated[Optional[str], typer.Option("--sort-order", help="Sort order for --strategy sort, e.g. \"id desc nulls last, day\" or \"zorder(a, b)\" (default: the table's).")] = None,
    zorder_columns: Annotated[Optional[str], typer.Option("--columns", help="Columns to z-order by for --strategy zorder, comma-separated: \"a,b\".")] = None,
    var_length_contribution: Annotated[Optional[int], typer.Option("--var-length-contribution", help="Bytes of each string or binary value in the z-order value (default 8).")] = None,
    max_output_size: Annotated[Optional[int], typer.Option("--max-output-size", help="Bytes of the interleaved z-order value at most (default: all of them).")] = None,
    target_file_size: Annotated[Optional[int], typer.Option("--target-file-size", help="Target size of output files in bytes (default: write.target-file-size-bytes, 512 MB).")] = None,
    min_input_files: Annotated[int, typer.Option("--min-input-files", help="Rewrite a group when it has at least this many files.")] = 5,
    delete_file_threshold: Annotated[Optional[int], typer.Option("--delete-file-threshold", help="Rewrite files with at least this many delete files (default: no limit).")] = None,
    partial_progress: Annotated[Optional[int], typer.Option("--partial-progress", help="Commit after every N file groups (default: one commit).")] = None,
    branch: Annotated[Optional[str], typer.Option("--branch", help="Compact this branch (default: main).")] = None,
    deletes: Annotated[bool, typer.Option("--deletes", help="Compact delete files instead: merge small position delete files, remove dangling delete files.")] = False,
    engine: EngineOpt = "local",
    workers: WorkersOpt = None,
    spark_master: SparkMasterOpt = None,
    dry_run: DryRunOpt = False,
    json_out: JsonOpt = False,
    warehouse: WarehouseOpt = None,
) -> None:
    from icectl.ops.maintain.compact import DELETE_FILE_THRESHOLD_DEFAULT, CompactOptions, compact_table

    if deletes:
        from icectl.ops.maintain.compact_deletes import refuse_options_not_for_deletes

        refuse_options_not_for_deletes(filter_text, sort_order, delete_file_threshold,
                                       partial_progress, strategy)
        _refuse_zorder_options_for_deletes(zorder_columns, var_length_contribution, max_output_size)
        return _compact_deletes(table, warehouse, target_file_size, min_input_files, branch, engine,
                                workers, spark_master, dry_run, json_out)
    opts = CompactOptions(
        strategy=strategy.strip().lower(), sort_order=sort_order,
        target_file_size=target_file_size, min_input_files=min_input_files,
        delete_file_threshold=DELETE_FILE_THRESHOLD_DEFAULT if delete_file_threshold is None
        else delete_file_threshold,
        partial_progress=partial_progress,
        zorder_columns=None if zorder_columns is None else tuple(c.strip() for c in zorder_columns.split(",")),
        var_length_contribution=var_length_contribution, max_output_size=max_output_size)
    with EngineProgress("rewrite tasks") as progress, \
            make_engine(engine, workers, spark_master, progress) as eng:
        r = compact_table(load_table(table, warehouse), filter_text, opts, engine=eng,
                          branch=branch, dry_run=dry_run)
    for w in r.warnings:
        err(f"warning: {w}")
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


def _refuse_zorder_options_for_deletes(*given: object) -> None:
    from icectl.errors import InvalidInput

    names = ("zorder_columns", "var_length_contribution", "max_output_size")
    for name, value in zip(names, given):
        if value is not None:
            raise InvalidInput("z-order does not apply to compacting delete files", argument=name)


def _compact_deletes(table: str, warehouse: Optional[str], target_file_size: Optional[int], min_input_files: int,
                     branch: Optional[str], engine: str, workers: Optional[int], spark_master: Optional[str],
                     dry_run: bool, json_out: bool) -> None:
    """`icectl compact --deletes`."""
    from icectl.ops.maintain.compact_deletes import compact_deletes

    with EngineProgress("delete rewrite tasks") as progress, \
            make_engine(engine, workers, spark_master, progress) as eng:
        r = compact_deletes(load_table(table, warehouse), engine=eng, branch=branch,
                            target_file_size=target_file_size, min_input_files=min_input_files,
                            dry_run=dry_run)
    if json_out:
        emit_json(r.to_json())
        return
    emit_pairs([
        ("committed", r.committed),
        ("snapshot-id", r.snapshot_id),
        ("branch", r.branch),
        ("file groups", r.groups),
        ("rewritten delete files", len(r.rewritten_delete_files)),
        ("added delete files", len(r.added_delete_files)),
        ("dangling delete files removed", len(r.dangling_delete_files)),
        ("rewritten bytes", r.rewritten_bytes),
        ("added bytes", r.added_bytes),
        ("positions written", r.positions_written),
    ], title="dry run: nothing written" if r.dry_run else None)
