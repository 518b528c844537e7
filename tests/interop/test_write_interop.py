"""`icectl write` against the reference: Spark and pyiceberg read exactly the rows written
(nested columns, decimals, timestamps with and without zone, binary, uuid), Spark's metadata
tables agree with `icectl inspect`, files of a sorted table are ordered as Spark + Iceberg Java
order them, and refused writes leave the table and its data directory unchanged."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from dataclasses import dataclass
from decimal import Decimal
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
from spark_support import java_table  # noqa: E402

from icectl.table.table import Table  # noqa: E402

pytestmark = pytest.mark.interop

UTC = dt.timezone.utc
SCHEMA = ("id long not null, ts timestamptz, tsntz timestamp, d date, cat string, n int, "
          "dec decimal(10,2), b binary, u uuid, tags list<string>, attrs map<string, int>, "
          "loc struct<lat: double, lon: double not null>")
COLUMNS = ["id", "ts", "tsntz", "d", "cat", "n", "dec", "b", "u", "tags", "attrs", "loc"]


@dataclass(frozen=True)
class Case:
    label: str
    format_version: int
    partition: str


CASES = [
    Case("v1-year-truncate-void", 1, "years(ts), truncate(2, cat), void(n)"),
    Case("v1-identity-bucket-string", 1, "cat, bucket(3, u)"),
    Case("v2-month-bucket", 2, "months(tsntz), bucket(4, id)"),
    Case("v2-day-identity-date", 2, "days(d), truncate(10, n)"),
    Case("v2-hour-bucket-decimal", 2, "hours(ts), bucket(3, dec), truncate(3, b)"),
]


def make_rows(batch: int, n: int = 30) -> list[dict]:
    """Rows in icectl's JSON-lines input form, with nulls, negative values and pre-1970 times."""
    rows = []
    base = dt.datetime(1969, 12, 30, 22, tzinfo=UTC)
    for i in range(n):
        rid = batch * 1000 + i
        ts = base + dt.timedelta(days=(i * 7 + batch) % 5, hours=(i * 5) % 7, microseconds=i)
        row = {
            "id": rid,
            "ts": None if i % 11 == 3 else ts.isoformat(),
            "tsntz": None if i % 13 == 4 else (ts + dt.timedelta(days=40 * (i % 3))).replace(tzinfo=None).isoformat(),
            "d": None if i % 9 == 5 else (dt.date(2023, 12, 30) + dt.timedelta(days=i % 4)).isoformat(),
            "cat": None if i % 10 == 7 else ["alpha", "beta", "gämma", "a b/c=d"][(i + batch) % 4],
            "n": None if i % 8 == 6 else (i - 15) * 7,
            "dec": None if i % 12 == 2 else str(Decimal(i * 137 - 2000) / 100),
            "b": None if i % 7 == 1 else f"b{i % 5}xyz".encode().hex(),  # binary text is hex
            "u": None if i % 6 == 0 else str(uuid.UUID(int=(rid * 7919) << 64 | rid)),
            "tags": None if i % 5 == 0 else [f"t{j}" for j in range(i % 3)],
            "attrs": None if i % 4 == 0 else {f"k{j}": j * i for j in range(i % 3)},
            "loc": None if i % 7 == 2 else {"lat": i / 4, "lon": -i / 8},
        }
        rows.append(row)
    return rows


def canonical_expected(r: dict) -> tuple:
    def micros(text, tz):
        if text is None:
            return None
        v = dt.datetime.fromisoformat(text)
        if v.tzinfo is None:
            v = v.replace(tzinfo=UTC)
        return (v - dt.datetime(1970, 1, 1, tzinfo=UTC)) // dt.timedelta(microseconds=1)

    return (
        r["id"], micros(r["ts"], True), micros(r["tsntz"], False), r["d"], r["cat"], r["n"],
        None if r["dec"] is None else str(Decimal(r["dec"]).quantize(Decimal("0.01"))),
        None if r["b"] is None else r["b"].upper(),
        r["u"],
        None if r["tags"] is None else tuple(r["tags"]),
        None if r["attrs"] is None else tuple(sorted(r["attrs"].items())),
        None if r["loc"] is None else (r["loc"]["lat"], r["loc"]["lon"]),
    )


def spark_canonical(spark, ident: str) -> list[tuple]:
    df = spark.sql(
        "SELECT id, unix_micros(ts) AS ts, unix_micros(CAST(tsntz AS TIMESTAMP)) AS tsntz, "
        "CAST(d AS STRING) AS d, cat, n, CAST(dec AS STRING) AS dec, hex(b) AS b, "
        f"CAST(u AS STRING) AS u, tags, attrs, loc FROM {ident}")
    out = []
    for row in df.collect():
        r = row.asDict(recursive=True)
        out.append((r["id"], r["ts"], r["tsntz"], r["d"], r["cat"], r["n"], r["dec"], r["b"], r["u"],
                    None if r["tags"] is None else tuple(r["tags"]),
                    None if r["attrs"] is None else tuple(sorted(r["attrs"].items())),
                    None if r["loc"] is None else (r["loc"]["lat"], r["loc"]["lon"])))
    return sorted(out, key=repr)


