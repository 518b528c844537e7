"""SIGKILL during committing commands: the table stays readable and loses no acknowledged commit.

- Deterministic: for append, write, schema add and expire, the command is killed before its 1st,
  2nd, 3rd ... file operation (the io layer's ``ICECTL_FAULT_KILL_AT`` testing hook) until a run
  completes; every kill starts from the same prepared table.
- Random: a fixed-seed sequence of those commands on one table, each killed after a random delay.

After every kill: icectl reads the table (``inspect files``), every file the metadata references
exists and the rows read (pyiceberg), the metadata versions are contiguous, ``orphans`` (files
aged past its cut-off) lists no referenced file and ``expire --dry-run`` no live one; then a rerun
of the command succeeds (or, for a change that already landed before the kill, is refused as a
duplicate with exit 5) and its effect is in the table.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest
from faults_support import (EXIT_OK, EXIT_VALIDATION, TableView, age_tree, assert_clean_failure,
                            check_versions, child_env, create_table, json_out, row_count,
                            run_icectl, scale, start_icectl, write_csv, write_parquet)
from clirun import icectl


KILLED = -signal.SIGKILL


@dataclass
class Figures:
    kills: int = 0
    unreadable: int = 0
    reruns: int = 0
    notes: list[str] = field(default_factory=list)


def _cli(*args: Any) -> Any:
    """Judge with icectl's own commands, in-process (cheap; the faulted runs are real processes)."""
    return icectl(*args)


def judge(t: Path, figures: Figures) -> TableView:
    """Everything that must hold after any kill."""
    done = _cli("inspect", "files", t, "--json")
    if done.exit_code != 0:
        figures.unreadable += 1
        raise AssertionError(f"icectl cannot read the table after a kill: {done.output}")
    icectl_live = {f["file-path"] for f in json.loads(done.stdout) if f["content"] == "data"}
    view = TableView.read(t)
    assert icectl_live == view.live_data_files
    missing = {p for p in view.referenced if not os.path.exists(p)}
    assert not missing, f"referenced files missing: {sorted(missing)}"
    row_count(t)  # every live data file reads
    check_versions(t, delete_after_commit=False)

    age_tree(t)
    orphans = _cli("orphans", t, "--json")
    assert orphans.exit_code == 0, orphans.output
    listed = set(json.loads(orphans.stdout)["orphan-files"])
    assert not listed & view.referenced, f"orphans lists referenced files: {listed & view.referenced}"
    dry = _cli("expire", t, "--dry-run", "--older-than", "0s", "--retain-last", "1", "--json")
    assert dry.exit_code == 0, dry.output
    would_delete = {p for paths in json.loads(dry.stdout)["files"].values() for p in paths}
    assert not would_delete & view.live_data_files, "expire --dry-run would delete live files"
    return view


# -- the prepared table ------------------------------------------------------------------------

@dataclass
class Prepared:
    table: Path
    pristine: Path
    older: list[int]  # a snapshot main no longer reaches (rolled back), for expire
    work: Path

    def restore(self) -> None:
        shutil.rmtree(self.table)
        shutil.copytree(self.pristine, self.table, symlinks=True)


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Prepared:
    work = tmp_path_factory.mktemp("crash")
    t = work / "t"
    create_table(t)
    ids = []
    for i in range(3):
        out = json_out(run_icectl("write", t, write_csv(work / f"s{i}.csv", range(10 * i, 10 * i + 3),
                                                         f"s{i}"), "--json"))
        ids.append(out["snapshot-id"])
    done = run_icectl("snapshot", "rollback", t, ids[0])
    assert done.returncode == 0, done.stderr
    pristine = work / "pristine"
    shutil.copytree(t, pristine, symlinks=True)
    return Prepared(t, pristine, ids[2:], work)


@dataclass
class Command:
    """A faulted command: its arguments, how to rerun it, and what it must have done."""

    args: Callable[[Prepared], list[Any]]
    landed: Callable[[Prepared, TableView], bool]
    rerun: Callable[[Prepared, bool], list[Any]] | None = None  # (prepared, landed) -> args


def _append_args(p: Prepared) -> list[Any]:
    f = p.work / "ext.parquet"
    if not f.exists():
        write_parquet(f, range(1000, 1005), "ext")
    return ["append", p.table, f]


def _write_args(p: Prepared) -> list[Any]:
    return ["write", p.table, write_csv(p.work / "w.csv", range(2000, 2004), "w")]


COMMANDS = {
    "append": Command(_append_args, lambda p, v: str(p.work / "ext.parquet") in v.live_data_files),
    "write": Command(_write_args, lambda p, v: "w" in _sources(p.table)),
    "schema-add": Command(lambda p: ["schema", "add", p.table, "added", "string"],
                          lambda p, v: "added" in v.columns),
    "expire": Command(
        lambda p: ["expire", p.table, *[a for s in p.older for a in ("--snapshot-id", s)]],
        lambda p, v: not set(p.older) & v.snapshot_ids,
        rerun=lambda p, landed: (["expire", p.table] if landed else COMMANDS["expire"].args(p))),
}


