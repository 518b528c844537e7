"""`icectl health`'s engine: figures equal what the record reader's views count, thresholds come
from table properties, and each verdict's command, run, gives the effect it announced."""

from __future__ import annotations

from pathlib import Path

import pytest

import pyarrow as pa
from clirun import icectl, icectl_json
from support.tables import empty_table, small_files

from icectl.ops.health import DIMENSIONS, DUE, read_policy, table_health
from icectl.ops.read.inspect import files_view, manifests_view
from icectl.ops.read.inspect_tables import partitions_table
from icectl.ops.write.rows import write_rows
from icectl.table.table import Table


def _fig(report, dim: str) -> dict:
    d = report.dimension(dim)
    assert d is not None
    return d.figures


def test_figures_equal_the_inspect_views(tmp_path: Path) -> None:
    t = small_files(tmp_path / "wh" / "db" / "t", n=6)
    report = table_health(t)
    md = t.metadata
    files = files_view(t.io, md, md.current_snapshot())
    data = [f for f in files if f["content"] == "data"]
    f = _fig(report, "data-files")
    assert f["data-files"] == len(data) == 12
    assert f["data-bytes"] == sum(r["file-size-in-bytes"] for r in data)
    assert f["records"] == sum(r["record-count"] for r in data) == 60
    assert sum(b["files"] for b in f["size-histogram"]) == 12
    assert sum(b["bytes"] for b in f["size-histogram"]) == f["data-bytes"]
    parts = {tuple(sorted(p["partition"].items())): p for p in partitions_table(t.io, md, md.current_snapshot())}
    assert len(f["partitions"]) == len(parts) == 2
    for row in f["partitions"]:
        ref = parts[tuple(sorted(row["partition"].items()))]
        assert (row["data-files"], row["data-bytes"], row["records"]) == \
            (ref["file-count"], ref["total-data-file-size-in-bytes"], ref["record-count"])
    m = _fig(report, "manifests")
    ms = manifests_view(t.io, md, md.current_snapshot())
    assert m["manifests"] == len(ms) == 6
    assert m["manifest-bytes"] == sum(r["length"] for r in ms)
    assert m["manifest-sizes"] == sorted(r["length"] for r in ms)
    # six appends, each one manifest holding both partitions: a one-partition filter opens all six
    assert m["manifests-per-partition-average"] == 6 and m["manifests-per-partition-max"] == 6


def test_thresholds_come_from_table_properties(tmp_path: Path) -> None:
    pol = read_policy({"write.target-file-size-bytes": "1000", "icectl.health.max-small-file-share": "0.5",
                       "commit.manifest.target-size-bytes": "nonsense"})
    assert pol.thresholds["target-file-size"].source == "table-property"
    assert pol["target-file-size"] == 1000 and pol["small-file-size"] == 750
    assert pol["max-small-file-share"] == 0.5
    assert pol["manifest-target-size"] == 8 * 1024 * 1024  # unparsable: the default, reported
    assert any("commit.manifest.target-size-bytes" in p for p in pol.problems)
    over = read_policy({"write.target-file-size-bytes": "1000"}, {"write.target-file-size-bytes": "2000"})
    assert over["target-file-size"] == 2000 and over.thresholds["target-file-size"].source == "policy"
    assert read_policy({})["max-snapshot-age"] == 5 * 24 * 3600 * 1000


def test_a_healthy_table_has_nothing_due(tmp_path: Path) -> None:
    t = small_files(tmp_path / "wh" / "db" / "t", n=1, properties={"write.target-file-size-bytes": "1000"})
    report = table_health(t)
    assert not report.due, [v.problem for v in report.verdicts]
    assert report.status == "ok"


def test_the_compact_verdict_predicts_what_compact_does(tmp_path: Path) -> None:
    t = small_files(tmp_path / "wh" / "db" / "t", n=6)
    report = table_health(t)
    v = next(v for v in report.verdicts if v.code == "small-files")
    assert v.severity == DUE and v.command[:2] == ("icectl", "compact")
    before, after = v.effects[0].before, v.effects[0].after
    assert (before, after) == (12, 2)
    r = icectl(*v.command[1:])
    assert r.exit_code == 0, r.output
    assert table_health(Table.load(t.location)).dimension("data-files").figures["data-files"] == after


