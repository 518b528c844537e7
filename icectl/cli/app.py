"""The root `icectl` command: a table of commands, each imported only when it is used.

Start-up time matters to scripts and cron jobs, so `icectl --help`, `icectl --version` and
`icectl inspect table` must not import the code of every other command. The root group knows
each command by its name, the module that defines it and its one-line help (COMMANDS below);
the module is imported, and its ``register(app)`` run, only when the command is invoked,
completed or documented (`icectl --help` lists the one-line helps from the table).

To add a command: write ``icectl/cli/<name>_cmd.py`` with a ``register(app)`` function that
adds it to a Typer app (``app.command(...)(fn)`` or ``app.add_typer(group, name=...)``), and
add ONE line to COMMANDS. tests/cli/test_app.py checks that the table and the modules agree.

Every command module loaded here also gets, at one place: integer options converted without
typer's pydantic machinery (start-up time) and with messages naming the value typed; option
types shown as words in --help (INTEGER, TEXT, PATH); example commands in --help kept one a line.
Usage errors the option parser finds are reported as every other error (one line on stderr, a
JSON object too under --json, exit code 2; see ``LazyGroup.main``); errors of the commands
themselves go through ``handle_errors`` in common.py, which also gives every command that has
--json the --field option.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any, Callable, Iterator, Optional

import typer

from icectl.cli import typer_compat

from icectl import __version__

from icectl.errors import EXIT_CODES

HELP = """Manage Apache Iceberg tables on a filesystem (Hadoop-catalog layout), from the shell.