def _sources(t: Path) -> set[str]:
    from faults_support import static_table

    return set(static_table(t).scan(selected_fields=("src",)).to_arrow().column("src").to_pylist())


# write's commit makes every kind of file a commit makes (data file, manifest, manifest list,
# metadata, hint) and expire's deletes every kind it deletes; append and schema add are subsets.
@pytest.mark.parametrize("name", ["write", "expire", pytest.param("append", marks=pytest.mark.slow),
                                  pytest.param("schema-add", marks=pytest.mark.slow)])
def test_kill_before_each_file_operation(prepared: Prepared, name: str) -> None:
    cmd = COMMANDS[name]
    figures = Figures()
    for n in range(1, 200):
        prepared.restore()
        done = run_icectl(*cmd.args(prepared), env=child_env(ICECTL_FAULT_KILL_AT=str(n)))
        if done.returncode != KILLED:  # the command finished before its n-th operation
            assert done.returncode == EXIT_OK, done.stderr
            assert cmd.landed(prepared, judge(prepared.table, figures))
            break
        figures.kills += 1
        view = judge(prepared.table, figures)
        landed = cmd.landed(prepared, view)
        rerun_args = cmd.rerun(prepared, landed) if cmd.rerun else cmd.args(prepared)
        again = run_icectl(*rerun_args)
        figures.reruns += 1
        assert_clean_failure(again, f"rerun after kill {n}")
        if landed and cmd.rerun is None and name != "write":
            # The change was in before the kill: repeating it is refused as a duplicate.
            assert again.returncode in (EXIT_OK, EXIT_VALIDATION), again.stderr
        else:
            assert again.returncode == EXIT_OK, again.stderr
        assert cmd.landed(prepared, judge(prepared.table, figures)), f"rerun after kill {n} lost"
    else:
        raise AssertionError("the command never completed")
    print(f"\ncrash[{name}]: kills {figures.kills}, tables unreadable {figures.unreadable}, "
          f"reruns {figures.reruns}")
    assert figures.kills >= 3 and figures.unreadable == 0


# -- random kills ------------------------------------------------------------------------------

def _random_kills(prepared: Prepared, count: int, seed: int) -> Figures:
    rng = random.Random(seed)
    prepared.restore()
    t = prepared.table
    figures = Figures()
    acked_files: set[str] = set()
    acked_sources: set[str] = set()
    acked_columns: set[str] = set()
    for i in range(count):
        kind = rng.choice(["append", "write", "schema-add", "expire"])
        if kind == "append":
            args: list[Any] = ["append", t, write_parquet(prepared.work / f"r{i}.parquet",
                                                          range(10000 * (i + 1), 10000 * (i + 1) + 3), f"r{i}")]
        elif kind == "write":
            args = ["write", t, write_csv(prepared.work / f"r{i}.csv", range(3), f"r{i}")]
        elif kind == "schema-add":
            args = ["schema", "add", t, f"c{i}", "long"]
        else:
            args = ["expire", t, "--older-than", "0s", "--retain-last", "2"]
        proc = start_icectl(*args)
        time.sleep(rng.uniform(0.1, 2.0))
        proc.send_signal(signal.SIGKILL)
        out, err = proc.communicate()
        if proc.returncode == KILLED:
            figures.kills += 1
        else:  # it finished first: an ordinary run
            assert proc.returncode == EXIT_OK, err
        view = judge(t, figures)
        again = run_icectl(*args)
        assert_clean_failure(again, f"rerun of {args}")
        if kind == "append":
            assert again.returncode in (EXIT_OK, EXIT_VALIDATION), again.stderr
            assert str(args[2]) in TableView.read(t).live_data_files
            acked_files.add(str(args[2]))
        elif kind == "schema-add":
            assert again.returncode in (EXIT_OK, EXIT_VALIDATION), again.stderr
            acked_columns.add(f"c{i}")
        else:
            assert again.returncode == EXIT_OK, again.stderr
            if kind == "write":
                acked_sources.add(f"r{i}")
        view = judge(t, figures)
        assert acked_files <= view.live_data_files and acked_columns <= view.columns
        assert acked_sources <= _sources(t)
    return figures


def test_random_kills(prepared: Prepared) -> None:
    figures = _random_kills(prepared, 6, seed=9)
    print(f"\ncrash[random]: kills {figures.kills}, tables unreadable {figures.unreadable}")
    assert figures.unreadable == 0


@pytest.mark.slow
def test_random_kills_many(prepared: Prepared) -> None:
    figures = _random_kills(prepared, 40 * scale(), seed=19)
    print(f"\ncrash[random, many]: kills {figures.kills}, tables unreadable {figures.unreadable}")
    assert figures.unreadable == 0
