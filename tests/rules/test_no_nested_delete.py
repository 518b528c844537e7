"""Rule: no command deletes another table's files.

Every command of the CLI's command table is classified here: either it deletes files (then it
is run below, in every way it deletes, against each table of a layout where tables sit inside,
above and beside each other) or it says why it deletes none. A new command fails
``test_every_command_is_classified`` until it is classified.

The layout (made as a table made before tables were refused to nest, or by another tool):

    root/w/                 the outer table
    root/w/db/inner/        a table nested in the outer table's location
    root/beside/            a table beside both

with files registered in place across tables (the outer table holds a data file of the inner
table; the inner table one of the table beside), no longer needed by their current snapshots, so
expire and drop --purge reach them, and a planted orphan file in each table. After each command,
the files of every table the command did not target are all still there, byte for byte, and
each of those tables still scans to the same rows (a file one table registered in place from
another's directory belongs to that other table: dropping the other with --purge deletes it, and
only the registering table's old snapshots named it); the target's own work was done (its orphan
deleted, its expired files deleted, its metadata dropped), so the test cannot pass by a command
doing nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import typer

from clirun import icectl

OLD = time.time() - 3 * 86400  # every file of the layout is this old: orphans' cut-off is 36h
FUTURE_MS = "4102444800000"  # 2100-01-01: every snapshot is older (no timing involved)

# -- classification of every command ------------------------------------------------------------

DELETES = "deletes"  # run in the matrix below
# why the others delete no file of a table
READS = "reads only"
COMMITS = "commits new metadata (and writes new files); deletes only files it wrote itself, on failure"
CACHE = "deletes only entries of icectl's own manifest cache, never a table's file"
CREATES = "creates or registers a table; refuses a location at, above or below another table"

CLASSIFIED: dict[str, str] = {
    "orphans": DELETES, "expire": DELETES, "drop": DELETES, "append": DELETES,  # (--move)
    "maintain": DELETES,  # (its expire and orphans steps)
    "create": CREATES, "register": CREATES, "migrate": CREATES, "snapshot-table": CREATES,
    "relocate": CREATES,  # (a new table at another location; refuses one at, above or below a table)
    "cache clear": CACHE, "cache info": READS,
    "changes": READS, "check": READS, "health": READS, "list": READS, "plan": READS, "scan": READS,
    **{f"inspect {v}": READS for v in (
        "all-files", "all-manifests", "all-entries", "ancestors", "entries", "files", "history", "manifests", "metadata-log", "partitions",
        "partition-statistics", "statistics", "position-deletes", "refs", "schema", "snapshot", "snapshots", "spec", "table")},
    "properties list": READS,
    **{c: COMMITS for c in (
        "write", "delete", "upsert", "compact", "rewrite-manifests", "upgrade", "stats compute",
        "branch create", "branch drop", "branch fast-forward", "branch replace",
        "tag create", "tag drop", "tag replace",
        "snapshot cherry-pick", "snapshot publish", "snapshot rollback", "snapshot set-current",
        "partition add", "partition drop", "partition rename", "partition replace",
        "properties set", "properties unset", "sort-order set", "sort-order unset",
        "schema add", "schema apply", "schema doc", "schema drop", "schema identifier-fields set",
        "schema identifier-fields unset", "schema move", "schema optional", "schema promote",
        "schema rename", "schema union", "stats partitions")},
}


def registered_commands() -> list[str]:
    from icectl.cli.app import app

    def walk(cmd, path):
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in sorted(subs.items()):
                yield from walk(sub, path + [name])
        else:
            yield " ".join(path)

    return list(walk(typer.main.get_command(app), []))


def test_every_command_is_classified() -> None:
    registered = set(registered_commands())
    assert registered - set(CLASSIFIED) == set(), "classify these commands in CLASSIFIED"
    assert set(CLASSIFIED) - registered == set(), "these classified commands no longer exist"


# -- the layout ---------------------------------------------------------------------------------


def run(*args: object) -> str:
    r = icectl(*map(str, args))
    assert r.returncode == 0, f"icectl {' '.join(map(str, args))} -> {r.returncode}\n{r.stderr}"
    return r.stdout


def scan_rows(loc: Path) -> list[str]:
    return sorted(run("scan", loc, "--format", "csv").splitlines())


def write_csv(path: Path, ids: list[int]) -> Path:
    path.write_text("id,v\n" + "".join(f"{i},v{i}\n" for i in ids))
    return path


def data_files(loc: Path) -> list[Path]:
    return sorted((loc / "data").rglob("*.parquet"))


class Layout:
    def __init__(self, root: Path):
        from icectl.ops.metadata.create import build_create_metadata
        from icectl.table.table import Table

        self.root = root
        self.outer, self.inner, self.beside = root / "w", root / "w" / "db" / "inner", root / "beside"
        schema = "id long, v string"
        run("create", self.inner, "--schema", schema)
        run("write", self.inner, write_csv(root / "i1.csv", [1, 2]))
        run("write", self.inner, write_csv(root / "i2.csv", [3]))
        run("create", self.beside, "--schema", schema)
        run("write", self.beside, write_csv(root / "b1.csv", [10, 11]))
        # the outer table around the inner one: `create` refuses it, so as another tool made it
        Table.create(str(self.outer), build_create_metadata(str(self.outer), schema_text=schema))
        run("write", self.outer, write_csv(root / "o1.csv", [100]))
        # registered in place across tables, then no longer needed by the current snapshot
        run("append", self.outer, data_files(self.inner)[0])
        run("delete", self.outer, "--filter", "id < 100")
        run("append", self.inner, data_files(self.beside)[0])
        run("delete", self.inner, "--filter", "id >= 10")
        self.orphans = {t: t / "data" / "stray-orphan.parquet" for t in self.tables()}
        for path in self.orphans.values():
            path.write_bytes(b"not referenced by any table")
        for d, _, names in os.walk(root):
            for n in names:
                os.utime(os.path.join(d, n), (OLD, OLD))

    def tables(self) -> list[Path]:
        return [self.outer, self.inner, self.beside]

    def own_files(self, table: Path) -> dict[str, str]:
        """Every file in the table's directory but not in a table nested in it: path -> sha256."""
        others = [t for t in self.tables() if t != table and table in t.parents]
        out = {}
        for p in table.rglob("*"):
            if p.is_file() and not any(o == p or o in p.parents for o in others):
                out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
        return out


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    return Layout(tmp_path)


