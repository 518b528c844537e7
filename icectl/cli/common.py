"""Shared pieces of the CLI: options, table lookup, progress, result rendering, and the one place
errors become exit codes.

Every command module defines its commands with these options (TABLE, --warehouse, --json,
--dry-run, the snapshot selectors), renders results through the helpers here and exposes a
``register(app)`` function that icectl/cli/app.py calls when the command is used.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import TYPE_CHECKING, Annotated, Any, Callable, List, Optional, TypeVar

import typer

from icectl import command_files
from icectl.cli import typer_compat

from icectl.errors import IcectlError, InvalidInput
from icectl.cli.output import err, select_fields
from icectl.cli.runner import (  # noqa: F401 - re-exported: commands report through these
    DEBUG_ENV,
    apply_catalog_options,
    apply_storage_options,
    CATALOG_ENV,
    OPTION_OF_ARGUMENT,
    debug_enabled,
    failure_code,
    option_in,
    parse_time_option,
    report_error,
    table_catalog,
    table_location,
    WAREHOUSE_ENV,
)
from icectl.cli.runner import cli_message as runner_cli_message

if TYPE_CHECKING:
    from icectl.table.table import Table

F = TypeVar("F", bound=Callable[..., Any])



# Commands that only read a table: they also take tables icectl does not commit to (a catalog's
# table, a metadata file named directly); every other command refuses those at once.
READ_ONLY_COMMANDS = ("inspect", "plan", "scan", "check", "health", "orphans", "properties list", "drop")


def load_table(table: str, warehouse: Optional[str]) -> Table:
    """The table TABLE names; for a command that changes tables, UnsupportedFeature (exit 9,
    with the reason) when it is a table icectl does not commit to."""
    from icectl.cli.runner import load_table as load
    from icectl.errors import UnsupportedFeature

    tbl = load(table, warehouse)
    if tbl.read_only is not None:
        name = " ".join(typer_compat.current_command_words())
        if not any(name == c or name.startswith(c + " ") for c in READ_ONLY_COMMANDS):
            raise UnsupportedFeature(tbl.read_only)
    return tbl


def cli_message(e: IcectlError) -> str:
    """An error's message with the running command's option names (see runner.cli_message)."""
    return runner_cli_message(e, typer_compat.current_options())


FieldOpt = Annotated[
    Optional[List[str]],
    typer.Option(
        "--field",
        metavar="NAME",
        help="Print only this field of the --json view as plain text, one value a line (a list "
             "view: one line per element; several --field: tab-separated; nested: summary.total-records). "
             "Ids keep all 64 bits. Repeatable.",
        show_default=False,
    ),
]


StorageOptionOpt = Annotated[
    Optional[List[str]],
    typer.Option(
        "--storage-option",
        metavar="KEY=VALUE",
        help="An option of the table's filesystem, passed to fsspec (s3fs, gcsfs, adlfs), e.g. "
             "endpoint_url=http://127.0.0.1:9000 or anon=true; VALUE is read as JSON when it "
             "parses, else as text. Repeatable; over ICECTL_STORAGE_OPTIONS. "
             "icectl.unsafe-commits=true commits to a store that ignores conditional creates "
             "(see README, Object stores).",
        show_default=False,
    ),
]


def _catalog_names() -> list[str]:
    from icectl.catalog.config import catalog_names

    return catalog_names()


CatalogOpt = Annotated[
    Optional[str],
    typer.Option(
        "--catalog",
        metavar="NAME",
        autocompletion=lambda incomplete: [n for n in _catalog_names() if n.startswith(incomplete or "")],
        help="The SQL catalog NAME (an entry of .pyiceberg.yaml or PYICEBERG_CATALOG__NAME__URI): TABLE is "
             f"then namespace.table in it (see README, Catalogs). Env: {CATALOG_ENV}.",
        show_default=False,
    ),
]
CatalogUriOpt = Annotated[
    Optional[str],
    typer.Option(
        "--catalog-uri",
        metavar="URI",
        help="The SQL catalog's database: sqlite:///FILE or postgresql://USER@HOST:PORT/DB (with --warehouse "
             "for new tables); over the --catalog entry's uri.",
        show_default=False,
    ),
]


def handle_errors(fn: F | None = None, *, returns: str | tuple[str, ...] = ()) -> Any:
    """Run a command body; turn every failure into one line on stderr and its exit code.

    A command with a ``json_out`` parameter (--json) also gets ``--field NAME`` (repeatable):
    its JSON view, rendered by ``emit_json``, is then printed as the chosen fields in plain
    text. Adding the option here gives it to every command that has --json, at one place.

    ``returns`` names the result types whose JSON view the command prints ("module:Class", one
    or several): every ``--field`` is then checked against their fields before the body runs
    (cli/result_fields.py), so a misspelt one fails before anything is written. Every command
    that changes a table names its result types (tests/rules/test_options_checked_first.py).
    Used bare (``@handle_errors``) or with it (``@handle_errors(returns=...)``).
    """
    if fn is None:
        return functools.partial(handle_errors, returns=returns)
    import inspect

    result_types = (returns,) if isinstance(returns, str) else tuple(returns)

    sig = inspect.signature(fn, eval_str=True)
    with_fields = "json_out" in sig.parameters and "fields" not in sig.parameters
    # every command that opens a table (it has --warehouse) also gets --storage-option and the
    # catalog options (--catalog, --catalog-uri)
    with_storage = "warehouse" in sig.parameters and "storage_options" not in sig.parameters
    with_catalog = "warehouse" in sig.parameters and "catalog" not in sig.parameters

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        fields = kwargs.pop("fields", None) if with_fields else None
        storage = kwargs.pop("storage_options", None) if with_storage else None
        catalog = (kwargs.pop("catalog", None), kwargs.pop("catalog_uri", None)) if with_catalog else (None, None)
        as_json = bool(kwargs.get("json_out"))
        if fields:
            kwargs["json_out"] = True
        select_fields(fields, checked=bool(result_types))  # (also clears an earlier in-process run's)
        command_files.begin()
        try:
            if fields and result_types:
                from icectl.cli.result_fields import check_fields, result_views

                check_fields(fields, result_views(result_types))
            if with_storage:
                apply_storage_options(storage)  # (also clears options of an earlier in-process run)
            if with_catalog:
                apply_catalog_options(*catalog)
            return fn(*args, **kwargs)
        except (typer.Exit, typer.Abort):
            raise
        except BaseException as e:
            command_files.abort()  # the unfinished command's files (kept if a commit may have landed)
            code = failure_code(e, as_json, typer_compat.current_options())
            if code is None:
                raise
            raise typer.Exit(code) from None
        finally:
            select_fields(None)
            if with_catalog:
                apply_catalog_options(None, None)

    added = ([("fields", FieldOpt)] if with_fields else []) + \
        ([("storage_options", StorageOptionOpt)] if with_storage else []) + \
        ([("catalog", CatalogOpt), ("catalog_uri", CatalogUriOpt)] if with_catalog else [])
    if added:
        params = list(sig.parameters.values())
        params += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=ann)
                   for name, ann in added]
        wrapper.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {**getattr(fn, "__annotations__", {}), **dict(added)}
    wrapper.result_types = result_types  # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]


def complete_table(ctx: typer.Context, incomplete: str) -> list[str]:
    """Shell completion of TABLE: with a warehouse (-w before TABLE, or ICECTL_WAREHOUSE), the
    identifiers of the tables found under it that start with what was typed; nothing for a path
    (the shell then offers files, as it does without a warehouse)."""
    if any(c in incomplete for c in "/\\:") or incomplete.startswith((".", "~")):
        return []
    warehouse = (ctx.params.get("warehouse") if ctx is not None else None) or os.environ.get(WAREHOUSE_ENV)
    if not warehouse:
        return []
    from icectl.ops.metadata.warehouse import list_tables

    try:
        found = list_tables(warehouse)
    except (IcectlError, OSError):
        return []
    return [t.identifier for t in found.tables if t.identifier.startswith(incomplete)]


TableArg = Annotated[
    str,
    typer.Argument(
        metavar="TABLE",
        help="Table location (directory path or URL), or DB.TABLE with --warehouse.",
        show_default=False,
        autocompletion=complete_table,
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
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Print the result without committing it.")]
# snapshot selectors of the read-only views
SnapshotIdOpt = Annotated[Optional[int], typer.Option("--snapshot", help="Snapshot id (default: the current snapshot).")]
RefOpt = Annotated[Optional[str], typer.Option("--ref", help="Branch or tag name (instead of --snapshot).")]


def values(*choices: str) -> Callable[[str], list[str]]:
    """Shell completion of an option's values (``typer.Option(autocompletion=values(...))``)."""
    return lambda incomplete: [c for c in choices if c.startswith(incomplete or "")]


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


