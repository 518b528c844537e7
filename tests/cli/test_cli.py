"""The CLI run as a user runs it: a subprocess, exit codes, stdout/stderr, nothing written on errors."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from icectl import errors
from clirun import icectl


def run(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return icectl(*args, env={"ICECTL_WAREHOUSE": None, "ICECTL_DEBUG": None, **(env or {})}, cwd=cwd)



SCHEMA = "id long not null, ts timestamptz, cat string, tags list<string>, loc struct<lat: double, lon: double>"


def tree(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*")) if path.exists() else []


def test_create_then_inspect_as_a_user_would(tmp_path: Path) -> None:
    r = run("create", "wh/db/events", "--schema", SCHEMA, "--partition", "days(ts), bucket(16, id)",
            "--sort-order", "id desc nulls last", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "created table" in r.stderr  # progress/notes go to stderr
    assert "created table" not in r.stdout
    table_dir = tmp_path / "wh" / "db" / "events"
    assert (table_dir / "metadata" / "v1.metadata.json").is_file()
    assert (table_dir / "metadata" / "version-hint.text").read_text() == "1"

    r = run("inspect", "table", str(table_dir), "--json")
    assert r.returncode == 0, r.stderr
    v = json.loads(r.stdout)
    assert v["location"] == str(table_dir)  # stored absolute, as Spark's Hadoop catalog does
    assert v["format-version"] == 2
    assert v["current-snapshot-id"] is None
    assert [c["name"] for c in v["schema"]] == ["id", "ts", "cat", "tags", "tags.element", "loc", "loc.lat", "loc.lon"]
    # the reference numbers a struct's fields before their children
    assert [c["id"] for c in v["schema"]] == [1, 2, 3, 4, 6, 5, 7, 8]
    assert [(f["name"], f["transform"], f["field-id"]) for f in v["partition-spec"]] == [
        ("ts_day", "day", 1000), ("id_bucket", "bucket[16]", 1001)]
    assert v["sort-order"] == [{"source-id": 1, "source-column": "id", "transform": "identity",
                                "direction": "desc", "null-order": "nulls-last"}]
    assert v["properties"] == {"write.parquet.compression-codec": "zstd"}

    r = run("inspect", "table", str(table_dir))
    assert r.returncode == 0
    assert "day(ts) AS ts_day, bucket(16, id) AS id_bucket" in r.stdout


def test_warehouse_identifier_and_env(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    r = run("create", "db.t1", "--warehouse", str(wh), "--schema", "id int")
    assert r.returncode == 0, r.stderr
    assert (wh / "db" / "t1" / "metadata" / "v1.metadata.json").is_file()
    r = run("inspect", "schema", "db.t1", "--json", env={"ICECTL_WAREHOUSE": str(wh)})
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["columns"][0] == {"id": 1, "name": "id", "type": "int", "required": False, "doc": None}


def test_schema_file_and_format_versions(tmp_path: Path) -> None:
    schema = {"type": "struct", "schema-id": 0, "identifier-field-ids": [7], "fields": [
        {"id": 7, "name": "id", "required": True, "type": "long"},
        {"id": 9, "name": "m", "required": False, "type": {
            "type": "map", "key-id": 10, "key": "string", "value-id": 11, "value": "decimal(9, 2)",
            "value-required": False}}]}
    sf = tmp_path / "schema.json"
    sf.write_text(json.dumps(schema))
    for fv in (1, 2, 3):
        loc = tmp_path / f"t{fv}"
        r = run("create", str(loc), "--schema-file", str(sf), "--format-version", str(fv), "--json")
        assert r.returncode == 0, r.stderr
        v = json.loads(r.stdout)
        assert v["format-version"] == fv
        # ids reassigned fresh (1, 2, then the map's key and value), identifier field kept by name
        assert [(c["id"], c["name"]) for c in v["schema"]] == [(1, "id"), (2, "m"), (3, "m.key"), (4, "m.value")]
        assert v["identifier-fields"] == ["id"]
        raw = json.loads((loc / "metadata" / "v1.metadata.json").read_text())
        assert raw["format-version"] == fv
        if fv == 1:  # v1 files carry the single forms too, as Java writes them
            assert "schema" in raw and "partition-spec" in raw
        if fv == 3:
            assert raw["next-row-id"] == 0


@pytest.mark.parametrize("args, code, needle", [
    (["--schema", "id lon"], errors.InvalidInput.exit_code, "lon"),
    (["--schema", "id long, id int"], errors.InvalidInput.exit_code, "id"),
    (["--schema", "id long", "--partition", "bucket(4, nope)"], None, "nope"),
    (["--schema", "d double", "--partition", "bucket(4, d)"], None, "bucket"),
    (["--schema", "d date", "--partition", "hours(d)"], None, "hour"),
    (["--schema", "id long", "--format-version", "4"], errors.InvalidInput.exit_code, "format"),
    (["--schema", "t timestamp_ns"], errors.InvalidInput.exit_code, "format version 3"),
    (["--schema", "id long", "--property", "novalue"], errors.InvalidInput.exit_code, "KEY=VALUE"),
    (["--schema", "id long", "--sort-order", "zzz desc"], None, "zzz"),
    ([], errors.InvalidInput.exit_code, "schema"),
])
def test_bad_input_one_line_error_and_nothing_written(tmp_path: Path, args: list[str], code: int | None, needle: str) -> None:
    loc = tmp_path / "t"
    r = run("create", str(loc), *args)
    assert r.returncode != 0
    if code is not None:
        assert r.returncode == code
    else:
        assert r.returncode in (errors.InvalidInput.exit_code, errors.ValidationError.exit_code, errors.NotFound.exit_code)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("icectl: error:")
    assert needle.lower() in lines[0].lower()
    assert "Traceback" not in r.stderr
    assert r.stdout == ""
    assert not (loc / "metadata").exists()


def test_create_refuses_existing_table_and_changes_nothing(tmp_path: Path) -> None:
    loc = tmp_path / "t"
    assert run("create", str(loc), "--schema", "id long").returncode == 0
    before = {p: p.read_bytes() for p in (loc / "metadata").iterdir()}
    r = run("create", str(loc), "--schema", "x string")
    assert r.returncode == errors.AlreadyExists.exit_code
    assert "already exists" in r.stderr
    assert {p: p.read_bytes() for p in (loc / "metadata").iterdir()} == before


def test_missing_table_corrupt_metadata_and_debug(tmp_path: Path) -> None:
    r = run("inspect", "table", str(tmp_path / "nope"))
    assert r.returncode == errors.NotFound.exit_code
    assert str(tmp_path / "nope") in r.stderr

    loc = tmp_path / "t"
    assert run("create", str(loc), "--schema", "id long").returncode == 0
    (loc / "metadata" / "v1.metadata.json").write_text("{not json")
    r = run("inspect", "table", str(loc))
    assert r.returncode == errors.CorruptMetadata.exit_code
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    r = run("inspect", "table", str(loc), env={"ICECTL_DEBUG": "1"})
    assert r.returncode == errors.CorruptMetadata.exit_code
    assert "Traceback" in r.stderr


def test_unknown_snapshot_and_ref(tmp_path: Path) -> None:
    loc = tmp_path / "t"
    assert run("create", str(loc), "--schema", "id long").returncode == 0
    r = run("inspect", "snapshot", str(loc), "123")
    assert r.returncode == errors.NotFound.exit_code and "123" in r.stderr
    r = run("inspect", "files", str(loc), "--ref", "nope")
    assert r.returncode == errors.NotFound.exit_code and "nope" in r.stderr
    r = run("inspect", "snapshot", str(loc), "--json")
    assert r.returncode == 0 and json.loads(r.stdout) is None
    r = run("inspect", "files", str(loc), "--json")
    assert r.returncode == 0 and json.loads(r.stdout) == []


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    r = run("inspect", "nosuchview", str(tmp_path))
    assert r.returncode == 2
    r = run("create", str(tmp_path / "t"), "--schema", "id long", "--format-version", "x")
    assert r.returncode == 2
    assert not (tmp_path / "t").exists()


def test_pipe_output_never_truncates_paths(tmp_path: Path) -> None:
    deep = tmp_path / ("a_really_long_directory_name_" * 6) / "db" / "table_with_a_long_name"
    assert run("create", str(deep), "--schema", "id long").returncode == 0
    r = run("inspect", "metadata-log", str(deep))
    assert r.returncode == 0
    expected = str(deep / "metadata" / "v1.metadata.json")
    assert any(expected in line for line in r.stdout.splitlines()), r.stdout
    r = run("inspect", "table", str(deep))
    assert any(line.split() == ["location", str(deep)] for line in r.stdout.splitlines()), r.stdout


def test_every_view_has_json(tmp_path: Path) -> None:
    loc = tmp_path / "t"
    assert run("create", str(loc), "--schema", "id long, d date", "--partition", "d").returncode == 0
    for view in ("table", "schema", "partitions", "spec", "snapshots", "history", "refs", "manifests",
                 "files", "entries", "all-files", "position-deletes", "metadata-log", "all-manifests",
                 "all-entries", "ancestors"):
        r = run("inspect", view, str(loc), "--json")
        assert r.returncode == 0, (view, r.stderr)
        json.loads(r.stdout)
    assert json.loads(run("inspect", "partitions", str(loc), "--json").stdout) == []
    v = json.loads(run("inspect", "partitions", str(loc), "--spec", "--json").stdout)
    assert v == json.loads(run("inspect", "spec", str(loc), "--json").stdout)
    assert v == {"default-spec-id": 0, "last-partition-id": 1000, "specs": [{
        "spec-id": 0, "default": True, "string": "d AS d",
        "fields": [{"field-id": 1000, "name": "d", "source-id": 2, "source-column": "d", "transform": "identity"}]}]}


def test_table_view_json_keys_are_stable(tmp_path: Path) -> None:
    loc = tmp_path / "t"
    v = json.loads(run("create", str(loc), "--schema", "id long", "--json").stdout)
    assert list(v) == [
        "location", "metadata-file", "table-uuid", "format-version", "last-updated-ms", "last-updated",
        "last-sequence-number", "next-row-id", "current-snapshot-id", "current-snapshot", "snapshot-count",
        "refs", "current-schema-id", "schema", "schema-string", "identifier-fields", "default-spec-id",
        "partition-spec", "partition-spec-string", "default-sort-order-id", "sort-order",
        "sort-order-string", "properties", "totals"]


def test_help_everywhere_has_examples() -> None:
    from icectl.cli.app import app
    import typer

    root = typer.main.get_command(app)

    def walk(cmd, path):
        yield path, cmd
        for name, sub in getattr(cmd, "commands", {}).items():
            yield from walk(sub, path + [name])

    for path, cmd in walk(root, []):
        if not path:
            continue
        r = run(*path, "--help")
        assert r.returncode == 0, path
        assert "Example" in r.stdout, f"`icectl {' '.join(path)} --help` shows no example"