# -- how each deleting command deletes, and what it must have done to its target ----------------


def _orphans(lay: Layout, t: Path) -> dict:
    out = json.loads(run("orphans", t, "--older-than", "36h", "--delete", "--json"))
    assert str(lay.orphans[t]) in out["orphan-files"] and not lay.orphans[t].exists()
    return out


def _expire(lay: Layout, t: Path, *extra: str) -> dict:
    out = json.loads(run("expire", t, "--older-than", FUTURE_MS, "--retain-last", "1", *extra, "--json"))
    if t != lay.beside:  # (the table beside has one snapshot: nothing expires)
        assert out["expired-snapshots-count"] >= 1 and out["deleted_manifest_lists_count"] >= 1
    return out


def _drop(lay: Layout, t: Path, *extra: str) -> dict:
    out = json.loads(run("drop", t, *extra, "--json"))
    assert out["dropped"] and not (t / "metadata").exists()
    if extra:
        assert out["deleted-files-count"] >= 1
    return out


def _append_move(lay: Layout, t: Path) -> dict:
    src = lay.root / "incoming" / "new.parquet"
    src.parent.mkdir(exist_ok=True)
    pq.write_table(pa.table({"id": pa.array([7], pa.int64()), "v": ["m"]}), src)
    out = json.loads(run("append", t, src, "--move", "--json"))
    assert not src.exists()
    return out