# -- progress (stderr, on a terminal only) -------------------------------------------------------


class Progress:
    """A rich progress bar per phase on stderr, only when stderr is a terminal.

    Operations report ``progress(phase, done, total)``; ``phase(name)`` adapts it to the
    ``progress(done, total)`` callbacks of single-phase operations.
    """

    def __init__(self) -> None:
        self.enabled = sys.stderr.isatty()
        self._progress: Any = None
        self._tasks: dict[str, Any] = {}

    def __enter__(self) -> "Progress":
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as RichProgress

            self._progress = RichProgress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                          TimeElapsedColumn(), console=Console(file=sys.stderr), transient=True)
            self._progress.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._progress is not None:
            self._progress.stop()

    def __call__(self, phase: str, done: int, total: int) -> None:
        if self._progress is None:
            return
        task = self._tasks.get(phase)
        if task is None:
            task = self._progress.add_task(phase, total=total)
            self._tasks[phase] = task
        self._progress.update(task, completed=done, total=total)

    def phase(self, name: str) -> Callable[[int, int], None]:
        return lambda done, total: self(name, done, total)


# -- rendering results shared by several commands --------------------------------------------------


def emit_snapshot_result(result: Any, extra: list[tuple[str, Any]] | None = None,
                         tail: list[tuple[str, Any]] | None = None) -> None:
    """The text view of a commit that made a snapshot (append, write): one aligned pair a line.

    ``result`` is an AppendResult; ``extra`` pairs follow the branch, ``tail`` pairs come last.
    """
    from icectl.cli.output import emit_pairs

    s = result.summary
    pairs: list[tuple[str, Any]] = [
        ("snapshot-id", result.snapshot_id),
        ("parent-snapshot-id", result.parent_snapshot_id),
        ("sequence-number", result.sequence_number),
    ]
    if result.first_row_id is not None:
        pairs += [("first-row-id", result.first_row_id), ("added-rows", result.added_rows)]
    pairs.append(("branch", result.branch))
    pairs += list(extra or [])
    pairs += [
        ("total-data-files", s.get("total-data-files")),
        ("total-records", s.get("total-records")),
        ("manifest-list", result.manifest_list),
        ("metadata-file", result.metadata_location),
    ]
    emit_pairs(pairs + list(tail or []))


