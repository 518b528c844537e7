"""`icectl expire`."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Annotated, Any, Iterator, List, Optional

import typer

from icectl.cli.common import (EngineOpt, JsonOpt, Progress, SparkMasterOpt, TableArg, WarehouseOpt,
                               handle_errors, load_table, make_engine, parse_time_option)
from icectl.cli.output import emit_json, emit_pairs, err

EXPIRE_HELP = """Expire old snapshots of TABLE and delete the files only they needed.

Which snapshots go follows Iceberg's rules: main's head and every retained ref stay; each branch
keeps its newest --retain-last snapshots (table default history.expire.min-snapshots-to-keep, 1)
plus every ancestor not older than --older-than (default: history.expire.max-snapshot-age-ms,
5 days); per-ref retention settings win; refs older than their max-ref-age are dropped. Then the
manifest lists, manifests, data and delete files no retained snapshot reaches are deleted, in
parallel. metadata.json files are never deleted; those eligible for cleanup are reported.

The new metadata is committed before anything is deleted; an interrupted run leaves a pending
record that the next `icectl expire` finishes. Refused when gc.enabled=false, and (exit 8,
nothing committed) when a retained snapshot's manifest list or manifest is missing.

Files registered in place by `icectl append` outside the table location are kept when no
retained snapshot needs them any more (listed as kept-outside-location); with
--delete-outside-location they are deleted, as Iceberg does (counted as deleted-outside-location).
Directories under the data location that the deletions left empty are removed (local disks). Nothing is deleted
through a symbolic link that leads out of the table (such files are reported and left), nor
inside another table's directory (a table nested in TABLE's location, or the table a file
registered in place came from): such files are kept and reported as skipped-in-other-tables. A table
whose metadata records another location than TABLE (a copy made with cp -r) is refused (exit 5);
--allow-location-mismatch expires its metadata only and deletes no file at all.

--older-than takes a timestamp (ISO-8601, UTC when no zone is given, or epoch millis) or a
duration back from now (7d, 36h, 90m).

With --engine spark the manifest lists and manifests are read, and the files deleted, in Spark
tasks on the session (the active one, or one started with --spark-master); the rules, the
commit and the result are the same as with the local engine, and the commit is made here.

--json keys are kebab-case like every icectl view, except the six counts of deleted files
(deleted_data_files_count, deleted_position_delete_files_count,
deleted_equality_delete_files_count, deleted_manifest_files_count,
deleted_manifest_lists_count, deleted_statistics_files_count): those carry the column names of
Spark's expire_snapshots procedure, so one script reads the output of either, and stay as
they are because --json keys are stable.

Examples:

\b
  icectl expire ./wh/db/events --older-than 7d --retain-last 5
  icectl expire ./wh/db/events --older-than 2024-06-01T00:00:00Z --dry-run --json
  icectl expire db.events -w ./wh --snapshot-id 3051729675574597004 --clean-expired-metadata
  icectl expire ./wh/db/events --older-than 7d --engine spark --spark-master "local[4]"
