"""`icectl sort-order set|unset`: the table's default write order."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from icectl.cli.common import JsonOpt, TableArg, WarehouseOpt, handle_errors, load_table
from icectl.cli.output import emit_json, emit_text
from icectl.cli.schema_cmds import DryRunOpt, evolve_view, report_status

app = typer.Typer(
    help="""Set or clear the table's default sort order (how writers should order rows in files).

Examples:

  icectl sort-order set ./wh/db/events "id desc nulls last, bucket(4, cat)"
  icectl sort-order unset ./wh/db/events
""",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def emit_order_result(result: Any, json_out: bool) -> None:
    from icectl.ops.inspect import sort_order_string, sort_order_view

    md = result.after
    view = evolve_view(result)
    view["previous-sort-order-id"] = result.before.default_sort_order_id
    order = sort_order_view(md.sort_order, md.schema)
    order["string"] = sort_order_string(md.sort_order, md.schema)
    view["sort-order"] = order
    if json_out:
        emit_json(view)
        return
    report_status(result, "sort order")
    emit_text(f"sort order {order['order-id']}: {order['string']}")


@app.command("set", no_args_is_help=True, help="""Set the default sort order: terms are columns or transforms,
each optionally asc/desc and nulls first/last (defaults: asc; nulls first when ascending).

Example: icectl sort-order set ./wh/db/t "id desc nulls last, days(ts)"
""")
@handle_errors
def sort_set(
    table: TableArg,
    order: Annotated[str, typer.Argument(metavar="ORDER", help='Sort terms, e.g. "id desc nulls last, ts".', show_default=False)],
    dry_run: DryRunOpt = False,
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    from icectl.ops.sort_order import set_sort_order

    emit_order_result(set_sort_order(load_table(table, warehouse), order, dry_run=dry_run), json_out)


@app.command("unset", no_args_is_help=True, help="""Make the table unsorted (order id 0).

Example: icectl sort-order unset ./wh/db/t
""")
@handle_errors
def sort_unset(
    table: TableArg,
    dry_run: DryRunOpt = False,
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    from icectl.ops.sort_order import unset_sort_order

    emit_order_result(unset_sort_order(load_table(table, warehouse), dry_run=dry_run), json_out)
