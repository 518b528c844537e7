"""`icectl migrate` and `icectl snapshot-table`: a Hive-style Parquet directory as a table."""

from __future__ import annotations

from typing import Annotated, Any, List, Optional

import typer

from icectl.cli.common import (
    JsonOpt,
    Progress,
    StorageOptionOpt,
    TableArg,
    WarehouseOpt,
    apply_storage_options,
    handle_errors,
    parse_key_values,
    table_catalog,
    table_location,
    values,
)
from icectl.cli.output import emit_json, emit_pairs, err
from icectl.errors import InvalidInput

_LAYOUT = """The directory holds Parquet files under name=value partition directories, possibly nested
(year=2024/day=2024-01-02/part-0.parquet), as Hive and Spark write them: values %XX-escaped,
__HIVE_DEFAULT_PARTITION__ for null. Hidden files and directories (names starting with . or _,
e.g. _SUCCESS, _temporary/) and files that are not Parquet are skipped and named in the result.

The schema is the union of the files' columns (every column optional, as Spark reads Parquet; a
type that differs between files takes the wider one, int to long, float to double), with the
partition keys the files lack added as columns at the end, typed as Spark's partition discovery
infers them (int, long, decimal, double, timestamp, date, else string; timestamps in UTC). The
partition spec is identity on every key. Files without Parquet field ids are read through the
name mapping (schema.name-mapping.default, set on the table); files with field ids keep them.
Each file's footer gives its metrics; its partition value is checked against the footer's
statistics when the file holds the column too. A mismatch, a file that does not fit the schema,
or mixed directory layouts refuse the command with nothing written."""

MIGRATE_HELP = f"""Make the Hive-style Parquet directory DIR an Iceberg table in place, as Spark's migrate procedure does (no data is copied).

The table's location is DIR: its metadata is written to DIR/metadata, the files stay where they
are and belong to the table from then on (expire and orphans may delete them as the table's own;
files the migration skipped that are not hidden count as orphans). The table gets the property
migrated=true. Refused when DIR already is, holds or lies inside a table.

{_LAYOUT}

Examples:

\b
  icectl migrate /data/hive/events
  icectl migrate s3://bucket/warehouse/events --property write.parquet.compression-codec=zstd --json
"""

SNAPSHOT_HELP = f"""Create the table TABLE referencing the files of the Hive-style Parquet directory DIR, leaving DIR untouched, as Spark's snapshot procedure does.

The new table lives at TABLE (a location, or DB.TABLE with --warehouse or in a --catalog); its
snapshot names DIR's files where they are. It gets gc.enabled=false and snapshot=true, as Java's
snapshot tables do, so expire, orphans --delete, maintain and drop --purge never delete a file
of DIR; writes to TABLE go under TABLE's own location. TABLE must lie outside DIR (and DIR
outside TABLE).

{_LAYOUT}

Examples:

\b
  icectl snapshot-table /data/hive/events ./wh/db/events_trial
  icectl snapshot-table /data/hive/events db.events_trial -w ./wh --json
"""


def register(app: typer.Typer) -> None:
    app.command("migrate", help=MIGRATE_HELP, no_args_is_help=True)(migrate)
    app.command("snapshot-table", help=SNAPSHOT_HELP, no_args_is_help=True)(snapshot_table)


DirArg = Annotated[str, typer.Argument(
    metavar="DIR", help="The Hive-style directory of Parquet files.", show_default=False)]
PropertyOpt = Annotated[Optional[List[str]], typer.Option(
    "--property", "-P", help="Table property KEY=VALUE of the new table (repeatable).")]
FormatVersionOpt = Annotated[int, typer.Option(
    "--format-version", metavar="1|2|3", autocompletion=values("1", "2", "3"),
    help="Iceberg format version of the new table: 1, 2 or 3.")]
SummaryOpt = Annotated[Optional[List[str]], typer.Option(
    "--summary", help="Extra snapshot summary entry KEY=VALUE (repeatable).")]
WorkersOpt = Annotated[Optional[int], typer.Option(
    "--workers", min=1, help="Footers read in parallel (default: 4 per CPU, at most 32).")]


def _options(prop: Optional[List[str]], summary: Optional[List[str]]) -> tuple[dict[str, str], dict[str, str]]:
    from icectl.ops.write.append import check_summary_properties

    props = parse_key_values(prop)
    if "format-version" in props:
        raise InvalidInput("set the format version with --format-version, not as a property")
    summaries = parse_key_values(summary, "--summary")
    check_summary_properties(summaries)
    return props, summaries


@handle_errors(returns="icectl.ops.write.adopt:AdoptResult")
def migrate(
    directory: DirArg,
    prop: PropertyOpt = None,
    format_version: FormatVersionOpt = 2,
    summary: SummaryOpt = None,
    workers: WorkersOpt = None,
    storage_options: StorageOptionOpt = None,
    json_out: JsonOpt = False,
) -> None:
    from icectl.ops.write.adopt import migrate_directory

    apply_storage_options(storage_options)
    props, summaries = _options(prop, summary)
    with Progress() as progress:
        result = migrate_directory(directory, properties=props, format_version=format_version,
                                   summary_properties=summaries, max_workers=workers,
                                   progress=progress.phase("reading footers"))
    _report(result, json_out, f"migrated {result.source} in place")


@handle_errors(returns="icectl.ops.write.adopt:AdoptResult")
def snapshot_table(
    directory: DirArg,
    table: TableArg,
    prop: PropertyOpt = None,
    format_version: FormatVersionOpt = 2,
    summary: SummaryOpt = None,
    workers: WorkersOpt = None,
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    from icectl.ops.write.adopt import snapshot_directory

    props, summaries = _options(prop, summary)
    found = table_catalog(table, warehouse)
    with Progress() as progress:
        result = snapshot_directory(
            directory, table_location(table, warehouse) if found is None else None,
            catalog=found[0] if found else None, identifier=found[1] if found else None,
            properties=props, format_version=format_version, summary_properties=summaries,
            max_workers=workers, progress=progress.phase("reading footers"))
    _report(result, json_out, f"created the snapshot table {result.append.location} of {result.source}")


def _report(result: Any, json_out: bool, said: str) -> None:
    for path, reason in result.ignored_files:
        err(f"icectl: note: skipped {path}: {reason}")
    if json_out:
        emit_json(result.to_json())
        return
    a = result.append
    err(f"{said}: {a.added_files} file(s), {a.added_records} row(s)")
    emit_pairs([("location", a.location), ("source", result.source), ("schema", result.schema),
                ("partition-spec", result.partition_spec), ("field-ids", result.field_ids),
                ("snapshot-id", a.snapshot_id), ("added-files", a.added_files),
                ("added-records", a.added_records), ("added-files-size", a.added_files_size),
                ("ignored-files", len(result.ignored_files)), ("metadata-file", a.metadata_location)])
