"""What command bodies share that needs no typer: table lookup, time options, --no-cache, and
how a failure that leaves a body is reported (one line on stderr, a JSON object too under
--json, and its exit code).

Nothing here imports typer: the typer commands (``common.handle_errors``) and the direct path
of `icectl plan` (:mod:`icectl.cli.entry`) both report through :func:`failure_code`, so a
failure reads the same whichever of them parsed the command line.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Mapping, Optional, Sequence

from icectl.catalog import CATALOG_ENV  # (also re-exported: the default of --catalog)
from icectl.cli.output import err
from icectl.errors import (EXIT_HANGUP, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_TERMINATED, IcectlError,
                           Interrupted, StorageError)

if TYPE_CHECKING:
    from icectl.table.table import Table

DEBUG_ENV = "ICECTL_DEBUG"
WAREHOUSE_ENV = "ICECTL_WAREHOUSE"  # the default of --warehouse

# library keywords whose option has another name (the rest: the same name, dashed)
OPTION_OF_ARGUMENT = {"filter": "filter_text", "keys": "key", "storage_options": "storage_option", "summary_properties": "summary", "partition_values": "partition", "file_format": "format", "as_of_ms": "as_of",
                      "snapshot_id": "snapshot", "max_workers": "workers"}


def debug_enabled() -> bool:
    return os.environ.get(DEBUG_ENV, "") not in ("", "0", "false", "no")


def report_error(message: str, exit_code: int, as_json: bool, prefix: str | None = "error") -> None:
    """An error as icectl reports every error: one line on stderr, ``icectl: error: ...``, and
    with --json also a JSON object on stderr: ``{"error": {"kind", "message", "exit-code"}}``."""
    from icectl.errors import kind_of_exit_code

    text = " ".join(str(message).split("\n")).strip()
    err(f"icectl: {prefix}: {text}" if prefix else f"icectl: {text}")
    if as_json:
        import json

        err(json.dumps({"error": {"kind": kind_of_exit_code(exit_code), "message": text,
                                  "exit-code": exit_code}}, ensure_ascii=False))


def option_in(argument: str, options: Mapping[str, str]) -> str | None:
    """The long option, among the running command's ``options`` (parameter name -> long option),
    that sets a library call's ``argument``."""
    for name in (argument, OPTION_OF_ARGUMENT.get(argument), argument.removesuffix("_ms")):
        if name and name in options:
            return options[name]
    return None


def cli_message(e: IcectlError, options: Mapping[str, str]) -> str:
    """An error's message with the command's option names: the library names the thing (the
    partition value, the input format) and says which argument of its call the error is about
    (``argument``) or which keyword lifts a refusal (``override``); the CLI names the option."""
    text = str(e)
    option = option_in(e.argument, options) if e.argument else None
    if option and not text.startswith(option):
        text = f"{option}: {text}"
    if e.override:
        lift = option_in(e.override, options) or "--" + e.override.replace("_", "-")
        text += f" ({lift} {e.effect})" if e.effect else f" ({lift})"
    return text


def _print_traceback(e: BaseException) -> None:
    import traceback

    traceback.print_exception(e, file=sys.stderr)


def failure_code(e: BaseException, as_json: bool, options: Mapping[str, str]) -> int | None:
    """Report an exception that left a command body; its exit code, or None when it is not a
    failure to report here (SystemExit and the like: the caller re-raises it)."""
    if isinstance(e, IcectlError):
        if debug_enabled():
            _print_traceback(e)
        report_error(cli_message(e, options), e.exit_code, as_json)
        return e.exit_code
    if isinstance(e, KeyboardInterrupt):
        code = interrupted_code(e)
        report_error(_SIGNAL_WORDS.get(code, "interrupted"), code, as_json, prefix=None)
        return code
    if isinstance(e, BrokenPipeError):
        # the reader of our stdout went away (`icectl ... | head`): not an error
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0
    if isinstance(e, OSError) and _is_output_error(e):
        report_error(f"cannot write the output: {e.strerror or e}", StorageError.exit_code, as_json)
        return StorageError.exit_code
    if isinstance(e, Exception):  # a bug: say so plainly, full trace only on request
        if debug_enabled():
            _print_traceback(e)
        report_error(f"{type(e).__name__}: {e} (set {DEBUG_ENV}=1 for a traceback)", EXIT_INTERNAL,
                     as_json, prefix="internal error")
        return EXIT_INTERNAL
    return None


def _is_output_error(e: OSError) -> bool:
    import errno

    return e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO)


def flush_output(code: int) -> int:
    """Flush stdout before exiting: a full disk (or another write error) on the output is a
    storage error (exit 7), reported once, never a traceback at interpreter exit."""
    try:
        sys.stdout.flush()
    except (BrokenPipeError, ValueError):
        pass  # a reader that went away is not an error
    except OSError as e:
        try:  # drop what could not be written, so the interpreter does not try again at exit
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        report_error(f"cannot write the output: {e.strerror or e}", StorageError.exit_code, False)
        return code if code not in (0, None) else StorageError.exit_code
    return code
_SIGNAL_WORDS = {EXIT_INTERRUPTED: "interrupted", EXIT_TERMINATED: "terminated (SIGTERM)",
                 EXIT_HANGUP: "hung up (SIGHUP)"}


