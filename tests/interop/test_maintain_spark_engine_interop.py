"""`expire`, `orphans` and `rewrite-manifests` with `--engine spark` on the shared test session
(local mode), three ways on the same history:

* Spark's procedure (`expire_snapshots`, `remove_orphan_files`, `rewrite_manifests`) on one twin;
* icectl with `--engine spark` on the other twin: the same snapshots and refs left, the same
  files left (labelled by what they are, expire_support.py), the same counts, and Spark reads it
  alike; its reads, listing and deletions ran as Spark jobs (the status tracker has them);
* icectl with the local engine on that twin put back as it was (kept aside before, restored at
  the same location): the same files left and the same metadata as with `--engine spark`.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from typing import Any

from cli_support import icectl_json, run_icectl
from expire_support import build_twins, files_left, labels, read_all

from icectl.engines.spark import SparkEngine
from icectl.io.manifest import records as avro
from icectl.ops.maintain.expire import KINDS, expire_snapshots
from icectl.table.table import Table

SPARK_COUNTS = tuple(f"deleted_{kind}_count" for kind in KINDS)  # the procedure's column names
OLD = time.time() - 5 * 86400


def retained(location: str) -> tuple:
    """Snapshots (by sequence number: ids are random) and refs left."""
    md = Table.load(location).metadata
    seqs = sorted(s.sequence_number for s in md.snapshots)
    refs = sorted((n, md.snapshot_by_id(r.snapshot_id).sequence_number, r.type) for n, r in md.refs.items())
    return seqs, refs


def plant(location: str) -> None:
    """Every file aged 5 days, then strays: old ones (hidden names, deep directories, outside
    data/ and metadata/) and a young one."""
    for root, _, names in os.walk(location):
        for n in names:
            os.utime(os.path.join(root, n), (OLD, OLD))
    old = ["data/stray.parquet", "data/cat=x/stray.parquet", "data/.hidden.parquet", "data/_tmp/part.parquet",
           "metadata/stray-m0.avro", "other/notes.txt", "data/cat=x/l2/l3/l4/deep.parquet"]
    for rel in old + ["data/cat=y/young.parquet"]:
        p = os.path.join(location, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(b"stray")
        if rel in old:
            os.utime(p, (OLD, OLD))


def many_manifests(spark, t) -> None:
    """Five inserts into three partitions: five manifests, each holding every partition."""
    spark.sql(f"""CREATE TABLE {t.ident} (id bigint, cat string) USING iceberg PARTITIONED BY (cat)
                  TBLPROPERTIES ('format-version'='2')""")
    for lo in range(0, 50, 10):
        spark.sql(f"""INSERT INTO {t.ident} SELECT id, CASE WHEN id % 3 = 0 THEN 'x'
                      WHEN id % 3 = 1 THEN 'y' ELSE 'z' END FROM range({lo}, {lo + 10})""")


def manifest_partitions(t) -> list[list[tuple]]:
    table = Table.load(str(t.location))
    snap = table.metadata.current_snapshot()
    return [[e.data_file.partition for e in avro.load_manifest(table.io, m) if e.is_live]
            for m in avro.load_manifest_list(table.io, snap.manifest_list, table.metadata.format_version)]


def metadata_view(loc: str) -> dict:
    t = Table.load(loc)
    with open(t.metadata_location.removeprefix("file:"), encoding="utf-8") as f:
        md = json.load(f)
    for k in ("metadata-log", "last-updated-ms"):
        md.pop(k, None)
    return md


def files_on_disk(loc: str) -> list[str]:
    return sorted(os.path.relpath(os.path.join(r, n), loc) for r, _, ns in os.walk(loc) for n in ns
                  if not n.endswith(".metadata.json") and not n.endswith(".metadata.json.crc"))


def put_back(loc: str, aside: str) -> None:
    shutil.rmtree(loc)
    shutil.copytree(aside, loc, symlinks=True)


def jobs_of(spark: Any, engine: SparkEngine) -> int:
    st = spark.sparkContext.statusTracker()
    return sum(1 for j in st.getJobIdsForGroup(engine.last_job_group) if st.getJobInfo(j).status == "SUCCEEDED")


def test_expire_on_spark_matches_the_procedure_and_the_local_engine(spark, new_table, tmp_path):
    a, b, _ = build_twins(spark, new_table)
    la, lb = str(a.location), str(b.location)
    labels_a, labels_b = labels(la), labels(lb)
    aside = str(tmp_path / "aside")
    shutil.copytree(lb, aside, symlinks=True)
    time.sleep(0.05)
    cutoff = int(time.time() * 1000)
    row = spark.sql(f"CALL ice.system.expire_snapshots(table => '{a.namespace}.t', "
                    f"older_than => TIMESTAMP '{_utc(cutoff)}', retain_last => 1)").collect()[0].asDict()
    engine = SparkEngine(session=spark)
    ours = expire_snapshots(Table.load(lb), older_than_ms=cutoff, retain_last=1, engine=engine, now=cutoff + 1)
    assert jobs_of(spark, engine) >= 1  # the last deletion group ran as a Spark job
    out = ours.to_json()
    for key in SPARK_COUNTS:
        assert out[key] == row[key], key
    assert row["deleted_data_files_count"] > 0 and row["deleted_manifest_lists_count"] > 0
    assert retained(la) == retained(lb)
    assert files_left(la, labels_a) == files_left(lb, labels_b)
    assert read_all(spark, b.ident) == read_all(spark, a.ident)
    on_spark = (files_on_disk(lb), metadata_view(lb))

    put_back(lb, aside)
    local = expire_snapshots(Table.load(lb), older_than_ms=cutoff, retain_last=1, now=cutoff + 1)
    assert (files_on_disk(lb), metadata_view(lb)) == on_spark
    assert local.files == ours.files


def test_orphans_on_spark_match_the_procedure_and_the_local_engine(spark, new_table, tmp_path):
    a, b, _ = build_twins(spark, new_table)
    la, lb = str(a.location), str(b.location)
    labels_a, labels_b = labels(la), labels(lb)
    plant(la)  # a stray deeper than the levels icectl lists itself: a Spark task walks it
    plant(lb)
    aside = str(tmp_path / "aside")
    shutil.copytree(lb, aside, symlinks=True)

    rows = spark.sql(f"CALL ice.system.remove_orphan_files(table => '{a.namespace}.t')").collect()
    theirs = sorted(os.path.relpath(r[0].removeprefix("file:"), la) for r in rows)
    # through the command line, in this process: the engine takes the test's active session
    cut = str(int((time.time() - 3 * 86400) * 1000))  # the procedure's default, 3 days
    dry = icectl_json("orphans", lb, "--older-than", cut, "--engine", "spark")
    out = icectl_json("orphans", lb, "--older-than", cut, "--delete", "--engine", "spark")
    assert spark.range(3).count() == 3  # the session the command used is still running
    ours = sorted(os.path.relpath(p, lb) for p in out["orphan-files"])
    assert sorted(os.path.relpath(p, lb) for p in dry["orphan-files"]) == ours == theirs
    assert "data/cat=x/l2/l3/l4/deep.parquet" in ours
    assert files_left(la, labels_a) == files_left(lb, labels_b)
    assert read_all(spark, b.ident) == read_all(spark, a.ident)
    on_spark = files_on_disk(lb)

    put_back(lb, aside)
    local = icectl_json("orphans", lb, "--older-than", cut, "--delete")
    assert local == out
    assert files_on_disk(lb) == on_spark


def test_rewrite_manifests_on_spark_matches_the_procedure_and_the_local_engine(spark, new_table, tmp_path):
    theirs, mine = new_table("theirs"), new_table("mine")
    many_manifests(spark, theirs)
    many_manifests(spark, mine)
    aside = str(tmp_path / "aside")
    shutil.copytree(str(mine.location), aside, symlinks=True)
    spark.sql(f"CALL ice.system.rewrite_manifests('{theirs.namespace}.{theirs.name}')")
    p = run_icectl("rewrite-manifests", mine.location, "--engine", "spark", "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["committed"] and r["rewritten-manifests-count"] == 5 and r["entries-rewritten"] == 15
    assert manifest_partitions(mine) == manifest_partitions(theirs)
    keys = ("manifests-created", "manifests-replaced", "manifests-kept", "entries-processed", "total-data-files")

    def summary(loc: str) -> dict:
        s = Table.load(loc).metadata.current_snapshot().summary
        return {k: s.get(k) for k in keys}

    spark.sql(f"REFRESH TABLE {theirs.ident}")
    their_summary = spark.sql(f"SELECT summary FROM {theirs.ident}.snapshots ORDER BY committed_at DESC LIMIT 1"
                              ).collect()[0][0]
    assert summary(str(mine.location)) == {k: their_summary.get(k) for k in keys}
    select = "SELECT id, cat FROM {} ORDER BY id"
    spark.sql(f"REFRESH TABLE {mine.ident}")
    assert spark.sql(select.format(mine.ident)).collect() == spark.sql(select.format(theirs.ident)).collect()
    on_spark = (manifest_partitions(mine), summary(str(mine.location)))

    put_back(str(mine.location), aside)
    p = run_icectl("rewrite-manifests", mine.location, "--json")
    assert p.returncode == 0, p.stderr
    assert (manifest_partitions(mine), summary(str(mine.location))) == on_spark


def _utc(ms: int) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
