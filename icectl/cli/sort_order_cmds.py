"""`icectl sort-order set|unset`: the table's default write order."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from icectl.cli.common import DryRunOpt, JsonOpt, TableArg, WarehouseOpt, handle_errors, load_table, report_status
from icectl.cli.output import emit_json, emit_text

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
    view = result.to_json()
    order = view["sort-order"]
    if json_out:
        emit_json(view)
        return
    report_status(result, "sort order")
    emit_text(f"sort order {order['order-id']}: {order['string']}")


@app.command("set", no_args_is_help=True, help="""Set the default sort order: terms are columns or transforms,
each optionally asc/desc and nulls first/last (defaults: asc; nulls first when ascending).

Example: icectl sort-order set ./wh/db/t "id desc nulls last, days(ts)"
""")
@handle_errors(returns="icectl.ops.metadata.sort_order:SortOrderChange")
def sort_set(
    table: TableArg,
    order: Annotated[str, typer.Argument(metavar="ORDER", help='Sort terms, e.g. "id desc nulls last, ts".', show_default=False)],
    dry_run: DryRunOpt = False,
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    from icectl.ops.metadata.sort_order import set_sort_order

    emit_order_result(set_sort_order(load_table(table, warehouse), order, dry_run=dry_run), json_out)


@app.command("unset", no_args_is_help=True, help="""Make the table unsorted (order id 0).

Example: icectl sort-order unset ./wh/db/t
""")
@handle_errors(returns="icectl.ops.metadata.sort_order:SortOrderChange")
def sort_unset(
    table: TableArg,
    dry_run: DryRunOpt = False,
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    from icectl.ops.metadata.sort_order import unset_sort_order

    emit_order_result(unset_sort_order(load_table(table, warehouse), dry_run=dry_run), json_out)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="sort-order")
