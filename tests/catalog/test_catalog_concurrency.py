"""Many writers on one SQL catalog table at once: Spark (JdbcCatalog), pyiceberg (SqlCatalog) and
three icectl processes (appends, deletes, compaction), on sqlite and on PostgreSQL. Whatever the
interleaving, every acknowledged commit is in the table, nothing unacknowledged is, the rows are
exact and `check --deep` is clean. (No timing is assumed: each writer just runs its loop.)"""

from __future__ import annotations

import csv
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from clirun import icectl, icectl_process

pytestmark = pytest.mark.interop

SEED = range(0, 60)


def _icectl_appends(opts, tmp_path, start, count):
    acked, failed = [], []
    for i in range(count):
        ids = list(range(start + 10 * i, start + 10 * i + 10))
        f = tmp_path / f"app-{start}-{i}.csv"
        f.write_text("id,w\n" + "".join(f"{k},icectl\n" for k in ids))
        r = icectl_process("write", "db.t", str(f), *opts, timeout=300)
        (acked if r.returncode == 0 else failed).append((ids, r.returncode, r.stderr.strip()[-200:]))
    return "icectl-append", acked, failed


def _icectl_deletes(opts, targets):
    acked, failed = [], []
    for k in targets:
        r = icectl_process("delete", "db.t", "--filter", f"id = {k}", *opts, timeout=300)
        (acked if r.returncode == 0 else failed).append(([k], r.returncode, r.stderr.strip()[-200:]))
    return "icectl-delete", acked, failed


def _icectl_compacts(opts, count):
    acked, failed = [], []
    for _ in range(count):
        r = icectl_process("compact", "db.t", "--min-input-files", "2", *opts, timeout=300)
        (acked if r.returncode == 0 else failed).append(([], r.returncode, r.stderr.strip()[-200:]))
    return "icectl-compact", acked, failed


def _spark_inserts(spark, table, start, count):
    acked, failed = [], []
    for i in range(count):
        ids = list(range(start + 10 * i, start + 10 * i + 10))
        try:
            spark.sql(f"INSERT INTO {table} VALUES " + ", ".join(f"({k}, 'spark')" for k in ids))
            acked.append((ids, 0, ""))
        except Exception as e:  # noqa: BLE001 - a commit Spark gave up on is not acknowledged
            failed.append((ids, 1, str(e).splitlines()[0][:200]))
    return "spark-insert", acked, failed


def _pyiceberg_appends(py, start, count):
    import pyarrow as pa

    acked, failed = [], []
    for i in range(count):
        ids = list(range(start + 10 * i, start + 10 * i + 10))
        try:
            py.load_table("db.t").append(pa.table({"id": pa.array(ids, pa.int64()), "w": ["pyiceberg"] * 10}))
            acked.append((ids, 0, ""))
        except Exception as e:  # noqa: BLE001 - CommitFailedException: not acknowledged
            failed.append((ids, 1, str(e).splitlines()[0][:200]))
    return "pyiceberg-append", acked, failed


def test_concurrent_writers_lose_nothing_acknowledged(spark, shared, tmp_path):
    from pyiceberg.catalog.sql import SqlCatalog as PySqlCatalog

    db, cat, opts, warehouse = shared
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {cat}.db")
    spark.sql(f"CREATE TABLE {cat}.db.t (id bigint, w string) USING iceberg TBLPROPERTIES ('format-version'='2', "
              "'commit.retry.num-retries'='30', 'commit.retry.min-wait-ms'='20', 'commit.retry.max-wait-ms'='500')")
    spark.sql(f"INSERT INTO {cat}.db.t SELECT id, 'seed' FROM range(0, {len(SEED)})")
    py = PySqlCatalog(cat, uri=db.sqlalchemy_uri, warehouse=f"file://{warehouse}")
    began = time.monotonic()
    with ThreadPoolExecutor(6) as pool:
        jobs = [pool.submit(_icectl_appends, opts, tmp_path, 1000, 4),
                pool.submit(_icectl_appends, opts, tmp_path, 2000, 4),
                pool.submit(_icectl_deletes, opts, [3, 7, 11, 19]),
                pool.submit(_icectl_compacts, opts, 5),
                pool.submit(_spark_inserts, spark, f"{cat}.db.t", 5000, 4),
                pool.submit(_pyiceberg_appends, py, 8000, 4)]
        results = [j.result() for j in jobs]
    elapsed = time.monotonic() - began
    expected = {k: "seed" for k in SEED}
    for who, acked, _failed in results:
        for ids, _, _ in acked:
            for k in ids:
                if who == "icectl-delete":
                    expected.pop(k)
                else:
                    expected[k] = who.split("-")[0]
    r = icectl("scan", "db.t", *opts, "--format", "csv")
    assert r.exit_code == 0, r.output
    rows = list(csv.reader(r.stdout.strip().splitlines()))[1:]
    got = {int(k): w for k, w in rows}
    assert len(rows) == len(got)  # no duplicates
    assert got == expected, [(who, f) for who, _, f in results if f]
    assert icectl("check", "db.t", "--deep", *opts).exit_code == 0
    spark.sql(f"REFRESH TABLE {cat}.db.t")
    assert spark.sql(f"SELECT count(*) FROM {cat}.db.t").collect()[0][0] == len(expected)
    figures = ", ".join(f"{who} {len(a)} acked / {len(f)} failed{' ' + str(sorted({c for _, c, _ in f})) if f else ''}"
                        for who, a, f in results)
    print(f"\n[{db.kind}] {elapsed:.1f} s, {len(expected)} rows: {figures}")
    print([f for _, _, f in results if f])
    # the icectl writers fail only by losing every retry (exit 6), never by corruption
    for who, _, failed in results:
        if who.startswith("icectl"):
            assert all(code == 6 for _, code, _ in failed), failed
