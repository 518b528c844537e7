"""`icectl snapshot rollback|set-current|cherry-pick`, `icectl branch ...`, `icectl tag ...`."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from icectl.cli.common import JsonOpt, TableArg, WarehouseOpt, handle_errors, load_table, parse_time_option
from icectl.cli.output import emit_json, emit_pairs, err
from icectl.errors import InvalidInput

snapshot_app = typer.Typer(
    help="""Move main between snapshots: rollback, set-current, cherry-pick, publish.

Write-audit-publish: with the table property write.wap.enabled=true, `append`, `write`,
`delete` and `upsert --wap-id ID` stage their snapshot (wap.id in its summary, no branch moved;
`inspect snapshots` marks it staged, `scan --snapshot` reads it); `snapshot publish TABLE ID`
puts it on main, as Spark's publish_changes does.

Examples:

\b
  icectl snapshot rollback ./wh/db/events 3051729675574597004
  icectl snapshot rollback ./wh/db/events --to-timestamp 2024-06-01T12:00:00Z
  icectl snapshot set-current ./wh/db/events 3051729675574597004
  icectl snapshot cherry-pick ./wh/db/events 8774422315590001134
  icectl snapshot publish ./wh/db/events nightly-2024-06-01
""",
    no_args_is_help=True, rich_markup_mode=None)

branch_app = typer.Typer(
    help="""Create, drop, replace and fast-forward branches.

Retention: --max-ref-age (drop the branch when its head is older), --max-snapshot-age and
--min-snapshots-to-keep (how much of its history `icectl expire` keeps). Durations: 7d, 36h, 90m.

Examples:

\b
  icectl branch create ./wh/db/events audit --min-snapshots-to-keep 5 --max-ref-age 30d
  icectl branch replace ./wh/db/events audit --snapshot-id 3051729675574597004
  icectl branch fast-forward ./wh/db/events main --to audit
  icectl branch drop ./wh/db/events audit
""",
    no_args_is_help=True, rich_markup_mode=None)

tag_app = typer.Typer(
    help="""Create, drop and replace tags (named, fixed snapshots).

Examples:

\b
  icectl tag create ./wh/db/events release-1 --max-ref-age 365d
  icectl tag replace ./wh/db/events release-1 --snapshot-id 3051729675574597004
  icectl tag drop ./wh/db/events release-1
