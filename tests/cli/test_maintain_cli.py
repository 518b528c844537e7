"""`icectl maintain`: the plan a dry run prints is what a real run does (within 10%), a dry run
writes nothing, a second run does nothing, the policy is checked before anything runs, and a
failing step stops the later ones with its own exit code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clirun import icectl
from maintain_support import (
    build_table, bytes_freed, files_on_disk, head_timestamp, measures, ok, scan_rows, tree_state,
    within, write_policy,
)

STEPS = ["expire", "orphans", "compact-deletes", "compact", "rewrite-manifests"]


@pytest.fixture
def table(tmp_path: Path) -> tuple[Path, Path]:
    """The table, and a policy that expires every snapshot it was built with but the current one."""
    loc = build_table(tmp_path / "wh")
    policy = write_policy(tmp_path / "policy.json",
                          {"icectl.maintain.expire.older-than": str(head_timestamp(loc))})
    return loc, policy


def _run(*args: object) -> tuple[int, dict]:
    r = icectl("maintain", *map(str, args), "--json")
    return r.returncode, json.loads(r.stdout) if r.stdout else {"stderr": r.stderr}


def test_dry_run_writes_nothing_and_its_plan_is_what_happens(table: tuple[Path, Path]) -> None:
    loc, policy = table
    rows = scan_rows(loc)
    tree = tree_state(loc)
    code, plan = _run(loc, "--policy", policy, "--dry-run")
    assert code == 0, plan
    assert tree_state(loc) == tree, "a dry run changed the table's directory"
    assert plan["due-steps"] == ["expire", "orphans", "compact", "rewrite-manifests"], plan["due-steps"]
    assert [s["step"] for s in plan["steps"]] == STEPS
    assert all(s["status"] == ("planned" if s["due"] else "skipped") for s in plan["steps"])
    before_measures, before_files = measures(loc), files_on_disk(loc)
    assert plan["before"] == before_measures
    lines = {s["step"]: s["command-line"] for s in plan["steps"]}
    assert lines["compact"] == ["icectl", "compact", str(loc), "--min-input-files", "5"]
    assert lines["orphans"][:4] == ["icectl", "orphans", str(loc), "--older-than"] and "--delete" in lines["orphans"]

    code, done = _run(loc, "--policy", policy)
    assert code == 0, done
    after_measures, after_files = measures(loc), files_on_disk(loc)
    assert done["ran-steps"] == plan["due-steps"] and done["failed-step"] is None
    assert done["after"] == after_measures
    # the gains the dry run printed, against what happened (measured from outside)
    for measure, expected in plan["expected-after"].items():
        assert within(expected, after_measures[measure]), (measure, expected, after_measures[measure])
    freed = bytes_freed(before_files, after_files)
    assert freed > 0 and within(plan["expected-bytes-freed"], freed), (plan["expected-bytes-freed"], freed)
    assert after_measures["data-files"] < before_measures["data-files"] / 4
    assert after_measures["manifests"] < before_measures["manifests"] / 4
    # each step: its own result object, and the expected against the actual gain
    for step in done["steps"]:
        if step["status"] == "done":
            assert step["result"] is not None and step["actual"] is not None
            for measure, gain in step["expected"].items():
                got = step["actual"][measure]
                if isinstance(gain, dict):
                    assert within(gain["after"], got["after"]), (step["step"], measure, gain, got)
                else:
                    assert within(gain, got), (step["step"], measure, gain, got)
    assert scan_rows(loc) == rows


def test_a_second_run_does_nothing(table: tuple[Path, Path]) -> None:
    loc, policy = table
    code, first = _run(loc, "--policy", policy)
    assert code == 0 and first["ran-steps"], first
    tree = tree_state(loc)
    code, second = _run(loc, "--policy", policy)
    assert code == 0, second
    assert second["due-steps"] == [] and second["ran-steps"] == []
    assert tree_state(loc) == tree
    r = icectl("maintain", loc, "--policy", policy)  # the text view, as cron would log it
    assert r.returncode == 0 and "due steps" in r.stdout, r.stderr


def test_a_step_disabled_by_the_policy_does_not_run(table: tuple[Path, Path], tmp_path: Path) -> None:
    loc, _ = table
    ok("properties", "set", loc, "icectl.maintain.compact.enabled=false")
    policy = write_policy(tmp_path / "p.json", {"icectl.maintain.orphans.enabled": False})
    code, out = _run(loc, "--policy", policy, "--dry-run")
    assert code == 0, out
    steps = {s["step"]: s for s in out["steps"]}
    assert not steps["compact"]["due"] and "icectl.maintain.compact.enabled=false" in steps["compact"]["reasons"][0]
    assert not steps["orphans"]["due"]
    assert out["policy"]["settings"]["icectl.maintain.compact.enabled"] == {"value": False, "source": "table-property"}
    assert out["policy"]["settings"]["icectl.maintain.orphans.enabled"] == {"value": False, "source": "policy"}


def test_gc_disabled_skips_the_deleting_steps(table: tuple[Path, Path]) -> None:
    loc, policy = table
    ok("properties", "set", loc, "gc.enabled=false")
    stray = loc / "data" / "stray.parquet"
    code, out = _run(loc, "--policy", policy)
    assert code == 0, out
    steps = {s["step"]: s for s in out["steps"]}
    for step in ("expire", "orphans"):
        assert steps[step]["status"] == "skipped" and "gc.enabled=false" in steps[step]["reasons"][0]
    assert steps["compact"]["status"] == "done" and stray.exists()


@pytest.mark.parametrize("policy,named", [
    ({"icectl.maintain.expire.olderthan": "7d"}, "icectl.maintain.expire.olderthan"),
    ({"write.target-file-size": 1}, "write.target-file-size"),
    ({"icectl.maintain.compact-deletes.min-input-files": 0}, "icectl.maintain.compact-deletes.min-input-files"),
    ({"icectl.health.max-orphan-files": 1.5}, "icectl.health.max-orphan-files"),
    ({"icectl.maintain.compact.enabled": "yes"}, "icectl.maintain.compact.enabled"),
    ({"icectl.maintain.orphans.older-than": "last week"}, "icectl.maintain.orphans.older-than"),
    ({"icectl.health.max-small-file-share": "-1"}, "icectl.health.max-small-file-share"),
    ({"commit.manifest.target-size-bytes": "big"}, "commit.manifest.target-size-bytes"),
    ({"icectl.maintain.compact.min-input-files": [5]}, "icectl.maintain.compact.min-input-files"),
])
def test_a_bad_policy_is_refused_before_anything_runs(table: tuple[Path, Path], tmp_path: Path,
                                                      policy: dict, named: str) -> None:
    loc, _ = table
    tree = tree_state(loc)
    path = write_policy(tmp_path / "bad.json", policy)
    r = icectl("maintain", loc, "--policy", path)
    assert r.returncode == 2, (r.returncode, r.stderr)
    line, = r.stderr.strip().splitlines()
    assert line.startswith("icectl: error: --policy: ") and named in line, line
    assert r.stdout == "" and tree_state(loc) == tree


def test_policy_files_that_are_not_policies(table: tuple[Path, Path], tmp_path: Path) -> None:
    loc, _ = table
    tree = tree_state(loc)
    (tmp_path / "list.json").write_text("[1, 2]")
    (tmp_path / "broken.json").write_text("{")
    for name, code in (("list.json", 2), ("broken.json", 2), ("missing.json", 3)):
        r = icectl("maintain", loc, "--policy", tmp_path / name)
        assert r.returncode == code, (name, r.returncode, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and "--policy" in r.stderr, r.stderr
    ok("properties", "set", loc, "icectl.maintain.compact.min-input=3")  # a misspelt key of ours
    tree = tree_state(loc)
    r = icectl("maintain", loc, "--json")
    assert r.returncode == 2 and "icectl.maintain.compact.min-input" in r.stderr, r.stderr
    assert json.loads(r.stderr.splitlines()[-1])["error"]["kind"] == "invalid-input"
    assert tree_state(loc) == tree


def test_the_24_hour_rule_of_orphans_holds(table: tuple[Path, Path], tmp_path: Path) -> None:
    loc, _ = table
    tree = tree_state(loc)
    policy = write_policy(tmp_path / "recent.json", {"icectl.maintain.orphans.older-than": "1h"})
    r = icectl("maintain", loc, "--policy", policy)
    assert r.returncode == 5 and "--allow-recent" in r.stderr, (r.returncode, r.stderr)
    assert tree_state(loc) == tree
    code, out = _run(loc, "--policy", policy, "--allow-recent", "--dry-run")
    assert code == 0 and "orphans" in out["due-steps"], out


def test_a_failing_step_stops_the_later_ones_with_its_exit_code(table: tuple[Path, Path]) -> None:
    loc, policy = table
    files = json.loads(ok("inspect", "files", loc, "--json"))
    lost = next(f["file-path"] for f in files if f["content"] == "data")
    Path(lost).unlink()  # compaction must read it: the compact step fails
    r = icectl("maintain", loc, "--policy", policy, "--json")
    out = json.loads(r.stdout)
    assert out["failed-step"] == "compact" and out["ran-steps"] == ["expire", "orphans"], out
    steps = {s["step"]: s for s in out["steps"]}
    error = steps["compact"]["error"]
    assert r.returncode == error["exit-code"] == out["exit-code"] != 0, (r.returncode, error)
    assert steps["compact"]["status"] == "failed" and steps["rewrite-manifests"]["status"] == "not-run"
    assert steps["expire"]["status"] == "done" and steps["expire"]["result"]["expired-snapshots-count"] > 0
    assert r.stderr.splitlines()[0].startswith("icectl: error: the compact step failed: "), r.stderr
    assert json.loads(r.stderr.splitlines()[-1])["error"]["exit-code"] == r.returncode


def test_deletes_that_cost_reads_are_compacted_away(tmp_path: Path) -> None:
    """Files of the target size, but 40% of their rows deleted: health's merge-on-read verdict
    makes the compaction rewrite every file with deletes (its --delete-file-threshold 1)."""
    loc = build_table(tmp_path / "wh", appends=2, deletes=False, orphan=False)
    ok("properties", "set", loc, "write.target-file-size-bytes=1200")  # (the files are ~1.1 kB)
    ok("delete", loc, "--filter", "id < 40", "--mode", "merge-on-read")
    rows = scan_rows(loc)
    code, out = _run(loc)
    assert code == 0, out
    assert out["ran-steps"] == ["compact"], out["steps"]
    compact = next(s for s in out["steps"] if s["step"] == "compact")
    assert [v["code"] for v in compact["verdicts"]] == ["merge-on-read-cost"]
    assert compact["arguments"]["delete_file_threshold"] == 1
    assert compact["command-line"][-2:] == ["--delete-file-threshold", "1"]
    assert out["after"] == measures(loc) == out["expected-after"]
    assert measures(loc)["delete-files"] == 0 and scan_rows(loc) == rows
    code, again = _run(loc)
    assert code == 0 and again["due-steps"] == []