def test_the_rewrite_manifests_verdict_predicts_its_effect(tmp_path: Path) -> None:
    t = small_files(tmp_path / "wh" / "db" / "t", n=6)
    v = next(v for v in table_health(t).verdicts if v.code == "scattered-manifests")
    expected = {e.measure: e.after for e in v.effects}
    r = icectl(*v.command[1:])
    assert r.exit_code == 0, r.output
    m = table_health(Table.load(t.location)).dimension("manifests").figures
    assert m["data-manifests"] == expected["data-manifests"] == 1
    assert m["manifests-per-partition-average"] == expected["manifests-per-partition-average"] == 1


def test_the_cli_json_and_exit_code(tmp_path: Path) -> None:
    t = small_files(tmp_path / "wh" / "db" / "t", n=6)
    r = icectl("health", t.location, "--json")
    assert r.exit_code == 14, r.output
    import json

    doc = json.loads(r.stdout)
    assert r.stderr == ""
    assert doc["status"] == "maintenance-due"
    assert [d["name"] for d in doc["dimensions"]] == list(DIMENSIONS)
    for v in doc["verdicts"]:
        assert set(v) >= {"dimension", "severity", "problem", "command", "command-text", "effects"}
        if v["command"] is not None:
            assert v["command-text"].split() == v["command"]
        for e in v["effects"]:
            assert set(e) == {"measure", "unit", "before", "after"}
    thresholds = doc["thresholds"]
    assert thresholds["target-file-size"]["property"] == "write.target-file-size-bytes"
    healthy = empty_table(tmp_path / "h" / "wh" / "db" / "t", "id long")
    assert icectl_json("health", healthy.location, "--json")["status"] == "ok"


@pytest.mark.parametrize("args", [["--sort", "nonsense"]])
def test_bad_options_are_invalid_input(tmp_path: Path, args: list[str]) -> None:
    t = empty_table(tmp_path / "wh" / "db" / "t", "id long")
    r = icectl("health", t.location, *args)
    assert r.exit_code == 2 and "--sort" in r.stderr, r.output


def _deleted(tmp_path: Path) -> Table:
    """small_files with position deletes in both partitions (one delete commit)."""
    t = small_files(tmp_path / "wh" / "db" / "t", n=6)
    ids = ", ".join(str(i * 10 + k) for i in range(6) for k in (0, 1, 5))  # 3 rows of each of the 12 files
    r = icectl("delete", t.location, "--filter", f"id in ({ids})")
    assert r.exit_code == 0, r.output
    return Table.load(t.location)


def test_delete_figures_and_the_compact_verdict(tmp_path: Path) -> None:
    t = _deleted(tmp_path)
    md = t.metadata
    files = files_view(t.io, md, md.current_snapshot())
    deletes = [f for f in files if f["content"] != "data"]
    d = table_health(t).dimension("deletes")
    f = d.figures
    assert f["delete-files"] == len(deletes) > 0
    assert f["delete-bytes"] == sum(r["file-size-in-bytes"] for r in deletes)
    assert f["position-delete-records"] == sum(r["record-count"] for r in deletes) == 18
    assert f["deleted-row-share"] == round(18 / 60, 6)
    assert f["data-files-with-deletes"] == 12 and f["dangling-delete-files"] == 0
    assert f["read-amplification"] > 1
    v = next(v for v in d.verdicts if v.code == "merge-on-read-cost")
    assert v.command[1:2] == ("compact",)
    r = icectl(*v.command[1:])
    assert r.exit_code == 0, r.output
    after = table_health(Table.load(t.location)).dimension("deletes").figures
    expected = {e.measure: e.after for e in v.effects}
    assert after["data-files-with-deletes"] == expected["data-files-with-deletes"] == 0
    assert after["read-amplification"] == expected["read-amplification"] == 1.0


def test_dangling_deletes_and_compact_deletes(tmp_path: Path) -> None:
    t = _deleted(tmp_path)
    # a metadata-only delete of partition a drops its data files, not its delete files
    assert icectl("delete", t.location, "--filter", "cat = 'a'").exit_code == 0
    t = Table.load(t.location)
    d = table_health(t).dimension("deletes")
    in_a = [f for f in files_view(t.io, t.metadata, t.metadata.current_snapshot())
            if f["content"] != "data" and f["partition"] == {"cat": "a"}]
    assert d.figures["dangling-delete-files"] == len(in_a) > 0
    v = next(v for v in d.verdicts if v.code == "dangling-deletes")
    assert v.severity == DUE and v.command[1:] == ("compact", t.location, "--deletes")
    expected = {e.measure: e.after for e in v.effects}
    assert icectl(*v.command[1:]).exit_code == 0
    after = table_health(Table.load(t.location)).dimension("deletes").figures
    assert after["dangling-delete-files"] == expected["dangling-delete-files"] == 0
    assert after["delete-files"] == expected["delete-files"]


