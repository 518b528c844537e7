"""`icectl expire` against Spark's `CALL system.expire_snapshots` on twin histories.

Two tables get the same SQL history (appends, a static overwrite, merge-on-read deletes and an
update, a schema change, a tag, a branch with its own commit, a rollback, a whole-file delete),
statement by statement in turn so that their snapshot times interleave. One is expired by Spark,
the other by `icectl expire` (through the CLI) with the same arguments; then:

* the retained snapshots and refs are the same (compared by sequence number: ids are random);
* the files left on disk are the same. File names hold random UUIDs, so every file is labelled by
  what it is in the twin's metadata before expiry (a data file by its adding sequence number,
  partition and first id; a delete file by the data file it deletes; a manifest by its entries;
  a manifest list by its snapshot), and the label sets are compared;
* the counts icectl reports equal the procedure's output;
* Spark reads the icectl-expired table (main, the branch and the tag) exactly like the other.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from typing import Any, Callable

import pytest
from cli_support import icectl_json, run_icectl

from icectl.io import avro
from icectl.io.files import FileIO, local_path
from icectl.spec.manifests import DATA
from icectl.table.table import Table

Step = Callable[[str, str], str]  # (ident, namespace) -> SQL

PATH_FIELD = 2147483546


def _snap_at_seq(ident_ns: str, seq: int, spark) -> int:
    rows = spark.sql(f"SELECT snapshot_id FROM {ident_ns}.snapshots ORDER BY committed_at").collect()
    return [r[0] for r in rows][seq - 1]


def scenario(spark) -> list[Any]:
    return [
        lambda t, ns: f"""CREATE TABLE {t} (id bigint, data string, cat string) USING iceberg
            PARTITIONED BY (cat) TBLPROPERTIES ('format-version'='2',
            'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read',
            'write.merge.mode'='merge-on-read')""",
        lambda t, ns: f"INSERT INTO {t} VALUES (1, 'a', 'x'), (2, 'b', 'y'), (3, 'c', 'x')",   # seq 1
        lambda t, ns: f"INSERT INTO {t} VALUES (4, 'd', 'z'), (5, 'e', 'y')",                 # seq 2
        lambda t, ns: f"DELETE FROM {t} WHERE id = 1",                                       # seq 3 (pos delete)
        lambda t, ns: f"INSERT OVERWRITE {t} PARTITION (cat = 'y') VALUES (6, 'f')",          # seq 4
        lambda t, ns: f"ALTER TABLE {t} CREATE TAG t1",
        lambda t, ns: f"ALTER TABLE {t} ADD COLUMN extra string",
        lambda t, ns: f"INSERT INTO {t} VALUES (7, 'g', 'x', 'e1')",                          # seq 5
        lambda t, ns: f"ALTER TABLE {t} CREATE BRANCH b1",
        lambda t, ns: f"INSERT INTO {t}.branch_b1 VALUES (8, 'h', 'w', 'e2')",                # seq 6 (b1)
        lambda t, ns: f"UPDATE {t} SET data = 'cc' WHERE id = 3",                             # seq 7
        lambda t, ns: f"INSERT INTO {t} VALUES (9, 'i', 'z', NULL)",                          # seq 8
        # back to seq 7: seq 8 becomes an unreferenced snapshot
        lambda t, ns: f"CALL ice.system.rollback_to_snapshot('{ns}.t', {_snap_at_seq(t, 7, spark)})",
        lambda t, ns: f"DELETE FROM {t} WHERE cat = 'z'",                                    # seq 9 (drops a file)
        lambda t, ns: f"INSERT INTO {t} VALUES (10, 'j', 'v', 'e3')",                         # seq 10
        lambda t, ns: f"DELETE FROM {t} WHERE id = 3",                                       # seq 11
        # replaces partition x: its data files and their delete files leave the table
        lambda t, ns: f"INSERT OVERWRITE {t} PARTITION (cat = 'x') VALUES (11, 'k', 'e4')",  # seq 12
    ]


def build_twins(spark, new_table, cut_after: int | None = None):
    a, b = new_table("a"), new_table("b")
    # same table name in two namespaces, so that 'ns.t' works in procedure calls
    twins = [type(a)(a.catalog, a.namespace, "t", a.warehouse), type(b)(b.catalog, b.namespace + "_b", "t", b.warehouse)]
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {twins[1].catalog}.{twins[1].namespace}")
    cut = None
    for i, step in enumerate(scenario(spark)):
        for tw in twins:
            spark.sql(step(tw.ident, tw.namespace))
        if cut_after is not None and i == cut_after:
            time.sleep(0.05)
            cut = int(time.time() * 1000)
            time.sleep(0.05)
    return twins[0], twins[1], cut


def labels(location: str) -> dict[str, Any]:
    """path -> label for every file the table's metadata reaches (see module docs)."""
    io = FileIO()
    md = Table.load(location).metadata
    out: dict[str, Any] = {}
    data_labels: dict[str, Any] = {}
    deletes = []
    manifests = {}
    for s in md.snapshots:
        out[os.path.normpath(local_path(s.manifest_list))] = ("list", s.sequence_number)
        for m in avro.load_manifest_list(io, s.manifest_list):
            manifests[m.manifest_path] = m
    entries = {p: avro.load_manifest(io, m) for p, m in manifests.items()}
    for p, es in entries.items():
        for e in es:
            f = e.data_file
            if f.content == DATA:
                first_id = (f.lower_bounds or {}).get(1)
                data_labels[os.path.normpath(local_path(f.file_path))] = (
                    "data", e.file_sequence_number, f.partition, f.record_count, first_id)
            else:
                deletes.append(e)
    for e in deletes:
        f = e.data_file
        ref = f.referenced_data_file or (f.lower_bounds or {}).get(PATH_FIELD, b"").decode()
        out[os.path.normpath(local_path(f.file_path))] = (
            "delete", f.content, e.file_sequence_number,
            data_labels.get(os.path.normpath(local_path(ref)), ref) if ref else None)
    out.update(data_labels)
    for p, es in entries.items():
        out[os.path.normpath(local_path(p))] = (
            "manifest", manifests[p].sequence_number, manifests[p].content,
            frozenset((e.status, out.get(os.path.normpath(local_path(e.data_file.file_path)))) for e in es))
    return out


