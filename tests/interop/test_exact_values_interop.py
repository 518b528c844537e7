"""Decimals icectl wrote are read by Spark (Iceberg 1.10.2) with exactly the digits written:
decimal(38,x) values at the edge of the precision (10^38 - 1 unscaled, negative too) and
decimal(12,2) values from CSV, exact JSON numbers, Parquet decimals and doubles, and rounded
values (--round), including as partition sources (bucket on decimals); a value
that does not fit is refused and Spark sees the table unchanged."""

from __future__ import annotations

import decimal
import json
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.register_assert_rewrite("cli_support")

from cli_support import icectl_json, run_icectl  # noqa: E402

pytestmark = pytest.mark.interop

TOP38_0 = "9" * 38
TOP38_10 = "9" * 28 + "." + "9" * 10
EDGES = [  # (id, d38_0, d38_10, d12_2)
    (1, TOP38_0, TOP38_10, "9999999999.99"),
    (2, "-" + TOP38_0, "-" + TOP38_10, "-9999999999.99"),
    (3, "0", "0.0000000001", "0.01"),
    (4, "-1", "-0.0000000001", "-0.01"),
    (5, "12345678901234567890123456789012345678", "1234567890123456789012345678.9012345678", "12.50"),
    (6, "1", "0.1", "0.10"),
]


def spark_rows(spark, ident: str) -> list[tuple]:
    return [tuple(r) for r in spark.sql(f"SELECT id, a, b, c FROM {ident} ORDER BY id").collect()]


def test_spark_reads_the_exact_decimals_icectl_wrote(spark, new_table, tmp_path: Path) -> None:
    t = new_table("dec")
    loc = str(t.location)
    done = run_icectl("create", loc, "--schema", "id long not null, a decimal(38,0), b decimal(38,10), "
                      "c decimal(12,2)", "--partition", "bucket(4, a), bucket(2, c)",
                      "--format-version", "2")
    assert done.returncode == 0, done.stderr
    expected = []
    # CSV text
    csv = tmp_path / "e.csv"
    csv.write_text("id,a,b,c\n" + "".join(f"{i},{a},{b},{c}\n" for i, a, b, c in EDGES))
    icectl_json("write", loc, str(csv))
    expected += [(i, Decimal(a), Decimal(b), Decimal(c)) for i, a, b, c in EDGES]
    # JSON numbers, read exactly (never through a double)
    js = tmp_path / "e.jsonl"
    js.write_text("".join(f'{{"id": {100 + i}, "a": {a}, "b": {b}, "c": {c}}}\n' for i, a, b, c in EDGES))
    icectl_json("write", loc, str(js))
    expected += [(100 + i, Decimal(a), Decimal(b), Decimal(c)) for i, a, b, c in EDGES]
    # Parquet decimals, and doubles that are exact at scale 2
    pqf = tmp_path / "e.parquet"
    pq.write_table(pa.table({
        "id": [200 + i for i, *_ in EDGES],
        "a": pa.array([Decimal(a) for _, a, _, _ in EDGES], pa.decimal128(38, 0)),
        "b": pa.array([Decimal(b) for _, _, b, _ in EDGES], pa.decimal128(38, 10)),
        "c": [0.5, -0.25, 0.75, 1e9, -1.5, 0.0],
    }), pqf)
    icectl_json("write", loc, str(pqf))
    expected += [(200 + i, Decimal(a), Decimal(b), Decimal(c).quantize(Decimal("0.01")))
                 for (i, a, b, _), c in zip(EDGES, ["0.5", "-0.25", "0.75", "1000000000", "-1.5", "0"])]
    # rounded on request: half-up on the exact value
    rnd = tmp_path / "r.csv"
    rnd.write_text("id,a,b,c\n300,2.5,0.00000000005,12.555\n301,-2.5,-0.00000000005,-12.565\n")
    icectl_json("write", loc, str(rnd), "--round", "half-up")
    expected += [(300, Decimal(3), Decimal("0.0000000001"), Decimal("12.56")),
                 (301, Decimal(-3), Decimal("-0.0000000001"), Decimal("-12.57"))]
    spark.sql(f"REFRESH TABLE {t.ident}")
    got = spark_rows(spark, t.ident)
    assert got == sorted(expected)
    # as text (Java's BigDecimal.toString, the same rule as Python's str(Decimal)), every digit at
    # the column's own scale
    texts = [tuple(r) for r in spark.sql(f"SELECT id, CAST(a AS STRING), CAST(b AS STRING), CAST(c AS STRING) "
                                         f"FROM {t.ident} ORDER BY id").collect()]
    wide = decimal.Context(prec=100)
    assert texts == [(i, str(a), str(b.quantize(Decimal("1E-10"), context=wide)),
                      str(c.quantize(Decimal("0.01"), context=wide))) for i, a, b, c in sorted(expected)]
    # a value that does not fit is refused: Spark sees the same table
    before = sorted(p.name for p in Path(loc, "metadata").iterdir())
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 400, "c": 2.999}\n')
    done = run_icectl("write", loc, str(bad))
    assert done.returncode == 2
    assert done.stderr.strip() == (f"icectl: error: {bad}: row 1, column c: 2.999 does not fit decimal(12, 2): "
                                   "more than 2 digits after the point (--round half-even|half-up|down to round it)")
    over = tmp_path / "over.jsonl"
    over.write_text(json.dumps({"id": 401}).replace("}", f', "a": 1{TOP38_0}}}') + "\n")
    assert run_icectl("write", loc, str(over)).returncode == 2
    assert sorted(p.name for p in Path(loc, "metadata").iterdir()) == before
    spark.sql(f"REFRESH TABLE {t.ident}")
    assert spark_rows(spark, t.ident) == got
    # Spark's own writes of the same values read back the same through icectl
    spark.sql(f"INSERT INTO {t.ident} VALUES (500, {TOP38_0}, -{TOP38_10}, 0.01)")
    out = run_icectl("scan", loc, "--format", "jsonl", "--filter", "id = 500")
    assert out.returncode == 0, out.stderr
    assert [json.loads(line) for line in out.stdout.splitlines()] == [
        {"id": 500, "a": TOP38_0, "b": "-" + TOP38_10, "c": "0.01"}]