def test_expirable_snapshots_and_the_bytes_only_they_hold(tmp_path: Path) -> None:
    t = small_files(tmp_path / "wh" / "db" / "t", n=6)
    assert icectl("compact", t.location).exit_code == 0
    assert icectl("properties", "set", t.location, "history.expire.max-snapshot-age-ms=1").exit_code == 0
    t = Table.load(t.location)
    report = table_health(t)
    s = report.dimension("snapshots").figures
    n = len(t.metadata.snapshots)
    assert s["snapshots"] == n and s["expirable-snapshots"] == n - 1
    old = files_view(t.io, t.metadata, t.metadata.snapshots[5])
    # the compaction replaced every file: the old ones are held only by the expirable snapshots
    assert s["files-held-by-expirable-snapshots"] == len(old) == 12
    assert s["bytes-held-by-expirable-snapshots"] >= sum(f["file-size-in-bytes"] for f in old)
    v = next(v for v in report.verdicts if v.code == "expirable-snapshots")
    expected = {e.measure: e.after for e in v.effects}
    r = icectl(*v.command[1:])
    assert r.exit_code == 0, r.output
    after = table_health(Table.load(t.location)).dimension("snapshots").figures
    assert after["snapshots"] == expected["snapshots"] == 1
    assert after["reachable-file-bytes"] == expected["reachable-file-bytes"]
    assert after["bytes-held-by-expirable-snapshots"] == 0


def test_layout_overlap_depth(tmp_path: Path) -> None:
    import pyarrow as pa

    from icectl.ops.health.layout import overlap_depths
    from icectl.ops.write.rows import write_rows

    assert overlap_depths([(1, 5), (2, 6), (7, 9)]) == ((1 + 2 + 1) / 3, 2)
    assert overlap_depths([(1, 1), (1, 1)]) == (2.0, 2)
    t = empty_table(tmp_path / "wh" / "db" / "t", "id long, v string", sort="id")
    for i in range(6):  # every file spans the whole id range: a point filter reads all six
        write_rows(Table.load(t.location), pa.table({"id": pa.array([0, 100 + i], pa.int64()), "v": ["x", "y"]}))
    lay = table_health(Table.load(t.location)).dimension("layout")
    col = lay.figures["columns"][0]
    assert (col["column"], col["overlap-depth-average"], col["overlap-depth-max"]) == ("id", 6.0, 6)
    v = next(v for v in lay.verdicts if v.code == "overlapping-files")
    assert v.command[1:] == ("compact", t.location, "--strategy", "sort")
    chosen = table_health(Table.load(t.location), columns=["v"]).dimension("layout")
    assert chosen.figures["columns"][0]["column"] == "v"
    assert next(v for v in chosen.verdicts).command[-2:] == ("--sort-order", "v")
    r = icectl("health", t.location, "--columns", "nope")
    assert r.exit_code == 3 and "nope" in r.stderr


def test_orphans_only_when_listed(tmp_path: Path) -> None:
    import os

    t = small_files(tmp_path / "wh" / "db" / "t", n=1)
    stray = Path(t.location) / "data" / "stray.parquet"
    stray.write_bytes(b"x" * 123)
    old = 1_000_000_000
    os.utime(stray, (old, old))
    assert table_health(t).dimension("orphans").skipped is not None
    o = table_health(t, list_files=True).dimension("orphans")
    assert (o.figures["orphan-files"], o.figures["orphan-bytes"]) == (1, 123)
    v = o.verdicts[0]
    assert v.command[1:] == ("orphans", t.location, "--delete")
    assert icectl(*v.command[1:]).exit_code == 0
    assert table_health(Table.load(t.location), list_files=True).dimension("orphans").figures["orphan-files"] == 0


