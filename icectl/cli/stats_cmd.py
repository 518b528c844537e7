"""`icectl stats compute|partitions`: table statistics files, as Spark's compute_table_stats and
compute_partition_stats procedures write them."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from icectl.cli.common import DryRunOpt, JsonOpt, TableArg, WarehouseOpt, handle_errors, load_table
from icectl.cli.output import emit_json, emit_pairs, emit_table, err

app = typer.Typer(
    help="""Compute table statistics files and register them in the table's metadata, as Spark's compute_table_stats and compute_partition_stats procedures do.

compute: distinct-value sketches of columns (Puffin); partitions: per-partition file, record
and delete counts (Parquet).

Examples:

\b
  icectl stats compute ./wh/db/events
  icectl stats compute db.events -w ./wh --columns id,category --json
  icectl stats partitions ./wh/db/events
""",
    no_args_is_help=True, rich_markup_mode=None)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="stats")


COMPUTE_HELP = """Write a Puffin statistics file of distinct-value sketches for TABLE's snapshot and register it.

As Spark's compute_table_stats procedure: one apache-datasketches-theta-v1 blob per column
(a DataSketches compact theta sketch, seed 9001, nominal size 4096: exact up to 4096 distinct
values, about 1.6% relative standard error beyond), with the estimate as the blob property ndv, in
metadata/<snapshot-id>-<uuid>.stats; the table's `statistics` then names the file for the
snapshot (replacing any it had), committed as a metadata-only change. Spark reads the ndv
values for its cost-based optimizer (spark.sql.cbo.enabled). Columns: every top-level column of
a primitive type, or those --columns names (nested struct fields by dotted names). The rows are
read as Spark reads them (deletes applied). A table with no snapshot has nothing to compute.

Examples:

\b
  icectl stats compute ./wh/db/events
  icectl stats compute ./wh/db/events --columns id,category --snapshot-id 3051729675574597004
  icectl stats compute db.events -w ./wh --dry-run --json
"""


@app.command("compute", help=COMPUTE_HELP, no_args_is_help=True)
@handle_errors(returns="icectl.ops.stats.theta:ComputeStatsResult")
def stats_compute(
    table: TableArg,
    columns: Annotated[Optional[str], typer.Option(
        "--columns", metavar="A,B", help="Columns to compute statistics of (default: every top-level primitive column).",
        show_default=False)] = None,
    snapshot_id: Annotated[Optional[int], typer.Option(
        "--snapshot-id", help="Snapshot to compute statistics of (default: the current one).",
        show_default=False)] = None,
    dry_run: DryRunOpt = False,
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    from icectl.errors import InvalidInput
    from icectl.ops.stats.theta import compute_table_stats

    names = None
    if columns is not None:
        names = [c.strip() for c in columns.split(",") if c.strip()]
        if not names:
            raise InvalidInput("give at least one column name", argument="columns")
    r = compute_table_stats(load_table(table, warehouse), names, snapshot_id=snapshot_id,
                            dry_run=dry_run)
    for w in r.warnings:
        err(f"icectl: warning: {w}")
    if json_out:
        emit_json(r.to_json())
        return
    if r.snapshot_id is None:
        err("nothing to compute: the table has no snapshot")
        return
    emit_pairs([("committed", r.committed), ("snapshot-id", r.snapshot_id),
                ("statistics-path", r.statistics_path if r.statistics_path else "(dry run: not written)"),
                ("file-size-in-bytes", r.file_size_in_bytes),
                ("metadata-file", r.metadata_file)],
               title="dry run: nothing written" if r.dry_run else None)
    emit_table(["field-id", "column", "type", "ndv", "exact"],
               [[c.field_id, c.name, c.type, c.ndv, c.exact] for c in r.columns])


@app.command("partitions", no_args_is_help=True, help="""Write the partition statistics file of a snapshot (the current one by default): one row
per partition with its data file, record, size and delete counts and its last update, as
Parquet in the table's metadata directory, registered in the table's partition-statistics
(one commit). Like Spark's compute_partition_stats procedure: incremental from the statistics
of an ancestor snapshot when there are some; a snapshot that already has them is left as it
is. `icectl inspect partition-statistics` shows the rows.

Examples:

  icectl stats partitions ./wh/db/events
  icectl stats partitions ./wh/db/events --snapshot-id 4348573049 --json
""")
@handle_errors(returns="icectl.ops.stats.partition_stats:PartitionStatsResult")
def stats_partitions(
    table: TableArg,
    snapshot_id: Annotated[Optional[int], typer.Option("--snapshot-id", help="Snapshot id (default: the current snapshot).")] = None,
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    from icectl.ops.stats.partition_stats import write_partition_stats

    result = write_partition_stats(load_table(table, warehouse), snapshot_id)
    if json_out:
        emit_json(result.to_json())
        return
    for w in result.warnings:
        err(f"warning: {w}")
    if result.committed:
        err(f"committed partition statistics of snapshot {result.snapshot_id}")
    if result.statistics_path is not None:
        emit_pairs([("snapshot-id", result.snapshot_id), ("statistics-path", result.statistics_path),
                    ("file-size-in-bytes", result.file_size_in_bytes),
                    ("partitions", "" if result.partition_count is None else result.partition_count),
                    ("incremental-from", "" if result.incremental_from_snapshot_id is None
                     else result.incremental_from_snapshot_id)])
