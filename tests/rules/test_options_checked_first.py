"""Rule: every output option is checked before anything is written.

Every command of the CLI's command table (the typer app, walked here) is classified: it changes
a table (or the cache) and has a case below that runs it for real, or it only reads. A command
missing from both lists fails the test, so a new command is covered once it is classified.

Each case of a writing command runs in a workspace built for it (a table with four snapshots, two
branches, a tag, a property, a sort order, identifier fields and an orphan file; a table another
catalog wrote; input files; the filled manifest cache directory):
- with a misspelt ``--field`` (and a bad value of every other output option the command has):
  exit code 2, one line on stderr naming the option, and no file of the workspace created,
  changed or removed;
- with ``--json``: exit code 0, and every top-level key of the JSON printed is a ``--field`` the
  command accepts (the check before the run knows every field the result has).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import typer

from clirun import icectl, icectl_json

BAD_FIELD = "rows-writen"

# command path -> cases: (case name, argv after the command path; {T} the table, {W} the
# warehouse, {S1} {S2} {S3} snapshot ids, {D} the input directory, {NEW} a location with no table)
WRITING: dict[str, list[tuple[str, list[str]]]] = {
    "create": [("create", ["{NEW}", "--schema", "id long"])],
    "append": [("append", ["{T}", "{D}/rows.parquet"])],
    "write": [("write", ["{T}", "{D}/rows.csv"])],
    "upsert": [("upsert", ["{T}", "{D}/rows.csv", "--key", "id"])],
    "delete": [("merge-on-read", ["{T}", "--filter", "id = 1", "--mode", "merge-on-read"]),
               ("copy-on-write", ["{T}", "--filter", "id = 1", "--mode", "copy-on-write"]),
               ("equality", ["{T}", "--equality", "id", "--from", "{D}/keys.parquet"])],
    "compact": [("data", ["{T}", "--min-input-files", "1"]),
                ("deletes", ["{T}", "--deletes", "--min-input-files", "1"])],
    "rewrite-manifests": [("rewrite-manifests", ["{T}"])],
    "relocate": [("relocate", ["{T}", "--to", "{NEW}"])],
    "stats compute": [("stats compute", ["{T}"])],
    "maintain": [("maintain", ["{T}", "--policy", "{D}/maintain.json", "--allow-recent"])],
    "expire": [("expire", ["{T}", "--older-than", "0s", "--retain-last", "1"])],
    "orphans": [("delete", ["{T}", "--older-than", "0s", "--delete", "--allow-recent"])],
    "upgrade": [("upgrade", ["{T}", "--format-version", "3"])],
    "cache clear": [("cache clear", [])],
    "schema add": [("add", ["{T}", "extra", "int"])],
    "schema drop": [("drop", ["{T}", "name"])],
    "schema rename": [("rename", ["{T}", "name", "label"])],
    "schema move": [("move", ["{T}", "name", "--first"])],
    "schema promote": [("promote", ["{T}", "n", "long"])],
    "schema optional": [("optional", ["{T}", "name"])],
    "schema doc": [("doc", ["{T}", "id", "the key"])],
    "schema apply": [("apply", ["{T}", "{D}/changes.json"])],
    "schema union": [("union", ["{T}", "{D}/wider.parquet"])],
    "schema identifier-fields set": [("set", ["{T}", "name"])],
    "schema identifier-fields unset": [("unset", ["{T}"])],
    "partition add": [("add", ["{T}", "bucket(4, name)"])],
    "partition drop": [("drop", ["{T}", "id_bucket"])],
    "partition rename": [("rename", ["{T}", "id_bucket", "b"])],
    "partition replace": [("replace", ["{T}", "id_bucket", "bucket(8, id)"])],
    "sort-order set": [("set", ["{T}", "name"])],
    "sort-order unset": [("unset", ["{T}"])],
    "properties set": [("set", ["{T}", "k2=v2"])],
    "properties unset": [("unset", ["{T}", "k"])],
    "snapshot rollback": [("rollback", ["{T}", "{S1}"])],
    "snapshot set-current": [("set-current", ["{T}", "{S1}"])],
    "snapshot cherry-pick": [("cherry-pick", ["{T}", "{S3}"])],
    "snapshot publish": [("publish", ["{T}", "w1"])],
    "branch create": [("create", ["{T}", "nb"])],
    "branch drop": [("drop", ["{T}", "side"])],
    "branch replace": [("replace", ["{T}", "ff", "--snapshot-id", "{S2}"])],
    "branch fast-forward": [("fast-forward", ["{T}", "ff", "--to", "main"])],
    "tag create": [("create", ["{T}", "t2"])],
    "tag drop": [("drop", ["{T}", "t1"])],
    "tag replace": [("replace", ["{T}", "t1", "--snapshot-id", "{S2}"])],
    "drop": [("drop", ["{T}"]), ("purge", ["{T}", "--purge"])],
    "register": [("register", ["db.reg", "-w", "{W}", "--metadata", "{W}/db/reg/metadata/00000-a.metadata.json"])],
    "migrate": [("migrate", ["{D}/hive"])],
    "snapshot-table": [("snapshot-table", ["{D}/hive", "{NEW}"])],
    "stats partitions": [("partitions", ["{T}"])],
}

# commands that write nothing (their output options may be checked while they print)
READ_ONLY = {
    "plan", "check", "health", "scan", "changes", "list", "cache info", "properties list",
    "inspect table", "inspect schema", "inspect partitions", "inspect spec", "inspect entries",
    "inspect all-files", "inspect position-deletes", "inspect snapshots", "inspect snapshot",
    "inspect history", "inspect refs", "inspect manifests", "inspect files", "inspect metadata-log",
    "inspect all-manifests", "inspect all-entries", "inspect ancestors", "inspect partition-statistics",
    "inspect statistics",
}

# output options besides --field, and a bad value of each (input-format options are named
# --format too: a bad one must be refused before anything is written as well)
BAD_VALUES = {"--format": "xml", "--output": "{D}", "--columns": "no_such_column", "--limit": "-1"}


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


COMMANDS = _leaf_commands()


def test_every_command_is_classified() -> None:
    names = set(COMMANDS)
    assert not set(WRITING) & READ_ONLY
    unclassified = names - set(WRITING) - READ_ONLY
    assert not unclassified, f"classify these commands in {__file__}: {sorted(unclassified)}"
    assert not (set(WRITING) | READ_ONLY) - names, "classified commands that do not exist"
    for name in WRITING:  # every writing command has --field (it has --json)
        assert "--field" in _options(name), name


def _options(name: str) -> set[str]:
    return {o for p in COMMANDS[name].params for o in p.opts if o.startswith("--")}


# -- the workspace ---------------------------------------------------------------------------------


_ROOT: list[Path] = []  # the workspace being built


def _workspace(root: Path) -> dict[str, str]:
    """Build the workspace under ``root`` (fresh for every case: metadata holds absolute paths,
    so a copy would be another location's table); the placeholders of the cases' arguments."""
    _ROOT[:] = [root]
    wh, d = root / "wh", root / "in"
    d.mkdir(parents=True)
    t = wh / "db" / "t"
    (d / "rows.csv").write_text("id,name,n\n1,a,10\n2,b,20\n")
    required = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string(), nullable=False),
                          pa.field("n", pa.int32())])
    pq.write_table(pa.table({"id": [7], "name": ["g"], "n": [70]}, schema=required), d / "rows.parquet")
    pq.write_table(pa.table({"id": pa.array([2], pa.int64())}), d / "keys.parquet")
    pq.write_table(pa.table({"id": [1], "name": ["x"], "n": [1], "wide": ["w"]},
                            schema=required.append(pa.field("wide", pa.string()))), d / "wider.parquet")
    (d / "changes.json").write_text(json.dumps([{"op": "add", "column": "region", "type": "string"}]))
    (d / "hive" / "k=1").mkdir(parents=True)  # a Hive-style directory (migrate, snapshot-table)
    pq.write_table(pa.table({"id": [3]}), d / "hive" / "k=1" / "part-0.parquet")
    (d / "maintain.json").write_text(json.dumps({"icectl.maintain.orphans.older-than": "0s"}))
    _ok("create", t, "--schema", "id long not null, name string not null, n int", "--partition",
        "bucket(4, id)", "--sort-order", "id desc", "--property", "k=v")
    _ok("schema", "identifier-fields", "set", t, "id")
    _ok("write", t, d / "rows.csv")
    _ok("write", t, d / "rows.csv")
    _ok("delete", t, "--filter", "id = 2", "--mode", "merge-on-read")
    snaps = [s["snapshot-id"] for s in icectl_json("inspect", "snapshots", t)]
    _ok("branch", "create", t, "side", "--snapshot-id", snaps[0])
    _ok("write", t, d / "rows.csv", "--branch", "side")
    _ok("branch", "create", t, "ff", "--snapshot-id", snaps[0])
    _ok("tag", "create", t, "t1")
    _ok("properties", "set", t, "write.wap.enabled=true")
    _ok("write", t, d / "rows.csv", "--wap-id", "w1")  # staged: on no branch
    s3 = next(r["snapshot-id"] for r in icectl_json("inspect", "refs", t) if r["name"] == "side")
    (t / "data" / "orphan.parquet").write_bytes(b"not referenced")
    # a table another catalog wrote: its metadata file named as pyiceberg names them
    reg = wh / "db" / "reg"
    _ok("create", reg, "--schema", "id long")
    (reg / "metadata" / "v1.metadata.json").rename(reg / "metadata" / "00000-a.metadata.json")
    (reg / "metadata" / "version-hint.text").unlink()
    _ok("plan", t)  # fills the manifest cache (ICECTL_CACHE_DIR: under root)
    return {"T": str(t), "W": str(wh), "D": str(d), "NEW": str(wh / "db" / "new"),
            "S1": str(snaps[0]), "S2": str(snaps[1]), "S3": str(s3)}


def _ok(*args: Any) -> None:
    done = icectl(*args, env={"ICECTL_CACHE_DIR": str(_ROOT[0] / "cache"), "ICECTL_WAREHOUSE": None})
    assert done.returncode == 0, (args, done.stderr)


def _argv(name: str, args: list[str], subst: dict[str, str]) -> list[str]:
    return [*name.split(), *(a.format(**subst) for a in args)]


def _state(root: Path) -> dict[str, tuple[str, str]]:
    """Every file and directory under ``root``: its kind and (files) the hash of its bytes."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        out[rel] = ("dir", "") if p.is_dir() else ("file", hashlib.sha256(p.read_bytes()).hexdigest())
    return out


def _env(root: Path) -> dict[str, str | None]:
    return {"ICECTL_CACHE_DIR": str(root / "cache"), "ICECTL_WAREHOUSE": None}


CASES = [(name, case, args) for name, cases in WRITING.items() for case, args in cases]


def _bad_options(name: str, subst: dict[str, str]) -> list[list[str]]:
    bad = [["--field", BAD_FIELD], ["--field", "summary", "--field", BAD_FIELD]]
    for option, value in BAD_VALUES.items():
        if option in _options(name):
            bad.append([option, value.format(**subst)])
    return bad


@pytest.mark.parametrize("name,case,args", CASES, ids=[f"{n}:{c}" for n, c, _ in CASES])
def test_a_bad_output_option_writes_nothing(tmp_path: Path, name: str, case: str, args: list[str]) -> None:
    from icectl.cli.result_fields import check_fields, result_views

    root = tmp_path / "ws"
    subst = _workspace(root)
    argv = _argv(name, args, subst)
    before = _state(root)
    for bad in _bad_options(name, subst):
        done = icectl(*argv, *bad, env=_env(root))
        option = bad[-2]
        assert done.returncode == 2, (bad, done.returncode, done.stdout, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("icectl: error: ") and option in lines[0], (bad, done.stderr)
        assert done.stdout == ""
        assert _state(root) == before, f"icectl {name} {' '.join(bad)} changed the workspace"
    # the same command, run: every top-level key it prints is a --field the check accepts
    done = icectl(*argv, "--json", env=_env(root))
    assert done.returncode == 0, (done.returncode, done.stderr)
    assert _state(root) != before, f"icectl {name} changed nothing: the case does not test the rule"
    types = _result_types(name)
    assert types, f"{name} names no result types: its --field is checked only after it ran"
    check_fields(list(json.loads(done.stdout)), result_views(types))  # raises for a key refused


def _result_types(name: str) -> tuple[str, ...]:
    fn = COMMANDS[name].callback
    while fn is not None and not hasattr(fn, "result_types"):
        fn = getattr(fn, "__wrapped__", None)
    return getattr(fn, "result_types", ())


# -- read-only commands that write a file: --output ------------------------------------------------

OUTPUT_CASES = {  # command -> its arguments (it writes its rows to --output FILE)
    "scan": ["{T}"],
    "changes": ["{T}", "--from", "{S1}"],
}


def test_every_command_with_output_has_a_case() -> None:
    assert {n for n in COMMANDS if "--output" in _options(n)} == set(OUTPUT_CASES)


@pytest.mark.parametrize("name", sorted(OUTPUT_CASES))
def test_a_bad_output_option_creates_no_output_file(tmp_path: Path, name: str) -> None:
    root = tmp_path / "ws"
    subst = _workspace(root)
    out = tmp_path / "rows.out"
    argv = _argv(name, OUTPUT_CASES[name], subst)
    bad = [[o, v.format(**subst)] for o, v in BAD_VALUES.items() if o in _options(name) and o != "--output"]
    assert bad
    for option in bad:
        done = icectl(*argv, "--output", out, *option, env=_env(root))
        # (a column the schema lacks is "not found", exit 3, as everywhere)
        assert done.returncode == (3 if option[0] == "--columns" else 2), (option, done.stderr)
        line, = done.stderr.strip().splitlines()
        assert option[0] in line, (option, line)
        assert not out.exists() and not list(tmp_path.glob("rows.out*")), option
    done = icectl(*argv, "--output", out, "--format", "csv", env=_env(root))
    assert done.returncode == 0 and out.exists(), done.stderr
