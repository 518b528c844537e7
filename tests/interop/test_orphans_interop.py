"""`icectl orphans --delete` against Spark's `CALL system.remove_orphan_files` on twin tables.

Both twins get the history of test_expire_interop (expire_support.py), then the same stray files
(old and young, hidden names, a hidden directory, a temp metadata file, files outside data/ and
metadata/) and every file is aged past the 3-day default. Spark removes one twin's orphans,
icectl the other's; the orphans found (relative to each table) and the files left are the same,
and Spark still reads the icectl-cleaned table.
"""

from __future__ import annotations

import os
import time

from cli_support import icectl_json
from expire_support import build_twins, files_left, labels, read_all

OLD = time.time() - 5 * 86400

STRAYS_OLD = [
    "data/stray.parquet", "data/cat=x/stray.parquet", "data/.hidden.parquet", "data/_tmp/part.parquet",
    "metadata/stray-m0.avro", "metadata/8f14e45f-ceea-467a-9af0-6f7c1e5f0a11.metadata.json",
    "other/notes.txt",
]
STRAYS_YOUNG = ["data/cat=y/young.parquet"]


def plant(location: str) -> None:
    for root, _, names in os.walk(location):
        for n in names:
            os.utime(os.path.join(root, n), (OLD, OLD))
    for rel in STRAYS_OLD + STRAYS_YOUNG:
        p = os.path.join(location, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(b"stray")
        if rel in STRAYS_OLD:
            os.utime(p, (OLD, OLD))


def test_orphans_match_spark_procedure(spark, new_table):
    a, b, _ = build_twins(spark, new_table)
    la, lb = str(a.location), str(b.location)
    labels_a, labels_b = labels(la), labels(lb)
    plant(la)
    plant(lb)

    rows = spark.sql(f"CALL ice.system.remove_orphan_files(table => '{a.namespace}.t')").collect()
    spark_orphans = sorted(os.path.relpath(r[0].split(":", 1)[-1] if r[0].startswith("file:") else r[0], la)
                           for r in rows)
    dry = icectl_json("orphans", lb)
    out = icectl_json("orphans", lb, "--delete")
    ours = sorted(os.path.relpath(p, lb) for p in out["orphan-files"])
    assert sorted(os.path.relpath(p, lb) for p in dry["orphan-files"]) == ours
    assert ours == spark_orphans
    assert set(ours) >= {"data/stray.parquet", "data/cat=x/stray.parquet", "metadata/stray-m0.avro"}
    left_a, left_b = files_left(la, labels_a), files_left(lb, labels_b)
    assert left_a == left_b
    assert read_all(spark, b.ident) == read_all(spark, a.ident)
