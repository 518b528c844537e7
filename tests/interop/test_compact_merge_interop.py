"""The compaction commit merges manifests as Iceberg Java's RewriteFiles does.

Spark (Iceberg 1.10.2) fills twin tables with many small inserts, one manifest each (the
default ``commit.manifest.min-count-to-merge`` of 100 keeps its merging appends from merging
them), then the merge settings under test are set on both. Spark's ``rewrite_data_files``
compacts one, ``icectl compact`` (as a user runs it) the other: the resulting snapshots must
have as many data and delete manifests as Spark's, and Spark must read icectl's result.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from cli_support import icectl_rows, run_icectl
from spark_support import sql_rows

INSERTS = 8


def _fill(spark: Any, ident: str, props: dict[str, str]) -> None:
    spark.sql(f"""CREATE TABLE {ident} (id bigint, cat string, v double) USING iceberg
                  PARTITIONED BY (cat) TBLPROPERTIES ('format-version'='2')""")
    for i in range(INSERTS):  # a file in each of the partitions 'a', 'b' and null
        spark.sql(f"""INSERT INTO {ident} SELECT id - 200,
                      CASE WHEN id % 3 = 0 THEN 'a' WHEN id % 3 = 1 THEN 'b' END,
                      CASE WHEN id % 7 = 0 THEN double('NaN') WHEN id = 5 THEN double('-0.0')
                           ELSE id / 4.0 END
                      FROM range({i * 30}, {i * 30 + 30})""")
    if props:
        assigns = ", ".join(f"'{k}'='{v}'" for k, v in props.items())
        spark.sql(f"ALTER TABLE {ident} SET TBLPROPERTIES ({assigns})")


def _manifest_counts(spark: Any, ident: str) -> dict[int, int]:
    spark.sql(f"REFRESH TABLE {ident}")
    return dict(sql_rows(spark, f"SELECT content, count(*) FROM {ident}.manifests GROUP BY content"))


@pytest.mark.parametrize("props,data_manifests", [
    # merged: the new manifest and the eight rewritten ones are one bin of at least 4
    ({"commit.manifest.min-count-to-merge": "4"}, 1),
    # the default count (100) is not reached: the new one and the eight rewritten ones
    ({}, 1 + INSERTS),
    ({"commit.manifest-merge.enabled": "false", "commit.manifest.min-count-to-merge": "4"},
     1 + INSERTS),
])
def test_compaction_merges_manifests_as_spark_rewrite_data_files(
        spark: Any, new_table: Any, props: dict, data_manifests: int) -> None:
    theirs, mine = new_table("theirs"), new_table("mine")
    for t in (theirs, mine):
        _fill(spark, t.ident, props)
        assert _manifest_counts(spark, t.ident) == {0: INSERTS}
    # v as text: NaN and -0.0 compared exactly
    select = "SELECT id, cat, CAST(v AS string) FROM {} ORDER BY id"
    expected = sql_rows(spark, select.format(theirs.ident))
    assert {"-0.0", "NaN"} <= {r[2] for r in expected}
    assert len(expected) == INSERTS * 30

    ns = theirs.ident.split(".", 1)[1]
    spark.sql(f"CALL {theirs.catalog}.system.rewrite_data_files(table => '{ns}', "
              "options => map('min-input-files', '2'))")
    p = run_icectl("compact", mine.location, "--min-input-files", "2", "--json", timeout=600)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["committed"] and out["rewritten-data-files-count"] == 3 * INSERTS

    counts = _manifest_counts(spark, mine.ident)
    assert counts == _manifest_counts(spark, theirs.ident) == {0: data_manifests}
    # Spark reads icectl's result, and icectl Spark's
    assert sql_rows(spark, select.format(mine.ident)) == expected
    assert sql_rows(spark, select.format(theirs.ident)) == expected
    assert repr(icectl_rows(mine.location, None)) == repr(icectl_rows(theirs.location, None))
    files = "SELECT count(*) FROM {}.data_files"
    assert sql_rows(spark, files.format(mine.ident)) == sql_rows(spark, files.format(theirs.ident)) \
        == [(3,)]
    summary = "SELECT operation, summary FROM {}.snapshots ORDER BY committed_at DESC LIMIT 1"
    (op_mine, s_mine), = sql_rows(spark, summary.format(mine.ident))
    (op_theirs, s_theirs), = sql_rows(spark, summary.format(theirs.ident))
    assert op_mine == op_theirs == "replace"
    for key in ("deleted-data-files", "added-data-files", "total-data-files", "total-records"):
        assert s_mine.get(key) == s_theirs.get(key), key
