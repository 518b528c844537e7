"""`icectl stats compute` and `icectl inspect statistics` run as a user runs them: which columns
are sketched, what is refused (one line, its exit code, nothing written), deletes applied,
statistics replaced per snapshot, and expire dropping the statistics of expired snapshots only.
(Byte-for-byte agreement with Spark: tests/interop/test_theta_stats_interop.py.)"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from clirun import icectl, icectl_json
from support.tables import empty_table, with_files

from icectl.table.table import Table


def _files(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def table(tmp_path: Path) -> Path:
    loc = tmp_path / "t"
    t = empty_table(loc, "id long, s string, p struct<a int, b string>, tags list<string>")
    rows = lambda i: pa.table({  # noqa: E731
        "id": pa.array([i * 10 + k for k in range(10)], pa.int64()),
        "s": pa.array([f"v{k % 3}" if k != 4 else None for k in range(10)]),
        "p": pa.array([{"a": k % 4, "b": "x"} for k in range(10)],
                      pa.struct([("a", pa.int32()), ("b", pa.string())])),
        "tags": pa.array([["t"]] * 10, pa.list_(pa.string()))})
    with_files(t, 2, rows)
    return loc


def test_default_columns_are_the_top_level_primitive_ones(table: Path) -> None:
    r = icectl_json("stats", "compute", table)
    assert [(c["name"], c["ndv"], c["exact"]) for c in r["columns"]] == [("id", 20, True), ("s", 3, True)]
    md = Table.load(str(table)).metadata
    (entry,) = md.statistics
    assert entry["snapshot-id"] == md.current_snapshot_id == r["snapshot-id"]
    assert entry["statistics-path"] == r["statistics-path"]
    assert Path(r["statistics-path"]).name.startswith(f"{md.current_snapshot_id}-")
    assert Path(r["statistics-path"]).stat().st_size == entry["file-size-in-bytes"]
    assert [(b["fields"], b["properties"]) for b in entry["blob-metadata"]] == [
        ([1], {"ndv": "20"}), ([2], {"ndv": "3"})]
    assert all(b["sequence-number"] == 2 for b in entry["blob-metadata"])
    view = icectl_json("inspect", "statistics", table)["statistics"]
    assert [(b["columns"], b["ndv"], b["sketch-estimate"], b["sketch-exact"]) for b in view[0]["blobs"]] == [
        (["id"], "20", 20.0, True), (["s"], "3", 3.0, True)]
    assert view[0]["created-by"].startswith("icectl ")


def test_named_columns_nested_fields_and_refusals(table: Path) -> None:
    r = icectl_json("stats", "compute", table, "--columns", "p.a,id,p.a")
    assert [(c["name"], c["field-id"], c["ndv"]) for c in r["columns"]] == [("p.a", 5, 4), ("id", 1, 20)]
    before = _files(table)
    for args, code, text in [
        (["--columns", "nope"], 2, "--columns: no column 'nope'"),
        (["--columns", "p"], 2, "not a primitive type"),
        (["--columns", "tags.element"], 2, "inside a list or map"),
        (["--columns", " , "], 2, "--columns"),
        (["--snapshot-id", "12345"], 3, "--snapshot-id: snapshot 12345 not found"),
    ]:
        done = icectl("stats", "compute", table, *args)
        assert done.returncode == code and text in done.stderr and done.stdout == "", (args, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1
    assert _files(table) == before


def test_dry_run_writes_nothing_and_an_empty_table_has_nothing_to_compute(table: Path, tmp_path: Path) -> None:
    before = _files(table)
    r = icectl_json("stats", "compute", table, "--dry-run")
    assert r["dry-run"] and not r["committed"] and r["statistics-path"] is None
    assert [c["ndv"] for c in r["columns"]] == [20, 3]
    assert _files(table) == before
    empty_table(tmp_path / "e", "id long")
    done = icectl("stats", "compute", tmp_path / "e")
    assert done.returncode == 0 and done.stdout == "" and "no snapshot" in done.stderr
    assert not list((tmp_path / "e" / "metadata").glob("*.stats"))


def test_deleted_rows_are_not_counted(table: Path) -> None:
    assert icectl("delete", table, "--filter", "id >= 5").returncode == 0
    r = icectl_json("stats", "compute", table, "--columns", "id")
    assert r["columns"][0]["ndv"] == 5


def test_statistics_are_per_snapshot_and_expire_drops_those_of_expired_snapshots(table: Path) -> None:
    md = Table.load(str(table)).metadata
    first, second = (s.snapshot_id for s in md.snapshots)
    old = icectl_json("stats", "compute", table, "--snapshot-id", first)
    assert old["columns"][0]["ndv"] == 10
    replaced = icectl_json("stats", "compute", table)
    current = icectl_json("stats", "compute", table)  # replaces the current snapshot's entry
    stats = {e["snapshot-id"]: e["statistics-path"] for e in Table.load(str(table)).metadata.statistics}
    assert stats == {first: old["statistics-path"], second: current["statistics-path"]}
    r = icectl_json("expire", table, "--snapshot-id", first)
    assert r["deleted_statistics_files_count"] == 1  # Spark's name of the count
    assert not Path(old["statistics-path"]).exists() and Path(current["statistics-path"]).exists()
    assert Path(replaced["statistics-path"]).exists()  # no longer referenced: an orphan, as Java leaves it
    assert [e["snapshot-id"] for e in Table.load(str(table)).metadata.statistics] == [second]


def test_a_snapshot_expired_meanwhile_stops_the_commit_and_leaves_no_file(table: Path, monkeypatch) -> None:
    import icectl.ops.stats.theta as theta
    from icectl.errors import CommitConflict

    first = Table.load(str(table)).metadata.snapshots[0].snapshot_id
    compute = theta.column_sketches

    def expire_meanwhile(*args, **kwargs):
        out = compute(*args, **kwargs)
        assert icectl("expire", table, "--snapshot-id", first).returncode == 0
        return out

    monkeypatch.setattr(theta, "column_sketches", expire_meanwhile)
    with pytest.raises(CommitConflict, match=f"snapshot {first} was removed"):
        theta.compute_table_stats(Table.load(str(table)), snapshot_id=first)
    assert not list((table / "metadata").glob("*.stats"))
    assert Table.load(str(table)).metadata.statistics == ()
