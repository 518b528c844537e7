"""On a terminal, ids and timestamps are never split over lines (an 80-column terminal showed
snapshot ids in two pieces). icectl runs under a pseudo-terminal of a forced width."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from clirun import icectl as run
from clirun import without_user_settings
from support.tables import empty_table, write_text


def on_terminal(columns: int, *args: object) -> str:
    """stdout of ``icectl ARGS`` written to a pseudo-terminal ``columns`` wide."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ICECTL_")}
    env.update(COLUMNS=str(columns), NO_COLOR="1", TERM="xterm")
    proc = subprocess.Popen([sys.executable, "-m", "icectl", *map(str, args)], stdout=slave,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    text = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", out.decode("utf-8").replace("\r\n", "\n"))
    return text


def icectl(*args: object) -> str:
    r = run(*args, env=without_user_settings())
    assert r.returncode == 0, r.stderr
    return r.stdout



@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("tty")
    loc = work / "a-rather-long-directory-name-for-the-table" / "events"
    empty_table(loc, "id long not null")
    write_text(loc, *(f"id\n{i}\n" for i in range(3)))
    return loc


def whole_on_one_line(text: str, values: list[str]) -> list[str]:
    """The values that do not appear whole within one line of ``text``."""
    return [v for v in values if not any(v in line for line in text.splitlines())]


# view -> the keys of its JSON rows that its table shows as ids or timestamps
SHOWN = {
    "snapshots": ("snapshot-id", "parent-snapshot-id", "timestamp"),
    "history": ("made-current-at", "snapshot-id", "parent-id"),
    "refs": ("snapshot-id",),
    "manifests": ("added-snapshot-id",),
    "entries": ("snapshot-id",),
    "metadata-log": ("timestamp",),
    "all-manifests": ("reference-snapshot-id", "added-snapshot-id"),
    "all-entries": ("snapshot-id",),
    "ancestors": ("snapshot-id", "timestamp"),
}


@pytest.mark.parametrize("view", sorted(SHOWN))
@pytest.mark.parametrize("columns", [80, 60])
def test_ids_and_timestamps_are_whole_on_a_narrow_terminal(table: Path, view: str, columns: int) -> None:
    import json

    shown = on_terminal(columns, "inspect", view, table)
    rows = json.loads(icectl("inspect", view, table, "--json"))
    values = [str(r[k]) for r in rows for k in SHOWN[view] if r.get(k) is not None]
    assert values, rows
    assert not whole_on_one_line(shown, values), shown
    assert all(len(line) <= columns for line in shown.splitlines()), shown


def test_a_wide_terminal_keeps_the_table_layout(table: Path) -> None:
    shown = on_terminal(200, "inspect", "snapshots", table)
    header = next(line for line in shown.splitlines() if "snapshot-id" in line)
    assert "parent-id" in header and "timestamp" in header  # one header row: a table, not blocks
