"""Twin tables with one history, and what their files are, for the expiry and orphan-file tests
against Spark's procedures (test_expire_interop.py, test_orphans_interop.py).

:func:`build_twins` gives two tables the same SQL history (appends, a static overwrite,
merge-on-read deletes and an update, a schema change, a tag, a branch with its own commit, a
rollback, a whole-file delete), statement by statement in turn so that their snapshot times
interleave. File names hold random UUIDs, so :func:`labels` names every file by what it is in the
table's metadata (a data file by its adding sequence number, partition and first id; a delete file
by the data file it deletes; a manifest by its entries; a manifest list by its snapshot), and
:func:`files_left` counts the labels of the files on disk: twins compare by these counts.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from typing import Any, Callable

from icectl.io.manifest import records as avro
from icectl.io.storage.files import FileIO, local_path
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


def read_all(spark, ident: str) -> dict[str, list]:
    spark.sql(f"REFRESH TABLE {ident}")
    out = {}
    for name, q in (("main", f"SELECT id, data, cat FROM {ident} ORDER BY id"),
                    ("b1", f"SELECT id, data, cat FROM {ident}.branch_b1 ORDER BY id"),
                    ("t1", f"SELECT id, data, cat FROM {ident}.tag_t1 ORDER BY id")):
        out[name] = [tuple(r) for r in spark.sql(q).collect()]
    return out
