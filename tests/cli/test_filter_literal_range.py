"""A filter literal its column's type cannot hold is bad input in every command that takes a
filter: exit 2, one line naming the literal, the column and its type, nothing written. The
commands are found in the CLI's command table (any command with a ``--filter`` option), so a new
one is covered without being listed here."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import typer

from clirun import icectl
from icectl.cli.app import app
from support.tables import empty_table, write_text

LONG_RANGE = "(-9223372036854775808 to 9223372036854775807)"
CASES = [
    ("id = 99999999999999999999999", f"the integer 99999999999999999999999 is out of range for column 'id' of type long {LONG_RANGE}"),
    ("id < 9223372036854775808", f"the integer 9223372036854775808 is out of range for column 'id' of type long {LONG_RANGE}"),
    ("n > 3000000000", "the integer 3000000000 is out of range for column 'n' of type int (-2147483648 to 2147483647)"),
    ("price = 1.234", "cannot use 1.234 with column 'price' of type decimal(9, 2): more than 2 digit(s) after the point"),
    ("price < 100000000", "cannot use 100000000 with column 'price' of type decimal(9, 2): more than 9 digits"),
    ("day = '9999999-01-01'", "the string '9999999-01-01' is out of range for column 'day' of type date"),
]


def _filter_commands() -> list[list[str]]:
    root = typer.main.get_command(app)

    def walk(cmd, path):
        opts = {o for p in getattr(cmd, "params", []) for o in getattr(p, "opts", [])}
        if path and "--filter" in opts:
            yield path
        for name, sub in sorted(getattr(cmd, "commands", {}).items()):
            yield from walk(sub, path + [name])

    return list(walk(root, []))


COMMANDS = _filter_commands()


def test_the_commands_taking_a_filter_are_found() -> None:
    names = {" ".join(p) for p in COMMANDS}
    assert {"scan", "plan", "delete", "compact"} <= names, names


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    w = tmp_path_factory.mktemp("range")
    t = w / "t"
    empty_table(t, "id long, n int, price decimal(9, 2), day date")
    write_text(t, "id,n,price,day\n1,2,3.50,1969-12-31\n2,3,4.00,2024-01-02\n")
    return t


def _state(t: Path) -> list[str]:
    return sorted(os.path.relpath(os.path.join(r, n), t) for r, _, ns in os.walk(t) for n in ns)


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
@pytest.mark.parametrize("text, message", CASES, ids=[c[0] for c in CASES])
def test_a_literal_out_of_its_column_range_is_bad_input(table: Path, command: list[str], text: str,
                                                      message: str) -> None:
    before = _state(table)
    r = icectl(*command, table, "--filter", text)
    assert r.returncode == 2, (command, r.output)
    assert r.stderr.strip().splitlines() == [f"icectl: error: {message}"] or \
        (len(r.stderr.strip().splitlines()) == 1 and message in r.stderr), r.stderr
    assert r.stdout == ""
    assert _state(table) == before  # nothing written
