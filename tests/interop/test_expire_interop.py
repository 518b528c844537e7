"""`icectl expire` against Spark's `CALL system.expire_snapshots` on twin histories.

Two tables get the same SQL history (appends, a static overwrite, merge-on-read deletes and an
update, a schema change, a tag, a branch with its own commit, a rollback, a whole-file delete),
statement by statement in turn so that their snapshot times interleave. One is expired by Spark,
the other by `icectl expire` (through the CLI) with the same arguments; then:

* the retained snapshots and refs are the same (compared by sequence number: ids are random);
* the files left on disk are the same. File names hold random UUIDs, so every file is labelled by
  what it is in the twin's metadata before expiry (a data file by its adding sequence number,
  partition and first id; a delete file by the data file it deletes; a manifest by its entries;
  a manifest list by its snapshot: expire_support.py), and the label sets are compared;
* the counts icectl reports equal the procedure's output;
* Spark reads the icectl-expired table (main, the branch and the tag) exactly like the other.
"""

from __future__ import annotations

import os
import time

import pytest
from cli_support import icectl_json, run_icectl
from expire_support import build_twins, files_left, labels, read_all

from icectl.io.storage.files import local_path
from icectl.table.table import Table

def retained(location: str) -> tuple:
    md = Table.load(location).metadata
    seqs = sorted(s.sequence_number for s in md.snapshots)
    refs = sorted((n, md.snapshot_by_id(r.snapshot_id).sequence_number, r.type) for n, r in md.refs.items())
    return seqs, refs, sorted(s.schema_id for s in md.schemas), sorted(s.spec_id for s in md.specs)


SPARK_COUNTS = ("deleted_data_files_count", "deleted_position_delete_files_count",
                "deleted_equality_delete_files_count", "deleted_manifest_files_count",
                "deleted_manifest_lists_count", "deleted_statistics_files_count")


CASES = {
    # name: (cut step for older_than or None = now, retain_last, expire seq ids, clean metadata)
    "everything-old-retain-1-clean-metadata": (None, 1, (), True),
    "retain-3": (None, 3, (), False),
    "cutoff-mid-history": (7, None, (), False),
    "explicit-snapshot-ids": ("default", None, (2, 8), False),
}


@pytest.mark.parametrize("case", list(CASES))
def test_expire_matches_spark_procedure(case, spark, new_table):
    cut_step, retain_last, explicit_seqs, clean = CASES[case]
    a, b, cut = build_twins(spark, new_table, cut_after=cut_step if isinstance(cut_step, int) else None)
    la, lb = str(a.location), str(b.location)
    labels_a, labels_b = labels(la), labels(lb)
    before_a, before_b = files_left(la, labels_a), files_left(lb, labels_b)
    assert before_a == before_b, "the twins differ before expiry"
    assert not any(k[0] == "unknown" for k in before_a), before_a

    time.sleep(0.05)
    if cut_step is None:
        cutoff = int(time.time() * 1000)  # everything is old enough
    elif isinstance(cut_step, int):
        cutoff = cut  # between two steps of both twins
    else:
        cutoff = None  # the table default (5 days): nothing here is that old
    args_spark = [f"table => '{a.namespace}.t'"]
    args_icectl = ["expire", lb]
    if cutoff is not None:
        args_spark.append(f"older_than => TIMESTAMP '{_utc_text(cutoff)}'")
        args_icectl += ["--older-than", str(cutoff)]
    if retain_last is not None:
        args_spark.append(f"retain_last => {retain_last}")
        args_icectl += ["--retain-last", str(retain_last)]
    if explicit_seqs:
        ids_a = [_snap_id(la, s) for s in explicit_seqs]
        ids_b = [_snap_id(lb, s) for s in explicit_seqs]
        args_spark.append(f"snapshot_ids => array({', '.join(map(str, ids_a))})")
        for i in ids_b:
            args_icectl += ["--snapshot-id", str(i)]
    if clean:
        args_spark.append("clean_expired_metadata => true")
        args_icectl.append("--clean-expired-metadata")

    row = spark.sql(f"CALL ice.system.expire_snapshots({', '.join(args_spark)})").collect()[0].asDict()
    dry = icectl_json(*args_icectl, "--dry-run")
    result = icectl_json(*args_icectl)

    # the histories are built so that every case really deletes files
    assert row["deleted_manifest_lists_count"] > 0
    if case == "everything-old-retain-1-clean-metadata":
        assert row["deleted_data_files_count"] > 0 and row["deleted_position_delete_files_count"] > 0
        assert row["deleted_manifest_files_count"] > 0
    # same snapshots, refs, schemas and specs left
    assert retained(la) == retained(lb)
    # same files left on disk, and the dry run listed exactly what went
    assert files_left(la, labels_a) == files_left(lb, labels_b)
    gone = {os.path.normpath(local_path(p)) for ps in dry["files"].values() for p in ps}
    disappeared = {p for p in labels_b if not os.path.exists(p)}
    assert gone == disappeared
    for key in SPARK_COUNTS:
        assert result[key] == row[key], key
        assert dry[key] == row[key], key
    # Spark reads the icectl-expired table as it reads the Spark-expired one
    assert read_all(spark, b.ident) == read_all(spark, a.ident)
    # a rerun finds nothing left to do
    again = icectl_json("expire", lb, "--retain-last", "1", "--older-than", "1970-01-01", "--dry-run")
    assert all(not v for v in again["files"].values()) or again["expired-snapshots-count"] > 0


def _utc_text(ms: int) -> str:
    """A Spark timestamp literal for epoch millis (the test session's time zone is UTC)."""
    import datetime as dt

    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def _snap_id(location: str, seq: int) -> int:
    md = Table.load(location).metadata
    return next(s.snapshot_id for s in md.snapshots if s.sequence_number == seq)


def test_sigkill_during_expire_leaves_a_table_spark_reads_and_a_rerun_completes(spark, new_table):
    """Kill `icectl expire` with SIGKILL at a random moment; Spark still reads every ref, and a
    rerun deletes exactly what an uninterrupted run would have (the dry run's list)."""
    import random
    import signal
    import subprocess
    import sys

    a, _, _ = build_twins(spark, new_table)
    loc = str(a.location)
    before_rows = read_all(spark, a.ident)
    cutoff = str(int(time.time() * 1000))
    args = ["expire", loc, "--older-than", cutoff, "--retain-last", "1"]
    dry = icectl_json(*args, "--dry-run")
    doomed = {os.path.normpath(local_path(p)) for ps in dry["files"].values() for p in ps}
    assert doomed
    all_before = {os.path.normpath(os.path.join(r, n)) for r, _, ns in os.walk(loc) for n in ns}

    proc = subprocess.Popen([sys.executable, "-m", "icectl", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    time.sleep(random.uniform(0.4, 1.6))
    proc.send_signal(signal.SIGKILL)
    proc.wait(60)
    assert read_all(spark, a.ident) == before_rows
    done = run_icectl(*args)
    assert done.returncode == 0, done.stderr
    after = {os.path.normpath(os.path.join(r, n)) for r, _, ns in os.walk(loc) for n in ns}
    gone = {p for p in all_before - after if not os.path.basename(p).startswith(".")}
    assert gone == doomed
    assert read_all(spark, a.ident) == before_rows
