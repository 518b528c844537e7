"""Compaction output as tight as Spark's: twin Spark-written ZSTD tables, one compacted by Spark's
``rewrite_data_files``, the other by ``icectl compact``; the files icectl writes hold the same
rows in about the same bytes (within 10%), with the reference's choice of dictionary or PLAIN for
every column chunk, the page index written, and the table's codec."""

from __future__ import annotations

import os
from typing import Any

import pyarrow.parquet as pq
import pytest

from cli_support import run_icectl
from spark_support import IceTable, sql_rows

pytestmark = pytest.mark.interop

ROWS, FILES = 20_000, 6


def _fill(spark: Any, t: IceTable) -> None:
    spark.sql(f"""CREATE TABLE {t.ident} (id bigint, cat string, ts timestamp, v double, s string, n int,
                  st struct<k: int, u: string>) USING iceberg
                  TBLPROPERTIES ('format-version'='2', 'write.parquet.compression-codec'='zstd')""")
    for i in range(FILES):  # one file per insert; values from hashes, so both twins are equal
        spark.sql(f"""INSERT INTO {t.ident} SELECT /*+ REPARTITION(1) */ id, concat('c', CAST(id % 7 AS STRING)),
                      TIMESTAMP '2024-01-01 00:00:00' + make_interval(0, 0, 0, 0, 0, 0,
                          CAST(pmod(xxhash64(id), 10000000) AS INT)),
                      CAST(pmod(xxhash64(id, 1), 1000000000) AS double) / 1000.0,
                      concat('row-', CAST(id AS STRING)), CAST(pmod(xxhash64(id, 2), 100) AS INT),
                      named_struct('k', CAST(id % 4 AS INT), 'u', concat('u', CAST(id * 7919 AS STRING)))
                      FROM range({i * ROWS}, {(i + 1) * ROWS})""")


def _live_files(spark: Any, t: IceTable) -> list[str]:
    spark.sql(f"REFRESH TABLE {t.ident}")
    return sorted(r[0] for r in sql_rows(spark, f"SELECT file_path FROM {t.ident}.data_files"))


def _chunks(path: str) -> dict[str, tuple[bool, str, bool]]:
    """Per column path: (dictionary-encoded, codec, has page index), over every row group."""
    md = pq.ParquetFile(path).metadata
    out: dict[str, tuple[bool, str, bool]] = {}
    for g in range(md.num_row_groups):
        rg = md.row_group(g)
        for i in range(rg.num_columns):
            c = rg.column(i)
            out[c.path_in_schema] = (any("DICTIONARY" in e for e in c.encodings), c.compression,
                                     c.has_column_index and c.has_offset_index)
    return out


def test_compacted_bytes_match_spark(spark: Any, new_table: Any) -> None:
    theirs, mine = new_table("theirs"), new_table("mine")
    _fill(spark, theirs)
    _fill(spark, mine)
    assert len(_live_files(spark, mine)) == FILES
    ns = theirs.ident.split(".", 1)[1]
    spark.sql(f"CALL {theirs.catalog}.system.rewrite_data_files(table => '{ns}')")
    p = run_icectl("compact", mine.location, "--json", timeout=600)
    assert p.returncode == 0, p.stderr
    spark_out, icectl_out = _live_files(spark, theirs), _live_files(spark, mine)
    assert len(spark_out) == len(icectl_out) == 1
    select = "SELECT * FROM {} ORDER BY id"
    assert sql_rows(spark, select.format(mine.ident)) == sql_rows(spark, select.format(theirs.ident))

    spark_bytes = sum(os.path.getsize(f) for f in spark_out)
    icectl_bytes = sum(os.path.getsize(f) for f in icectl_out)
    assert 0.9 * spark_bytes <= icectl_bytes <= 1.1 * spark_bytes, (icectl_bytes, spark_bytes)
    # column chunk by column chunk: the same choice of dictionary or PLAIN, the same codec, a
    # page index on both sides
    assert _chunks(icectl_out[0]) == _chunks(spark_out[0])
    assert {c[0] for c in _chunks(spark_out[0]).values()} == {True, False}  # both kinds present