"""


@contextmanager
def maintenance_engine(engine: str, spark_master: Optional[str]) -> Iterator[Any]:
    """The engine --engine names for a maintenance command: None for local (this process's
    threads do the work), else the Spark engine, whose session is stopped at the end when this
    command started it."""
    with make_engine(engine, None, spark_master) as eng:
        yield None if eng.name == "local" else eng


@contextmanager
def naming_overrides() -> Iterator[None]:
    """A refusal the library lets a keyword argument lift names the option that lifts it."""
    from icectl.errors import ValidationError
    from icectl.ops.maintain.file_removal import NeedsOverride

    try:
        yield
    except NeedsOverride as e:
        raise ValidationError(f"{e} (--{e.override.replace('_', '-')} to {e.effect})") from None


def warn_refused(refused) -> None:
    for path, reason in refused:
        err(f"icectl: warning: not deleting {path}: {reason}")


def note_skipped(skipped) -> None:
    """One note per other table whose files a deleting command came across and kept."""
    counts: dict[str, int] = {}
    for _path, table in skipped:
        counts[table] = counts.get(table, 0) + 1
    for table, n in counts.items():
        err(f"icectl: note: kept {n} file(s) inside the table at {table}: another table's files "
            "are never deleted (listed under skipped-in-other-tables in --json)")


def register(app: typer.Typer) -> None:
    app.command("expire", help=EXPIRE_HELP, no_args_is_help=True)(expire)


@handle_errors(returns="icectl.ops.maintain.expire:ExpireResult")
def expire(
    table: TableArg,
    older_than: Annotated[Optional[str], typer.Option(
        "--older-than", help="Expire snapshots older than this timestamp or duration (7d, 36h, "
        "2024-06-01T00:00:00Z, epoch millis). Default: the table's history.expire.max-snapshot-age-ms.",
        show_default=False)] = None,
    retain_last: Annotated[Optional[int], typer.Option(
        "--retain-last", min=1, help="Keep at least this many snapshots on every branch (min 1).",
        show_default=False)] = None,
    snapshot_id: Annotated[Optional[List[int]], typer.Option(
        "--snapshot-id", help="Expire this snapshot too (repeatable).", show_default=False)] = None,
    clean_expired_metadata: Annotated[bool, typer.Option(
        "--clean-expired-metadata", help="Also drop partition specs and schemas no retained snapshot uses.")] = False,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Change nothing; list exactly the files that would be deleted.")] = False,
    allow_location_mismatch: Annotated[bool, typer.Option(
        "--allow-location-mismatch", help="When the table's metadata records another location than "
        "TABLE (a copy), expire the metadata of TABLE only; no file is deleted.")] = False,
    delete_outside_location: Annotated[bool, typer.Option(
        "--delete-outside-location", help="Also delete files recorded outside the table location "
        "(registered in place) once no retained snapshot needs them; default: keep and list them.")] = False,
    workers: Annotated[Optional[int], typer.Option(
        "--workers", min=1, help="Parallel reads and deletes (default: 4 per CPU, at most 32, on "
        "object stores and network filesystems; 1 on a local disk, where more are slower; with "
        "--engine spark: deleting threads per Spark task).", show_default=False)] = None,
    engine: EngineOpt = "local",
    spark_master: SparkMasterOpt = None,
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    from icectl.ops.maintain.expire import KINDS, expire_snapshots

    cutoff = parse_time_option(older_than, "--older-than") if older_than is not None else None
    tbl = load_table(table, warehouse)
    with maintenance_engine(engine, spark_master) as eng, Progress() as progress, naming_overrides():
        result = expire_snapshots(
            tbl, older_than_ms=cutoff, retain_last=retain_last, snapshot_ids=snapshot_id or (),
            clean_expired_metadata=clean_expired_metadata, dry_run=dry_run,
            allow_location_mismatch=allow_location_mismatch, delete_outside_location=delete_outside_location,
            max_workers=workers, progress=progress, engine=eng)
    for path, error in result.failed:
        err(f"icectl: warning: could not delete {path}: {error}")
    warn_refused(result.refused)
    note_skipped(result.skipped_other_tables)
    if result.metadata_only:
        err(f"icectl: note: the table's metadata records the location {tbl.metadata.location}: "
            "only the metadata of this copy changes, no file is deleted")
    for path in result.kept_outside_location:
        err(f"icectl: note: kept {path}: outside the table location, no longer needed "
            "(--delete-outside-location deletes such files)")
    if json_out:
        emit_json(result.to_json())
    else:
        verb = "would delete" if dry_run else "deleted"
        ids = result.expired_snapshot_ids
        err(f"{'would expire' if dry_run else 'expired'} {len(ids)} snapshot(s) of {result.location}"
            + (f"; finished {result.resumed_cleanups} interrupted cleanup(s)" if result.resumed_cleanups else ""))
        pairs = [("expired-snapshots", ", ".join(str(i) for i in ids) or "-")]
        if result.removed_refs:
            pairs.append(("removed-refs", ", ".join(result.removed_refs)))
        if result.removed_spec_ids or result.removed_schema_ids:
            pairs.append(("removed-spec-ids", ", ".join(map(str, result.removed_spec_ids)) or "-"))
            pairs.append(("removed-schema-ids", ", ".join(map(str, result.removed_schema_ids)) or "-"))
        for kind in KINDS:
            pairs.append((f"{verb.replace(' ', '-')}-{kind.replace('_', '-')}", result.count(kind)))
        pairs.append((f"{verb.replace(' ', '-')}-outside-location", result.deleted_outside_location))
        pairs.append(("kept-outside-location", len(result.kept_outside_location)))
        pairs.append(("skipped-in-other-tables", len(result.skipped_other_tables)))
        pairs.append(("metadata-files-eligible-for-cleanup", len(result.metadata_files_eligible)))
        if result.metadata_location:
            pairs.append(("metadata-file", result.metadata_location))
        emit_pairs(pairs)
        if dry_run:
            for kind in KINDS:
                for path in result.files.get(kind, ()):
                    print(f"{kind}\t{path}")
    if result.failed:
        raise typer.Exit(7)
    if result.refused:
        raise typer.Exit(5)
