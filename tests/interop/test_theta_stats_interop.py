"""Table statistics against the reference: Spark's ``compute_table_stats`` and ``icectl stats
compute`` on the same snapshot write the same theta sketches, byte for byte (exact sketches of
small columns and an estimating sketch of 20,000 distinct values alike), with the same ``ndv``;
icectl reads Spark's statistics files, and Spark (Java's Puffin reader, its DataSketches and the
cost-based optimizer's column statistics) reads icectl's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cli_support import icectl_json, run_icectl
from spark_support import IceTable

from icectl.io.formats.puffin_file import blob_data, read_puffin
from icectl.io.storage.files import FileIO
from icectl.spec.theta import parse_sketch

COLUMNS = ("i", "l", "f", "d", "s", "b", "dec", "dt", "ts", "tsn", "bo", "big", "grp")


def _make(spark: Any, t: IceTable) -> None:
    spark.sql(f"CREATE TABLE {t.ident} (i int, l bigint, f float, d double, s string, b binary, "
              f"dec decimal(10,2), dt date, ts timestamp, tsn timestamp_ntz, bo boolean, "
              f"big bigint, grp string) USING iceberg TBLPROPERTIES ('format-version'='2')")
    spark.sql(f"""INSERT INTO {t.ident} VALUES
        (1, -5, CAST(-0.0 AS FLOAT), CAST('NaN' AS DOUBLE), '', X'', -1.50, DATE'1960-01-01',
         TIMESTAMP'1969-12-31 23:59:59.999999', TIMESTAMP_NTZ'2024-01-01 00:00:00', true, 1, 'a'),
        (2, 5, CAST(0.0 AS FLOAT), -0.0, 'é', X'00', 0.00, DATE'2024-02-29',
         TIMESTAMP'2024-01-01 10:00:00', TIMESTAMP_NTZ'1900-01-01 00:00:00', false, 2, 'b'),
        (NULL, NULL, NULL, 0.0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
        (2, 9223372036854775807, CAST('NaN' AS FLOAT), 1e300, 'abcdefghijklmnopq', X'FF00FF', 99999999.99,
         DATE'1970-01-01', TIMESTAMP'2024-01-01 10:00:00', TIMESTAMP_NTZ'2024-01-01 00:00:00', true, 3, 'a')""")
    # 20,000 more distinct values in one file: the sketch estimates
    spark.sql(f"""INSERT INTO {t.ident} SELECT /*+ COALESCE(1) */ CAST(id % 7 AS INT), id, NULL,
        NULL, CAST(id % 50 AS STRING), NULL, NULL, NULL, NULL, NULL, NULL, id + 10, 'c'
        FROM range(20000)""")


def _sketches(table_dir: str) -> dict[int, tuple[bytes, dict[str, str]]]:
    """Field id -> (sketch bytes, blob properties) of the statistics file of the current
    snapshot, read with icectl's Puffin reader."""
    md = icectl_json("inspect", "table", table_dir)
    stats = icectl_json("inspect", "statistics", table_dir)["statistics"]
    (entry,) = [e for e in stats if e["snapshot-id"] == md["current-snapshot"]["snapshot-id"]]
    assert entry["error"] is None, entry
    io = FileIO()
    footer = read_puffin(io, entry["statistics-path"])
    assert footer.file_size == entry["file-size-in-bytes"]
    assert footer.footer_size == entry["file-footer-size-in-bytes"]
    return {b.fields[0]: (blob_data(io, entry["statistics-path"], b), dict(b.properties))
            for b in footer.blobs}


@pytest.fixture
def spark_and_icectl(spark: Any, ice_table: IceTable) -> tuple[dict, dict, IceTable]:
    t = ice_table
    _make(spark, t)
    spark.sql(f"CALL ice.system.compute_table_stats(table => '{t.namespace}.{t.name}')").collect()
    theirs = _sketches(str(t.location))
    r = icectl_json("stats", "compute", t.location)
    assert r["committed"] and [c["name"] for c in r["columns"]] == list(COLUMNS)
    ours = _sketches(str(t.location))
    return theirs, ours, t


def test_icectl_writes_sparks_sketches_byte_for_byte(spark_and_icectl: tuple) -> None:
    theirs, ours, _ = spark_and_icectl
    assert sorted(ours) == sorted(theirs) == list(range(1, len(COLUMNS) + 1))
    for fid in theirs:
        name = COLUMNS[fid - 1]
        assert ours[fid][1] == theirs[fid][1], name  # the ndv property
        assert ours[fid][0] == theirs[fid][0], name  # the compact sketch, byte for byte
    big = parse_sketch(theirs[COLUMNS.index("big") + 1][0])
    ndv = int(theirs[COLUMNS.index("big") + 1][1]["ndv"])  # 20,003 distinct values: estimated
    assert big.theta < (1 << 63) - 1 and len(big.hashes) == 4096 and abs(ndv - 20003) < 600, ndv
    assert theirs[COLUMNS.index("s") + 1][1]["ndv"] == "52"  # '' is not counted, 'é', 50 numbers, 'abc...'


def test_spark_reads_icectls_statistics(spark: Any, spark_and_icectl: tuple) -> None:
    _, ours, t = spark_and_icectl
    jvm = spark._jvm
    spark.sql(f"REFRESH TABLE {t.ident}")  # the catalog caches the table as Spark left it
    table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, t.ident)
    table.refresh()
    snap = table.currentSnapshot().snapshotId()
    (stats,) = [f for f in table.statisticsFiles() if f.snapshotId() == snap]
    # Java's Puffin reader and DataSketches decode icectl's file
    reader = jvm.org.apache.iceberg.puffin.Puffin.read(table.io().newInputFile(stats.path())) \
        .withFileSize(stats.fileSizeInBytes()).withFooterSize(stats.fileFooterSizeInBytes()).build()
    blobs = reader.fileMetadata().blobs()
    assert reader.fileMetadata().properties().get("created-by").startswith("icectl")
    sketch_cls = jvm.org.apache.iceberg.shaded.org.apache.datasketches.theta.CompactSketch
    memory = jvm.org.apache.iceberg.shaded.org.apache.datasketches.memory.Memory
    pairs = reader.readAll(blobs).iterator()
    seen = 0
    while pairs.hasNext():
        pair = pairs.next()
        meta, buf = pair.first(), pair.second()
        seen += 1
        raw = bytes(jvm.org.apache.iceberg.util.ByteBuffers.toByteArray(buf))
        fid = meta.inputFields().get(0)
        assert raw == ours[fid][0]
        est = sketch_cls.wrap(memory.wrap(raw)).getEstimate()
        assert int(est) == int(meta.properties().get("ndv")) == int(ours[fid][1]["ndv"])
    reader.close()
    assert seen == len(COLUMNS)
    # the cost-based optimizer takes the ndv values as the columns' distinct counts
    spark.conf.set("spark.sql.cbo.enabled", "true")
    try:
        df = spark.sql(f"SELECT big, s, grp FROM {t.ident}")
        stats_text = df._jdf.queryExecution().optimizedPlan().stats().attributeStats().toString()
    finally:
        spark.conf.unset("spark.sql.cbo.enabled")
    assert f"Some({int(ours[12][1]['ndv'])})" in stats_text and "Some(52)" in stats_text and "Some(3)" in stats_text, stats_text


