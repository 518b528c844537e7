"""Concurrency suite: 8 icectl processes mixing every committing command, Spark alongside.

Eight workers run icectl as users do (``python -m icectl ...``, no TTY), each a sequence of
commands: ``append`` of pre-written Parquet files, ``write`` of CSV, ``schema add``,
``properties set`` and ``expire``. Meanwhile a thread of this process runs Spark ``INSERT``s and a
merge-on-read ``DELETE`` on the same table. With and without
``write.metadata.delete-after-commit.enabled`` (and ``previous-versions-max=1``).

The data tells every commit apart: icectl rows have positive ids in a range of their own, Spark's
are negative and Spark deletes only its own, so no icectl file can be removed by a later delete.
Checks: every acknowledged commit (exit 0) is in the final table (its files live and its rows
counted, its column, its property, its expired snapshots gone); every other exit is 6 and leaves
nothing behind; Spark and icectl read the table; the row count is exactly what the acknowledged
commits add up to; metadata versions are contiguous. A slow test races Java's own property
commits (HadoopTables in this JVM) against icectl's, the window where Java's rename replaced an
icectl version.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from spark_support import java_table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "faults"))

from faults_support import (EXIT_CONFLICT, EXIT_OK, TableView, check_versions, create_table,  # noqa: E402
                            run_icectl, scale, unreferenced_files, write_csv, write_parquet)

WORKERS = 8
KINDS = ("append", "write", "schema-add", "properties", "expire")
DAC = ("write.metadata.delete-after-commit.enabled=true", "write.metadata.previous-versions-max=1")


@dataclass
class Outcome:
    kind: str
    args: list[Any]
    code: int
    result: Any  # parsed --json output on success
    rows: int = 0
    stderr: str = ""


def _command(work: Path, loc: Path, worker: int, step: int) -> tuple[str, list[Any], int]:
    kind = KINDS[(worker + step) % len(KINDS)]
    tag = f"w{worker}s{step}"
    base = 1_000_000 * (worker + 1) + 1000 * step
    if kind == "append":
        f = write_parquet(work / f"{tag}.parquet", range(base, base + 5), tag)
        return kind, ["append", loc, f, "--json"], 5
    if kind == "write":
        f = write_csv(work / f"{tag}.csv", range(base, base + 3), tag)
        return kind, ["write", loc, f, "--json"], 3
    if kind == "schema-add":
        return kind, ["schema", "add", loc, f"c_{tag}", "string", "--json"], 0
    if kind == "properties":
        return kind, ["properties", "set", loc, f"faults.{tag}=v", "--json"], 0
    return kind, ["expire", loc, "--older-than", "0s", "--retain-last", "3", "--json"], 0


def _worker(plan: list[tuple[str, list[Any], int]]) -> list[Outcome]:
    out = []
    for kind, args, rows in plan:
        done = run_icectl(*args, timeout=300)
        result = json.loads(done.stdout) if done.returncode == EXIT_OK else None
        out.append(Outcome(kind, args, done.returncode, result, rows, done.stderr))
    return out


@dataclass
class SparkLog:
    attempted: int = 0
    acknowledged: int = 0
    expected_ids: set[int] | None = None
    failures: list[str] | None = None


def _spark_side(spark: Any, ident: str, log: SparkLog) -> None:
    """INSERTs of negative ids and a merge-on-read DELETE of some of them, while icectl runs."""
    log.expected_ids, log.failures = set(), []
    batches = [list(range(-10 * b - 5, -10 * b)) for b in range(1, 4)]
    steps: list[tuple[str, Any]] = [("insert", batches[0]), ("insert", batches[1]),
                                    ("delete", (batches[0][0], batches[0][2])), ("insert", batches[2])]
    for what, arg in steps:
        log.attempted += 1
        try:
            if what == "insert":
                # Name every current column: Spark refuses an INSERT that leaves one out.
                spark.sql(f"REFRESH TABLE {ident}")
                others = [c for c in spark.table(ident).columns if c not in ("id", "src")]
                cols = ", ".join(["id", "src", *(f"`{c}`" for c in others)])
                nulls = "".join(", NULL" for _ in others)
                values = ", ".join(f"({i}, 'spark'{nulls})" for i in arg)
                spark.sql(f"INSERT INTO {ident} ({cols}) VALUES {values}").collect()
                log.expected_ids |= set(arg)
            else:
                lo, hi = arg
                spark.sql(f"DELETE FROM {ident} WHERE id BETWEEN {lo} AND {hi}").collect()
                log.expected_ids -= set(range(lo, hi + 1))
            log.acknowledged += 1
        except Exception as exc:  # noqa: BLE001 - a refused Spark commit is an outcome, not an error
            java = getattr(exc, "java_exception", None)
            reason = java.toString() if java is not None else str(exc)
            log.failures.append(f"{what}: {reason.splitlines()[0][:200]}")


def _run_suite(spark: Any, ice_table: Any, tmp_path: Path, delete_after_commit: bool,
               steps: int) -> None:
    loc = ice_table.location
    create_table(loc, "write.delete.mode=merge-on-read", "write.update.mode=merge-on-read",
                 *(DAC if delete_after_commit else ()))
    spark.sql(f"REFRESH TABLE {ice_table.ident}")
    # Every input written up front, so that the workers only commit.
    plans = [[_command(tmp_path, loc, w, s) for s in range(steps)] for w in range(WORKERS)]

    log = SparkLog()
    spark_thread = threading.Thread(target=_spark_side, args=(spark, ice_table.ident, log))
    spark_thread.start()
    with ThreadPoolExecutor(WORKERS) as pool:
        outcomes = [o for part in pool.map(_worker, plans) for o in part]
    spark_thread.join(timeout=600)
    assert not spark_thread.is_alive(), "Spark side did not finish"

    # Every icectl exit is success or a commit conflict, said in one line, never a traceback.
    for o in outcomes:
        assert "Traceback" not in o.stderr, o.stderr
        assert o.code in (EXIT_OK, EXIT_CONFLICT), f"{o.args}: exit {o.code}\n{o.stderr}"

    view = TableView.read(loc)
    lost = []
    expected_rows = 0
    for o in outcomes:
        if o.code != EXIT_OK:
            continue
        if o.kind in ("append", "write"):
            expected_rows += o.rows
            files = {f["file-path"] for f in o.result["files"]}
            if not files <= view.live_data_files:
                lost.append(o)
        elif o.kind == "schema-add" and o.args[3] not in view.columns:
            lost.append(o)
        elif o.kind == "properties" and o.args[3].split("=")[0] not in view.properties:
            lost.append(o)
        elif o.kind == "expire" and set(o.result["expired-snapshot-ids"]) & view.snapshot_ids:
            lost.append(o)
    acked = sum(o.code == EXIT_OK for o in outcomes)
    print(f"\nconcurrency (delete-after-commit={delete_after_commit}): icectl commits attempted "
          f"{len(outcomes)}, acknowledged {acked}, conflicts {len(outcomes) - acked}, lost "
          f"{len(lost)}; Spark commits attempted {log.attempted}, acknowledged {log.acknowledged}"
          + (f", refused: {log.failures}" if log.failures else ""))
    assert not lost, f"{len(lost)} acknowledged commits lost: {[o.args[:3] for o in lost]}"

    # Both engines read it; the rows are exactly what the acknowledged commits add up to.
    df = _fresh_read(spark, ice_table.ident, loc)
    spark_ids = {r[0] for r in df.filter("id < 0").select("id").collect()}
    assert spark_ids == log.expected_ids
    assert df.count() == expected_rows + len(log.expected_ids)
    done = run_icectl("inspect", "files", loc, "--json")
    assert done.returncode == EXIT_OK, done.stderr
    assert {f["file-path"] for f in json.loads(done.stdout) if f["content"] == "data"} == \
        view.live_data_files
    check_versions(loc, delete_after_commit=delete_after_commit)
    if not log.failures:  # a refused Spark commit may leave its files; icectl's never do
        assert unreferenced_files(loc, view) == set()


def _fresh_read(spark: Any, ident: str, loc: str) -> Any:
    """The table as Spark reads it now. Java's HadoopTableOperations refreshes from the version
    it last loaded; with delete-after-commit another writer may have deleted that file, and the
    refresh then fails ("Metadata file for version N is missing", a limitation of Java's Hadoop
    tables, not of the table). A load by path starts again from version-hint.text."""
    try:
        spark.sql(f"REFRESH TABLE {ident}")
        return spark.table(ident)
    except Exception as e:  # noqa: BLE001 - py4j wraps Java's ValidationException
        if "Metadata file for version" not in str(e):
            raise
        return spark.read.format("iceberg").load(str(loc))


@pytest.mark.parametrize("delete_after_commit", [False, True])
def test_concurrent_commands_with_spark(spark: Any, ice_table: Any, tmp_path: Path,
                                        delete_after_commit: bool) -> None:
    _run_suite(spark, ice_table, tmp_path, delete_after_commit, steps=3)


@pytest.mark.slow
@pytest.mark.parametrize("delete_after_commit", [False, True])
def test_concurrent_commands_with_spark_many(spark: Any, ice_table: Any, tmp_path: Path,
                                             delete_after_commit: bool) -> None:
    _run_suite(spark, ice_table, tmp_path, delete_after_commit, steps=10 * scale())


def _java_property_commits(spark: Any, loc: str, n: int, until: float, acked: list[str]) -> None:
    """Iceberg Java commits of one property each (HadoopTables, this JVM), until ``until``."""
    i = 0
    while time.monotonic() < until:
        key = f"java{n}.{i}"
        i += 1
        try:
            java_table(spark, loc).updateProperties().set(key, "v").commit()
        except Exception:  # noqa: BLE001 - a refused commit is an outcome; only acknowledged ones count
            continue
        acked.append(key)


def _icectl_property_commits(loc: str, n: int, until: float, acked: list[str], refused: list[str],
                             errors: list[str]) -> None:
    i = 0
    while time.monotonic() < until:
        key = f"ice{n}.{i}"
        i += 1
        done = run_icectl("properties", "set", loc, f"{key}=v", timeout=300)
        if done.returncode == EXIT_OK:
            acked.append(key)
        elif done.returncode == EXIT_CONFLICT and "Traceback" not in done.stderr:
            refused.append(key)
        else:
            errors.append(f"exit {done.returncode}: {done.stderr.strip()[:300]}")


@pytest.mark.slow
def test_java_and_icectl_commits_racing_lose_nothing(spark: Any, ice_table: Any) -> None:
    """Java's Hadoop tables check that v<N> is free, then rename onto it, replacing on a local
    filesystem: a Java commit that checked just before icectl's rename replaced icectl's version
    after it (an acknowledged icectl commit lost). Java and icectl commit small changes as fast as
    they can for a while; every acknowledged commit of either must be in the final table."""
    loc = str(ice_table.location)
    create_table(ice_table.location)
    until = time.monotonic() + 60 * scale()
    java_acked: list[str] = []
    ice_acked: list[str] = []
    ice_refused: list[str] = []
    errors: list[str] = []
    threads = [threading.Thread(target=_java_property_commits, args=(spark, loc, n, until, java_acked))
               for n in range(3)]
    threads += [threading.Thread(target=_icectl_property_commits, args=(loc, n, until, ice_acked, ice_refused, errors))
                for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    view = TableView.read(ice_table.location)
    lost_ice = [k for k in ice_acked if k not in view.properties]
    lost_java = [k for k in java_acked if k not in view.properties]
    print(f"\nJava and icectl racing: acknowledged Java {len(java_acked)}, icectl {len(ice_acked)} "
          f"(icectl conflicts after retries: {len(ice_refused)}); lost Java {len(lost_java)}, "
          f"icectl {len(lost_ice)}")
    assert not errors, errors[:3]
    assert java_acked and ice_acked
    assert not lost_ice and not lost_java, (lost_ice, lost_java)
    check_versions(ice_table.location, delete_after_commit=False)
