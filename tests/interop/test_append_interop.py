"""`icectl append` against the reference: Spark reads exactly the rows of the appended files,
its metadata tables agree with `icectl inspect`, pyiceberg plans the same files, and appends by
Spark and icectl interleave into one consistent chain of snapshots."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.register_assert_rewrite("cli_support")

from cli_support import (  # noqa: E402
    check_files,
    check_manifests,
    check_partitions_table,
    check_snapshots,
    icectl_json,
    run_icectl,
)
from spark_support import java_table, sql_rows  # noqa: E402

from icectl.spec.partition_path import partition_path  # noqa: E402
from icectl.table.table import Table  # noqa: E402

pytestmark = pytest.mark.interop

UTC = dt.timezone.utc
SCHEMA = "id long not null, ts timestamptz, cat string"


@dataclass(frozen=True)
class Case:
    label: str
    format_version: int
    partition: str | None
    hive_paths: bool  # put files under their partition path (needed when stats cannot decide)


CASES = [
    Case("v1-year-truncate", 1, "years(ts), truncate(2, cat)", False),
    Case("v2-day-bucket", 2, "days(ts), bucket(4, id)", True),
    Case("v2-month-identity", 2, "months(ts), cat", False),
    Case("v2-hour", 2, "hours(ts)", False),
    Case("v3-day-row-lineage", 3, "days(ts)", False),
]


def rows_for(batch: int, n: int = 24) -> list[tuple[int, int, str]]:
    """(id, ts micros, cat): a few days, hours and categories."""
    out = []
    base = dt.datetime(2023, 12, 30, tzinfo=UTC)
    for i in range(n):
        rid = batch * 1000 + i
        ts = base + dt.timedelta(days=(i * 7 + batch) % 5, hours=(i * 5) % 3)
        cat = ["alpha", "beta", "gamma"][(i + batch) % 3]
        out.append((rid, int(ts.timestamp()) * 1_000_000, cat))
    return out


def write_files(table_loc: str, root: Path, batch: int, case: Case) -> tuple[list[str], list[tuple]]:
    """Group rows by partition (icectl's transforms) and write one Parquet file per partition."""
    table = Table.load(table_loc)
    spec, schema = table.metadata.spec, table.metadata.schema
    groups: dict[tuple, list[tuple]] = {}
    for r in rows_for(batch):
        values = {1: r[0], 2: r[1], 3: r[2]}
        key = tuple(f.transform.apply(values[f.source_id], schema.find_field(f.source_id).type)
                    for f in spec.fields)
        groups.setdefault(key, []).append(r)
    paths = []
    for i, (key, rows) in enumerate(sorted(groups.items(), key=lambda kv: str(kv[0]))):
        sub = partition_path(spec, schema, key) if case.hive_paths else f"b{batch}"
        p = root / sub / f"batch{batch}-{i:03d}.parquet"
        p.parent.mkdir(parents=True, exist_ok=True)
        t = pa.table({"id": pa.array([r[0] for r in rows], pa.int64()),
                      "ts": pa.array([r[1] for r in rows], pa.timestamp("us", tz="UTC")),
                      "cat": pa.array([r[2] for r in rows], pa.string())},
                     schema=pa.schema([pa.field("id", pa.int64(), nullable=False),
                                       pa.field("ts", pa.timestamp("us", tz="UTC")),
                                       pa.field("cat", pa.string())]))
        pq.write_table(t, str(p))
        paths.append(str(p))
    return paths, [r for rows in groups.values() for r in rows]


def spark_rows(spark, ident: str) -> list[tuple]:
    return sorted(sql_rows(spark, f"SELECT id, unix_micros(ts), cat FROM {ident}"))


def pyiceberg_files(location: str) -> set[str]:
    from pyiceberg.table import StaticTable

    md = Table.load(location).metadata_location
    return {t.file.file_path for t in StaticTable.from_metadata(md).scan().plan_files()}


def check_all(spark, ident: str, location: str, fv: int, expected_rows: list[tuple]) -> list[dict]:
    spark.sql(f"REFRESH TABLE {ident}")  # the catalog caches tables; icectl committed behind it
    assert spark_rows(spark, ident) == sorted(expected_rows)
    jt = java_table(spark, location)
    snaps = check_snapshots(spark, ident, location, jt)
    check_manifests(spark, ident, location, jt, fv)
    files = check_files(spark, ident, location)
    if any(f["partition"] for f in files):
        check_partitions_table(spark, ident, files)
    assert pyiceberg_files(location) == {f["file-path"] for f in files}
    # totals in the summary = what the files say
    current = snaps[-1]["summary"]
    assert int(current["total-records"]) == sum(f["record-count"] for f in files) == len(expected_rows)
    assert int(current["total-data-files"]) == len(files)
    assert int(current["total-files-size"]) == sum(f["file-size-in-bytes"] for f in files)
    return snaps


@pytest.mark.parametrize("case", CASES, ids=[c.label for c in CASES])
def test_icectl_appends_read_by_spark_and_pyiceberg(case: Case, spark, ice_table, tmp_path) -> None:
    loc = str(ice_table.location)
    args = ["create", loc, "--schema", SCHEMA, "--format-version", str(case.format_version)]
    if case.partition:
        args += ["--partition", case.partition]
    done = run_icectl(*args)
    assert done.returncode == 0, done.stderr
    ident = ice_table.ident
    staging = tmp_path / "incoming"

    expected: list[tuple] = []
    for batch in (1, 2):
        paths, rows = write_files(loc, staging, batch, case)
        out = icectl_json("append", loc, *paths)
        assert out["added-files"] == len(paths) and out["added-records"] == len(rows)
        expected += rows
    check_all(spark, ident, loc, case.format_version, expected)

    # Spark appends on top, then icectl again: one chain, sequence numbers in order
    spark.sql(f"REFRESH TABLE {ident}")
    spark.sql(f"INSERT INTO {ident} VALUES (999999, TIMESTAMP '2024-01-02 03:00:00', 'alpha')")
    expected.append((999999, int(dt.datetime(2024, 1, 2, 3, tzinfo=UTC).timestamp()) * 1_000_000, "alpha"))
    paths, rows = write_files(loc, staging, 3, case)
    out = icectl_json("append", loc, *paths, "--summary", "pipeline=interop")
    expected += rows
    snaps = check_all(spark, ident, loc, case.format_version, expected)
    assert len(snaps) == 4
    for parent, child in zip(snaps, snaps[1:]):
        assert child["parent-snapshot-id"] == parent["snapshot-id"]
        if case.format_version > 1:
            assert child["sequence-number"] == parent["sequence-number"] + 1
    assert snaps[-1]["summary"]["pipeline"] == "interop"
    assert snaps[2]["summary"].get("engine-name") == "spark"

    if case.format_version >= 3:
        # row lineage: Spark computes the same row ids from first-row-id inheritance
        md = json.loads(Path(Table.load(loc).metadata_location).read_text())
        assert md["next-row-id"] == len(expected)
        ids = sql_rows(spark, f"SELECT _row_id, id FROM {ident}")
        assert sorted(r[0] for r in ids) == list(range(len(expected)))


def test_refused_appends_leave_the_table_unchanged_for_spark(spark, ice_table, tmp_path) -> None:
    loc = str(ice_table.location)
    assert run_icectl("create", loc, "--schema", SCHEMA, "--partition", "days(ts)").returncode == 0
    case = CASES[1]
    paths, rows = write_files(loc, tmp_path / "in", 1, case)
    assert icectl_json("append", loc, *paths)["added-files"] == len(paths)
    before = sorted(p.name for p in (ice_table.location / "metadata").iterdir())
    spans = tmp_path / "bad" / "spans.parquet"
    spans.parent.mkdir()
    fields = [pa.field("id", pa.int64(), nullable=False), pa.field("ts", pa.timestamp("us", tz="UTC")),
              pa.field("cat", pa.string())]
    pq.write_table(pa.table([pa.array([1, 2], pa.int64()),
                             pa.array([0, 86_400_000_000], pa.timestamp("us", tz="UTC")),
                             pa.array(["a", "b"])], schema=pa.schema(fields)), str(spans))
    for extra, code, why in (([paths[0]], 5, "already in the table"), ([str(spans)], 5, "span"),
                             ([str(tmp_path / "nope.parquet")], 3, "not found")):
        r = run_icectl("append", loc, *extra)
        assert r.returncode == code and why in r.stderr, r.stderr
    assert sorted(p.name for p in (ice_table.location / "metadata").iterdir()) == before
    spark.sql(f"REFRESH TABLE {ice_table.ident}")
    assert len(spark_rows(spark, ice_table.ident)) == len(rows)
