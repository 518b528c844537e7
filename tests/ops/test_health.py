"""`icectl health`'s engine: figures equal what the record reader's views count, thresholds come
from table properties, and each verdict's command, run, gives the effect it announced."""

from __future__ import annotations

from pathlib import Path

import pytest

from clirun import icectl, icectl_json
from ops_support import make_table, small_files

from icectl.ops.health import DUE, read_policy, table_health
from icectl.ops.read.inspect import files_view, manifests_view
from icectl.ops.read.inspect_tables import partitions_table
from icectl.table.table import Table


def _fig(report, dim: str) -> dict:
    d = report.dimension(dim)
    assert d is not None
    return d.figures


def test_figures_equal_the_inspect_views(tmp_path: Path) -> None:
    t = small_files(tmp_path, n=6)
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
    t = small_files(tmp_path, n=1, props={"write.target-file-size-bytes": "1000"})
    report = table_health(t)
    assert not report.due, [v.problem for v in report.verdicts]
    assert report.status == "ok"


def test_the_compact_verdict_predicts_what_compact_does(tmp_path: Path) -> None:
    t = small_files(tmp_path, n=6)
    report = table_health(t)
    v = next(v for v in report.verdicts if v.code == "small-files")
    assert v.severity == DUE and v.command[:2] == ("icectl", "compact")
    before, after = v.effects[0].before, v.effects[0].after
    assert (before, after) == (12, 2)
    r = icectl(*v.command[1:])
    assert r.exit_code == 0, r.output
    assert table_health(Table.load(t.location)).dimension("data-files").figures["data-files"] == after


def test_the_rewrite_manifests_verdict_predicts_its_effect(tmp_path: Path) -> None:
    t = small_files(tmp_path, n=6)
    v = next(v for v in table_health(t).verdicts if v.code == "scattered-manifests")
    expected = {e.measure: e.after for e in v.effects}
    r = icectl(*v.command[1:])
    assert r.exit_code == 0, r.output
    m = table_health(Table.load(t.location)).dimension("manifests").figures
    assert m["data-manifests"] == expected["data-manifests"] == 1
    assert m["manifests-per-partition-average"] == expected["manifests-per-partition-average"] == 1


def test_the_cli_json_and_exit_code(tmp_path: Path) -> None:
    t = small_files(tmp_path, n=6)
    r = icectl("health", t.location, "--json")
    assert r.exit_code == 14, r.output
    import json

    doc = json.loads(r.stdout)
    assert r.stderr == ""
    assert doc["status"] == "maintenance-due"
    assert [d["name"] for d in doc["dimensions"]][:2] == ["data-files", "manifests"]
    for v in doc["verdicts"]:
        assert set(v) >= {"dimension", "severity", "problem", "command", "command-text", "effects"}
        if v["command"] is not None:
            assert v["command-text"].split() == v["command"]
        for e in v["effects"]:
            assert set(e) == {"measure", "unit", "before", "after"}
    thresholds = doc["thresholds"]
    assert thresholds["target-file-size"]["property"] == "write.target-file-size-bytes"
    healthy = make_table(tmp_path / "h", "id long")
    assert icectl_json("health", healthy.location, "--json")["status"] == "ok"


@pytest.mark.parametrize("args", [["--sort", "nonsense"]])
def test_bad_options_are_invalid_input(tmp_path: Path, args: list[str]) -> None:
    t = make_table(tmp_path, "id long")
    r = icectl("health", t.location, *args)
    assert r.exit_code == 2 and "--sort" in r.stderr, r.output
