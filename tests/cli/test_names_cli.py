"""Names and messages agree with what icectl shows: --field takes the column names the text
views show, the copy-on-write delete counts the files it rewrote, expire's --help explains its
snake_case keys, every --help shows one Examples section, shell completion offers values and
table identifiers, and broken inputs are named (the manifest, the compressed input, the
duplicate field id) with the exit code of bad input."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import typer

from clirun import icectl, icectl_json, without_user_settings
from support.tables import empty_table


def ok(*args: Any, **kw: Any) -> Any:
    done = icectl(*args, **kw)
    assert done.returncode == 0, (args, done.stderr)
    return done


@pytest.fixture()
def table(tmp_path: Path) -> Path:
    t = tmp_path / "wh" / "db" / "events"
    empty_table(t, "id long, name string", partition="bucket(2, id)")
    (tmp_path / "rows.csv").write_text("id,name\n1,a\n2,b\n3,c\n")
    ok("write", t, tmp_path / "rows.csv")
    return t


def _leaf_commands() -> dict[str, Any]:
    from icectl.cli.app import app

    out: dict[str, Any] = {}

    def walk(cmd: Any, path: list[str]) -> None:
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in subs.items():
                walk(sub, path + [name])
        else:
            out[" ".join(path)] = cmd

    walk(typer.main.get_group(app), [])
    return out


# -- --field takes what the text views show ---------------------------------------------------------

SHOWN = {  # view -> column names of its text table, each a --field now
    "partitions": ["partition", "spec", "records", "files", "size", "pos-del-recs", "last-snapshot"],
    "files": ["content", "partition", "records", "size", "data-seq", "path"],
    "entries": ["status", "seq", "records", "path"],
    "snapshots": ["parent-id", "seq", "refs"],
    "manifests": ["spec", "seq", "added", "existing", "path"],
    "schema": ["id", "name", "type", "required"],
}


@pytest.mark.parametrize("view", sorted(SHOWN))
def test_field_takes_the_columns_the_text_view_shows(table: Path, view: str) -> None:
    for column in SHOWN[view]:
        done = icectl("inspect", view, table, "--field", column)
        assert done.returncode == 0, (view, column, done.stderr)
        assert done.stdout.strip() or column == "parent-id", (view, column)  # (the first has none)


def test_field_records_of_inspect_partitions_is_the_record_count(table: Path) -> None:
    shown = ok("inspect", "partitions", table, "--field", "records", "--field", "record-count").stdout
    pairs = [line.split("\t") for line in shown.strip().splitlines()]
    assert pairs and all(a == b for a, b in pairs) and sum(int(a) for a, _ in pairs) == 3
    assert "unknown field 'recrds'" in icectl("inspect", "partitions", table, "--field", "recrds").stderr


# -- the copy-on-write delete's text ------------------------------------------------------------------


def test_copy_on_write_delete_shows_the_files_it_rewrote(tmp_path: Path) -> None:
    t = tmp_path / "t"
    ok("create", t, "--schema", "id long")
    (tmp_path / "ids.csv").write_text("id\n1\n2\n")
    ok("write", t, tmp_path / "ids.csv")
    text = ok("delete", t, "--filter", "id = 1", "--mode", "copy-on-write").stdout
    pairs = dict(re.split(r"\s{2,}", line.strip(), maxsplit=1) for line in text.strip().splitlines())
    assert pairs["rewritten data files"] == "1" and pairs["added data files"] == "1"
    assert pairs["deleted positions"] == "1"
    assert "position delete files" not in pairs  # (merge-on-read's)


# -- expire's --json keys -----------------------------------------------------------------------------


def test_expire_help_names_every_snake_case_key_of_its_json(table: Path, tmp_path: Path) -> None:
    ok("write", table, tmp_path / "rows.csv")
    view = icectl_json("expire", table, "--older-than", "0s", "--retain-last", "1", "--dry-run")
    help_text = " ".join(ok("expire", "--help").stdout.split())
    odd = [k for k in view if "_" in k]
    assert odd, "expire --json has no snake_case keys any more: drop the paragraph of its help"
    for key in odd:
        assert key in help_text, f"expire --help does not say why {key} is snake_case"
    assert all(re.fullmatch(r"[a-z]+(-[a-z]+)*", k) for k in view if k not in odd)


# -- --help -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(_leaf_commands()))
def test_help_has_one_examples_section(name: str) -> None:
    text = ok(*name.split(), "--help").stdout
    assert len(re.findall(r"(?im)^\s*examples?:", text)) <= 1, text


# -- shell completion ---------------------------------------------------------------------------------


def complete(words: str, env: dict[str, str | None] | None = None, cwd: Path | None = None) -> list[str]:
    cword = len(words.split()) - (0 if words.endswith(" ") else 1)
    done = icectl(env={**without_user_settings(), "_ICECTL_COMPLETE": "complete_bash", "COMP_WORDS": words,
                       "COMP_CWORD": str(cword), **(env or {})}, cwd=cwd)
    return done.stdout.split()


def _choice_options() -> list[tuple[str, str, list[str]]]:
    """(command, option, values) of every option whose metavar lists its values (a|b|c)."""
    out = []
    for name, cmd in _leaf_commands().items():
        for p in cmd.params:
            metavar = getattr(p, "metavar", None) or ""
            longs = [o for o in p.opts if o.startswith("--")]
            if "|" in metavar and longs:
                out.append((name, longs[0], metavar.split("|")))
    return out


def test_options_with_fixed_values_complete_them() -> None:
    choices = _choice_options()
    assert ("compact", "--strategy", ["binpack", "sort", "zorder"]) in choices
    for name, option, words in choices:
        assert complete(f"icectl {name} T {option} ") == words, (name, option)


def test_table_completes_to_the_identifiers_under_the_warehouse(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    for ident in ("db.events", "db.users", "other.t"):
        ok("create", wh / ident.replace(".", "/"), "--schema", "id long")
    assert complete(f"icectl scan -w {wh} db.") == ["db.events", "db.users"]
    assert complete(f"icectl inspect table -w {wh} o") == ["other.t"]
    assert complete("icectl scan db.", env={"ICECTL_WAREHOUSE": str(wh)}) == ["db.events", "db.users"]
    assert complete(f"icectl scan -w {wh} ./") == []  # a path: the shell offers files
    assert complete("icectl scan db.") == []  # no warehouse: files


# -- broken inputs are named --------------------------------------------------------------------------


def _truncate(path: Path, n: int) -> None:
    path.write_bytes(path.read_bytes()[:n])


@pytest.mark.parametrize("what,pattern", [("manifest", "*-m0.avro"), ("manifest list", "snap-*.avro")])
def test_a_truncated_manifest_is_named(table: Path, what: str, pattern: str) -> None:
    broken, = (table / "metadata").glob(pattern)
    _truncate(broken, 20)
    for args in (["scan", table, "--no-cache"], ["plan", table, "--no-cache"], ["inspect", "files", table]):
        done = icectl(*args)
        assert done.returncode == 8, (args, done.stderr)
        assert f"{what} {broken}: truncated Avro header" in done.stderr, (args, done.stderr)


@pytest.mark.parametrize("suffix", [".csv.gz", ".jsonl.gz"])
@pytest.mark.parametrize("command", ["write", "upsert"])
def test_a_truncated_compressed_input_is_bad_input(table: Path, tmp_path: Path, suffix: str, command: str) -> None:
    rows = "id,name\n" + "".join(f"{i},n{i}\n" for i in range(2000)) if suffix == ".csv.gz" else \
        "".join(json.dumps({"id": i, "name": f"n{i}"}) + "\n" for i in range(2000))
    data = gzip.compress(rows.encode())
    src = tmp_path / f"rows{suffix}"
    src.write_bytes(data[: len(data) // 2])
    before = sorted(p.name for p in table.rglob("*"))
    extra = ["--key", "id"] if command == "upsert" else []
    done = icectl(command, table, src, *extra)
    assert done.returncode == 2, done.stderr
    line, = done.stderr.strip().splitlines()
    assert str(src) in line and "not a complete gzip file" in line
    assert sorted(p.name for p in table.rglob("*")) == before


@pytest.mark.parametrize("nested", [False, True])
def test_a_duplicate_field_id_is_named_as_such(tmp_path: Path, nested: bool) -> None:
    t = tmp_path / "t"
    ok("create", t, "--schema", "id long, name string")

    def fid(n: int) -> dict[bytes, bytes]:
        return {b"PARQUET:field_id": str(n).encode()}

    if nested:
        inner = pa.struct([pa.field("x", pa.int32(), metadata=fid(1))])
        schema = pa.schema([pa.field("id", pa.int64(), metadata=fid(1)), pa.field("s", inner, metadata=fid(2))])
        rows = {"id": [1], "s": [{"x": 1}]}
    else:
        schema = pa.schema([pa.field("id", pa.int64(), metadata=fid(1)),
                            pa.field("name", pa.string(), metadata=fid(1))])
        rows = {"id": [1], "name": ["a"]}
    pq.write_table(pa.table(rows, schema=schema), tmp_path / "dup.parquet")
    done = icectl("append", t, tmp_path / "dup.parquet")
    assert done.returncode != 0
    assert "duplicate field id 1" in done.stderr and "type" not in done.stderr, done.stderr
