"""Concurrent writers lose no acknowledged commit.

- A straggler, made deterministic: a command is frozen (SIGSTOP through the io layer's testing
  hook) just before it moves its new metadata into place, other commands commit meanwhile, then
  it resumes. It must either land on top of the newest version or fail with exit 6 — with
  ``write.metadata.delete-after-commit.enabled`` the version name it was aiming at has been
  freed, which is how acknowledged commits were lost (issue 9 item 2: these cases fail on the code
  before that fix).
- Many icectl processes at once mixing every committing command (big counts with --runslow; the
  default-scale run with Spark alongside is tests/interop/test_faults_concurrency_interop.py).
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from faults_support import (EXIT_CONFLICT, EXIT_OK, TableView, check_versions, child_env,
                            create_table, kill, run_icectl, start_icectl, table_files,
                            unreferenced_files, wait_stopped_or_exited, write_csv, write_parquet)

DAC = ("write.metadata.delete-after-commit.enabled=true", "write.metadata.previous-versions-max=1")


def _temp_metadata(location: Path) -> set[str]:
    return {p.name for p in (location / "metadata").glob("*.metadata.json")
            if not p.name.startswith("v")}


_STOP_POINTS: dict[str, int] = {}  # command -> the operation found last time (saves probes)


def stop_before_publish(key: str, location: Path, *args: object) -> tuple[object, set[str]]:
    """Start ``icectl ARGS`` and freeze it right after it wrote its new metadata file, before the
    next file operation (the move into ``v<N>.metadata.json``). Found by stopping at the 1st,
    2nd, ... file operation until a fresh temporary metadata file exists at the stop. Returns the
    process and the table's files before it started (what the killed probes left included)."""
    start = _STOP_POINTS.get(key, 1)
    for n in range(start, 30):
        before = _temp_metadata(location)
        files_before = table_files(location)
        proc = start_icectl(*args, env=child_env(ICECTL_FAULT_STOP_AT=str(n)))
        if not wait_stopped_or_exited(proc):
            out, err = proc.communicate()
            raise AssertionError(f"{args} finished (exit {proc.returncode}) before publishing "
                                 f"new metadata:\n{err}")
        if _temp_metadata(location) - before:
            _STOP_POINTS[key] = n
            return proc, files_before
        kill(proc)  # stopped earlier in the commit: nothing of it is in the table yet
    raise AssertionError(f"{args} never wrote a temporary metadata file")


def _straggler_case(tmp_path: Path, command: str, delete_after_commit: bool) -> None:
    t = tmp_path / "t"
    create_table(t, *(DAC if delete_after_commit else ()))
    others = [write_parquet(tmp_path / f"o{i}.parquet", range(100 + 10 * i, 105 + 10 * i), f"o{i}")
              for i in range(3)]
    if command == "append":
        mine = write_parquet(tmp_path / "mine.parquet", range(1, 6), "mine")
        args: tuple[object, ...] = ("append", t, mine)
    elif command == "write":
        args = ("write", t, write_csv(tmp_path / "mine.csv", range(1, 6), "mine"))
    elif command == "schema-add":
        args = ("schema", "add", t, "straggler_col", "string")
    else:
        args = ("properties", "set", t, "straggler.key=1")

    proc, probe_junk = stop_before_publish(command, t, *args)
    try:
        for o in others:  # three commits while the straggler sleeps
            done = run_icectl("append", t, o)
            assert done.returncode == EXIT_OK, done.stderr
    finally:
        proc.send_signal(signal.SIGCONT)
    out, err = proc.communicate(timeout=120)
    assert "Traceback" not in err, err
    assert proc.returncode in (EXIT_OK, EXIT_CONFLICT), f"exit {proc.returncode}: {err}"

    view = TableView.read(t)
    assert {str(o) for o in others} <= view.live_data_files, "a bystander's append was lost"
    if proc.returncode == EXIT_OK:  # acknowledged: must be in the newest version
        if command == "append":
            assert str(mine) in view.live_data_files, "acknowledged append lost"
        elif command == "write":
            assert any("mine" in str(r) for r in _sources(t)), "acknowledged write lost"
        elif command == "schema-add":
            assert "straggler_col" in view.columns, "acknowledged schema change lost"
        else:
            assert view.properties.get("straggler.key") == "1", "acknowledged property lost"
    check_versions(t, delete_after_commit=delete_after_commit)
    # Nothing of the straggler is left unreferenced, whether it committed or gave up.
    assert unreferenced_files(t, view) - probe_junk == set()


def _sources(t: Path) -> set[str]:
    from faults_support import static_table

    return set(static_table(t).scan(selected_fields=("src",)).to_arrow().column("src").to_pylist())


COMMANDS = ["append", "schema-add",
            pytest.param("write", marks=pytest.mark.slow),
            pytest.param("properties", marks=pytest.mark.slow)]


@pytest.mark.parametrize("command", COMMANDS)
def test_straggler_without_metadata_cleanup(tmp_path: Path, command: str) -> None:
    _straggler_case(tmp_path, command, delete_after_commit=False)


@pytest.mark.parametrize("command", COMMANDS)
def test_straggler_with_delete_after_commit(tmp_path: Path, command: str) -> None:
    _straggler_case(tmp_path, command, delete_after_commit=True)
