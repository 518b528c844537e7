"""`icectl health --json` against Spark's metadata tables, on tables Spark wrote.

Two partitioned merge-on-read tables, built once per module by Spark 3.5 + Iceberg 1.10: v2
(position delete files) and v3 (deletion vectors), each with several inserts, deletes, an
update, a tag and a branch. Every count and byte total health reports must equal what Spark's
``files``, ``manifests``, ``partitions``, ``snapshots``, ``refs``, ``all_files`` and
``position_deletes`` tables say. A third table checks the expiry figures against what Spark's
``expire_snapshots`` procedure then deletes.
"""

from __future__ import annotations

import itertools
import json
from typing import Any, Callable

import pytest

pytest.register_assert_rewrite("cli_support")

from cli_support import json_value, rows_as_dicts, run_icectl  # noqa: E402
from spark_support import CATALOG, IceTable  # noqa: E402

pytestmark = pytest.mark.interop

_namespaces = itertools.count(1)


def _build(sql: Callable[[str], Any], t: IceTable, fv: int) -> None:
    sql(f"CREATE TABLE {t.ident} (id bigint, cat string, v double) USING iceberg "
        f"PARTITIONED BY (cat, bucket(2, id)) TBLPROPERTIES ('format-version'='{fv}', "
        "'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read')")
    for k in range(4):
        sql(f"INSERT INTO {t.ident} SELECT id, concat('c', CAST(id % 3 AS STRING)), id / 4.0 "
            f"FROM range({k * 50}, {k * 50 + 50})")
    sql(f"DELETE FROM {t.ident} WHERE id % 7 = 0")
    sql(f"ALTER TABLE {t.ident} CREATE TAG first_deletes")
    sql(f"DELETE FROM {t.ident} WHERE id % 11 = 0")
    sql(f"UPDATE {t.ident} SET v = -1 WHERE id % 13 = 0")
    sql(f"ALTER TABLE {t.ident} CREATE BRANCH audit")
    sql(f"INSERT INTO {t.ident} VALUES (1000, 'c9', 1.0)")


@pytest.fixture(scope="module")
def tables(sql: Any, warehouse: Any, spark: Any) -> dict[int, IceTable]:
    ns = f"health_interop_{next(_namespaces)}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{ns}")
    out = {}
    for fv in (2, 3):
        t = IceTable(CATALOG, ns, f"t_v{fv}", warehouse)
        _build(sql, t, fv)
        out[fv] = t
    return out


def _health(location: Any, *extra: str) -> dict[str, Any]:
    r = run_icectl("health", str(location), "--json", *extra)
    assert r.returncode in (0, 14), r.stderr
    doc = json.loads(r.stdout)
    assert (r.returncode == 14) == (doc["status"] == "maintenance-due")
    return {d["name"]: d["figures"] for d in doc["dimensions"]}


def _one(spark: Any, query: str) -> tuple:
    return tuple(spark.sql(query).collect()[0])


