"""Every command that takes TABLE works on a SQL catalog's table as on a filesystem table: the
same options, the same exit codes, the same output (once locations, ids and file names are
masked), and the same rows afterwards.

The commands are enumerated from the CLI's command tree: a new command that opens a table must
get an invocation here (or a reason in ``ELSEWHERE``), or the first test fails.
"""

from __future__ import annotations

import json
import re
import sqlite3

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import typer.main
from clirun import icectl

from icectl.cli.app import app

# (command words, arguments after TABLE); {snap1}: the first snapshot's id, {snap2}: the second's,
# {data}: a CSV of 3 more rows, {parquet}: a Parquet file of 2 rows (one copy per table),
# {wider}: a Parquet file with one more column, {changes}: a schema change list
INVOCATIONS: list[tuple[str, list[str]]] = [
    ("write", ["{data}"]),
    ("relocate", ["--to", "{relocated}"]),  # (before append adds files from outside the table)
    ("append", ["{parquet}"]),
    ("append", ["--from-dir", "{hive}"]),
    ("upsert", ["{upsert}", "--key", "id"]),
    ("delete", ["--filter", "id = 2"]),
    ("scan", []),
    ("plan", ["--json"]),
    ("changes", ["--from", "{snap1}", "--count"]),
    ("check", ["--deep"]),
    ("inspect table", []),
    ("inspect schema", []),
    ("inspect spec", []),
    ("inspect snapshots", ["--field", "operation"]),
    ("inspect snapshot", ["{snap1}", "--field", "operation"]),
    ("inspect history", ["--field", "is-current-ancestor"]),
    ("inspect refs", []),
    ("inspect files", ["--field", "record-count"]),
    ("inspect all-files", ["--field", "record-count"]),
    ("inspect entries", ["--field", "status"]),
    ("inspect manifests", ["--field", "added-files-count"]),
    ("inspect partitions", []),
    ("inspect position-deletes", []),
    ("inspect metadata-log", ["--field", "current"]),
    ("inspect all-manifests", ["--field", "reference-snapshot-id"]),
    ("inspect all-entries", ["--field", "status"]),
    ("inspect ancestors", ["--field", "snapshot-id"]),
    ("properties set", ["owner=ops", "commit.retry.num-retries=9"]),
    ("properties list", []),
    ("properties unset", ["owner"]),
    ("schema add", ["note", "string"]),
    ("schema doc", ["note", "a note"]),
    ("schema rename", ["note", "remark"]),
    ("schema move", ["remark", "--first"]),
    ("schema promote", ["n", "long"]),
    ("schema optional", ["k"]),
    ("schema identifier-fields set", ["id"]),
    ("schema identifier-fields unset", []),
    ("schema drop", ["remark"]),
    ("schema union", ["{wider}"]),
    ("schema apply", ["{changes}"]),
    ("partition add", ["bucket(4, id)"]),
    ("stats partitions", []),
    ("inspect partition-statistics", []),
    ("partition rename", ["id_bucket_4", "b4"]),
    ("partition replace", ["b4", "truncate(2, s)"]),
    ("partition drop", ["s_trunc_2"]),
    ("sort-order set", ["id desc"]),
    ("sort-order unset", []),
    ("branch create", ["dev"]),
    ("branch replace", ["dev", "--snapshot-id", "{snap1}"]),
    ("branch fast-forward", ["dev", "--to", "main"]),
    ("branch drop", ["dev"]),
    ("tag create", ["v1", "--snapshot-id", "{snap1}"]),
    ("tag replace", ["v1", "--snapshot-id", "{snap2}"]),
    ("tag drop", ["v1"]),
    ("snapshot rollback", ["{snap2}"]),
    ("snapshot set-current", ["{snap1}"]),
    ("snapshot cherry-pick", ["{snap2}"]),
    ("properties set", ["write.wap.enabled=true"]),
    ("write", ["{data}", "--wap-id", "w1"]),
    ("snapshot publish", ["w1"]),
    ("stats compute", ["--columns", "id,s"]),
    ("inspect statistics", []),
    ("compact", ["--min-input-files", "1"]),
    ("rewrite-manifests", []),
    ("expire", ["--older-than", "2100-01-01", "--retain-last", "2"]),
    ("orphans", ["--older-than", "2100-01-01"]),
    ("health", []),
    ("maintain", ["--dry-run"]),
    ("upgrade", ["--format-version", "3"]),
    ("scan", ["--count"]),
    ("scan", ["--columns", "id,s"]),
    ("drop", ["--purge"]),
]
# commands whose TABLE names a table that does not exist yet, or that are not about one table:
# each has its own tests (test_catalog_cli.py)
ELSEWHERE = {"create": "test_create_and_register_round_trip", "register": "test_create_and_register_round_trip",
             "list": "test_list_namespaces_and_tables",
             "snapshot-table": "test_adopt_catalog.py::test_snapshot_table_into_a_catalog"}


