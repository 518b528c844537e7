"""Row-group skipping on Spark-written files: `icectl scan` skips row groups of files written by
Spark (parquet-mr statistics: strings, decimals, timestamps, dates, doubles with NaN and -0.0)
and still returns exactly Spark's rows, positions (``_pos``) and merge-on-read deletes included.
"""

from __future__ import annotations

import glob
import json

import pyarrow.parquet as pq

from cli_support import run_icectl
from icectl.scan.reader import open_scan
from icectl.scan.row_groups import row_groups_to_read
from icectl.table.table import Table

# (icectl filter, Spark's WHERE for the same rows)
SPARK_FILTERS = [
    ("id >= 1200 and id < 1260", None),
    ("s = 's0777'", None),
    ("s like 's15%'", None),
    ("dec > 480.00", None),
    ("d < date '2024-01-03'", None),
    ("ts >= timestamptz '2024-01-01 00:30:00+00:00' and ts < timestamptz '2024-01-01 00:31:00+00:00'",
     "ts >= timestamp '2024-01-01 00:30:00+00:00' and ts < timestamp '2024-01-01 00:31:00+00:00'"),
    ("id in (5, 1999) or s is null", None),
    ("not (id < 1990)", None),
    # Spark orders NaN above every number and -0.0 equal to 0.0; the Iceberg row semantics
    # icectl applies do neither, so Spark's WHERE leaves NaN out explicitly
    ("x > 1900.5", "x > 1900.5 and not isnan(x)"),
    ("x < 0.5", None),
]
# decided by the Iceberg row semantics only: reading with and without skipping must agree
SELF_FILTERS = ["x = 0.0", "x = -0.0", "x is nan or id = 3", "x >= 1500 and x <= 1510",
                "x not in (1.0, 2.0) and id < 20"]


def _icectl(location, text):
    r = run_icectl("scan", str(location), "--format", "jsonl", "--with-metadata", "--columns",
                   "id", "--filter", text)
    assert r.returncode == 0, r.stderr
    return sorted((row["id"], row["_pos"], row["_file"].rsplit("/", 1)[-1])
                  for row in map(json.loads, r.stdout.splitlines()))


def test_spark_files_skip_row_groups_and_rows_equal_spark(spark, ice_table):
    t = ice_table.ident
    spark.sql(f"""CREATE TABLE {t} (id bigint, s string, dec decimal(10,2), d date,
                  ts timestamp, x double) USING iceberg
                  TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read',
                                 'write.parquet.row-group-size-bytes'='4096',
                                 'write.parquet.page-row-limit'='100')""")
    spark.sql(f"""INSERT INTO {t}
        SELECT id, CASE WHEN id % 97 = 0 THEN NULL ELSE format_string('s%04d', id) END,
               CAST(id / 4 AS decimal(10,2)), date_add(DATE '2024-01-01', CAST(id / 400 AS int)),
               timestamp_micros(1704067200000000 + id * 1000000),
               CASE WHEN id % 101 = 0 THEN double('NaN') WHEN id = 7 THEN -0.0
                    WHEN id = 8 THEN 0.0 ELSE CAST(id AS double) END
        FROM range(0, 2000) ORDER BY id""").collect()
    spark.sql(f"DELETE FROM {t} WHERE id % 9 = 0 AND id > 1000")
    files = glob.glob(f"{ice_table.location}/data/**/*.parquet", recursive=True)
    data = [p for p in files if "deletes" not in p and pq.ParquetFile(p).metadata.num_columns > 2]
    assert data and max(pq.ParquetFile(p).metadata.num_row_groups for p in data) > 3
    skipped = 0
    for text, spark_text in SPARK_FILTERS:
        theirs = sorted((r[0], r[1], r[2].rsplit("/", 1)[-1]) for r in spark.sql(
            f"SELECT id, _pos, _file FROM {t} WHERE {spark_text or text}").collect())
        assert _icectl(ice_table.location, text) == theirs, text
    for text in [f for f, _ in SPARK_FILTERS] + SELF_FILTERS:
        s = open_scan(Table.load(str(ice_table.location)), text, columns=["id"],
                      with_metadata=True)
        on = sorted((r["id"], r["_pos"], r["_file"]) for b in s.batches() for r in b.to_pylist())
        s.skip_row_groups = False
        off = sorted((r["id"], r["_pos"], r["_file"]) for b in s.batches() for r in b.to_pylist())
        assert on == off, text
        for f in s.files:
            footer = pq.ParquetFile(f.path.removeprefix("file:")).metadata
            skipped += footer.num_row_groups - len(row_groups_to_read(
                footer, f.residual, s.schema))
    assert skipped > 0  # the statistics did let row groups go