def report_status(result: Any, what: str) -> None:
    """The stderr line of a metadata change (schema, spec, sort order, properties): committed,
    dry run, or no change, after any warnings the change carries."""
    for w in getattr(result, "warnings", ()):
        err(f"warning: {w}")
    if result.dry_run:
        err(f"dry run: {what} not committed")
    elif result.committed:
        err(f"committed {what} ({result.metadata_location})")
    else:
        err(f"no change: the table already has this {what}")


# -- engine options (commands whose work runs on an engine) ---------------------------------------

SPARK_MASTER_ENV = "ICECTL_SPARK_MASTER"
EngineOpt = Annotated[str, typer.Option(
    "--engine", help="Where the data work runs: local (worker processes on this machine) or spark.",
    metavar="local|spark", autocompletion=values("local", "spark"))]
WorkersOpt = Annotated[Optional[int], typer.Option(
    "--workers", min=1, help="Worker processes of the local engine (default: one per CPU).")]
SparkMasterOpt = Annotated[Optional[str], typer.Option(
    "--spark-master", envvar=SPARK_MASTER_ENV, show_envvar=False,
    help=f"Spark master URL for --engine spark, e.g. local[4], spark://host:7077 (env: {SPARK_MASTER_ENV}).")]


class EngineProgress:
    """The progress display of engine tasks: tasks done / total and input bytes, one bar on
    stderr, only when stderr is a terminal. Pass it as an engine's ``progress`` callback."""

    def __init__(self, description: str = "tasks") -> None:
        self.enabled = sys.stderr.isatty()
        self.description = description
        self._progress: Any = None
        self._task: Any = None

    def __enter__(self) -> "EngineProgress":
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as RichProgress

            self._progress = RichProgress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                TextColumn("{task.fields[bytes]}"), TimeElapsedColumn(),
                console=Console(file=sys.stderr), transient=True)
            self._progress.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._progress is not None:
            self._progress.stop()

    def __call__(self, p: Any) -> None:
        """Report an ``icectl.engines.TaskProgress``."""
        if self._progress is None:
            return
        shown = f"{_size(p.bytes_done)}/{_size(p.bytes_total)}" if p.bytes_total else ""
        if self._task is None:
            self._task = self._progress.add_task(self.description, total=p.total, bytes=shown)
        self._progress.update(self._task, completed=p.done, total=p.total, bytes=shown)


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1024 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"  # pragma: no cover


def make_engine(engine: str, workers: Optional[int], spark_master: Optional[str],
                progress: Optional[Callable[[Any], None]] = None) -> Any:
    """The engine the options name (``--engine``, ``--workers``, ``--spark-master``), through
    the one resolution the Python API shares (:func:`icectl.engines.open_engine`). Use it as a
    context manager: a Spark session the engine started is stopped at the end."""
    from icectl.engines import open_engine

    name = (engine or "local").strip().lower()
    if name not in ("local", "spark"):
        raise InvalidInput(f"--engine must be local or spark, got {engine!r}")
    if name == "local" and spark_master and os.environ.get(SPARK_MASTER_ENV) != spark_master:
        raise InvalidInput("--spark-master needs --engine spark")
    return open_engine(name, workers=workers, master=spark_master if name == "spark" else None,
                       progress=progress)