def test_icectl_reads_sparks_statistics_in_inspect(spark: Any, ice_table: IceTable) -> None:
    t = ice_table
    spark.sql(f"CREATE TABLE {t.ident} (id bigint, c string) USING iceberg")
    spark.sql(f"INSERT INTO {t.ident} SELECT id, CAST(id % 7 AS STRING) FROM range(50)")
    spark.sql(f"CALL ice.system.compute_table_stats(table => '{t.namespace}.{t.name}', "
              f"columns => array('c', 'id'))").collect()
    (f,) = icectl_json("inspect", "statistics", t.location)["statistics"]
    assert f["created-by"].startswith("Iceberg") and f["error"] is None
    assert [(b["columns"], b["ndv"], b["sketch-estimate"], b["sketch-exact"], b["compression-codec"])
            for b in f["blobs"]] == [(["c"], "7", 7.0, True, "zstd"), (["id"], "50", 50.0, True, "zstd")]
    text = run_icectl("inspect", "statistics", t.location)
    assert text.returncode == 0 and "apache-datasketches-theta-v1" in text.stdout


def _two_snapshots_with_icectl_stats(spark: Any, t: IceTable) -> list[str]:
    spark.sql(f"CREATE TABLE {t.ident} (id bigint, c string) USING iceberg")
    paths = []
    for i in range(2):
        spark.sql(f"INSERT INTO {t.ident} VALUES ({i}, 'c{i}')")
        paths.append(icectl_json("stats", "compute", t.location)["statistics-path"])
    return paths