""",
    no_args_is_help=True, rich_markup_mode=None)

NameArg = Annotated[str, typer.Argument(metavar="NAME", help="Branch or tag name.", show_default=False)]
SnapshotOpt = Annotated[Optional[int], typer.Option(
    "--snapshot-id", help="Snapshot id (default: the current snapshot).", show_default=False)]
MaxRefAgeOpt = Annotated[Optional[str], typer.Option(
    "--max-ref-age", help="Drop the ref in `icectl expire` once its snapshot is older than this (e.g. 30d).",
    show_default=False)]
MaxSnapshotAgeOpt = Annotated[Optional[str], typer.Option(
    "--max-snapshot-age", help="Branch history younger than this is kept by `icectl expire` (e.g. 7d).",
    show_default=False)]
MinSnapshotsOpt = Annotated[Optional[int], typer.Option(
    "--min-snapshots-to-keep", min=1, help="`icectl expire` keeps at least this many snapshots of the branch.",
    show_default=False)]


def _retention(max_ref_age: str | None, max_snapshot_age: str | None = None, min_keep: int | None = None):
    from icectl.ops.metadata.refs import Retention
    from icectl.spec.timetext import parse_duration_ms

    return Retention(
        min_snapshots_to_keep=min_keep,
        max_snapshot_age_ms=None if max_snapshot_age is None else parse_duration_ms(max_snapshot_age, "--max-snapshot-age"),
        max_ref_age_ms=None if max_ref_age is None else parse_duration_ms(max_ref_age, "--max-ref-age"),
    )


def _show(result, json_out: bool) -> None:
    if json_out:
        emit_json(result.to_json())
        return
    what = result.ref_type or "ref"
    if result.action == "drop":
        err(f"dropped {what} {result.ref} (was at snapshot {result.previous_snapshot_id})")
    else:
        err(f"{result.action}: {what} {result.ref} -> snapshot {result.snapshot_id}")
    pairs = [("ref", result.ref), ("type", result.ref_type), ("previous-snapshot-id", result.previous_snapshot_id),
             ("snapshot-id", result.snapshot_id)]
    if result.created_snapshot:
        pairs.append(("created-snapshot", "true"))
    for k, v in result.to_json()["retention"].items():
        pairs.append((k, v))
    pairs.append(("metadata-file", result.metadata_location))
    emit_pairs(pairs)


# -- snapshot ------------------------------------------------------------------------------------

@snapshot_app.command("rollback", help="Move main back to one of its ancestors: a snapshot id, or the newest "
                      "ancestor older than --to-timestamp (ISO-8601, UTC when no zone, epoch millis, or a duration ago "
                      "such as 36h).\n\n"
                      "Example: icectl snapshot rollback ./wh/db/events --to-timestamp 2024-06-01T12:00:00Z")
@handle_errors(returns="icectl.ops.metadata.refs:RefResult")
def rollback(
    table: TableArg,
    snapshot_id: Annotated[Optional[int], typer.Argument(metavar="ID", help="Snapshot id to roll back to.",
                                                         show_default=False)] = None,
    to_timestamp: Annotated[Optional[str], typer.Option(
        "--to-timestamp", help="Roll back to the newest ancestor committed before this time.",
        show_default=False)] = None,
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    from icectl.ops.metadata.refs import rollback_to_snapshot, rollback_to_time

    if (snapshot_id is None) == (to_timestamp is None):
        raise InvalidInput("give a snapshot ID or --to-timestamp (one of them)")
    tbl = load_table(table, warehouse)
    if snapshot_id is not None:
        result = rollback_to_snapshot(tbl, snapshot_id)
    else:
        result = rollback_to_time(tbl, parse_time_option(to_timestamp, "--to-timestamp"))
    _show(result, json_out)


@snapshot_app.command("set-current", help="Point main at any snapshot of the table (not only an ancestor).\n\n"
                      "Example: icectl snapshot set-current ./wh/db/events 3051729675574597004")
@handle_errors(returns="icectl.ops.metadata.refs:RefResult")
def set_current(
    table: TableArg,
    snapshot_id: Annotated[int, typer.Argument(metavar="ID", help="Snapshot id.", show_default=False)],
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    from icectl.ops.metadata.refs import set_current_snapshot

    _show(set_current_snapshot(load_table(table, warehouse), snapshot_id), json_out)


@snapshot_app.command("cherry-pick", help="Apply a snapshot to main: fast-forward when its parent is main's head, "
                      "else re-apply an append (its data files added again) or a dynamic partition overwrite "
                      "(replace-partitions: its files added and removed again, refused when main changed a "
                      "partition it replaces since its parent) as a new snapshot with source-snapshot-id (and "
                      "published-wap-id for a staged one) in its summary. Other operations only fast-forward; a "
                      "WAP id main already has is refused (exit 16).\n\n"
                      "Example: icectl snapshot cherry-pick ./wh/db/events 8774422315590001134")
@handle_errors(returns="icectl.ops.metadata.refs:RefResult")
def cherry_pick(
    table: TableArg,
    snapshot_id: Annotated[int, typer.Argument(metavar="ID", help="Snapshot id to pick.", show_default=False)],
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    from icectl.ops.metadata.refs import cherry_pick as pick

    _show(pick(load_table(table, warehouse), snapshot_id), json_out)


@snapshot_app.command("publish", help="Publish the snapshot staged with a WAP id (Spark's publish_changes): "
                      "cherry-pick it onto main - a fast-forward when its parent is still main's head, else a new "
                      "snapshot with published-wap-id. An unknown WAP id is exit 3; one main's history already has "
                      "(staged or published) is exit 16.\n\n"
                      "Example: icectl snapshot publish ./wh/db/events nightly-2024-06-01")
@handle_errors(returns="icectl.ops.metadata.wap:PublishResult")
def publish(
    table: TableArg,
    wap_id: Annotated[str, typer.Argument(metavar="WAP_ID", help="The WAP id the snapshot was staged with.",
                                          show_default=False)],
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    from icectl.ops.metadata.wap import publish_changes

    r = publish_changes(load_table(table, warehouse), wap_id)
    if json_out:
        emit_json(r.to_json())
        return
    how = "cherry-picked as snapshot" if r.created_snapshot else "fast-forwarded main to snapshot"
    err(f"published WAP id {r.wap_id!r}: {how} {r.snapshot_id}")
    emit_pairs([("wap-id", r.wap_id), ("source-snapshot-id", r.source_snapshot_id),
                ("snapshot-id", r.snapshot_id), ("previous-snapshot-id", r.previous_snapshot_id),
                ("created-snapshot", "true" if r.created_snapshot else "false"),
                ("metadata-file", r.metadata_location)])


# -- branch --------------------------------------------------------------------------------------

@branch_app.command("create", help="Create a branch at a snapshot (default: the current one).\n\n"
                    "Example: icectl branch create ./wh/db/events audit --min-snapshots-to-keep 5")
@handle_errors(returns="icectl.ops.metadata.refs:RefResult")
def branch_create(table: TableArg, name: NameArg, snapshot_id: SnapshotOpt = None,
                  max_ref_age: MaxRefAgeOpt = None, max_snapshot_age: MaxSnapshotAgeOpt = None,
                  min_snapshots_to_keep: MinSnapshotsOpt = None, warehouse: WarehouseOpt = None,
                  json_out: JsonOpt = False) -> None:
    from icectl.ops.metadata.refs import create_branch

    ret = _retention(max_ref_age, max_snapshot_age, min_snapshots_to_keep)
    _show(create_branch(load_table(table, warehouse), name, snapshot_id, ret), json_out)


@branch_app.command("drop", help="Drop a branch (never main). Its snapshots stay until `icectl expire`.\n\n"
                    "Example: icectl branch drop ./wh/db/events audit")
@handle_errors(returns="icectl.ops.metadata.refs:RefResult")
def branch_drop(table: TableArg, name: NameArg, warehouse: WarehouseOpt = None, json_out: JsonOpt = False) -> None:
    from icectl.ops.metadata.refs import drop_branch

    _show(drop_branch(load_table(table, warehouse), name), json_out)


@branch_app.command("replace", help="Point an existing branch at a snapshot (--snapshot-id) or at another ref's "
                    "head (--to); retention options update its settings.\n\n"
                    "Example: icectl branch replace ./wh/db/events audit --to main")
@handle_errors(returns="icectl.ops.metadata.refs:RefResult")
def branch_replace(table: TableArg, name: NameArg,
                   snapshot_id: Annotated[Optional[int], typer.Option(
                       "--snapshot-id", help="Snapshot id to point at.", show_default=False)] = None,
                   to: Annotated[Optional[str], typer.Option(
                       "--to", help="Branch or tag whose snapshot to point at.", show_default=False)] = None,
                   max_ref_age: MaxRefAgeOpt = None, max_snapshot_age: MaxSnapshotAgeOpt = None,
                   min_snapshots_to_keep: MinSnapshotsOpt = None, warehouse: WarehouseOpt = None,
                   json_out: JsonOpt = False) -> None:
    from icectl.ops.metadata.refs import replace_branch

    ret = _retention(max_ref_age, max_snapshot_age, min_snapshots_to_keep)
    _show(replace_branch(load_table(table, warehouse), name, snapshot_id, source_ref=to, retention=ret), json_out)


@branch_app.command("fast-forward", help="Move a branch forward to another ref's head; refused unless the "
                    "branch head is an ancestor of it (a missing branch is created).\n\n"
                    "Example: icectl branch fast-forward ./wh/db/events main --to audit")
@handle_errors(returns="icectl.ops.metadata.refs:RefResult")
def branch_fast_forward(table: TableArg, name: NameArg,
                        to: Annotated[str, typer.Option("--to", help="Branch or tag to fast-forward to.",
                                                        show_default=False)],
                        warehouse: WarehouseOpt = None, json_out: JsonOpt = False) -> None:
    from icectl.ops.metadata.refs import fast_forward_branch

    _show(fast_forward_branch(load_table(table, warehouse), name, to), json_out)


# -- tag -----------------------------------------------------------------------------------------

@tag_app.command("create", help="Create a tag at a snapshot (default: the current one).\n\n"
                 "Example: icectl tag create ./wh/db/events release-1 --max-ref-age 365d")
@handle_errors(returns="icectl.ops.metadata.refs:RefResult")
def tag_create(table: TableArg, name: NameArg, snapshot_id: SnapshotOpt = None, max_ref_age: MaxRefAgeOpt = None,
               warehouse: WarehouseOpt = None, json_out: JsonOpt = False) -> None:
    from icectl.ops.metadata.refs import create_tag

    _show(create_tag(load_table(table, warehouse), name, snapshot_id, _retention(max_ref_age)), json_out)


@tag_app.command("drop", help="Drop a tag.\n\nExample: icectl tag drop ./wh/db/events release-1")
@handle_errors(returns="icectl.ops.metadata.refs:RefResult")
def tag_drop(table: TableArg, name: NameArg, warehouse: WarehouseOpt = None, json_out: JsonOpt = False) -> None:
    from icectl.ops.metadata.refs import drop_tag

    _show(drop_tag(load_table(table, warehouse), name), json_out)


@tag_app.command("replace", help="Point an existing tag at another snapshot.\n\n"
                 "Example: icectl tag replace ./wh/db/events release-1 --snapshot-id 3051729675574597004")
@handle_errors(returns="icectl.ops.metadata.refs:RefResult")
def tag_replace(table: TableArg, name: NameArg,
                snapshot_id: Annotated[Optional[int], typer.Option(
                    "--snapshot-id", help="Snapshot id to point at.", show_default=False)] = None,
                to: Annotated[Optional[str], typer.Option(
                    "--to", help="Branch or tag whose snapshot to point at.", show_default=False)] = None,
                max_ref_age: MaxRefAgeOpt = None, warehouse: WarehouseOpt = None, json_out: JsonOpt = False) -> None:
    from icectl.ops.metadata.refs import replace_tag

    _show(replace_tag(load_table(table, warehouse), name, snapshot_id, source_ref=to,
                      retention=_retention(max_ref_age)), json_out)


def register(app: typer.Typer) -> None:
    app.add_typer(snapshot_app, name="snapshot")
    app.add_typer(branch_app, name="branch")
    app.add_typer(tag_app, name="tag")
