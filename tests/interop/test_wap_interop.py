"""Write-audit-publish against the reference (Spark 3.5 + Iceberg 1.10.2), on twin tables: the
same statements build the same state in two tables; one is published or cherry-picked by Spark
(``publish_changes``, ``cherrypick_snapshot``), the other by icectl (``snapshot publish``,
``snapshot cherry-pick``). Both must end with the same rows (read by Spark and by icectl), the
same relevant summary fields, and the same refusals. Snapshots Spark staged (``spark.wap.id``)
are published by icectl, and snapshots icectl staged (``--wap-id``) by Spark.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any, Callable, Iterator

import pytest

from cli_support import run_icectl
from spark_support import IceTable, sql_rows

EXIT_VALIDATION, EXIT_DUPLICATE = 5, 16
# summary fields that do not name files or snapshots of one twin, nor engines
FIELDS = ("operation", "added-data-files", "deleted-data-files", "added-records", "deleted-records",
          "changed-partition-count", "total-records", "total-data-files", "total-delete-files",
          "published-wap-id", "wap.id", "replace-partitions")


@contextlib.contextmanager
def session_conf(spark: Any, **conf: str) -> Iterator[None]:
    """Set Spark session settings for the block (the session is shared: always unset)."""
    keys = {k.replace("_", "."): v for k, v in conf.items()}
    try:
        for k, v in keys.items():
            spark.conf.set(k, v)
        yield
    finally:
        for k in keys:
            spark.conf.unset(k)


def wap(spark: Any, wap_id: str):
    return session_conf(spark, spark_wap_id=wap_id)


def dynamic(spark: Any):
    return session_conf(spark, spark_sql_sources_partitionOverwriteMode="dynamic")


def twins(new_table: Callable[[str], IceTable], sql: Callable[[str], Any],
          prefix: str = "") -> tuple[IceTable, IceTable]:
    out = []
    for name in ("by_spark", "by_icectl"):
        t = new_table(prefix + name)
        sql(f"CREATE TABLE {t.ident} (id bigint, p string) USING iceberg PARTITIONED BY (p) "
            "TBLPROPERTIES ('format-version'='2', 'write.wap.enabled'='true')")
        sql(f"INSERT INTO {t.ident} VALUES (1, 'a'), (2, 'b'), (3, 'c')")
        out.append(t)
    return out[0], out[1]


def both(tables: tuple[IceTable, ...], sql: Callable[[str], Any], statement: str) -> None:
    for t in tables:
        sql(statement.format(t=t.ident))


def snapshots(spark: Any, t: IceTable) -> list[dict[str, Any]]:
    spark.sql(f"REFRESH TABLE {t.ident}")
    return [r.asDict(recursive=True) for r in spark.sql(
        f"SELECT snapshot_id, parent_id, operation, summary FROM {t.ident}.snapshots "
        "ORDER BY committed_at").collect()]


def staged_id(spark: Any, t: IceTable, wap_id: str) -> int:
    ids = [s["snapshot_id"] for s in snapshots(spark, t) if s["summary"].get("wap.id") == wap_id]
    assert len(ids) == 1, ids
    return ids[0]


def current_id(spark: Any, t: IceTable) -> int:
    spark.sql(f"REFRESH TABLE {t.ident}")
    return sql_rows(spark, f"SELECT snapshot_id FROM {t.ident}.history WHERE is_current_ancestor "
                           "ORDER BY made_current_at DESC LIMIT 1")[0][0]


def head_summary(spark: Any, t: IceTable) -> dict[str, str]:
    head = current_id(spark, t)
    s = next(s for s in snapshots(spark, t) if s["snapshot_id"] == head)
    return {k: v for k, v in {**s["summary"], "operation": s["operation"]}.items() if k in FIELDS}


def spark_rows(spark: Any, t: IceTable) -> list[tuple]:
    spark.sql(f"REFRESH TABLE {t.ident}")
    return sorted(sql_rows(spark, f"SELECT id, p FROM {t.ident}"))


def icectl_rows(t: IceTable) -> list[tuple]:
    r = run_icectl("scan", str(t.location), "--format", "jsonl")
    assert r.returncode == 0, r.stderr
    return sorted((d["id"], d["p"]) for d in map(json.loads, r.stdout.splitlines()))


def proc(t: IceTable) -> str:
    return f"'{t.namespace}.{t.name}'"


def spark_publish(spark: Any, t: IceTable, wap_id: str) -> tuple[int, int]:
    return sql_rows(spark, f"CALL ice.system.publish_changes({proc(t)}, '{wap_id}')")[0]


def icectl_publish(t: IceTable, wap_id: str) -> dict[str, Any]:
    r = run_icectl("snapshot", "publish", str(t.location), wap_id, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def spark_refusal(spark: Any, statement: str) -> str:
    with pytest.raises(Exception) as info:
        spark.sql(statement).collect()
    return str(info.value)


def assert_twins_agree(spark: Any, a: IceTable, b: IceTable) -> None:
    rows = spark_rows(spark, a)
    assert spark_rows(spark, b) == rows and icectl_rows(a) == rows and icectl_rows(b) == rows
    assert head_summary(spark, a) == head_summary(spark, b)
    for t in (a, b):  # both histories, staged snapshots and all, are sound
        checked = run_icectl("check", str(t.location), "--deep")
        assert checked.returncode == 0, checked.stdout + checked.stderr


def test_publish_fast_forward_and_duplicate(spark, sql, new_table) -> None:
    a, b = twins(new_table, sql)
    with wap(spark, "w1"):
        both((a, b), sql, "INSERT INTO {t} VALUES (10, 'a'), (11, 'd')")
    for t in (a, b):  # staged: main unchanged, the snapshot on top of it
        assert spark_rows(spark, t) == [(1, "a"), (2, "b"), (3, "c")]
        assert next(s for s in snapshots(spark, t) if s["snapshot_id"] == staged_id(spark, t, "w1"))[
            "parent_id"] == current_id(spark, t)
    staged_a, staged_b = staged_id(spark, a, "w1"), staged_id(spark, b, "w1")
    assert spark_publish(spark, a, "w1") == (staged_a, staged_a)  # fast-forward: the staged one
    out = icectl_publish(b, "w1")
    assert (out["source-snapshot-id"], out["snapshot-id"], out["created-snapshot"]) == (staged_b, staged_b, False)
    assert current_id(spark, b) == staged_b
    assert_twins_agree(spark, a, b)
    # publishing again: Java's DuplicateWAPCommitException, icectl's exit 16; nothing changes
    msg = spark_refusal(spark, f"CALL ice.system.publish_changes({proc(a)}, 'w1')")
    assert "Duplicate request to cherry pick wap id that was published already: w1" in msg
    r = run_icectl("snapshot", "publish", str(b.location), "w1")
    assert r.returncode == EXIT_DUPLICATE and r.stderr.count("\n") == 1, r.stderr
    assert current_id(spark, b) == staged_b
    # an unknown WAP id
    assert "Cannot apply unknown WAP ID" in spark_refusal(spark, f"CALL ice.system.publish_changes({proc(a)}, 'nope')")
    assert run_icectl("snapshot", "publish", str(b.location), "nope").returncode == 3


def test_publish_after_main_moved_cherry_picks_the_append(spark, sql, new_table) -> None:
    a, b = twins(new_table, sql)
    with wap(spark, "w2"):
        both((a, b), sql, "INSERT INTO {t} VALUES (10, 'a'), (11, 'd')")
    both((a, b), sql, "INSERT INTO {t} VALUES (20, 'b')")  # main moves on
    staged_a, staged_b = staged_id(spark, a, "w2"), staged_id(spark, b, "w2")
    src, cur = spark_publish(spark, a, "w2")
    assert src == staged_a and cur != staged_a
    out = icectl_publish(b, "w2")
    assert out["source-snapshot-id"] == staged_b and out["created-snapshot"] is True
    assert_twins_agree(spark, a, b)
    summary = head_summary(spark, b)
    assert summary["published-wap-id"] == "w2" and "wap.id" not in summary
    assert summary["operation"] == "append" and summary["total-records"] == "6"
    for t, staged in ((a, staged_a), (b, staged_b)):
        head = next(s for s in snapshots(spark, t) if s["snapshot_id"] == current_id(spark, t))
        assert head["summary"]["source-snapshot-id"] == str(staged)
    # picked once: a second publish and a cherry-pick by id are refused on both
    msg = spark_refusal(spark, f"CALL ice.system.publish_changes({proc(a)}, 'w2')")
    assert "Duplicate request to cherry pick wap id that was published already: w2" in msg
    assert run_icectl("snapshot", "publish", str(b.location), "w2").returncode == EXIT_DUPLICATE
    msg = spark_refusal(spark, f"CALL ice.system.cherrypick_snapshot({proc(a)}, {staged_a})")
    assert "Duplicate request to cherry pick wap id that was published already: w2" in msg
    assert run_icectl("snapshot", "cherry-pick", str(b.location), str(staged_b)).returncode == EXIT_DUPLICATE


def _stage_dynamic_overwrite(spark: Any, sql: Callable[[str], Any], tables: tuple[IceTable, ...],
                             wap_id: str) -> None:
    with wap(spark, wap_id), dynamic(spark):
        both(tables, sql, "INSERT OVERWRITE {t} VALUES (100, 'a'), (101, 'a'), (102, 'd')")


def test_cherry_pick_a_staged_dynamic_overwrite(spark, sql, new_table) -> None:
    a, b = twins(new_table, sql)
    _stage_dynamic_overwrite(spark, sql, (a, b), "w3")
    staged = {t.name: staged_id(spark, t, "w3") for t in (a, b)}
    for t in (a, b):
        s = next(s for s in snapshots(spark, t) if s["snapshot_id"] == staged[t.name])
        assert s["operation"] == "overwrite" and s["summary"]["replace-partitions"] == "true"
    both((a, b), sql, "INSERT INTO {t} VALUES (30, 'c')")  # another partition: no conflict
    sql(f"CALL ice.system.cherrypick_snapshot({proc(a)}, {staged['by_spark']})")
    r = run_icectl("snapshot", "cherry-pick", str(b.location), str(staged["by_icectl"]), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["created-snapshot"] is True
    assert_twins_agree(spark, a, b)
    assert spark_rows(spark, b) == [(2, "b"), (3, "c"), (30, "c"), (100, "a"), (101, "a"), (102, "d")]
    summary = head_summary(spark, b)
    assert summary["operation"] == "overwrite" and summary["published-wap-id"] == "w3"
    assert summary["deleted-data-files"] == "1" and summary["added-data-files"] == "2"
    assert "replace-partitions" not in summary  # the pick itself is not a ReplacePartitions


def test_cherry_pick_refusals_of_dynamic_overwrites(spark, sql, new_table) -> None:
    a, b = twins(new_table, sql)
    _stage_dynamic_overwrite(spark, sql, (a, b), "w4")
    both((a, b), sql, "INSERT INTO {t} VALUES (40, 'a')")  # a partition the overwrite replaces
    msg = spark_refusal(spark, f"CALL ice.system.publish_changes({proc(a)}, 'w4')")
    assert "Cannot cherry-pick replace partitions with changed partition" in msg
    before = current_id(spark, b)
    r = run_icectl("snapshot", "publish", str(b.location), "w4")
    assert r.returncode == EXIT_VALIDATION and "changed a partition it replaces" in r.stderr, r.stderr
    assert current_id(spark, b) == before
    # a file the overwrite removes is gone from main: a metadata-only DELETE dropped it
    c, d = twins(new_table, sql, "gone_")
    _stage_dynamic_overwrite(spark, sql, (c, d), "w10")
    both((c, d), sql, "DELETE FROM {t} WHERE p = 'a'")
    msg = spark_refusal(spark, f"CALL ice.system.publish_changes({proc(c)}, 'w10')")
    assert "Missing required files to delete" in msg
    r = run_icectl("snapshot", "publish", str(d.location), "w10")
    assert r.returncode == EXIT_VALIDATION and "no longer in the table" in r.stderr, r.stderr
    assert_twins_agree(spark, c, d)
    # a staged copy-on-write DELETE (an overwrite that is no dynamic one) only fast-forwards
    both((a, b), sql, "INSERT INTO {t} VALUES (41, 'c'), (43, 'c')")  # one file: DELETE rewrites it
    with wap(spark, "w9"):
        both((a, b), sql, "DELETE FROM {t} WHERE id = 41")
    both((a, b), sql, "INSERT INTO {t} VALUES (42, 'b')")  # main moves on
    msg = spark_refusal(spark, f"CALL ice.system.publish_changes({proc(a)}, 'w9')")
    assert "not append, dynamic overwrite, or fast-forward" in msg
    r = run_icectl("snapshot", "publish", str(b.location), "w9")
    assert r.returncode == EXIT_VALIDATION and "not an append, a dynamic partition overwrite or a fast-forward" \
        in r.stderr, r.stderr
    assert_twins_agree(spark, a, b)


def test_spark_publishes_what_icectl_staged(spark, sql, new_table, tmp_path) -> None:
    a, b = twins(new_table, sql)
    (tmp_path / "rows.csv").write_text("id,p\n10,a\n11,d\n")
    for t in (a, b):
        r = run_icectl("write", str(t.location), str(tmp_path / "rows.csv"), "--wap-id", "w5")
        assert r.returncode == 0, r.stderr
        assert spark_rows(spark, t) == [(1, "a"), (2, "b"), (3, "c")]  # Spark sees main only
    both((a, b), sql, "INSERT INTO {t} VALUES (20, 'b')")
    spark_publish(spark, a, "w5")
    icectl_publish(b, "w5")
    assert_twins_agree(spark, a, b)
    assert head_summary(spark, a)["published-wap-id"] == "w5"
    # icectl-staged deletes: copy-on-write and merge-on-read, published by Spark
    r = run_icectl("delete", str(a.location), "--filter", "id = 10", "--wap-id", "w6")
    assert r.returncode == 0, r.stderr
    assert (10, "a") in spark_rows(spark, a)
    spark_publish(spark, a, "w6")  # its parent is main's head: a fast-forward
    assert (10, "a") not in spark_rows(spark, a) and (10, "a") not in icectl_rows(a)


def test_what_spark_stages_and_what_it_does_not(spark, sql, new_table) -> None:
    """Spark stages the writes of its data writers; a DELETE of whole files goes to main at
    once (its metadata-only path ignores spark.wap.id). icectl stages both (README)."""
    a, b = twins(new_table, sql)
    # without write.wap.enabled Spark ignores spark.wap.id and writes to main; icectl refuses
    sql(f"ALTER TABLE {b.ident} SET TBLPROPERTIES ('write.wap.enabled'='false')")
    head = current_id(spark, b)
    with wap(spark, "w0"):
        sql(f"INSERT INTO {b.ident} VALUES (5, 'e')")
    assert current_id(spark, b) != head and all(s["summary"].get("wap.id") is None for s in snapshots(spark, b))
    r = run_icectl("delete", str(b.location), "--filter", "id = 5", "--wap-id", "w0")
    assert r.returncode == EXIT_VALIDATION and "write.wap.enabled" in r.stderr, r.stderr
    head = current_id(spark, a)
    with wap(spark, "w7"):
        sql(f"DELETE FROM {a.ident} WHERE p = 'b'")
    assert current_id(spark, a) != head  # committed to main, not staged
    assert all(s["summary"].get("wap.id") != "w7" for s in snapshots(spark, a))
    with wap(spark, "w8"):  # rewriting a file (copy-on-write): staged
        sql(f"INSERT INTO {a.ident} VALUES (4, 'c')")
    staged = staged_id(spark, a, "w8")
    assert current_id(spark, a) != staged
