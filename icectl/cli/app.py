"""The root `icectl` command: a table of commands, each imported only when it is used.

Start-up time matters to scripts and cron jobs, so `icectl --help`, `icectl --version` and
`icectl inspect table` must not import the code of every other command. The root group knows
each command by its name, the module that defines it and its one-line help (COMMANDS below);
the module is imported, and its ``register(app)`` run, only when the command is invoked,
completed or documented (`icectl --help` lists the one-line helps from the table).

To add a command: write ``icectl/cli/<name>_cmd.py`` with a ``register(app)`` function that
adds it to a Typer app (``app.command(...)(fn)`` or ``app.add_typer(group, name=...)``), and
add ONE line to COMMANDS. tests/cli/test_app.py checks that the table and the modules agree.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any, Callable, Iterator, Optional

import typer
from typer.core import TyperGroup

from icectl import __version__

HELP = """Manage Apache Iceberg tables on a filesystem (Hadoop-catalog layout), from the shell.

TABLE is a table location (a directory or a URL such as file:///data/wh/db/t); with
--warehouse (or ICECTL_WAREHOUSE) it may also be DB.TABLE, found at WAREHOUSE/DB/TABLE as
Spark's Hadoop catalog lays it out.

Exit codes: 0 ok, 2 invalid input or usage, 3 not found, 4 already exists, 5 validation
failed, 6 commit conflict (retries exhausted), 7 storage error, 8 corrupt metadata,
9 unsupported feature, 10 check found problems, 70 internal error, 130 interrupted.
Set ICECTL_DEBUG=1 for tracebacks.
"""

# command name -> (module under icectl.cli, one-line help as `icectl --help` lists it)
COMMANDS: dict[str, tuple[str, str]] = {
    "create": ("create_cmd", "Create a new table at TABLE (refused if a table already exists there)."),
    "append": ("append_cmd", "Append existing data files to TABLE as one new snapshot (rows are not read or copied)."),
    "write": ("write_cmd", "Write rows from DATA into TABLE as Parquet data files, committed as one new snapshot."),
    "upgrade": ("properties_cmds", "Upgrade the table's format version (1 -> 2 -> 3; never down)."),
    "expire": ("expire_cmd", "Expire old snapshots of TABLE and delete the files only they needed."),
    "orphans": ("orphans_cmd", "List files under TABLE's location that the table's metadata does not reference; delete them only with --delete."),
    "plan": ("plan_cmd", "Plan a scan of TABLE: the data files a filter reads, with residual filters and the delete files that apply, as Iceberg's scan planning (Java newScan().filter(...).planFiles()) computes them."),
    "check": ("check_cmd", "Check that TABLE follows the Iceberg spec and that every file its metadata names exists as recorded."),
    "scan": ("scan_cmd", "Read the rows of TABLE: the planned data files with their position deletes, deletion vectors (v3) and equality deletes applied, then the rows filtered by --filter."),
    "delete": ("delete_cmd", "Delete rows of TABLE, as one `delete` snapshot: those matching --filter, or those whose --equality key columns equal a row of --from FILE."),
    "upsert": ("upsert_cmd", "Upsert rows from DATA into TABLE by key: rows with the same key are replaced, new keys added."),
    "compact": ("compact_cmd", "Compact the data files of TABLE: rewrite small (or too big) files and files with many deleted rows into files of the target size, as Spark's rewrite_data_files procedure does, committed as one `replace` snapshot."),
    "rewrite-manifests": ("rewrite_manifests_cmd", "Rewrite TABLE's manifests so each holds the entries of neighbouring partitions, at the target size."),
    "cache": ("cache_cmd", "Inspect or empty the cache of decoded manifests that `icectl plan` and `icectl scan` share across runs."),
    "inspect": ("inspect_cmds", "Show a table's metadata: table, schema, partitions, spec, snapshots, snapshot, history, refs, manifests, files, entries, all-files, position-deletes, metadata-log."),
    "schema": ("schema_cmds", "Evolve a table's schema."),
    "partition": ("partition_cmds", "Evolve a table's partition spec."),
    "sort-order": ("sort_order_cmds", "Set or clear the table's default sort order (how writers should order rows in files)."),
    "properties": ("properties_cmds", "Show and change table properties."),
    "snapshot": ("refs_cmds", "Move main between snapshots: rollback, set-current, cherry-pick."),
    "branch": ("refs_cmds", "Create, drop, replace and fast-forward branches."),
    "tag": ("refs_cmds", "Create, drop and replace tags (named, fixed snapshots)."),
}


def load_module_commands(module_name: str) -> dict[str, Any]:
    """Import ``icectl.cli.<module_name>`` and return the click commands its register() adds."""
    name = f"icectl.cli.{module_name}"
    __import__(name)  # (not importlib.import_module, which `python -X importtime` does not see)
    module = sys.modules[name]
    holder = typer.Typer(rich_markup_mode=None)
    module.register(holder)
    commands = dict(typer.main.get_group(holder).commands)
    for cmd in commands.values():
        _defer_coercion(cmd)
    return commands


def _defer_coercion(cmd: Any) -> None:
    """Let plain values skip typer's pydantic-based coercion (start-up time).

    Recent typer versions build a pydantic TypeAdapter for every parameter the first time a
    command parses its arguments, even for options that were not given, and importing pydantic
    costs more than the rest of ``icectl inspect table`` together. Each parameter gets a runtime
    coercion that returns values needing no conversion as they are (None, text for a ``str``
    parameter, an int for an unconstrained ``int`` one, a bool for a flag) and hands every other
    value to typer's own coercion, built on first use, so results and error messages stay
    typer's. On typer versions without this machinery nothing changes.
    """
    if not isinstance(getattr(cmd, "commands", None), _LazyCommands):
        for sub in getattr(cmd, "commands", {}).values():
            _defer_coercion(sub)
    for param in cmd.params:
        _defer_param(param)
    make_help_option = getattr(cmd, "get_help_option", None)
    if make_help_option is not None and not getattr(make_help_option, "deferred", False):
        def get_help_option(ctx: Any) -> Any:  # made on first use, after this runs
            option = make_help_option(ctx)
            if option is not None:
                _defer_param(option)
            return option

        get_help_option.deferred = True  # type: ignore[attr-defined]
        cmd.get_help_option = get_help_option


def _defer_param(param: Any) -> None:
    if getattr(param, "_runtime_param", "absent") is None and hasattr(param, "type_descriptor"):
        deferred = _deferred_runtime_param(param.type_descriptor)
        if deferred is not None:
            param._runtime_param = deferred


def _deferred_runtime_param(descriptor: Any) -> Any:
    try:
        from typer._coercion import build_runtime_param
    except ImportError:
        return None
    return _DeferredCoercion(descriptor, build_runtime_param)


class _DeferredCoercion:
    """A parameter's coercion: plain values as they are, the rest through typer's, built late."""

    PLAIN = (str, int, bool)

    def __init__(self, descriptor: Any, build: Callable[[Any], Any]) -> None:
        self.descriptor = descriptor
        self.build = build
        self.built: Any = None
        annotation = descriptor.annotation
        info = descriptor.parameter_info
        if any(getattr(info, k, None) not in (None, False) for k in ("min", "max", "clamp")):
            annotation = None  # a constrained value: typer checks it
        self.annotation = annotation

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        if value is None:  # as typer's own coercion answers None
            return () if (param.multiple or param.nargs == -1) else None
        if type(value) is self.annotation and self.annotation in self.PLAIN:
            return value
        if self.built is None:
            self.built = self.build(self.descriptor)
        return self.built.coerce(value, param=param, ctx=ctx)


class _LazyCommands(dict):
    """The root group's commands: every name of COMMANDS, each module imported on first access.

    A dict so that everything the root group (and tools walking ``group.commands``, such as
    completion and the documentation test) does with commands keeps working; iterating the
    items imports every module, looking one name up imports one.
    """

    def __init__(self) -> None:
        super().__init__((name, None) for name in COMMANDS)

    def _load(self, name: str) -> Any:
        cmd = dict.get(self, name)
        if cmd is None:
            for n, c in load_module_commands(COMMANDS[name][0]).items():
                if n in COMMANDS and dict.get(self, n) is None:
                    dict.__setitem__(self, n, c)
            cmd = dict.get(self, name)
            if cmd is None:
                raise RuntimeError(f"icectl.cli.{COMMANDS[name][0]} registers no command {name!r}")
        return cmd

    def __getitem__(self, name: str) -> Any:
        if name not in self:
            raise KeyError(name)
        return self._load(name)

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        return self._load(name) if name in self else default

    def values(self) -> Iterator[Any]:  # type: ignore[override]
        return (self._load(n) for n in list(self))

    def items(self) -> Iterator[tuple[str, Any]]:  # type: ignore[override]
        return ((n, self._load(n)) for n in list(self))


class LazyGroup(TyperGroup):
    """The root group: commands come from COMMANDS, imported on demand."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = _LazyCommands()

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        _defer_coercion(self)  # typer adds the completion options after __init__
        return super().parse_args(ctx, args)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """List every command with its one-line help from the table, importing none of them."""
        from typer._click.utils import make_default_short_help

        limit = formatter.width - 6 - max(len(n) for n in COMMANDS)
        rows = [(name, make_default_short_help(short, limit)) for name, (_, short) in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


app = typer.Typer(
    name="icectl",
    cls=LazyGroup,
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


def main() -> None:
    app(prog_name="icectl")
