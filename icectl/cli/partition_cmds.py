"""`icectl partition ...`: evolve a table's partition spec, one commit per command."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from icectl.cli.common import DryRunOpt, JsonOpt, TableArg, WarehouseOpt, handle_errors, load_table, report_status
from icectl.cli.output import emit_json, emit_table

app = typer.Typer(
    help="""Evolve a table's partition spec. Old files keep their spec; new writes use the new one.
v1 tables keep every field (a dropped field becomes void) and add fields at the end; v2+ field
ids come from last-partition-id and a re-added field gets its old id back. An existing spec
with the same fields is reused. --dry-run prints the new spec without committing.

Examples:

  icectl partition add ./wh/db/events "bucket(8, id)"
  icectl partition add ./wh/db/events "days(ts)" --name day
  icectl partition drop ./wh/db/events id_bucket_8
  icectl partition rename ./wh/db/events day event_day
  icectl partition replace ./wh/db/events event_day "hours(ts)"
""",
    no_args_is_help=True,
    rich_markup_mode=None,
)

FieldArg = Annotated[str, typer.Argument(metavar="FIELD", help="Partition field name, or a term such as bucket(8, id).", show_default=False)]
TermArg = Annotated[str, typer.Argument(metavar="TRANSFORM", help='Partition term, e.g. "bucket(8, id)", "days(ts)", cat.', show_default=False)]
NameOpt = Annotated[Optional[str], typer.Option("--name", help="Name of the new partition field (default as Spark: id_bucket_8, ts_day ...).")]


def emit_spec_result(result: Any, json_out: bool) -> None:
    view = result.to_json()
    if json_out:
        emit_json(view)
        return
    report_status(result, "partition spec")
    s = view["spec"]
    emit_table(["field-id", "name", "transform", "source-column", "source-id"],
               [[f["field-id"], f["name"], f["transform"], f["source-column"], f["source-id"]] for f in s["fields"]],
               title=f"partition spec {s['spec-id']}: {s['string']}")


def _run(table: str, warehouse: Optional[str], fn: Any, dry_run: bool, json_out: bool) -> None:
    t = load_table(table, warehouse)
    emit_spec_result(fn(t, dry_run), json_out)


@app.command("add", no_args_is_help=True, help="""Add a partition field.

Examples:

  icectl partition add ./wh/db/t "bucket(8, id)"
  icectl partition add ./wh/db/t "truncate(4, name)" --name name_prefix
""")
@handle_errors(returns="icectl.ops.metadata.partition_spec:SpecChange")
def partition_add(
    table: TableArg, term: TermArg, name: NameOpt = None, dry_run: DryRunOpt = False,
    warehouse: WarehouseOpt = None, json_out: JsonOpt = False,
) -> None:
    from icectl.ops.metadata.partition_spec import add_partition_field

    _run(table, warehouse, lambda t, d: add_partition_field(t, term, name, dry_run=d), dry_run, json_out)


@app.command("drop", no_args_is_help=True, help="""Drop a partition field, by name or by term.

Example: icectl partition drop ./wh/db/t id_bucket_8
""")
@handle_errors(returns="icectl.ops.metadata.partition_spec:SpecChange")
def partition_drop(
    table: TableArg, field: FieldArg, dry_run: DryRunOpt = False,
    warehouse: WarehouseOpt = None, json_out: JsonOpt = False,
) -> None:
    from icectl.ops.metadata.partition_spec import drop_partition_field

    _run(table, warehouse, lambda t, d: drop_partition_field(t, field, dry_run=d), dry_run, json_out)


@app.command("rename", no_args_is_help=True, help="""Rename a partition field.

Example: icectl partition rename ./wh/db/t ts_day day
""")
@handle_errors(returns="icectl.ops.metadata.partition_spec:SpecChange")
def partition_rename(
    table: TableArg, field: FieldArg,
    new_name: Annotated[str, typer.Argument(metavar="NEW_NAME", help="The new field name.", show_default=False)],
    dry_run: DryRunOpt = False, warehouse: WarehouseOpt = None, json_out: JsonOpt = False,
) -> None:
    from icectl.ops.metadata.partition_spec import rename_partition_field

    _run(table, warehouse, lambda t, d: rename_partition_field(t, field, new_name, dry_run=d), dry_run, json_out)


@app.command("replace", no_args_is_help=True, help="""Replace a partition field with another transform in one commit.

Example: icectl partition replace ./wh/db/t ts_day "hours(ts)"
""")
@handle_errors(returns="icectl.ops.metadata.partition_spec:SpecChange")
def partition_replace(
    table: TableArg, field: FieldArg, term: TermArg, name: NameOpt = None, dry_run: DryRunOpt = False,
    warehouse: WarehouseOpt = None, json_out: JsonOpt = False,
) -> None:
    from icectl.ops.metadata.partition_spec import replace_partition_field

    _run(table, warehouse, lambda t, d: replace_partition_field(t, field, term, name, dry_run=d), dry_run, json_out)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="partition")