def pyiceberg_canonical(location: str) -> list[tuple]:
    from pyiceberg.table import StaticTable

    md = Table.load(location).metadata_location
    out = []
    for r in StaticTable.from_metadata(md).scan().to_arrow().to_pylist():
        def micros(v):
            if v is None:
                return None
            if v.tzinfo is None:
                v = v.replace(tzinfo=UTC)
            return (v - dt.datetime(1970, 1, 1, tzinfo=UTC)) // dt.timedelta(microseconds=1)

        u = r["u"]
        if isinstance(u, (bytes, bytearray)):
            u = str(uuid.UUID(bytes=bytes(u)))
        elif u is not None:
            u = str(u)
        out.append((r["id"], micros(r["ts"]), micros(r["tsntz"]),
                    None if r["d"] is None else r["d"].isoformat(), r["cat"], r["n"],
                    None if r["dec"] is None else str(r["dec"]),
                    None if r["b"] is None else bytes(r["b"]).hex().upper(), u,
                    None if r["tags"] is None else tuple(r["tags"]),
                    None if r["attrs"] is None else tuple(sorted(r["attrs"])),
                    None if r["loc"] is None else (r["loc"]["lat"], r["loc"]["lon"])))
    return sorted(out, key=repr)


def as_parquet(rows: list[dict], path: Path) -> None:
    """The same rows as a Parquet file with Arrow's own types (cast by icectl on the way in)."""
    def ts(text):
        if text is None:
            return None
        v = dt.datetime.fromisoformat(text)
        return v if v.tzinfo else v
    table = pa.table({
        "id": pa.array([r["id"] for r in rows], pa.int64()),
        "ts": pa.array([ts(r["ts"]) for r in rows], pa.timestamp("us", tz="UTC")),
        "tsntz": pa.array([ts(r["tsntz"]) for r in rows], pa.timestamp("us")),
        "d": pa.array([None if r["d"] is None else dt.date.fromisoformat(r["d"]) for r in rows], pa.date32()),
        "CAT": pa.array([r["cat"] for r in rows], pa.string()),  # matched case-insensitively
        "n": pa.array([r["n"] for r in rows], pa.int64()),  # narrowed to int
        "dec": pa.array([None if r["dec"] is None else Decimal(r["dec"]) for r in rows], pa.decimal128(12, 2)),
        "b": pa.array([None if r["b"] is None else bytes.fromhex(r["b"]) for r in rows], pa.binary()),
        "u": pa.array([r["u"] for r in rows], pa.string()),
        "tags": pa.array([r["tags"] for r in rows], pa.list_(pa.string())),
        "attrs": pa.array([None if r["attrs"] is None else list(r["attrs"].items()) for r in rows],
                          pa.map_(pa.string(), pa.int32())),
        "loc": pa.array([r["loc"] for r in rows], pa.struct([("lat", pa.float64()), ("lon", pa.float64())])),
    })
    pq.write_table(table, str(path))


def check_metadata(spark, ident: str, loc: str, fv: int, n_rows: int) -> list[dict]:
    jt = java_table(spark, loc)
    snaps = check_snapshots(spark, ident, loc, jt)
    check_manifests(spark, ident, loc, jt, fv)
    files = check_files(spark, ident, loc)
    check_partitions_table(spark, ident, files)
    current = snaps[-1]["summary"]
    assert int(current["total-records"]) == sum(f["record-count"] for f in files) == n_rows
    assert int(current["total-data-files"]) == len(files)
    return snaps