def table_commands() -> list[str]:
    root = typer.main.get_command(app)
    out = []

    def walk(cmd, path):
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in sorted(subs.items()):
                walk(sub, path + [name])
        elif any(p.name == "warehouse" for p in cmd.params):
            out.append(" ".join(path))

    walk(root, [])
    return out


def test_every_command_that_opens_a_table_is_covered():
    covered = {c for c, _ in INVOCATIONS} | set(ELSEWHERE)
    commands = table_commands()
    assert len(commands) > 50
    missing = [c for c in commands if c not in covered]
    assert not missing, f"commands without a catalog invocation: {missing}"
    root = typer.main.get_command(app)
    for c in commands:
        cmd = root
        for w in c.split():
            cmd = cmd.commands[w]
        opts = {o for p in cmd.params for o in p.opts}
        assert {"--catalog", "--catalog-uri"} <= opts, c


_MASKS = [
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "UUID"),
    (re.compile(r"\S*\.metadata\.json"), "METADATA"),
    (re.compile(r"(?<![\w.])-?\d{10,}(?![\w.])"), "ID"),
    (re.compile(r"\d{4}-\d\d-\d\dT[\d:.]+(\+00:00|Z)?"), "TIME"),
]


def mask(text: str, homes: list[str]) -> str:
    for h in homes:
        text = text.replace(h, "HOME")
    for rx, word in _MASKS:
        text = rx.sub(word, text)
    return re.sub(r"[ \t]+", " ", text)  # (columns are as wide as their random ids)


@pytest.fixture
def two_homes(tmp_path):
    """The same table twice: a filesystem table and a SQL (sqlite) catalog's table."""
    uri = f"sqlite:///{tmp_path}/catalog.db"
    fs = str(tmp_path / "fs" / "db" / "t")
    schema = "id long not null, s string, n int, k string not null"
    assert icectl("create", fs, "--schema", schema).exit_code == 0
    r = icectl("create", "db.t", "--catalog-uri", uri, "--warehouse", str(tmp_path / "wh"), "--schema", schema)
    assert r.exit_code == 0, r.output
    homes = {"fs": [fs], "sql": ["db.t", "--catalog-uri", uri]}
    return tmp_path, homes, uri


