"""`icectl stats partitions`: write and register a snapshot's partition statistics file."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from icectl.cli.common import JsonOpt, TableArg, WarehouseOpt, handle_errors, load_table
from icectl.cli.output import emit_json, emit_pairs, err

stats_app = typer.Typer(
    help="""Compute table statistics and register them in the table's metadata.""",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@stats_app.command("partitions", no_args_is_help=True, help="""Write the partition statistics file of a snapshot (the current one by default): one row
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


def register(root: typer.Typer) -> None:
    root.add_typer(stats_app, name="stats")