def interrupted_code(e: BaseException | None = None) -> int:
    """The exit code of an interrupt: 128 + the signal's number (130 for Ctrl-C, 143 for SIGTERM,
    129 for SIGHUP), as shells report a command a signal stopped."""
    from icectl.command_files import received_signal

    if isinstance(e, Interrupted):
        return e.exit_code
    signum = received_signal()
    return 128 + signum if signum is not None else EXIT_INTERRUPTED


def table_location(table: str, warehouse: Optional[str]) -> str:
    """The location a TABLE argument names."""
    from icectl.errors import InvalidInput
    from icectl.table.table import resolve_table_location

    if not table:
        raise InvalidInput("TABLE must not be empty")
    return resolve_table_location(table, warehouse)


_catalog_choice: Optional[tuple[Optional[str], Optional[str]]] = None


def apply_catalog_options(name: Optional[str], uri: Optional[str]) -> None:
    """Honour --catalog NAME / --catalog-uri URI for the rest of this command: TABLE arguments
    that are identifiers are then a catalog's tables (see icectl.catalog.resolve)."""
    global _catalog_choice
    _catalog_choice = (name, uri)


def catalog_choice():
    """The running command's catalog options (an icectl.catalog.resolve.CatalogChoice)."""
    from icectl.catalog.resolve import CatalogChoice

    name, uri = _catalog_choice or (None, None)
    return CatalogChoice(name, uri)


def table_catalog(table: str, warehouse: Optional[str]):
    """``(catalog, identifier)`` when TABLE is a catalog's table, else None (a filesystem one)."""
    from icectl.catalog.resolve import catalog_for

    return catalog_for(table, warehouse, catalog_choice())


def load_table(table: str, warehouse: Optional[str]) -> Table:
    if not table:
        from icectl.errors import InvalidInput

        raise InvalidInput("TABLE must not be empty")
    with table_found(table, warehouse):
        if warehouse is None and not any(_catalog_choice or ()) and not os.environ.get(CATALOG_ENV):
            # no catalog and no warehouse: TABLE is a location, whatever it looks like (the
            # resolver would say so too; this keeps its imports off a plain command's start-up)
            from icectl.table.table import Table as _Table

            return _Table.load(table_location(table, None))
        from icectl.catalog.resolve import load_table as resolve_and_load

        return resolve_and_load(table, warehouse, catalog_choice())


class table_found:
    """Around the loading of the table a TABLE argument names: a table not found there is
    reported with what TABLE was taken for (the one home of that error). A TABLE that looks like
    an identifier (``db.events``, ``ice.db.events``) and is no existing path, given without a
    warehouse, was read as a relative path: the message says to give --warehouse (-w) or
    ICECTL_WAREHOUSE; with a warehouse, a name of three parts or more may start with a Spark
    catalog's name, which is no part of the path."""

    def __init__(self, table: str, warehouse: Optional[str]) -> None:
        self.table, self.warehouse = table, warehouse

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, e: BaseException | None, tb: object) -> bool:
        from icectl.errors import NotFound

        if not isinstance(e, NotFound) or getattr(e, "table_hint", False):
            return False
        hint = self.hint()
        if hint is None:
            return False
        found = NotFound(f"{e}; {hint}")
        found.table_hint = True  # type: ignore[attr-defined]
        raise found from None

    def hint(self) -> str | None:
        import re

        name = self.table.strip()
        if any(_catalog_choice or ()) or os.environ.get(CATALOG_ENV):
            return None  # an identifier names a catalog's table: the catalog's message says which
        if not re.fullmatch(r"[A-Za-z_][\w$-]*(\.[A-Za-z_][\w$-]*)+", name) or os.path.exists(name):
            return None
        if self.warehouse is None:
            return (f"TABLE {name!r} looks like an identifier (namespace.table): give the "
                    f"warehouse it is in with --warehouse (-w) or {WAREHOUSE_ENV}")
        *namespace, _ = parts = name.split(".")
        if len(parts) < 3:
            return None  # the message names the location the identifier maps to
        return (f"TABLE {name!r} names the table {parts[-1]!r} of namespace {'.'.join(namespace)!r}; "
                f"if {parts[0]!r} is a Spark catalog's name, leave it out ({'.'.join(parts[1:])})")


def parse_time_option(text: str, option: str) -> int:
    """Epoch milliseconds of a time option's value (every time option accepts the same forms)."""
    from icectl.spec.timetext import parse_time_ms

    return parse_time_ms(text, option)


def apply_storage_options(items: Optional[Sequence[str]]) -> None:
    """Honour --storage-option KEY=VALUE (repeatable) for the rest of this process: every
    FileIO made afterwards passes them to fsspec, over ICECTL_STORAGE_OPTIONS."""
    from icectl.io.storage.objectstore import parse_storage_option, set_storage_options

    set_storage_options(dict(parse_storage_option(item) for item in items or ()))


def apply_no_cache(no_cache: bool) -> None:
    """Honour --no-cache for the rest of this process."""
    if no_cache:
        from icectl.io.manifest.cache import set_enabled

        set_enabled(False)