def test_spark_and_icectl_expire_icectls_statistics_alike(spark: Any, new_table: Any) -> None:
    a, b = new_table("a"), new_table("b")
    in_a, in_b = _two_snapshots_with_icectl_stats(spark, a), _two_snapshots_with_icectl_stats(spark, b)
    (row,) = spark.sql(f"CALL ice.system.expire_snapshots(table => '{a.namespace}.{a.name}', "
                       f"older_than => TIMESTAMP '2100-01-01 00:00:00', retain_last => 1)").collect()
    ours = icectl_json("expire", b.location, "--older-than", "2100-01-01", "--retain-last", "1")
    assert row["deleted_statistics_files_count"] == ours["deleted_statistics_files_count"] == 1
    assert [Path(p).exists() for p in in_a] == [Path(p).exists() for p in in_b] == [False, True]
    spark.sql(f"REFRESH TABLE {a.ident}")
    left = [r[0] for r in spark.sql(f"SELECT snapshot_id FROM {a.ident}.snapshots").collect()]
    stats_a = icectl_json("inspect", "statistics", a.location)["statistics"]
    stats_b = icectl_json("inspect", "statistics", b.location)["statistics"]
    assert [s["snapshot-id"] for s in stats_a] == left and len(stats_b) == 1


@pytest.mark.parametrize("split_size", [None, 1024])
def test_sketches_of_many_files_and_tasks_equal_sparks(spark: Any, ice_table: IceTable,
                                                        split_size: int | None) -> None:
    """Three files of 6,000 ids each, 14,000 distinct. With a tiny split size each file is a task of
    its own and the tasks' sketches are united: Spark's bytes. Read in one task, an estimating
    sketch depends on the order of the task's files, which Java takes from its manifests read
    in parallel (one manifest per insert here): then the estimate is Spark's within the
    sketch's error, and exact sketches are still Spark's bytes."""
    t = ice_table
    props = "" if split_size is None else f" TBLPROPERTIES ('read.split.target-size'='{split_size}')"
    spark.sql(f"CREATE TABLE {t.ident} (id bigint, c string) USING iceberg{props}")
    for i in range(3):
        spark.sql(f"INSERT INTO {t.ident} SELECT /*+ COALESCE(1) */ id + {i * 4000}, "
                  f"CAST(id % 97 AS STRING) FROM range(6000)")
    spark.sql(f"CALL ice.system.compute_table_stats(table => '{t.namespace}.{t.name}')").collect()
    theirs = _sketches(str(t.location))
    icectl_json("stats", "compute", t.location)
    ours = _sketches(str(t.location))
    assert parse_sketch(theirs[1][0]).theta < (1 << 63) - 1  # 14,000 distinct ids: estimated
    assert ours[2] == theirs[2] and theirs[2][1] == {"ndv": "97"}
    if split_size is not None:
        assert ours == theirs
    else:
        est, ref = int(ours[1][1]["ndv"]), int(theirs[1][1]["ndv"])
        assert abs(est - ref) < 0.02 * ref and abs(est - 14000) < 0.05 * 14000, (est, ref)


def test_uuid_columns_are_sketched_as_spark_reads_them(spark: Any, ice_table: IceTable, tmp_path: Path) -> None:
    """Spark reads a UUID column as text and sketches the text: so does icectl."""
    t = ice_table
    rows = tmp_path / "u.csv"
    rows.write_text("id,u\n1,f79c3e09-677c-4bbd-a479-3f349cb785e7\n2,\n"
                    "3,00000000-0000-0000-0000-000000000000\n4,f79c3e09-677c-4bbd-a479-3f349cb785e7\n")
    assert run_icectl("create", t.location, "--schema", "id long, u uuid").returncode == 0
    assert run_icectl("write", t.location, rows).returncode == 0
    spark.sql(f"CALL ice.system.compute_table_stats(table => '{t.namespace}.{t.name}')").collect()
    theirs = _sketches(str(t.location))
    icectl_json("stats", "compute", t.location)
    assert _sketches(str(t.location)) == theirs and theirs[2][1] == {"ndv": "2"}

