"""`icectl append`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, List, Optional

import typer

from icectl.cli.common import JsonOpt, Progress, TableArg, WarehouseOpt, emit_snapshot_result, handle_errors, load_table, parse_key_values
from icectl.cli.output import emit_json, emit_pairs, err
from icectl.errors import InvalidInput, NotFound, StorageError

APPEND_HELP = """Append existing data files to TABLE as one new snapshot (rows are not read or copied).

Each file's footer gives its record count and column metrics (Parquet; ORC and Avro files give
their record counts). Parquet columns are matched to the table by field id, or by name through
the table's name mapping (schema.name-mapping.default, created when absent). The partition of
each file comes from its column statistics when they decide it, from a Hive-style directory in
its path (ts_day=2024-01-02/...) or from --partition. Refused, with nothing committed: a missing
file, a file given twice or already in the table (unless --skip-existing), a file whose columns
do not fit the table, a file whose rows span several partitions. A column optional in the file
but required in the table is accepted when the footer proves it has no nulls.

Registered files become the table's files, wherever they are: once no snapshot needs them any
more, expire deletes them, also outside the table location (as Iceberg does). To keep the
originals, copy the files under the table location first and append the copies.

Examples:

\b
  icectl append ./wh/db/events /data/in/part-0001.parquet /data/in/part-0002.parquet
  find /data/in -name '*.parquet' | icectl append ./wh/db/events -
  icectl append db.events -w ./wh --from-list files.txt --summary pipeline=nightly --json
  icectl append ./wh/db/logs /data/logs/day.orc --partition event_day=2024-01-02
  icectl append ./wh/db/events /data/in/x.parquet --branch staging
  find /data/in -name '*.parquet' | icectl append ./wh/db/events - --skip-existing --allow-empty --json
"""


def register(app: typer.Typer) -> None:
    app.command("append", help=APPEND_HELP, no_args_is_help=True)(append)


def _read_list(source: str) -> list[str]:
    try:
        if source == "-":
            text = sys.stdin.read()
        else:
            text = Path(source).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise NotFound(f"file list not found: {source}") from None
    except OSError as e:
        raise StorageError(f"cannot read file list {source}: {e.strerror or e}") from None
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


@handle_errors
def append(
    table: TableArg,
    files: Annotated[Optional[List[str]], typer.Argument(
        metavar="FILE...", help="Data files to append; - reads paths from stdin, one a line.",
        show_default=False)] = None,
    from_list: Annotated[Optional[str], typer.Option(
        "--from-list", help="Read data file paths from this file, one a line (- for stdin).")] = None,
    partition: Annotated[Optional[List[str]], typer.Option(
        "--partition", "-p", help="Partition value FIELD=VALUE for every file, in partition-path "
        "text (e.g. ts_day=2024-01-02). Repeatable.")] = None,
    file_format: Annotated[Optional[str], typer.Option(
        "--format", help="Data file format when the extension does not say: parquet, orc, avro.")] = None,
    summary: Annotated[Optional[List[str]], typer.Option(
        "--summary", help="Extra snapshot summary entry KEY=VALUE (repeatable).")] = None,
    branch: Annotated[str, typer.Option("--branch", "-b", help="Branch to append to.")] = "main",
    workers: Annotated[Optional[int], typer.Option(
        "--workers", min=1, help="Footers read in parallel (default: 4 per CPU, at most 32).")] = None,
    merge: Annotated[Optional[bool], typer.Option(
        "--merge/--no-merge", help="Merge small manifests (default: the table's "
        "commit.manifest-merge.enabled, off when unset).", show_default=False)] = None,
    skip_existing: Annotated[bool, typer.Option(
        "--skip-existing", help="Leave out files already in the table (live in the branch head) "
        "and name them in the result, instead of refusing the append.")] = False,
    allow_empty: Annotated[bool, typer.Option(
        "--allow-empty", help="No files to append is a no-op (exit 0, nothing committed) "
        "instead of an error.")] = False,
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    from icectl.ops.append import append_files

    paths: list[str] = []
    for f in files or []:
        if f == "-":
            paths.extend(_read_list("-"))
        else:
            paths.append(f)
    if from_list is not None:
        paths.extend(_read_list(from_list))
    if not paths and not allow_empty:
        raise InvalidInput("no data files given: list them, use - for stdin, or --from-list FILE "
                           "(--allow-empty makes no files a no-op)")
    reserved = [k for k in parse_key_values(summary, "--summary") if k == "operation"]
    if reserved:
        raise InvalidInput("--summary cannot set 'operation'")
    tbl = load_table(table, warehouse)
    with Progress() as progress:
        result = append_files(
            tbl,
            paths,
            partition_values=parse_key_values(partition, "--partition"),
            file_format=file_format,
            summary_properties=parse_key_values(summary, "--summary"),
            branch=branch,
            max_workers=workers,
            merge=merge,
            progress=progress.phase("reading footers"),
            skip_existing=skip_existing,
            allow_empty=allow_empty,
        )
    if json_out:
        emit_json(result.to_json())
        return
    _render(result)


def _render(result: Any) -> None:
    """The text view of an AppendResult: a line on stderr, the result as pairs on stdout."""
    skipped = [("skipped", path) for path in result.skipped_files]
    if not result.committed:
        err(f"nothing appended to {result.location} ({result.branch}): "
            + (f"all {len(result.skipped_files)} file(s) are already in the table"
               if result.skipped_files else "no files given"))
        emit_pairs([("committed", "false"), ("branch", result.branch),
                    ("skipped-files", len(result.skipped_files)), *skipped])
        return
    err(f"appended {result.added_files} file(s) to {result.location} ({result.branch})")
    tail = [("name-mapping", "created (schema.name-mapping.default)")] if result.name_mapping_created else []
    if skipped:
        tail += [("skipped-files", len(skipped)), *skipped]
    emit_snapshot_result(
        result,
        [("added-files", result.added_files), ("added-records", result.added_records),
         ("added-files-size", result.added_files_size)],
        tail)
