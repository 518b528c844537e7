"""The root command: a table of commands whose modules are imported only when used."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer._click.utils import make_default_short_help

from icectl.cli.app import COMMANDS, app, load_module_commands

CLI = Path(__file__).resolve().parents[2] / "icectl" / "cli"
SHARED = {"__init__", "app", "common", "output", "entry", "runner", "plan_run", "parallel_out", "rows_out", "result_fields",
          "typer_compat", "health_html"}


def test_the_table_names_every_command_module_and_its_one_line_help() -> None:
    modules = {p.stem for p in CLI.glob("*.py")} - SHARED
    assert modules == {m for m, _ in COMMANDS.values()}, "a command module is missing from COMMANDS"
    for module in sorted(modules):
        commands = load_module_commands(module)
        mine = {n for n, (m, _) in COMMANDS.items() if m == module}
        assert set(commands) == mine, (module, set(commands), mine)
        for name in mine:
            short = COMMANDS[name][1]
            for limit in (45, 60, 74, 500):
                assert make_default_short_help(short, limit) == commands[name].get_short_help_str(limit), (name, limit)


def test_the_root_group_gives_every_command() -> None:
    root = typer.main.get_command(app)
    assert list(root.commands) == list(COMMANDS)
    loaded = dict(root.commands.items())
    assert all(loaded[n] is not None for n in COMMANDS)
    assert root.commands.get("no-such-command") is None
    with pytest.raises(KeyError):
        root.commands["no-such-command"]


def imports_of(*args: str) -> tuple[subprocess.CompletedProcess, set[str]]:
    env = {k: v for k, v in os.environ.items() if k not in ("ICECTL_WAREHOUSE", "ICECTL_DEBUG")}
    r = subprocess.run([sys.executable, "-X", "importtime", "-m", "icectl", *args], capture_output=True,
                       text=True, env=env, timeout=120)
    names = {line.split("|")[-1].strip() for line in r.stderr.splitlines() if line.startswith("import time:")}
    return r, names


def command_modules(names: set[str]) -> set[str]:
    return {n.rsplit(".", 1)[1] for n in names if n.startswith("icectl.cli.")} - SHARED


HEAVY = ("pyarrow", "fastavro", "fsspec", "rich", "pydantic", "icectl.io.manifest.records", "icectl.scan", "icectl.expr")


def test_help_and_version_import_no_command(tmp_path: Path) -> None:
    r, names = imports_of("--help")
    assert r.returncode == 0
    for name in COMMANDS:  # every command listed with its one-line help
        assert f"  {name} " in r.stdout
    assert command_modules(names) == set()
    assert not [n for n in names if n.startswith(HEAVY + ("icectl.ops", "icectl.spec", "icectl.table"))]
    r, names = imports_of("--version")
    assert r.returncode == 0 and r.stdout.startswith("icectl ")
    assert command_modules(names) == set()


def test_inspect_table_imports_only_what_it_uses(tmp_path: Path) -> None:
    loc = tmp_path / "t"
    made = subprocess.run([sys.executable, "-m", "icectl", "create", str(loc), "--schema", "id long"],
                          capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    r, names = imports_of("inspect", "table", str(loc))
    assert r.returncode == 0, r.stderr
    assert "location" in r.stdout
    assert command_modules(names) == {"inspect_cmds"}
    assert not [n for n in names if n.startswith(HEAVY)]


def test_values_typer_must_convert_still_get_typers_checks_and_messages(tmp_path: Path) -> None:
    """Integers and plain text skip typer's (pydantic) coercion; bad values are one line naming the
    value typed, exit 2; the rest (a Path, a list of text) still converts."""
    loc = tmp_path / "t"
    runner_env = {k: v for k, v in os.environ.items() if k not in ("ICECTL_WAREHOUSE", "ICECTL_DEBUG")}

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "icectl", *args], capture_output=True, text=True,
                              env=runner_env, timeout=120)

    assert run("create", str(loc), "--schema", "id long", "--format-version", "1", "--json").returncode == 0
    r = run("plan", str(loc), "--snapshot", "abc")
    assert r.returncode == 2 and r.stderr.startswith("icectl: error: invalid value for '--snapshot': 'abc' is not an integer")
    assert len(r.stderr.splitlines()) == 1, r.stderr
    r = run("expire", str(loc), "--workers", "0")
    assert r.returncode == 2 and "invalid value for '--workers': 0 is less than 1" in r.stderr
    assert len(r.stderr.splitlines()) == 1, r.stderr
    r = run("expire", str(loc), "--snapshot-id", "1", "--snapshot-id", "x")  # a list of integers
    assert r.returncode == 2 and "'x' is not an integer" in r.stderr
    r = run("create", str(tmp_path / "u"), "--schema-file", str(tmp_path / "none.json"))  # a Path
    assert r.returncode == 3 and "none.json" in r.stderr, r.stderr
    r = run("inspect", "table", str(loc), "--json")
    assert r.returncode == 0 and '"format-version": 1' in r.stdout
    r = run("inspect", "schema", str(loc), "--schema-id", "0", "--json")  # an int converted by typer
    assert r.returncode == 0 and '"schema-id": 0' in r.stdout


def test_the_typer_internals_the_cli_relies_on_are_pinned() -> None:
    """cli/app.py defers typer's (pydantic) coercion per parameter and shows arguments by name,
    through typer internals (``typer._coercion.build_runtime_param``, a parameter's
    ``_runtime_param``, ``_usage_display_name``/``_rich_display_name``) and its vendored click
    (``typer._click``). They hold for the one typer minor pyproject.toml pins: an install outside
    it, or a typer of that minor without them, fails here rather than in a user's shell."""
    import importlib.metadata
    import re

    import typer._coercion
    import typer.core

    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text(encoding="utf-8")
    pin = re.search(r'"typer>=(\d+)\.(\d+),<(\d+)\.(\d+)"', pyproject)
    assert pin, "typer must be pinned to one minor in pyproject.toml"
    low, high = (int(pin[1]), int(pin[2])), (int(pin[3]), int(pin[4]))
    assert high == (low[0], low[1] + 1), "the pin covers one minor"
    installed = tuple(int(x) for x in importlib.metadata.version("typer").split(".")[:2])
    assert low <= installed < high
    assert callable(typer._coercion.build_runtime_param)
    assert "_runtime_param" in typer.core._TyperParameter.__annotations__
    params = [p for c in load_module_commands("inspect_cmds").values()
              for sub in getattr(c, "commands", {c.name: c}).values() for p in sub.params]
    assert any(getattr(p, "param_type_name", "") == "argument" for p in params)
    for p in params:  # what _defer_coercion and _word_type changed
        assert getattr(p, "_runtime_param", "absent") != "absent"
