"""The `icectl` program: a plain `icectl plan` command line runs without loading typer.

icectl runs as a fresh process from scripts and cron, and `plan` is what they run most: typer and
its click parser take about a fifth of a warm plan's whole process. :func:`parse_plan_args`
reads a plan command line made only of plan's own options, each written in one of the forms
``--opt VALUE``, ``--opt=VALUE``, ``-f VALUE`` / ``-w VALUE`` or a flag, with one TABLE, and
returns the values typer would give the command; :func:`icectl.cli.plan_run.run_plan` then runs
with them, its failures reported by the same :func:`icectl.cli.runner.failure_code` the typer
commands use. Anything else (--help, --field, ``--``, a short option joined to its value, a
flag given a value, a value that looks like an option or an integer option's value that is not
a plain integer, a second TABLE, shell completion, any other command) goes to typer unchanged,
so every message about a malformed command line is typer's. A test compares this parser with typer's on
many command lines (tests/cli/test_entry.py).
"""

from __future__ import annotations

import os
import sys
from typing import Any

from icectl.cli.runner import WAREHOUSE_ENV

# plan's options: long option -> (parameter name, kind); kind "flag", "int", "text" or "texts"
# (a repeatable text option: a list of its values)
PLAN_OPTIONS: dict[str, tuple[str, str]] = {
    "--filter": ("filter_text", "text"),
    "--snapshot": ("snapshot", "int"),
    "--ref": ("ref", "text"),
    "--as-of": ("as_of", "text"),
    "--columns": ("columns", "text"),
    "--tasks": ("tasks", "flag"),
    "--explain": ("explain", "flag"),
    "--case-sensitive": ("case_sensitive", "flag"),
    "--from-snapshot": ("from_snapshot", "int"),
    "--to-snapshot": ("to_snapshot", "int"),
    "--split-size": ("split_size", "int"),
    "--open-file-cost": ("open_file_cost", "int"),
    "--lookback": ("lookback", "int"),
    "--warehouse": ("warehouse", "text"),
    "--workers": ("workers", "int"),
    "--format": ("out_format", "text"),
    "--summary": ("summary", "flag"),
    "--no-cache": ("no_cache", "flag"),
    "--json": ("json_out", "flag"),
    "--storage-option": ("storage_options", "texts"),
    "--catalog": ("catalog", "text"),
    "--catalog-uri": ("catalog_uri", "text"),
}
PLAN_SHORT = {"-f": "--filter", "-w": "--warehouse"}
_COMPLETE_ENV = "_ICECTL_COMPLETE"  # typer's shell completion: always typer's


def _plan_defaults() -> dict[str, Any]:
    out: dict[str, Any] = {name: (False if kind == "flag" else () if kind == "texts" else None)
                           for name, kind in PLAN_OPTIONS.values()}
    out["table"] = None
    return out


def _integer(text: str) -> int | None:
    """The value typer gives an integer option (None: leave the command line to typer)."""
    t = text.strip()
    body = t[1:] if t[:1] in "+-" else t
    if not body or not body.isascii() or not body.isdigit():
        return None
    return int(t)


def parse_plan_args(args: list[str]) -> dict[str, Any] | None:
    """The keyword arguments of ``run_plan`` for the words after ``plan``, or None when the
    command line is not one this parser takes (typer then parses it)."""
    values = _plan_defaults()
    i, n = 0, len(args)
    while i < n:
        word = args[i]
        i += 1
        if word.startswith("--"):
            name, eq, inline = word.partition("=")
        elif word.startswith("-") and word != "-":
            if word not in PLAN_SHORT:
                return None  # -fVALUE, bundled or unknown short options: typer's
            name, eq, inline = PLAN_SHORT[word], "", ""
        else:
            if values["table"] is not None:
                return None  # a second argument: typer reports it
            values["table"] = word
            continue
        spec = PLAN_OPTIONS.get(name)
        if spec is None:
            return None  # --help, --field, --, an unknown option: typer's
        param, kind = spec
        if kind == "flag":
            if eq:
                return None
            values[param] = True
            continue
        if eq:
            value = inline
        else:
            if i >= n or args[i].startswith("-"):
                return None  # a missing value or one that looks like an option: typer decides
            value = args[i]
            i += 1
        if kind == "int":
            number = _integer(value)
            if number is None:
                return None
            values[param] = number
        elif kind == "texts":
            values[param] = list(values[param]) + [value]
        else:
            values[param] = value
    if values["table"] is None:
        return None
    if values["warehouse"] is None:
        values["warehouse"] = os.environ.get(WAREHOUSE_ENV) or None
    return values


def _run_plan(values: dict[str, Any]) -> int:
    from icectl.cli.output import select_fields
    from icectl.cli.plan_run import run_plan
    from icectl.cli.runner import apply_catalog_options, apply_storage_options, failure_code

    select_fields(None)
    try:
        values = dict(values)
        apply_storage_options(values.pop("storage_options", None))
        apply_catalog_options(values.pop("catalog", None), values.pop("catalog_uri", None))
        run_plan(**values)
        sys.stdout.flush()
    except BaseException as e:  # noqa: BLE001 - sorted by failure_code
        code = failure_code(e, bool(values["json_out"]),
                            {param: opt for opt, (param, _) in PLAN_OPTIONS.items()})
        if code is None:
            raise
        return code
    return 0


def _exit_now(code: int) -> None:
    """End the process once the output is flushed, without tearing down the plan's objects one
    by one (a tenth of a second for a 200,000-file plan): a plan leaves nothing else to do."""
    from icectl.cli.runner import flush_output

    code = flush_output(code)
    try:
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(code)


def main() -> None:
    # first of all: SIGTERM and SIGHUP end a command as Ctrl-C does (see icectl.command_files)
    from icectl.command_files import install_signal_handlers

    install_signal_handlers()
    try:
        _main(sys.argv[1:])
    except KeyboardInterrupt as e:  # a signal before any command ran (nothing was written)
        from icectl.cli.runner import interrupted_code, report_error

        code = interrupted_code(e)
        report_error("interrupted", code, "--json" in sys.argv[1:], prefix=None)
        _exit_now(code)


def _main(argv: list[str]) -> None:
    if argv[:1] == ["plan"] and _COMPLETE_ENV not in os.environ:
        values = parse_plan_args(argv[1:])
        if values is not None:
            # a one-shot process: the cyclic collector would only walk the plan's objects again
            # and again (they are freed by the exit), so it stays off
            import gc

            gc.disable()
            _exit_now(_run_plan(values))
    from icectl.cli.app import main as typer_main

    typer_main()
