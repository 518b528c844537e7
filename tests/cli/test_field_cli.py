"""`--field NAME`: chosen values of a command's JSON view as plain text, run as a user runs icectl.

Snapshot ids are 64-bit; tools that read JSON numbers as doubles (jq 1.6) round them. --field
prints them from the exact integers, one value a line, tab-separated when several are chosen.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from icectl.errors import EXIT_USAGE, InvalidInput
from clirun import icectl as run
from clirun import without_user_settings
from support.tables import empty_table, write_text


def icectl(*args: object, check: bool = True) -> subprocess.CompletedProcess[str]:
    r = run(*args, env=without_user_settings())
    if check:
        assert r.returncode == 0, r.stderr
    return r



@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A table with three snapshots (its ids are random 63-bit numbers, most above 2^53)."""
    work = tmp_path_factory.mktemp("field")
    loc = work / "t"
    empty_table(loc, "id long not null, name string", properties={"write.format.default": "parquet"})
    write_text(loc, *(f"id,name\n{i},n{i}\n" for i in range(3)))
    return loc


def as_json(*args: object) -> object:
    return json.loads(icectl(*args, "--json").stdout)


def test_a_list_view_gives_one_line_per_element_with_exact_ids(table: Path) -> None:
    snaps = as_json("inspect", "snapshots", table)
    r = icectl("inspect", "snapshots", table, "--field", "snapshot-id")
    assert r.stdout.splitlines() == [str(s["snapshot-id"]) for s in snaps]
    assert len(snaps) == 3
    for line, s in zip(r.stdout.splitlines(), snaps):
        assert int(line) == s["snapshot-id"]


def test_several_fields_are_tab_separated_nested_paths_and_nulls(table: Path) -> None:
    snaps = as_json("inspect", "snapshots", table)
    r = icectl("inspect", "snapshots", table, "--field", "snapshot-id", "--field", "parent-snapshot-id",
               "--field", "summary.total-records")
    rows = [line.split("\t") for line in r.stdout.splitlines()]
    assert rows == [[str(s["snapshot-id"]), "" if s["parent-snapshot-id"] is None else str(s["parent-snapshot-id"]),
                     s["summary"]["total-records"]] for s in snaps]
    assert rows[0][1] == ""  # the first snapshot has no parent: null prints as nothing


def test_an_object_view_gives_one_line_and_feeds_another_command(table: Path) -> None:
    view = as_json("inspect", "snapshot", table)
    sid = icectl("inspect", "snapshot", table, "--field", "snapshot-id").stdout.strip()
    assert sid == str(view["snapshot-id"])
    first = icectl("inspect", "snapshots", table, "--field", "snapshot-id").stdout.splitlines()[0]
    rolled = icectl("snapshot", "rollback", table, first, "--field", "snapshot-id")
    assert rolled.stdout.strip() == first
    icectl("snapshot", "set-current", table, sid)
    assert icectl("inspect", "table", table, "--field", "current-snapshot.snapshot-id").stdout.strip() == sid


def test_keys_with_dots_lists_and_indexes(table: Path) -> None:
    r = icectl("inspect", "table", table, "--field", "properties.write.format.default")
    assert r.stdout == "parquet\n"
    view = as_json("inspect", "snapshot", table)
    paths = [m["path"] for m in view["manifests"]]
    # a list of objects: a name picks from every element, the line repeats the other fields
    r = icectl("inspect", "snapshot", table, "--field", "manifests.path", "--field", "snapshot-id")
    assert r.stdout.splitlines() == [f"{p}\t{view['snapshot-id']}" for p in paths]
    r = icectl("inspect", "snapshot", table, "--field", "manifests.0.path")
    assert r.stdout.splitlines() == paths[:1]
    # an object prints as compact JSON
    r = icectl("inspect", "table", table, "--field", "properties")
    assert json.loads(r.stdout) == as_json("inspect", "table", table)["properties"]


def test_commands_that_change_the_table_print_fields_too(table: Path, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    f = tmp_path / "x.parquet"
    pq.write_table(pa.table({"id": pa.array([7, 8], pa.int64()), "name": pa.array(["a", "b"])}), f)
    r = icectl("append", table, f, "--field", "snapshot-id", "--field", "added-records")
    sid, added = r.stdout.strip().split("\t")
    assert added == "2" and sid == str(as_json("inspect", "snapshot", table)["snapshot-id"])
    r = icectl("expire", table, "--older-than", "0s", "--retain-last", "1", "--dry-run",
               "--field", "expired-snapshot-ids")
    ids = r.stdout.splitlines()
    assert ids and all(i.isdigit() for i in ids)  # a list spreads over lines, one id each
    assert set(map(int, ids)) < {s["snapshot-id"] for s in as_json("inspect", "snapshots", table)}


def test_an_unknown_field_is_a_one_line_usage_error_naming_the_valid_ones(table: Path) -> None:
    r = icectl("inspect", "snapshots", table, "--field", "snapshot_id", check=False)
    assert r.returncode == EXIT_USAGE == InvalidInput.exit_code
    assert r.stdout == ""
    [line] = r.stderr.splitlines()
    assert line.startswith("icectl: error: unknown field 'snapshot_id' (valid fields: snapshot-id, ")
    r = icectl("inspect", "snapshot", table, "--field", "summary.nope", check=False)
    assert r.returncode == 2 and "valid fields of summary: " in r.stderr and "total-records" in r.stderr


def test_every_command_with_json_takes_field() -> None:
    """--field comes with --json from the shared error handling, for every command present and
    future (a command module only has to use handle_errors and JsonOpt)."""
    import typer

    from icectl.cli.app import app

    def walk(cmd, path):
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in subs.items():
                yield from walk(sub, path + [name])
        else:
            yield path, cmd

    with_json = 0
    for path, cmd in walk(typer.main.get_command(app), []):
        opts = {o for p in cmd.params for o in getattr(p, "opts", [])}
        if "--json" in opts:
            with_json += 1
            assert "--field" in opts, f"icectl {' '.join(path)} has --json but no --field"
        else:
            assert "--field" not in opts, path
    assert with_json > 40


@pytest.mark.parametrize("fields, lines", [
    (["a"], ["1", "2"]),
    (["a", "b.c"], ["1\tx", "2\t"]),
    (["l"], ["7", "8", ""]),
    (["a", "l"], ["1\t7", "1\t8", "2\t"]),
    (["f", "t"], ["0.5\ttrue", "\tfalse"]),
])
def test_field_lines_rules(fields: list[str], lines: list[str]) -> None:
    from icectl.cli.output import field_lines

    view = [{"a": 1, "b": {"c": "x"}, "l": [7, 8], "f": 0.5, "t": True},
            {"a": 2, "b": None, "l": [], "f": None, "t": False}]
    assert field_lines(view, fields) == lines


def test_field_lines_refuses_lists_of_different_lengths() -> None:
    from icectl.cli.output import field_lines

    with pytest.raises(InvalidInput, match="different lengths"):
        field_lines({"x": [1, 2], "y": [1]}, ["x", "y"])
    assert field_lines(None, ["x"]) == []
    assert field_lines([], ["anything"]) == []  # nothing to check the name against, nothing printed
    assert field_lines({"big": 2**63 - 1}, ["big"]) == [str(2**63 - 1)]
