"""A TABLE that is not found says what it was taken for: an identifier given without a
warehouse is read as a relative path, so the error says to give --warehouse / ICECTL_WAREHOUSE
(every command reports it from the one place tables are loaded, cli/runner.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clirun import icectl, without_user_settings

COMMANDS = [["scan"], ["plan"], ["check"], ["inspect", "table"], ["write", "{T}", "rows.csv"],
            ["properties", "set", "{T}", "a=b"], ["drop"]]


@pytest.mark.parametrize("words", COMMANDS, ids=[" ".join(w[:2]) for w in COMMANDS])
def test_an_identifier_without_a_warehouse_hints_at_it(tmp_path: Path, words: list[str]) -> None:
    (tmp_path / "rows.csv").write_text("id\n1\n")
    argv = [w.replace("{T}", "ice.db.events") for w in words]
    if "{T}" not in words:
        argv.append("ice.db.events")
    done = icectl(*argv, cwd=tmp_path, env=without_user_settings())
    assert done.returncode == 3, done.stderr
    line, = done.stderr.strip().splitlines()
    assert "no Iceberg table at ice.db.events" in line
    assert "--warehouse" in line and "ICECTL_WAREHOUSE" in line


def test_a_path_or_an_existing_directory_gets_no_hint(tmp_path: Path) -> None:
    (tmp_path / "a.b").mkdir()
    for name in ("a.b", "./x/y", "x"):
        done = icectl("scan", name, cwd=tmp_path, env=without_user_settings())
        assert done.returncode == 3
        assert "--warehouse" not in done.stderr, done.stderr


def test_a_spark_name_under_a_warehouse_says_the_catalog_part_is_no_path(tmp_path: Path) -> None:
    done = icectl("scan", "ice.db.events", "-w", tmp_path, env=without_user_settings())
    assert done.returncode == 3
    assert f"no Iceberg table at {tmp_path}/ice/db/events" in done.stderr
    assert "leave it out (db.events)" in done.stderr
    done = icectl("scan", "db.events", "-w", tmp_path, env=without_user_settings())
    assert done.returncode == 3 and "leave it out" not in done.stderr
