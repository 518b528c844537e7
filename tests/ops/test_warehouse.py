"""Warehouse commands: `icectl list`, `icectl drop` (with and without --purge, --dry-run)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from icectl.ops.write.append import append_files
from icectl.ops.metadata.warehouse import drop_table, list_tables
from icectl.table.table import Table
from support.tables import empty_table, with_files
from clirun import icectl as _icectl


def _make(wh: Path, ident: str, rows: int = 3, partition: str | None = "cat") -> Table:
    t = empty_table(wh.joinpath(*ident.split(".")), "id long, cat string", partition=partition)
    return with_files(t, 1 if rows else 0, lambda _: {
        "id": pa.array(range(rows), pa.int64()), "cat": [f"c{i % 2}" for i in range(rows)]})


def test_list_shows_tables_and_nested_namespaces(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    for ident in ("db.events", "db.users", "sales.eu.orders", "sales.us.orders"):
        _make(wh, ident, rows=0)
    (wh / "empty_dir").mkdir()
    (wh / "db" / "not_a_table" / "metadata").mkdir(parents=True)
    r = list_tables(str(wh))
    assert [t.identifier for t in r.tables] == ["db.events", "db.users", "sales.eu.orders", "sales.us.orders"]
    assert r.namespaces == ("db", "sales", "sales.eu", "sales.us")
    assert list_tables(str(wh), "sales.eu").tables[0].location == str(wh / "sales" / "eu" / "orders")
    out = _icectl("list", "--warehouse", str(wh), "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["tables"][0] == {"identifier": "db.events", "namespace": "db", "name": "events",
                                 "location": str(wh / "db" / "events"), "kind": "filesystem"}
    text = _icectl("list", "sales", "-w", str(wh))
    assert text.returncode == 0 and "sales.eu.orders" in text.stdout and "db.events" not in text.stdout
    assert _icectl("list", "nope", "-w", str(wh)).returncode == 3
    assert _icectl("list").returncode == 2  # no warehouse


def test_drop_without_purge_keeps_the_data(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    t = _make(wh, "db.events")
    data = sorted((Path(t.location) / "data").rglob("*.parquet"))
    r = _icectl("drop", "db.events", "-w", str(wh), "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["dropped"] and out["deleted-files-count"] == 0 and out["metadata-files-count"] >= 3
    assert not (Path(t.location) / "metadata").exists()
    assert sorted((Path(t.location) / "data").rglob("*.parquet")) == data
    assert [x.identifier for x in list_tables(str(wh)).tables] == []
    assert _icectl("inspect", "table", t.location).returncode == 3


def test_drop_purge_dry_run_lists_then_purge_deletes_inside_only(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    t = _make(wh, "db.events")
    outside = tmp_path / "landing" / "x.parquet"
    outside.parent.mkdir()
    pq.write_table(pa.table({"id": pa.array([9], pa.int64()), "cat": ["c0"]}), outside)
    append_files(Table.load(t.location), [str(outside)])  # registered in place, outside
    before = sorted(p for p in Path(t.location).rglob("*") if p.is_file())
    dry = _icectl("drop", "db.events", "-w", str(wh), "--purge", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    plan = json.loads(dry.stdout)
    assert sorted(p for p in Path(t.location).rglob("*") if p.is_file()) == before  # nothing gone
    assert plan["kept-outside-location"] == [str(outside)]
    # data files here; manifests and manifest lists live under metadata/, which goes whole
    assert {Path(p).suffix for p in plan["deleted-files"]} == {".parquet"} and len(plan["deleted-files"]) == 2
    assert {Path(p).suffix for p in plan["metadata-files"]} >= {".avro", ".json", ".text"}
    r = _icectl("drop", "db.events", "-w", str(wh), "--purge", "--json")
    assert r.returncode == 0, r.stderr
    assert sorted(json.loads(r.stdout)["deleted-files"]) == sorted(plan["deleted-files"])
    assert not Path(t.location).exists()  # everything was the table's: directories removed too
    assert outside.exists()


def test_drop_purge_leaves_unknown_files(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    t = _make(wh, "db.events")
    stray = Path(t.location) / "data" / "README.txt"
    stray.write_text("not the table's")
    result = drop_table(t, purge=True)
    assert stray.exists() and not (Path(t.location) / "metadata").exists()
    assert all(not p.endswith(".parquet") or not Path(p).exists() for p in result.deleted_files)


def test_purge_is_refused_when_gc_is_disabled(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    t = _make(wh, "db.events")
    assert _icectl("properties", "set", t.location, "gc.enabled=false").returncode == 0
    r = _icectl("drop", t.location, "--purge")
    assert r.returncode == 5 and "gc.enabled" in r.stderr
    assert (Path(t.location) / "metadata").exists()


def test_drop_help_lists_the_dry_run_first() -> None:
    r = _icectl("drop", "--help")
    examples = [ln.strip() for ln in r.stdout.splitlines() if ln.strip().startswith("icectl drop")]
    assert examples and "--dry-run" in examples[0]
