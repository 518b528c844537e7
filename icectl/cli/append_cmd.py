"""`icectl append`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, List, Optional

import typer

from icectl.cli.common import (values, JsonOpt, Progress, TableArg, WapIdOpt, WarehouseOpt, emit_snapshot_result,
                               handle_errors, load_table, note_staged, parse_key_values, stage_wap_id)
from icectl.cli.output import emit_json, emit_pairs, err
from icectl.errors import EXIT_PARTIAL, InvalidInput, NotFound, StorageError

if TYPE_CHECKING:
    from icectl.table.table import Table

APPEND_HELP = """Append existing data files to TABLE as one new snapshot (rows are not read or copied).

Each file's footer gives its record count and column metrics (Parquet; ORC and Avro files give
their record counts). Parquet columns are matched to the table by field id, or by name through
the table's name mapping (schema.name-mapping.default, created when absent). The partition of
each file comes from its column statistics when they decide it, from a Hive-style directory in
its path (ts_day=2024-01-02/...) or from --partition. Refused, with nothing committed: a missing
file, a file given twice or already in the table (unless --skip-existing), a file whose columns
do not fit the table, a file whose rows span several partitions. A column optional in the file
but required in the table is accepted when the footer proves it has no nulls.

Files are registered where they are, unless --copy or --move places them under the table's
data location first (write.data.path, else TABLE/data, in the partition's directory as Spark
lays files out): --copy leaves the source alone, --move removes it after the commit. Registered
in place, a file belongs to the table: moving or deleting it breaks the table, and
`expire --delete-outside-location` deletes it once no snapshot needs it.

Safe to re-run: --skip-existing leaves out files already in the table by path,
--skip-duplicates also files whose bytes the table already took under another name (SHA-256);
--idempotency-key KEY records KEY in the snapshot summary, and a run whose KEY is
already on the branch (head or a retained ancestor) commits nothing and exits 0.
--on-error skip sets aside files that cannot be appended (unreadable, not fitting, spanning
partitions), commits the rest and exits 15 (partly done), naming each file and its reason.
--rewrite-spanning reads a file whose rows span partitions and writes them partitioned.

--from-dir DIR appends every Parquet file under the Hive-style directory DIR, as Spark's
add_files procedure with a path source: its name=value directories (%XX-escaped,
__HIVE_DEFAULT_PARTITION__ for null) must be the table's partition fields, and give each file's
partition (checked against its statistics); hidden files and directories (. or _ prefix, e.g.
_SUCCESS) and files that are not Parquet are skipped. Files already in the table are refused.
It takes no FILE arguments and no --from-list.

Examples:

\b
  icectl append ./wh/db/events /data/in/part-0001.parquet /data/in/part-0002.parquet
  find /data/in -name '*.parquet' | icectl append ./wh/db/events -
  icectl append db.events -w ./wh --from-list files.txt --summary pipeline=nightly --json
  icectl append ./wh/db/logs /data/logs/day.orc --partition event_day=2024-01-02
  icectl append ./wh/db/events /data/in/x.parquet --branch staging
  find /data/in -name '*.parquet' | icectl append ./wh/db/events - --skip-existing --allow-empty --json
  find /data/in -name '*.parquet' | icectl append ./wh/db/events - --copy --skip-duplicates --on-error skip --rewrite-spanning
  icectl append ./wh/db/events /data/in/day.parquet --move --idempotency-key load-2024-06-01
  icectl append ./wh/db/events --from-dir /data/hive/events
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


def _given_paths(files: Optional[List[str]], from_list: Optional[str], allow_empty: bool) -> list[str]:
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
    return paths


FromDirOpt = Annotated[Optional[str], typer.Option(
    "--from-dir", metavar="DIR", help="Append the Parquet files under the Hive-style directory DIR "
    "(name=value partition directories; hidden and non-Parquet files skipped).")]