def _append_move_from_another_table(lay: Layout, t: Path) -> dict:
    """Moving another table's data file into this one would delete it from that table: refused
    (exit 5) before anything is written."""
    src = data_files(lay.beside if t == lay.inner else lay.inner)[0]  # (a real data file of it)
    before = lay.own_files(t)
    r = icectl("append", t, src, "--move", "--json")
    assert r.returncode == 5, r.stderr
    assert json.loads(r.stderr.splitlines()[-1])["error"]["kind"] == "validation", r.stderr
    assert lay.own_files(t) == before and src.exists()
    return {}


def _maintain(lay: Layout, t: Path) -> dict:
    """Its expire and orphans steps, each with the cut-off of the commands' cases above."""
    policy = lay.root / f"maintain-{t.name}.json"
    policy.write_text(json.dumps({"icectl.maintain.expire.older-than": FUTURE_MS,
                                  "icectl.maintain.orphans.older-than": "36h"}))
    out = json.loads(run("maintain", t, "--policy", policy, "--json"))
    steps = {s["step"]: s for s in out["steps"]}
    assert steps["orphans"]["status"] == "done" and not lay.orphans[t].exists()
    assert str(lay.orphans[t]) in steps["orphans"]["result"]["orphan-files"]
    if t != lay.beside:  # (the table beside has one snapshot: nothing expires)
        assert steps["expire"]["status"] == "done"
        assert steps["expire"]["result"]["deleted_manifest_lists_count"] >= 1
    return out


WAYS: dict[str, Callable[[Layout, Path], object]] = {
    "orphans --delete": _orphans,
    "expire": _expire,
    "expire --delete-outside-location": lambda lay, t: _expire(lay, t, "--delete-outside-location"),
    "drop": _drop,
    "drop --purge": lambda lay, t: _drop(lay, t, "--purge"),
    "append --move": _append_move,
    "append --move (another table's file)": _append_move_from_another_table,
    "maintain": _maintain,
}


def test_every_deleting_command_has_its_ways() -> None:
    deleting = {c for c, why in CLASSIFIED.items() if why == DELETES}
    assert {w.split()[0] for w in WAYS} == deleting


@pytest.mark.parametrize("target", ["outer", "inner", "beside"])
@pytest.mark.parametrize("way", sorted(WAYS))
def test_no_command_deletes_another_tables_files(layout: Layout, way: str, target: str) -> None:
    t = getattr(layout, target)
    others = [o for o in layout.tables() if o != t]
    before = {o: (layout.own_files(o), scan_rows(o)) for o in others}
    WAYS[way](layout, t)
    for o in others:
        files, rows = before[o]
        after = layout.own_files(o)
        assert {p: h for p, h in files.items() if after.get(p) != h} == {}, f"{way} on {t} changed {o}"
        assert scan_rows(o) == rows


def test_the_skipped_files_are_reported(layout: Layout, tmp_path: Path) -> None:
    """What each deleting command kept of the other tables is in its --json, under one key."""
    inner_file = str(data_files(layout.inner)[0])
    out = _orphans(layout, layout.outer)
    skipped = {s["path"]: s["table"] for s in out["skipped-in-other-tables"]}
    # all of the inner table's files but the hidden ones and the one the outer table references
    assert set(skipped) == {p for p in layout.own_files(layout.inner)
                            if not os.path.basename(p).startswith(".") and p != inner_file}
    assert set(skipped.values()) == {str(layout.inner)}
    out = _expire(layout, layout.outer)
    assert out["skipped-in-other-tables"] == [{"path": inner_file, "table": str(layout.inner)}]
    beside_file = str(data_files(layout.beside)[0])
    out = _expire(layout, layout.inner, "--delete-outside-location")
    assert out["skipped-in-other-tables"] == [{"path": beside_file, "table": str(layout.beside)}]
    second = Layout(tmp_path / "second")
    inner_file = str(data_files(second.inner)[0])
    out = json.loads(run("drop", second.outer, "--purge", "--dry-run", "--json"))
    assert out["skipped-in-other-tables"] == [{"path": inner_file, "table": str(second.inner)}]
    assert inner_file not in out["deleted-files"]
    r = icectl("drop", second.outer, "--purge")
    assert r.returncode == 0, r.stderr
    assert f"kept 1 file(s) inside the table at {second.inner}" in r.stderr
