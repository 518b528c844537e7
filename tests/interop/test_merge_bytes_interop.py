"""Manifests Spark wrote, merged by icectl copying their entries' encoded bytes, read back by
Spark (Iceberg Java 1.10.2) and pyiceberg: same rows, same live entries (sequence numbers and
snapshot ids made explicit as Java inherits them; v3 first row ids), and Spark goes on writing
on top."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cli_support import run_icectl
from spark_support import IceTable, sql_rows

from icectl.io.manifest import records as avro


def _rows(spark: Any, t: IceTable) -> list[tuple]:
    spark.sql(f"REFRESH TABLE {t.ident}")
    return sorted(sql_rows(spark, f"SELECT id, d, dec, s, CAST(x AS string) FROM {t.ident}"))


def _live_entries(spark: Any, t: IceTable, fv: int) -> list[tuple]:
    spark.sql(f"REFRESH TABLE {t.ident}")
    row_id = ", data_file.first_row_id" if fv >= 3 else ""
    return sorted(sql_rows(spark, f"""SELECT data_file.file_path, snapshot_id, sequence_number,
        file_sequence_number, data_file.record_count, data_file.partition{row_id}
        FROM {t.ident}.entries WHERE status < 2"""))


def _insert(spark: Any, t: IceTable, k: int, extra: bool = False) -> None:
    """Four rows of every awkward kind; ``extra``: the evolved schema's added column too."""
    e = f", 'e{k}'" if extra else ""
    spark.sql(f"""INSERT INTO {t.ident} VALUES
        ({10 * k}, DATE '1900-01-01', -12.5, NULL, CAST('NaN' AS double){e}),
        ({10 * k + 1}, NULL, 99.99, 'héllo ✓', -0.0{e}),
        ({10 * k + 2}, DATE '1969-12-31', NULL, 'gone', {k}.25{e}),
        ({10 * k + 3}, DATE '2024-02-29', -0.01, 'keep', CAST('-Infinity' AS double){e})""")


@pytest.mark.parametrize("fv", [2, 3])
def test_spark_manifests_merged_by_bytes_read_by_spark(spark: Any, ice_table: IceTable,
                                                        fv: int, monkeypatch: Any) -> None:
    t = ice_table
    spark.sql(f"""CREATE TABLE {t.ident} (id bigint, d date, dec decimal(12,2), s string,
                  x double) USING iceberg PARTITIONED BY (d, s)
                  TBLPROPERTIES ('format-version'='{fv}', 'write.delete.mode'='merge-on-read')""")
    for k in range(4):
        _insert(spark, t, k)
    spark.sql(f"ALTER TABLE {t.ident} ADD COLUMN extra string")  # an evolved schema
    _insert(spark, t, 4, extra=True)
    spark.sql(f"ALTER TABLE {t.ident} SET TBLPROPERTIES ('commit.manifest.min-count-to-merge'='3')")
    spark.sql(f"REFRESH TABLE {t.ident}")
    assert len(sql_rows(spark, f"SELECT path FROM {t.ident}.manifests")) == 5
    rows = _rows(spark, t)
    entries = _live_entries(spark, t, fv)
    gone = [e for e in entries if "s=gone" in e[0]]
    assert len(gone) == 5 and len(rows) == 20

    # the merge copies bytes: decoding raw records (the fallback) would fail the run
    monkeypatch.setattr(avro, "read_manifest_records",
                        lambda *a, **k: pytest.fail("merge decoded raw records"))
    p = run_icectl("delete", str(t.location), "--filter", "s = 'gone'", "--mode",
                   "merge-on-read", "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["committed"]
    monkeypatch.undo()

    spark.sql(f"REFRESH TABLE {t.ident}")
    manifests = sql_rows(spark, f"SELECT path, added_data_files_count, existing_data_files_count, "
                                f"deleted_data_files_count FROM {t.ident}.manifests")
    assert len(manifests) == 1 and tuple(manifests[0][1:]) == (0, 15, 5)
    assert _rows(spark, t) == [r for r in rows if r[3] != "gone"]
    assert _live_entries(spark, t, fv) == [e for e in entries if e not in gone]
    deleted = sql_rows(spark, f"SELECT data_file.file_path FROM {t.ident}.entries WHERE status = 2")
    assert sorted(r[0] for r in deleted) == sorted(e[0] for e in gone)

    # pyiceberg reads the merged manifest's entries and the rows as Spark does
    from pyiceberg.table import StaticTable

    from icectl.table.table import Table

    py = StaticTable.from_metadata(Table.load(str(t.location)).metadata_location)
    [merged] = py.current_snapshot().manifests(py.io)
    got = sorted((e.data_file.file_path, e.snapshot_id, e.sequence_number, e.file_sequence_number)
                 for e in merged.fetch_manifest_entry(py.io, discard_deleted=True))
    assert got == sorted(e[:4] for e in entries if e not in gone)
    assert sorted(py.scan().to_arrow().column("id").to_pylist()) == sorted(
        r[0] for r in rows if r[3] != "gone")

    # icectl reads it as Spark does, and Spark goes on writing (and merging) on top
    scan = run_icectl("scan", str(t.location), "--format", "jsonl", "--columns", "id")
    assert scan.returncode == 0, scan.stderr
    assert sorted(json.loads(line)["id"] for line in scan.stdout.splitlines()) == sorted(
        r[0] for r in rows if r[3] != "gone")
    _insert(spark, t, 5, extra=True)
    before = _rows(spark, t)
    spark.sql(f"DELETE FROM {t.ident} WHERE s = 'keep'")
    assert _rows(spark, t) == [r for r in before if r[3] != "keep"]
    assert len(before) == 19
