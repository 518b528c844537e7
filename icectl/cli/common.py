"""Shared pieces of the CLI: options, table lookup, and the one place errors become exit codes."""

from __future__ import annotations

import functools
import os
import sys
import traceback
from typing import Annotated, Any, Callable, Optional, TypeVar

import typer

from icectl.errors import EXIT_INTERNAL, EXIT_INTERRUPTED, IcectlError, InvalidInput
from icectl.cli.output import err

F = TypeVar("F", bound=Callable[..., Any])

DEBUG_ENV = "ICECTL_DEBUG"
WAREHOUSE_ENV = "ICECTL_WAREHOUSE"


def debug_enabled() -> bool:
    return os.environ.get(DEBUG_ENV, "") not in ("", "0", "false", "no")


def handle_errors(fn: F) -> F:
    """Run a command body; turn every failure into one line on stderr and its exit code."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (typer.Exit, typer.Abort):
            raise
        except IcectlError as e:
            if debug_enabled():
                traceback.print_exc(file=sys.stderr)
            err(f"icectl: error: {e}")
            raise typer.Exit(e.exit_code) from None
        except KeyboardInterrupt:
            err("icectl: interrupted")
            raise typer.Exit(EXIT_INTERRUPTED) from None
        except BrokenPipeError:
            # the reader of our stdout went away (`icectl ... | head`): not an error
            try:
                sys.stdout = open(os.devnull, "w")
            except OSError:
                pass
            raise typer.Exit(0) from None
        except Exception as e:  # a bug: say so plainly, full trace only on request
            if debug_enabled():
                traceback.print_exc(file=sys.stderr)
            else:
                err(f"icectl: internal error: {type(e).__name__}: {e} (set {DEBUG_ENV}=1 for a traceback)")
            raise typer.Exit(EXIT_INTERNAL) from None

    return wrapper  # type: ignore[return-value]


TableArg = Annotated[
    str,
    typer.Argument(
        metavar="TABLE",
        help="Table location (directory path or URL), or DB.TABLE with --warehouse.",
        show_default=False,
    ),
]
WarehouseOpt = Annotated[
    Optional[str],
    typer.Option(
        "--warehouse",
        "-w",
        envvar=WAREHOUSE_ENV,
        help=f"Warehouse root; TABLE may then be DB.TABLE (layout WAREHOUSE/DB/TABLE). Env: {WAREHOUSE_ENV}.",
        show_envvar=False,
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON (stable keys, see README).")]


def table_location(table: str, warehouse: Optional[str]) -> str:
    """The location a TABLE argument names."""
    from icectl.table.table import resolve_table_location

    if not table:
        raise InvalidInput("TABLE must not be empty")
    return resolve_table_location(table, warehouse)


def load_table(table: str, warehouse: Optional[str]):
    from icectl.table.table import Table

    return Table.load(table_location(table, warehouse))


def parse_key_values(items: list[str] | None, what: str = "--property") -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or []:
        if "=" not in item:
            raise InvalidInput(f"{what} expects KEY=VALUE, got {item!r}")
        k, v = item.split("=", 1)
        k = k.strip()
        if not k:
            raise InvalidInput(f"{what} has an empty key in {item!r}")
        out[k] = v
    return out
