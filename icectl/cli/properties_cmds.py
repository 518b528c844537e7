"""`icectl properties set|unset|list` and `icectl upgrade`."""

from __future__ import annotations

from typing import Annotated, Any, List

import typer

from icectl.cli.common import values, DryRunOpt, JsonOpt, TableArg, WarehouseOpt, handle_errors, load_table, parse_key_values, report_status
from icectl.cli.output import emit_json, emit_pairs, emit_text, err

app = typer.Typer(
    help="""Show and change table properties. Setting format-version upgrades the table (as
`icectl upgrade` does); other reserved names (uuid, current-snapshot-id, ...) are refused.

Examples:

  icectl properties list ./wh/db/events
  icectl properties set ./wh/db/events write.target-file-size-bytes=268435456 commit.retry.num-retries=10
  icectl properties unset ./wh/db/events commit.retry.num-retries
""",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def _emit_props(result: Any, json_out: bool) -> None:
    view = result.to_json()
    if json_out:
        emit_json(view)
        return
    report_status(result, "properties")
    emit_pairs(list(view["properties"].items()))


@app.command("list", no_args_is_help=True, help="""List the table's properties.

Example: icectl properties list ./wh/db/t --json
""")
@handle_errors(returns="icectl.ops.metadata.properties:PropertiesView")
def props_list(table: TableArg, warehouse: WarehouseOpt = None, json_out: JsonOpt = False) -> None:
    from icectl.ops.metadata.properties import show_properties

    result = show_properties(load_table(table, warehouse))
    if json_out:
        emit_json(result.to_json())
    elif result.properties:
        emit_pairs(list(result.properties.items()))
    else:
        err("no properties")


@app.command("set", no_args_is_help=True, help="""Set properties, KEY=VALUE each, in one commit.

Example: icectl properties set ./wh/db/t write.parquet.compression-codec=snappy
""")
@handle_errors(returns="icectl.ops.metadata.properties:PropertiesChange")
def props_set(
    table: TableArg,
    pairs: Annotated[List[str], typer.Argument(metavar="KEY=VALUE...", help="Properties to set.", show_default=False)],
    dry_run: DryRunOpt = False,
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    from icectl.ops.metadata.properties import set_properties

    updates = parse_key_values(pairs, "properties set")
    _emit_props(set_properties(load_table(table, warehouse), updates, dry_run=dry_run), json_out)


@app.command("unset", no_args_is_help=True, help="""Remove properties (missing keys are ignored).

Example: icectl properties unset ./wh/db/t commit.retry.num-retries
""")
@handle_errors(returns="icectl.ops.metadata.properties:PropertiesChange")
def props_unset(
    table: TableArg,
    keys: Annotated[List[str], typer.Argument(metavar="KEY...", help="Property keys to remove.", show_default=False)],
    dry_run: DryRunOpt = False,
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    from icectl.ops.metadata.properties import unset_properties

    _emit_props(unset_properties(load_table(table, warehouse), keys, dry_run=dry_run), json_out)


UPGRADE_HELP = """Upgrade the table's format version (1 -> 2 -> 3; never down). Existing data and
metadata files stay valid; v3 starts row lineage (next-row-id 0).

Examples:

  icectl upgrade ./wh/db/events --format-version 2
  icectl upgrade ./wh/db/events --format-version 3 --dry-run
"""


@handle_errors(returns="icectl.ops.metadata.properties:FormatVersionChange")
def upgrade(
    table: TableArg,
    format_version: Annotated[int, typer.Option("--format-version", metavar="2|3", autocompletion=values("2", "3"), help="Target format version: 2 or 3.")],
    dry_run: DryRunOpt = False,
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    from icectl.ops.metadata.properties import upgrade_table

    result = upgrade_table(load_table(table, warehouse), format_version, dry_run=dry_run)
    view = result.to_json()
    if json_out:
        emit_json(view)
        return
    report_status(result, "format version")
    emit_text(f"format-version {view['format-version']} (was {view['previous-format-version']})")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="properties")
    root.command("upgrade", help=UPGRADE_HELP, no_args_is_help=True)(upgrade)