@pytest.mark.parametrize("case", ["small-files", "deletes", "evolved-spec"])
def test_the_compaction_forecast_equals_the_compaction_plan(tmp_path: Path, case: str) -> None:
    """health predicts compact without planning a scan, by compaction's own rules: its files
    rewritten and written equal those of compact's planner on the same table."""
    import pyarrow as pa

    from icectl.ops.maintain.compact import plan_compaction
    from icectl.ops.write.rows import write_rows

    t = _deleted(tmp_path) if case == "deletes" else small_files(tmp_path / "wh" / "db" / "t", n=7)
    if case == "evolved-spec":
        assert icectl("partition", "add", t.location, "bucket(2, id)").exit_code == 0
        for i in range(3):
            write_rows(Table.load(t.location), pa.table({
                "id": pa.array(range(100 + i * 10, 110 + i * 10), pa.int64()), "cat": ["a"] * 10}))
    t = Table.load(t.location)
    _, _, groups = plan_compaction(t)
    planned = (sum(len(g.input_files) for g in groups), sum(g.expected_output_files for g in groups))
    v = next(v for v in table_health(t).verdicts if v.code == "small-files")
    effects = {e.measure: (e.before, e.after) for e in v.effects}
    assert effects["files-rewritten"] == planned
    assert planned[0] > 0


def test_the_warehouse_view_worst_first(tmp_path: Path) -> None:
    import json

    bad = small_files(tmp_path / "a" / "wh" / "db" / "t", n=6)  # due: small files, scattered manifests
    wh = Path(bad.location).parent.parent
    good = empty_table(tmp_path / "wh" / "db" / "t", "id long")
    Path(good.location).rename(wh / "db" / "good")
    broken = wh / "db" / "broken" / "metadata"
    broken.mkdir(parents=True)
    (broken / "v1.metadata.json").write_text("{not json")
    r = icectl("health", "-w", str(wh), "--json")
    assert r.exit_code == 14, r.output
    doc = json.loads(r.stdout)
    assert [row["identifier"] for row in doc["rows"]] == ["db.broken", "db.t", "db.good"]
    assert [row["status"] for row in doc["rows"]] == ["error", "maintenance-due", "ok"]
    assert doc["rows"][0]["error"]["kind"] == "corrupt-metadata"
    assert (doc["tables"], doc["tables-due"], doc["tables-failed"]) == (3, 1, 1)
    assert doc["rows"][1]["data-files"] == 12 and doc["rows"][1]["worst"] in ("small-files", "scattered-manifests")
    by_name = json.loads(icectl("health", "-w", str(wh), "--json", "--sort", "name").stdout)
    assert [row["identifier"] for row in by_name["rows"]] == ["db.broken", "db.good", "db.t"]
    text = icectl("health", "-w", str(wh))
    assert text.exit_code == 14 and "db.t" in text.stdout and "maintenance-due" in text.stdout


def test_the_snapshot_timeline(tmp_path: Path) -> None:
    t = _deleted(tmp_path)
    rows = table_health(t).dimension("snapshots").figures["timeline"]
    snaps = sorted(t.metadata.snapshots, key=lambda s: s.timestamp_ms)
    assert [r["snapshot-id"] for r in rows] == [s.snapshot_id for s in snaps]
    assert [r["operation"] for r in rows] == ["append"] * 6 + ["delete"]
    assert rows[-1]["total-data-files"] == 12 and rows[-1]["added-delete-files"] > 0
    assert rows[-1]["total-records"] == int(snaps[-1].summary["total-records"])


@pytest.mark.parametrize("key,values", [("id", "id\n3\n4\n"), ("v", "v\n-0.0\n-1.5\n")])
def test_equality_deletes_counted_on_the_files_the_plan_attaches_them_to(tmp_path: Path, key: str,
                                                                         values: str) -> None:
    """Health's delete figures prune equality deletes by the key columns' ranges (NaN counts of
    float keys too) as the planner does: both count the same data files with deletes."""
    t = empty_table(tmp_path / "t", "id long, v double", properties={"write.delete.mode": "merge-on-read"})
    for i in range(4):  # ids 10*i..10*i+9, v from -10*i-0.5 down: disjoint ranges per file
        write_rows(Table.load(t.location), pa.table({"id": pa.array(range(10 * i, 10 * i + 10), pa.int64()),
                                                     "v": [-(10.0 * i + k + 0.5) for k in range(10)]}))
    keys = tmp_path / "keys.csv"
    keys.write_text(values)
    r = icectl("delete", t.location, "--equality", key, "--from", str(keys))
    assert r.exit_code == 0, r.output
    t = Table.load(t.location)
    # health first: a decode the plan caches would carry the statistics health asks for too
    f = table_health(t).dimension("deletes").figures
    tasks = icectl_json("plan", t.location)["files"]
    attached = [x for x in tasks if x["delete-files"]]
    assert 0 < len(attached) < len(tasks)  # the key ranges prune
    assert f["equality-delete-files"] == 1
    assert f["data-files-with-deletes"] == len(attached)
