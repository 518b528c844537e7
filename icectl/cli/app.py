"""The root `icectl` command: assembles the command groups."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from icectl import __version__
from icectl.cli import append_cmd, create_cmd, inspect_cmds
from icectl.cli import partition_cmds, properties_cmds, schema_cmds, sort_order_cmds
from icectl.cli import expire_cmd, orphans_cmd, refs_cmds
from icectl.cli import plan_cmd
from icectl.cli import scan_cmd
from icectl.cli import write_cmd
from icectl.cli import check_cmd
from icectl.cli import delete_cmd

HELP = """Manage Apache Iceberg tables on a filesystem (Hadoop-catalog layout), from the shell.

TABLE is a table location (a directory or a URL such as file:///data/wh/db/t); with
--warehouse (or ICECTL_WAREHOUSE) it may also be DB.TABLE, found at WAREHOUSE/DB/TABLE as
Spark's Hadoop catalog lays it out.

Exit codes: 0 ok, 2 invalid input or usage, 3 not found, 4 already exists, 5 validation
failed, 6 commit conflict (retries exhausted), 7 storage error, 8 corrupt metadata,
9 unsupported feature, 10 check found problems, 70 internal error, 130 interrupted.
Set ICECTL_DEBUG=1 for tracebacks.
"""

app = typer.Typer(
    name="icectl",
    help=HELP,
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        print(f"icectl {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        Optional[bool],
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit."),
    ] = None,
) -> None:
    """Manage Apache Iceberg tables on a filesystem."""


create_cmd.register(app)
append_cmd.register(app)
write_cmd.register(app)
app.add_typer(inspect_cmds.app, name="inspect")
app.add_typer(schema_cmds.app, name="schema")
app.add_typer(partition_cmds.app, name="partition")
app.add_typer(sort_order_cmds.app, name="sort-order")
properties_cmds.register(app)
expire_cmd.register(app)
orphans_cmd.register(app)
refs_cmds.register(app)
plan_cmd.register(app)
check_cmd.register(app)
scan_cmd.register(app)
delete_cmd.register(app)


def main() -> None:
    app(prog_name="icectl")