@handle_errors(returns="icectl.ops.write.append:AppendResult")
def append(
    table: TableArg,
    files: Annotated[Optional[List[str]], typer.Argument(
        metavar="FILE...", help="Data files to append; - reads paths from stdin, one a line.",
        show_default=False)] = None,
    from_list: Annotated[Optional[str], typer.Option(
        "--from-list", help="Read data file paths from this file, one a line (- for stdin).")] = None,
    from_dir: FromDirOpt = None,
    partition: Annotated[Optional[List[str]], typer.Option(
        "--partition", "-p", help="Partition value FIELD=VALUE for every file, in partition-path "
        "text (e.g. ts_day=2024-01-02). Repeatable.")] = None,
    file_format: Annotated[Optional[str], typer.Option(
        "--format", help="Data file format when the extension does not say: parquet, orc, avro.",
        autocompletion=values("parquet", "orc", "avro"))] = None,
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
    skip_duplicates: Annotated[bool, typer.Option(
        "--skip-duplicates", help="Like --skip-existing, and also leave out files whose bytes the "
        "table already took under another name (SHA-256).")] = False,
    copy: Annotated[bool, typer.Option(
        "--copy", help="Copy the files under the table's data location and register the copies.")] = False,
    move: Annotated[bool, typer.Option(
        "--move", help="Like --copy, then remove the sources once committed.")] = False,
    on_error: Annotated[str, typer.Option(
        "--on-error", metavar="fail|skip", autocompletion=values("fail", "skip"), help="fail: refuse the append for one bad file; skip: "
        "set bad files aside, commit the rest, exit 15.")] = "fail",
    rewrite_spanning: Annotated[bool, typer.Option(
        "--rewrite-spanning", help="Rewrite a file whose rows span partitions into partitioned "
        "files under the data location instead of refusing it.")] = False,
    idempotency_key: Annotated[Optional[str], typer.Option(
        "--idempotency-key", metavar="KEY", help="Commit nothing (exit 0) when KEY was already "
        "committed on the branch; recorded in the snapshot summary.")] = None,
    allow_empty: Annotated[bool, typer.Option(
        "--allow-empty", help="No files to append is a no-op (exit 0, nothing committed) "
        "instead of an error.")] = False,
    wap_id: WapIdOpt = None,
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    from icectl.ops.write.append import append_files, check_summary_properties

    paths = _given_paths(files, from_list, allow_empty or from_dir is not None)
    check_summary_properties(parse_key_values(summary, "--summary"))
    if copy and move:
        raise InvalidInput("--copy and --move exclude each other")
    tbl = stage_wap_id(load_table(table, warehouse), wap_id, idempotency_key)
    path_values = _from_dir(tbl, from_dir, paths, allow_empty)
    with Progress() as progress:
        result = append_files(
            tbl, paths, partition_values=parse_key_values(partition, "--partition"),
            file_format="parquet" if from_dir is not None else file_format,
            summary_properties=parse_key_values(summary, "--summary"), branch=branch,
            max_workers=workers, merge=merge, progress=progress.phase("reading footers"),
            skip_existing="content" if skip_duplicates else skip_existing,
            allow_empty=allow_empty,
            placement="move" if move else "copy" if copy else "in-place",
            on_error=on_error.strip().lower(),
            rewrite_spanning=rewrite_spanning,
            idempotency_key=idempotency_key,
            path_values=path_values,
        )
    report_ingest(result)
    note_staged(tbl, result.snapshot_id if result.committed else None)
    if json_out:
        emit_json(result.to_json())
    else:
        _render(result)
    if result.partial:
        raise typer.Exit(EXIT_PARTIAL)


def _from_dir(tbl: Table, directory: Optional[str], paths: list[str],
              allow_empty: bool) -> dict[str, dict[str, str]] | None:
    """Add the Parquet files of ``directory`` (--from-dir) to ``paths``; their partition texts
    by path (None without --from-dir)."""
    from icectl.ops.write.adopt import directory_files

    if directory is None:
        return None
    if paths:
        raise InvalidInput("--from-dir takes no FILE arguments and no --from-list")
    listing, texts = directory_files(tbl.io, directory, tbl.metadata)
    for path, reason in listing.skipped:
        err(f"icectl: note: skipped {path}: {reason}")
    if not listing.files and not allow_empty:
        raise InvalidInput(f"no Parquet data files under {listing.root} (--allow-empty makes no files a no-op)")
    paths.extend(p for p, _ in listing.files)
    return texts


def report_ingest(result: Any) -> None:
    """stderr lines for what an append set aside or could not clean up."""
    for path, reason in result.quarantined:
        err(f"icectl: warning: quarantined {path}: {reason}")
    for path, error in result.source_cleanup_failed:
        err(f"icectl: warning: committed, but could not remove the source {path}: {error}")


def _render(result: Any) -> None:
    """The text view of an AppendResult: a line on stderr, the result as pairs on stdout."""
    skipped = [("skipped", path) for path in result.skipped_files]
    if not result.committed:
        if result.committed_by is not None:
            why = f"idempotency key {result.idempotency_key!r} already committed by snapshot {result.committed_by}"
        elif result.quarantined:
            why = f"{len(result.quarantined)} file(s) quarantined, none left to append"
        elif result.skipped_files:
            why = f"all {len(result.skipped_files)} file(s) are already in the table"
        else:
            why = "no files given"
        err(f"nothing appended to {result.location} ({result.branch}): {why}")
        emit_pairs([("committed", "false"), ("branch", result.branch),
                    ("skipped-files", len(result.skipped_files)), *skipped,
                    *([("already-committed-by", result.committed_by)] if result.committed_by else []),
                    *[("quarantined", p) for p, _ in result.quarantined]])
        return
    err(f"appended {result.added_files} file(s) to {result.location} ({result.branch})")
    tail = [("name-mapping", "created (schema.name-mapping.default)")] if result.name_mapping_created else []
    if skipped:
        tail += [("skipped-files", len(skipped)), *skipped]
    tail += [("placed", f"{src} -> {dst}") for src, dst in result.placed]
    tail += [("rewritten", p) for p in result.rewritten]
    tail += [("quarantined", p) for p, _ in result.quarantined]
    emit_snapshot_result(
        result,
        [("added-files", result.added_files), ("added-records", result.added_records),
         ("added-files-size", result.added_files_size)],
        tail)


def idempotent_no_op(tbl: Table, branch: str, key: str, summary: dict[str, str],
                     json_out: bool) -> dict[str, str] | None:
    """For commands that write before committing (write): None, after reporting the no-op,
    when ``key`` is already committed on ``branch``; else ``summary`` with the key added (the
    producer checks it again on every commit attempt)."""
    from icectl.ops.write.append import key_committed_by
    from icectl.table.commit.idempotency import IDEMPOTENCY_KEY

    if not key.strip():
        raise InvalidInput("--idempotency-key must not be empty")
    done = key_committed_by(tbl.metadata, branch, key)
    if done is not None:
        report_key_committed(tbl, branch, key, done, json_out)
        return None
    return {**summary, IDEMPOTENCY_KEY: key}


def report_key_committed(tbl: Table, branch: str, key: str, snapshot_id: int, json_out: bool) -> None:
    err(f"nothing committed to {tbl.location} ({branch}): idempotency key {key!r} already committed "
        f"by snapshot {snapshot_id}")
    if json_out:
        emit_json({"committed": False, "location": tbl.location, "branch": branch, "snapshot-id": None,
                   "idempotency-key": key, "already-committed-by": snapshot_id})
    else:
        emit_pairs([("committed", "false"), ("branch", branch), ("already-committed-by", snapshot_id)])
