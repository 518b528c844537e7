"""Progress where a user waits: `write` of one file, `scan -o` and `health` show it on stderr when
stderr is a terminal, and never in a pipe or with --json."""

from __future__ import annotations

import os
import pty
import subprocess
import threading
from pathlib import Path

import pytest

from clirun import icectl, icectl_argv, icectl_process, process_env

PHASES = ("reading input bytes", "writing rows", "reading data files", "reading manifests")


@pytest.fixture
def work(tmp_path: Path) -> dict[str, str]:
    loc = str(tmp_path / "wh" / "db" / "t")
    assert icectl("create", loc, "--schema", "id long, cat string", "--partition", "cat").exit_code == 0
    csv = tmp_path / "rows.csv"
    csv.write_text("id,cat\n" + "".join(f"{i},{'ab'[i % 2]}\n" for i in range(5000)))
    return {"table": loc, "csv": str(csv), "out": str(tmp_path / "out.csv")}


def _commands(w: dict[str, str]) -> list[list[str]]:
    return [["write", w["table"], w["csv"]], ["scan", w["table"], "--format", "csv", "-o", w["out"]],
            ["health", w["table"]]]


def _on_a_terminal(args: list[str]) -> tuple[int, str]:
    """Run icectl with stderr on a pseudo-terminal (stdout a pipe); its exit code and stderr."""
    master, slave = pty.openpty()
    got: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the slave side closed
                return
            if not chunk:
                return
            got.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    env = process_env({"COLUMNS": "120", "TERM": "xterm"})
    p = subprocess.run(icectl_argv(*args), stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL,
                       env=env, timeout=300)
    os.close(slave)
    reader.join(timeout=60)
    os.close(master)
    return p.returncode, b"".join(got).decode("utf-8", "replace")


def test_progress_is_shown_on_a_terminal(work: dict[str, str]) -> None:
    seen = {}
    for args in _commands(work):
        code, err = _on_a_terminal(args)
        assert code in (0, 14), err
        seen[args[0]] = err
    assert "reading input bytes" in seen["write"] and "writing rows" in seen["write"]
    assert "reading data files" in seen["scan"]
    assert "reading manifests" in seen["health"]


def test_piped_runs_show_no_progress(work: dict[str, str]) -> None:
    for args in _commands(work):
        r = icectl_process(*args)
        assert r.returncode in (0, 14), r.stderr
        assert not any(p in r.stderr for p in PHASES), (args, r.stderr)
        assert "\x1b[" not in r.stderr
    # --json on a terminal: no progress either (health; write's result)
    for args in (["health", work["table"], "--json"], ["write", work["table"], work["csv"], "--json"]):
        code, err = _on_a_terminal(args)
        assert code in (0, 14)
        assert not any(p in err for p in PHASES), (args, err)