TABLE is a table location (a directory or a URL such as file:///data/wh/db/t); with
--warehouse (or ICECTL_WAREHOUSE) it may also be DB.TABLE, found at WAREHOUSE/DB/TABLE as
Spark's Hadoop catalog lays it out.

Errors are one line on stderr (icectl: error: ...); with --json also a JSON object
{"error": {"kind", "message", "exit-code"}}. Set ICECTL_DEBUG=1 for tracebacks.

Exit codes:

\b
""" + "\n".join(f"  {code:<4} {meaning}" for code, _kind, meaning in EXIT_CODES) + "\n"

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
    "health": ("health_cmd", "Judge TABLE's health from its metadata: data file sizes, row-level deletes, manifests, snapshots and metadata, partitions, layout (and orphan files with --list-files)."),
    "scan": ("scan_cmd", "Read the rows of TABLE: the planned data files with their position deletes, deletion vectors (v3) and equality deletes applied, then the rows filtered by --filter."),
    "delete": ("delete_cmd", "Delete rows of TABLE, as one snapshot: those matching --filter, or those whose --equality key columns equal a row of --from FILE."),
    "changes": ("changes_cmd", "Print the rows TABLE's snapshots inserted and deleted after snapshot --from (exclusive) up to --to (default: the current one), as Spark's create_changelog_view shows them."),
    "upsert": ("upsert_cmd", "Upsert rows from DATA into TABLE by key: rows with the same key are replaced, new keys added."),
    "compact": ("compact_cmd", "Compact the data files of TABLE: rewrite small (or too big) files and files with many deleted rows into files of the target size, as Spark's rewrite_data_files procedure does, committed as one `replace` snapshot."),
    "relocate": ("relocate_cmd", "Copy TABLE to another location with every path its metadata records rewritten, as Spark's rewrite_table_path procedure does."),
    "rewrite-manifests": ("rewrite_manifests_cmd", "Rewrite TABLE's manifests so each holds the entries of neighbouring partitions, at the target size."),
    "maintain": ("maintain_cmd", "Run the maintenance TABLE's health says is due, in order: expire snapshots, remove orphan files, rewrite delete files (compact --deletes), compact data files, rewrite manifests."),
    "stats": ("stats_cmd", "Compute table statistics files and register them in the table's metadata, as Spark's compute_table_stats and compute_partition_stats procedures do."),
    "cache": ("cache_cmd", "Inspect or empty the cache of decoded manifests that `icectl plan` and `icectl scan` share across runs."),
    "inspect": ("inspect_cmds", "Show a table's metadata: table, schema, partitions, spec, snapshots, snapshot, history, refs, manifests, files, entries, all-files, all-manifests, all-entries, ancestors, position-deletes, partition-statistics, metadata-log, statistics."),
    "schema": ("schema_cmds", "Evolve a table's schema."),
    "partition": ("partition_cmds", "Evolve a table's partition spec."),
    "sort-order": ("sort_order_cmds", "Set or clear the table's default sort order (how writers should order rows in files)."),
    "properties": ("properties_cmds", "Show and change table properties."),
    "snapshot": ("refs_cmds", "Move main between snapshots: rollback, set-current, cherry-pick, publish."),
    "branch": ("refs_cmds", "Create, drop, replace and fast-forward branches."),
    "tag": ("refs_cmds", "Create, drop and replace tags (named, fixed snapshots)."),
    "list": ("warehouse_cmds", "List the tables and namespaces of a warehouse (or of one NAMESPACE of it)."),
    "drop": ("warehouse_cmds", "Drop a table: without --purge, remove its metadata/ directory (no catalog finds the table any more; its data files stay where they are); with --purge, also delete every file its metadata reaches that lies inside the table location (data and delete files, manifests, manifest lists, statistics), then the directories left empty."),
    "migrate": ("migrate_cmd", "Make the Hive-style Parquet directory DIR an Iceberg table in place, as Spark's migrate procedure does (no data is copied)."),
    "snapshot-table": ("migrate_cmd", "Create the table TABLE referencing the files of the Hive-style Parquet directory DIR, leaving DIR untouched, as Spark's snapshot procedure does."),
    "register": ("warehouse_cmds", "Adopt a table another catalog manages (e.g. pyiceberg's SqlCatalog, whose metadata files are named NNNNN-uuid.metadata.json) as the filesystem table IDENT, so that icectl can change it and Spark's Hadoop catalog finds it."),
}


def load_module_commands(module_name: str) -> dict[str, Any]:
    """Import ``icectl.cli.<module_name>`` and return the click commands its register() adds."""
    name = f"icectl.cli.{module_name}"
    __import__(name)  # (not importlib.import_module, which `python -X importtime` does not see)
    module = sys.modules[name]
    holder = typer.Typer(rich_markup_mode=None)
    module.register(holder)
    commands = typer_compat.app_commands(holder)
    for cmd in commands.values():
        _defer_coercion(cmd)
        _keep_example_lines(cmd)
    return commands


def _keep_example_lines(cmd: Any) -> None:
    """Examples in --help keep one command a line, in every command and group.

    Click rewraps every paragraph of a help text; an indented paragraph (a list of example
    commands) is marked to keep its lines, and a paragraph "Example: icectl ..." is split into
    the word and the indented command, so no command is cut or run into the next one.
    """
    if getattr(cmd, "help", None):
        cmd.help = keep_example_lines(cmd.help)
    if not isinstance(getattr(cmd, "commands", None), _LazyCommands):
        for sub in getattr(cmd, "commands", {}).values():
            _keep_example_lines(sub)


def keep_example_lines(text: str) -> str:
    out = []
    for para in text.split("\n\n"):
        lines = para.split("\n")
        body = [ln for ln in lines if ln.strip() and ln.strip() != "\b"]
        head = para.lstrip("\n")
        if head.startswith(("Example: icectl ", "Example: find ", "Example: cat ")):
            command = head[len("Example: "):].strip()
            out.append("Example:")
            out.append("\b\n  " + command)
        elif body and all(ln.startswith((" ", "\t")) for ln in body) and not head.startswith("\b"):
            out.append("\b\n" + para.strip("\n"))
        else:
            out.append(para)
    return "\n\n".join(out)


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
    _word_type(param)
    if typer_compat.runtime_coercion(param) is None and hasattr(param, "type_descriptor"):
        build = typer_compat.coercion_builder()
        if build is not None:
            typer_compat.set_runtime_coercion(param, _DeferredCoercion(param.type_descriptor, build))


class _DeferredCoercion:
    """A parameter's coercion: plain values as they are, the rest through typer's, built late.

    Integers typed on the command line (``int``, ``Optional[int]``, ``List[int]``, with their
    ``min``/``max`` bounds) and paths are converted here, with messages that name the value
    typed; everything else goes to typer's coercion.
    """

    PLAIN = (str, int, bool)

    def __init__(self, descriptor: Any, build: Callable[[Any], Any]) -> None:
        self.descriptor = descriptor
        self.build = build
        self.built: Any = None
        info = descriptor.parameter_info
        self.bounds = (getattr(info, "min", None), getattr(info, "max", None))
        self.annotation = descriptor.annotation
        self.base, self.many = _base_type(descriptor.annotation)
        if getattr(info, "clamp", False) or getattr(info, "parser", None) is not None:
            self.annotation = self.base = None  # clamped or custom-parsed values: typer's rules
        checks = ("exists", "resolve_path", "writable", "allow_dash")
        if any(getattr(info, k, False) for k in checks) or not getattr(info, "file_okay", True) \
                or not getattr(info, "dir_okay", True):
            self.base = None if getattr(self.base, "__name__", "") == "Path" else self.base  # typer checks paths

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        if value is None:  # as typer's own coercion answers None
            return () if (param.multiple or param.nargs == -1) else None
        if self.base is int and self.many and isinstance(value, (list, tuple)):
            return [self._int(v, param, ctx) for v in value]
        if self.base is int and not self.many and isinstance(value, (str, int)) and not isinstance(value, bool):
            return self._int(value, param, ctx)
        if self.base is not None and self.base.__name__ == "Path" and not self.many and isinstance(value, str):
            return self.base(value)
        if type(value) is self.annotation and self.annotation in self.PLAIN:
            return value
        if self.built is None:
            self.built = self.build(self.descriptor)
        return self.built.coerce(value, param=param, ctx=ctx)

    def _int(self, value: Any, param: Any, ctx: Any) -> int:
        if isinstance(value, int):
            n = value
        elif _INTEGER.fullmatch(value.strip()):
            n = int(value.strip())
        else:
            raise typer_compat.bad_parameter(f"{value!r} is not an integer", ctx, param)
        low, high = self.bounds
        if low is not None and n < low:
            raise typer_compat.bad_parameter(f"{value} is less than {low}, the least it may be", ctx, param)
        if high is not None and n > high:
            raise typer_compat.bad_parameter(f"{value} is more than {high}, the most it may be", ctx, param)
        return n


_INTEGER = __import__("re").compile(r"[+-]?[0-9]+")


def _base_type(annotation: Any) -> tuple[Any, bool]:
    """(the element type, whether the parameter takes several) of Optional[T], List[T] and T."""
    from typing import Union, get_args, get_origin

    many = False
    for _ in range(3):
        origin = get_origin(annotation)
        args = [a for a in get_args(annotation) if a is not type(None)]
        if origin is Union and len(args) == 1:
            annotation = args[0]
        elif origin in (list, tuple) and len(args) == 1:
            annotation, many = args[0], True
        else:
            break
    return (annotation if isinstance(annotation, type) else None), many


# -- help: option types as words ---------------------------------------------------------------

TYPE_WORDS = {"int": "INTEGER", "str": "TEXT", "float": "FLOAT", "bool": "BOOLEAN", "Path": "PATH",
              "datetime": "DATETIME"}


def _word_type(param: Any) -> None:
    """Show the parameter's type in --help as a word (INTEGER, TEXT, PATH), not ``<list[str]>``;
    show an argument by its name alone (TABLE, [ID], FILE...)."""
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is None or getattr(param, "icectl_words_shown", False):
        return
    base, _many = _base_type(descriptor.annotation)
    word = TYPE_WORDS.get(getattr(base, "__name__", ""), "VALUE")
    if getattr(descriptor, "is_choice", False) and descriptor.choices:
        word = "|".join(str(getattr(c, "value", c)) for c in descriptor.choices)
    if getattr(param, "param_type_name", "") == "argument":
        param.display_type = lambda ctx: "" if word == "TEXT" else word
        name = param.display_name_raw

        def usage_name() -> str:
            shown = name + ("..." if param.nargs != 1 and not name.endswith("...") else "")
            return shown if param.required else f"[{shown}]"

        typer_compat.set_argument_names(
            param, usage_name, lambda: name + ("..." if param.nargs != 1 and not name.endswith("...") else ""))
    else:
        param.display_type = lambda ctx: word
    param.icectl_words_shown = True  # (a mark of icectl's own, not typer's)


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


class LazyGroup(typer_compat.Group):
    """The root group: commands come from COMMANDS, imported on demand."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = _LazyCommands()

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        _defer_coercion(self)  # typer adds the completion options after __init__
        return super().parse_args(ctx, args)

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        with _interrupts_reported(kwargs.get("args") or (args[1] if len(args) > 1 else [])):
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: Any) -> Any:
        with _interrupts_reported(sys.argv[1:]):
            return super().invoke(ctx)

    def main(self, args: Any = None, prog_name: Any = None, complete_var: Any = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        """Run icectl; a usage error the option parser finds (an unknown option or command, a bad
        number, a missing argument) is reported as every error is: one line on stderr (and a
        JSON object with --json), exit code 2."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        argv = list(sys.argv[1:] if args is None else args)
        try:
            code = super().main(argv, prog_name, complete_var, standalone_mode=False, **extra)
        except Exception as e:  # noqa: BLE001 - sorted below
            code = _report_usage_error(e, argv)
        from icectl.cli.runner import flush_output

        sys.exit(flush_output(code if isinstance(code, int) else 0))

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """List every command with its one-line help from the table, importing none of them."""
        limit = formatter.width - 6 - max(len(n) for n in COMMANDS)
        rows = [(name, typer_compat.short_help(short, limit)) for name, (_, short) in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


class _interrupts_reported:
    """A signal outside a command body (while the command line is parsed or the command module
    imported) is reported as every interrupt is: one line, exit code 128 + the signal's number
    (typer would exit 130 silently, whatever the signal)."""

    def __init__(self, argv: Any) -> None:
        self.argv = list(argv or [])

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, e: Any, tb: Any) -> bool:
        if e is None or not isinstance(e, KeyboardInterrupt):
            return False
        from icectl.cli.runner import interrupted_code, report_error

        code = interrupted_code(e)
        report_error("interrupted", code, "--json" in self.argv, prefix=None)
        raise typer.Exit(code) from None


def _report_usage_error(e: Exception, argv: list[str]) -> int:
    """The exit code of an exception that left the command line's parsing, after reporting it."""
    from typer import Abort

    from icectl.cli.common import report_error
    from icectl.errors import EXIT_USAGE

    ClickException, NoArgsIsHelpError, NoSuchOption, UsageError = typer_compat.usage_errors()
    words = argv[: argv.index("--")] if "--" in argv else argv
    as_json = "--json" in words
    if isinstance(e, NoArgsIsHelpError):  # a command given without arguments: its help
        e.show()
        return e.exit_code
    if isinstance(e, Abort):  # a signal while the command line was parsed (click's Abort)
        from icectl.cli.runner import interrupted_code

        code = interrupted_code(e.__cause__ or e.__context__)
        report_error("interrupted", code, as_json, prefix=None)
        return code
    if not isinstance(e, ClickException):
        raise e
    ctx = getattr(e, "ctx", None)
    where = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
    if isinstance(e, NoSuchOption):
        message = f"unknown option {e.option_name}"
        if e.possibilities:
            message += f" (did you mean {' or '.join(sorted(e.possibilities))}?)"
        message += where
    else:
        message = e.format_message().strip().rstrip(".")
        message = message[:1].lower() + message[1:]
        if message.startswith("no such command"):
            message = "unknown command" + message[len("no such command"):]
        if isinstance(e, UsageError):
            message += where
    report_error(message, EXIT_USAGE if isinstance(e, UsageError) else e.exit_code, as_json)
    return EXIT_USAGE if isinstance(e, UsageError) else e.exit_code


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
    # SIGTERM (kill, timeout, systemd, cron) and SIGHUP (a closed terminal) end a command as
    # Ctrl-C does: its unfinished files are removed, exit code 128 + the signal's number
    from icectl.command_files import install_signal_handlers

    install_signal_handlers()
    app(prog_name="icectl")