def _is_metadata_json(name: str) -> bool:
    base = name[1:-4] if name.startswith(".") and name.endswith(".crc") else name
    return base.endswith(".metadata.json") or base == "version-hint.text"


def files_left(location: str, known: dict[str, Any]) -> Counter:
    """Labels of the files on disk (metadata.json files and the hint compared separately)."""
    out: Counter = Counter()
    for root, _, names in os.walk(location):
        for n in names:
            p = os.path.normpath(os.path.join(root, n))
            if _is_metadata_json(n):
                continue
            if p in known:
                out[known[p]] += 1
            elif n.startswith(".") and n.endswith(".crc") and os.path.join(root, n[1:-4]) in known:
                out[("crc", known[os.path.join(root, n[1:-4])])] += 1
            else:
                out[("unknown", os.path.relpath(p, location))] += 1
    return out


def retained(location: str) -> tuple:
    md = Table.load(location).metadata
    seqs = sorted(s.sequence_number for s in md.snapshots)
    refs = sorted((n, md.snapshot_by_id(r.snapshot_id).sequence_number, r.type) for n, r in md.refs.items())
    return seqs, refs, sorted(s.schema_id for s in md.schemas), sorted(s.spec_id for s in md.specs)


def read_all(spark, ident: str) -> dict[str, list]:
    spark.sql(f"REFRESH TABLE {ident}")
    out = {}
    for name, q in (("main", f"SELECT id, data, cat FROM {ident} ORDER BY id"),
                    ("b1", f"SELECT id, data, cat FROM {ident}.branch_b1 ORDER BY id"),
                    ("t1", f"SELECT id, data, cat FROM {ident}.tag_t1 ORDER BY id")):
        out[name] = [tuple(r) for r in spark.sql(q).collect()]
    return out


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