@pytest.mark.parametrize("fv", [2, 3])
def test_counts_and_bytes_equal_sparks_metadata_tables(tables: dict[int, IceTable], spark: Any, fv: int) -> None:
    t = tables[fv]
    h = _health(t.location)
    files, deletes, manifests, snapshots = h["data-files"], h["deletes"], h["manifests"], h["snapshots"]
    n, size, records = _one(spark, f"SELECT count(*), sum(file_size_in_bytes), sum(record_count) "
                                   f"FROM {t.ident}.files WHERE content = 0")
    assert (files["data-files"], files["data-bytes"], files["records"]) == (n, size, records)
    n, size, records = _one(spark, f"SELECT count(*), coalesce(sum(file_size_in_bytes), 0), "
                                   f"coalesce(sum(record_count), 0) FROM {t.ident}.files WHERE content = 1")
    assert n > 0
    assert (deletes["delete-files"], deletes["delete-bytes"], deletes["position-delete-records"]) == (n, size, records)
    (dvs,) = _one(spark, f"SELECT count(*) FROM {t.ident}.files WHERE content = 1 AND file_format = 'PUFFIN'")
    assert deletes["deletion-vectors"] == dvs and (dvs > 0) == (fv == 3)
    (positions,) = _one(spark, f"SELECT count(*) FROM {t.ident}.position_deletes")
    assert deletes["deleted-rows"] == positions
    assert deletes["dangling-delete-files"] == 0  # Spark's deletes all apply to live files

    m = rows_as_dicts(spark, f"SELECT content, length, added_data_files_count, existing_data_files_count, "
                             f"deleted_data_files_count, added_delete_files_count, existing_delete_files_count, "
                             f"deleted_delete_files_count FROM {t.ident}.manifests")
    assert manifests["manifests"] == len(m)
    assert manifests["delete-manifests"] == sum(1 for r in m if r["content"] == 1) > 0
    assert manifests["manifest-bytes"] == sum(r["length"] for r in m)
    assert manifests["manifest-sizes"] == sorted(r["length"] for r in m)
    assert manifests["added-files"] == sum(r["added_data_files_count"] + r["added_delete_files_count"] for r in m)
    assert manifests["existing-files"] == sum(r["existing_data_files_count"] + r["existing_delete_files_count"]
                                              for r in m)
    assert manifests["deleted-files"] == sum(r["deleted_data_files_count"] + r["deleted_delete_files_count"]
                                             for r in m)

    parts = rows_as_dicts(spark, f"SELECT partition, record_count, file_count, total_data_file_size_in_bytes, "
                                 f"position_delete_record_count, position_delete_file_count "
                                 f"FROM {t.ident}.partitions")
    ref = {json.dumps({k: json_value(v) for k, v in p["partition"].items()}, sort_keys=True):
           (p["record_count"], p["file_count"], p["total_data_file_size_in_bytes"],
            p["position_delete_record_count"], p["position_delete_file_count"]) for p in parts}
    mine = {json.dumps(p["partition"], sort_keys=True):
            (p["records"], p["data-files"], p["data-bytes"], p["position-delete-records"],
             p["position-delete-files"]) for p in files["partitions"]}
    assert mine == ref
    assert h["partitions"]["partitions"] == len(parts)

    (snaps,) = _one(spark, f"SELECT count(*) FROM {t.ident}.snapshots")
    (refs,) = _one(spark, f"SELECT count(*) FROM {t.ident}.refs")
    assert (snapshots["snapshots"], snapshots["refs"], snapshots["tags"]) == (snaps, refs, 1)
    n, size = _one(spark, f"SELECT count(*), sum(file_size_in_bytes) FROM {t.ident}.all_files")
    assert (snapshots["all-files"], snapshots["all-files-bytes"]) == (n, size)
    (every,) = _one(spark, f"SELECT count(DISTINCT path) FROM {t.ident}.all_manifests")
    assert snapshots["all-manifests"] == every


def test_expiry_figures_equal_what_sparks_expiry_deletes(sql: Any, spark: Any, warehouse: Any) -> None:
    ns = f"health_expire_{next(_namespaces)}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{ns}")
    t = IceTable(CATALOG, ns, "t", warehouse)
    _build(sql, t, 2)
    sql(f"ALTER TABLE {t.ident} DROP BRANCH audit")
    sql(f"ALTER TABLE {t.ident} DROP TAG first_deletes")
    sql(f"CALL {CATALOG}.system.rewrite_data_files(table => '{t.namespace}.{t.name}', "
        "options => map('min-input-files', '2', 'delete-file-threshold', '1'))")
    sql(f"ALTER TABLE {t.ident} SET TBLPROPERTIES ('history.expire.max-snapshot-age-ms' = '1')")
    s = _health(t.location)["snapshots"]
    assert s["expirable-snapshots"] == s["snapshots"] - 1 > 0
    (out,) = spark.sql(f"CALL {CATALOG}.system.expire_snapshots(table => '{t.namespace}.{t.name}', "
                       "older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => 1)").collect()
    deleted_files = (out["deleted_data_files_count"] + out["deleted_position_delete_files_count"]
                     + out["deleted_equality_delete_files_count"])
    assert s["files-held-by-expirable-snapshots"] == deleted_files > 0
    assert s["manifests-held-by-expirable-snapshots"] == out["deleted_manifest_files_count"]
    after = _health(t.location)["snapshots"]
    assert after["snapshots"] == 1
    assert after["reachable-file-bytes"] == s["reachable-file-bytes"] - s["file-bytes-held-by-expirable-snapshots"]
    assert after["all-manifests"] == s["all-manifests"] - s["manifests-held-by-expirable-snapshots"]