@pytest.mark.parametrize("case", CASES, ids=[c.label for c in CASES])
def test_icectl_writes_read_by_spark_and_pyiceberg(case: Case, spark, ice_table, tmp_path) -> None:
    loc = str(ice_table.location)
    done = run_icectl("create", loc, "--schema", SCHEMA, "--format-version", str(case.format_version),
                      "--partition", case.partition)
    assert done.returncode == 0, done.stderr
    ident = ice_table.ident
    expected: list[dict] = []

    # batch 1: JSON lines; batch 2: Parquet with other Arrow types and a differently-cased column
    jl = tmp_path / "b1.jsonl"
    rows1 = make_rows(1)
    jl.write_text("\n".join(json.dumps(r) for r in rows1) + "\n")
    out1 = icectl_json("write", loc, str(jl))
    assert out1["rows-written"] == len(rows1) and out1["input-format"] == "json"
    expected += rows1
    rows2 = make_rows(2)
    as_parquet(rows2, tmp_path / "b2.parquet")
    out2 = icectl_json("write", loc, str(tmp_path / "b2.parquet"), "--summary", "pipeline=interop")
    assert out2["parent-snapshot-id"] == out1["snapshot-id"]
    expected += rows2

    spark.sql(f"REFRESH TABLE {ident}")
    want = sorted((canonical_expected(r) for r in expected), key=repr)
    assert spark_canonical(spark, ident) == want
    assert pyiceberg_canonical(loc) == want
    snaps = check_metadata(spark, ident, loc, case.format_version, len(expected))
    assert snaps[-1]["summary"]["pipeline"] == "interop"

    # Spark appends on top, icectl writes again: one chain
    spark.sql(f"INSERT INTO {ident} VALUES (999999, TIMESTAMP '2024-01-02 03:00:00', NULL, NULL, "
              "'alpha', NULL, NULL, NULL, NULL, NULL, NULL, NULL)")
    expected.append({"id": 999999, "ts": "2024-01-02T03:00:00+00:00", "tsntz": None, "d": None,
                     "cat": "alpha", "n": None, "dec": None, "b": None, "u": None, "tags": None,
                     "attrs": None, "loc": None})
    rows3 = make_rows(3, 10)
    (tmp_path / "b3.jsonl").write_text("\n".join(json.dumps(r) for r in rows3))
    icectl_json("write", loc, str(tmp_path / "b3.jsonl"))
    expected += rows3
    spark.sql(f"REFRESH TABLE {ident}")
    want = sorted((canonical_expected(r) for r in expected), key=repr)
    assert spark_canonical(spark, ident) == want
    snaps = check_metadata(spark, ident, loc, case.format_version, len(expected))
    assert len(snaps) == 4
    for parent, child in zip(snaps, snaps[1:]):
        assert child["parent-snapshot-id"] == parent["snapshot-id"]
        if case.format_version > 1:
            assert child["sequence-number"] == parent["sequence-number"] + 1


def test_sorted_files_are_ordered_as_spark_orders_them(spark, new_table, tmp_path) -> None:
    """A twin written by Spark (one task, local sort by the table's order) holds, partition by
    partition, the rows in the same order as icectl's files."""
    order = "truncate(2, cat) asc nulls first, n desc nulls last, id"
    mine, twin = new_table("mine"), new_table("twin")
    for t in (mine, twin):
        done = run_icectl("create", str(t.location), "--schema", SCHEMA, "--partition", "days(d)",
                          "--sort-order", order, "--property", "write.distribution-mode=none")
        assert done.returncode == 0, done.stderr
    rows = make_rows(5, 60)
    (tmp_path / "rows.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    icectl_json("write", str(mine.location), str(tmp_path / "rows.jsonl"))
    spark.sql(f"REFRESH TABLE {mine.ident}")
    spark.sql(f"REFRESH TABLE {twin.ident}")
    spark.sql(f"SELECT * FROM {mine.ident}").coalesce(1).writeTo(twin.ident).append()

    def order_by_partition(t) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for f in icectl_json("inspect", "files", str(t.location)):
            ids = pq.read_table(f["file-path"], columns=["id"]).column("id").to_pylist()
            key = json.dumps(f["partition"], sort_keys=True)
            assert key not in out, "one file per partition expected"
            out[key] = ids
        return out

    mine_order, twin_order = order_by_partition(mine), order_by_partition(twin)
    assert mine_order == twin_order
    assert any(len(v) > 5 for v in mine_order.values())


def test_refused_writes_leave_table_and_data_dir_unchanged(spark, ice_table, tmp_path) -> None:
    loc = str(ice_table.location)
    assert run_icectl("create", loc, "--schema", SCHEMA, "--partition", "bucket(4, id)").returncode == 0
    rows = make_rows(1, 8)
    (tmp_path / "ok.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    icectl_json("write", loc, str(tmp_path / "ok.jsonl"))
    meta_before = sorted(p.name for p in (ice_table.location / "metadata").iterdir())
    data_before = sorted(str(p) for p in (ice_table.location / "data").rglob("*"))
    bad = {
        "missing.csv": ("cat\nx\n", "required column id is missing"),
        "nullid.jsonl": ('{"id": 1}\n{"id": null}\n', "column id is required"),
        "extra.csv": ("id,zzz\n1,2\n", "input column zzz is not in the table"),
        "badint.csv": ("id,n\n1,99999999999\n", "column n"),
        "badts.csv": ("id,ts\n1,yesterday\n", "column ts"),
    }
    for name, (text, why) in bad.items():
        (tmp_path / name).write_text(text)
        r = run_icectl("write", loc, str(tmp_path / name))
        assert r.returncode != 0 and why in r.stderr, (name, r.stderr)
    assert sorted(p.name for p in (ice_table.location / "metadata").iterdir()) == meta_before
    assert sorted(str(p) for p in (ice_table.location / "data").rglob("*")) == data_before
    spark.sql(f"REFRESH TABLE {ice_table.ident}")
    assert spark.sql(f"SELECT count(*) FROM {ice_table.ident}").collect()[0][0] == len(rows)