def _inputs(tmp_path, home: str) -> dict[str, str]:
    d = tmp_path / f"in-{home}"
    d.mkdir()
    (d / "data.csv").write_text("id,s,n,k\n1,a,10,x\n2,b,20,y\n3,c,30,z\n")
    (d / "upsert.csv").write_text("id,s,n,k\n3,C,33,z\n4,d,40,w\n")
    pq.write_table(pa.table({"id": pa.array([5, 6], pa.int64()), "s": ["e", "f"], "n": pa.array([50, 60], pa.int32()),
                             "k": ["u", "v"]}), d / "more.parquet")
    pq.write_table(pa.Table.from_arrays([pa.array([7], pa.int64()), pa.array([1.5])], schema=pa.schema(
        [pa.field("id", pa.int64(), nullable=False), pa.field("extra", pa.float64())])), d / "wider.parquet")
    (d / "hive").mkdir()  # an unpartitioned Hive-style directory: a _SUCCESS marker and one file
    (d / "hive" / "_SUCCESS").write_text("")
    pq.write_table(pa.table({"id": pa.array([8], pa.int64()), "s": ["h"], "n": pa.array([80], pa.int32()),
                             "k": ["t"]}), d / "hive" / "part-0.parquet")
    (d / "changes.json").write_text(json.dumps([{"op": "add", "column": "region", "type": "string", "after": "id"},
                                                {"op": "rename", "column": "extra", "to": "score"}]))
    return {"data": str(d / "data.csv"), "upsert": str(d / "upsert.csv"), "parquet": str(d / "more.parquet"),
            "wider": str(d / "wider.parquet"), "changes": str(d / "changes.json"), "hive": str(d / "hive"),
            "relocated": str(d / "relocated")}


def _snapshots(target: list[str]) -> list[str]:
    r = icectl("inspect", "snapshots", *target, "--json")
    assert r.exit_code == 0, r.output
    return [str(s["snapshot-id"]) for s in json.loads(r.stdout)]


def test_every_command_behaves_the_same_on_a_catalog_table(two_homes):
    tmp_path, homes, uri = two_homes
    inputs = {h: _inputs(tmp_path, h) for h in homes}
    snaps: dict[str, list[str]] = {h: [] for h in homes}
    for words, args in INVOCATIONS:
        seen = {}
        for home, target in homes.items():
            if not snaps[home] or len(snaps[home]) < 2:
                snaps[home] = _snapshots(target) if words not in ("write",) else snaps[home]
            values = {**inputs[home],
                      "snap1": (snaps[home] + ["0"])[0], "snap2": (snaps[home] + ["0", "0"])[1]}
            argv = [*words.split(), target[0], *[a.format(**values) for a in args], *target[1:]]
            r = icectl(*argv)
            seen[home] = r
        fs, sql = seen["fs"], seen["sql"]
        where = f"icectl {words}: fs {fs.exit_code} {fs.stderr.strip()[-300:]!r} / sql {sql.exit_code} {sql.stderr.strip()[-300:]!r}"
        assert fs.exit_code == sql.exit_code, where
        assert fs.exit_code in (0, 10, 14) or words in ("snapshot cherry-pick",), where
        masked = [mask(r.stdout, [str(tmp_path / "fs" / "db" / "t"), str(tmp_path / "wh" / "db" / "t"),
                                  str(tmp_path / f"in-{home}")]) for r, home in ((fs, "fs"), (sql, "sql"))]
        if words == "drop":  # a filesystem table's metadata/ also holds version-hint.text
            counts = [int(re.search(r"metadata-files (\d+)", m).group(1)) for m in masked]
            assert counts[0] == counts[1] + 1, masked
            masked = [re.sub(r"metadata-files \d+", "", m) for m in masked]
        if words in ("health", "maintain"):  # their byte figures hold the homes' own paths' lengths
            masked = [re.sub(r"\d+(\.\d+)? (B|KiB|MiB)\b|bytes freed +\d+", "BYTES", m) for m in masked]
        if words.startswith("stats "):  # a statistics file records snapshot ids: its size varies with their digits
            masked = [re.sub(r"file-size-in-bytes +\d+", "file-size-in-bytes BYTES", m) for m in masked]
        if words not in ("check",):  # check names the file it checked (a version or the catalog's file)
            assert masked[0] == masked[1], f"icectl {words}: outputs differ:\n{masked[0]}\n{masked[1]}"
    with sqlite3.connect(uri.removeprefix("sqlite:///")) as db:
        assert db.execute("SELECT count(*) FROM iceberg_tables").fetchone() == (0,)  # dropped
