"""Differential test: icectl's partition transforms against Iceberg Java's, called through Spark.

Iceberg's Spark runtime exposes its transforms as SQL functions (``ice.system.bucket(N, v)``,
``truncate(W, v)``, ``years/months/days/hours(v)``). For random values of every source type they
support, the reference's results must equal ``parse_transform(...).apply(value, source_type)``.

Values travel to Spark in a raw form (ints, micros, hex, decimal text) and are turned into the
Spark type inside SQL, so no Python-side timezone or float conversion can blur the comparison;
the session time zone is UTC.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Context, Decimal
from typing import Any

import pytest
from spark_support import CATALOG

from icectl.spec.transforms import parse_transform
from icectl.spec.types import (
    BINARY,
    DATE,
    INT,
    LONG,
    STRING,
    TIMESTAMP,
    TIMESTAMPTZ,
    DecimalType,
    IcebergType,
)

SEED = 20240611
RANDOM_VALUES = 250

MICROS_PER_HOUR = 3_600_000_000
MICROS_PER_DAY = 24 * MICROS_PER_HOUR
DAYS_1000_01_01 = -354_285  # days from 1970-01-01 to 1000-01-01 (proleptic Gregorian)
DAYS_3000_01_01 = 376_200

BUCKETS = [1, 3, 16, 1000, 2**31 - 1]


@dataclass(frozen=True)
class Case:
    """One source type: how to make random internal values and how Spark builds the column."""

    label: str
    iceberg_type: IcebergType
    spark_raw_type: str  # Spark SQL type of the raw column shipped from Python
    to_spark: str  # SQL turning raw column `r` into the typed value
    to_raw: Callable[[Any], Any]  # internal value -> raw column value
    values: Callable[[random.Random], list[Any]]
    transforms: list[str]


def _ints(rng: random.Random) -> list[int]:
    edges = [0, 1, -1, 34, -34, 99, -99, 100, -100, 2**31 - 2, -(2**31) + 10**4]
    spread = [rng.randint(-(2**31) + 1000, 2**31 - 1) for _ in range(RANDOM_VALUES // 2)]
    small = [rng.randint(-5000, 5000) for _ in range(RANDOM_VALUES // 2)]
    return edges + spread + small


def _longs(rng: random.Random) -> list[int]:
    edges = [0, 1, -1, 34, -34, 2**31, -(2**31) - 1, 2**63 - 1, -(2**63) + 10**7]
    spread = [rng.randint(-(2**63) + 10**7, 2**63 - 1) for _ in range(RANDOM_VALUES // 2)]
    small = [rng.randint(-10**6, 10**6) for _ in range(RANDOM_VALUES // 2)]
    return edges + spread + small


_EXACT = Context(prec=100)  # the default context keeps only 28 digits; decimal(38, s) needs 38


def _decimals(precision: int, scale: int) -> Callable[[random.Random], list[Decimal]]:
    top = 10**precision - 1

    def make(rng: random.Random) -> list[Decimal]:
        unscaled = [0, 1, -1, 1420, -1420, top, -top + 1000]
        unscaled += [rng.randint(-top + 1000, top) for _ in range(RANDOM_VALUES // 2)]
        unscaled += [rng.randint(-10**4, 10**4) for _ in range(RANDOM_VALUES // 2)]
        return [Decimal(u).scaleb(-scale, _EXACT) for u in unscaled]

    return make


def _dates(rng: random.Random) -> list[int]:
    edges = [0, -1, 1, -365, -366, 365, 17_486, -719_162, 2_932_896]  # 2017-11-16, 0001, 9999
    return edges + [rng.randint(DAYS_1000_01_01, DAYS_3000_01_01) for _ in range(RANDOM_VALUES)]


def _timestamps(rng: random.Random) -> list[int]:
    edges = [0, -1, 1, MICROS_PER_HOUR, -MICROS_PER_HOUR, -MICROS_PER_HOUR - 1, MICROS_PER_DAY,
             -MICROS_PER_DAY, -MICROS_PER_DAY + 1, 1_510_871_468_000_000, -62_135_596_800_000_000]
    low, high = DAYS_1000_01_01 * MICROS_PER_DAY, DAYS_3000_01_01 * MICROS_PER_DAY
    near_epoch = [rng.randint(-3 * MICROS_PER_DAY, 3 * MICROS_PER_DAY) for _ in range(50)]
    return edges + near_epoch + [rng.randint(low, high) for _ in range(RANDOM_VALUES)]


_ALPHABET = (
    [chr(c) for c in range(0x20, 0x7F)]
    + list("éßøÆœ€ñ")
    + list("中文字符漢")
    + ["\U0001F600", "\U0001F9CA", "\U00010348", "\U0010FFFD"]  # beyond the BMP: 4-byte UTF-8
)


def _strings(rng: random.Random) -> list[str]:
    edges = ["", "a", "iceberg", "\U0001F600\U0001F600\U0001F600", "ab\U0001F9CAcd", "中文字符"]
    made = ["".join(rng.choices(_ALPHABET, k=rng.randint(0, 12))) for _ in range(RANDOM_VALUES)]
    return edges + made


def _binaries(rng: random.Random) -> list[bytes]:
    edges = [b"", b"\x00", b"\x00\x01\x02\x03", b"\xff" * 9]
    made = [rng.randbytes(rng.randint(0, 12)) for _ in range(RANDOM_VALUES)]
    return edges + made


def _bucket(*extra: str) -> list[str]:
    return [f"bucket[{n}]" for n in BUCKETS] + list(extra)


CASES = [
    Case("int", INT, "int", "r", int, _ints,
         _bucket("truncate[1]", "truncate[3]", "truncate[10]", "truncate[1000]")),
    Case("long", LONG, "bigint", "r", int, _longs,
         _bucket("truncate[1]", "truncate[7]", "truncate[1000000]")),
    Case("decimal(9,2)", DecimalType(9, 2), "string", "CAST(r AS DECIMAL(9,2))",
         lambda d: format(d, "f"), _decimals(9, 2),
         _bucket("truncate[1]", "truncate[3]", "truncate[100]")),
    Case("decimal(18,0)", DecimalType(18, 0), "string", "CAST(r AS DECIMAL(18,0))",
         lambda d: format(d, "f"), _decimals(18, 0), _bucket("truncate[10]", "truncate[7]")),
    Case("decimal(38,10)", DecimalType(38, 10), "string", "CAST(r AS DECIMAL(38,10))",
         lambda d: format(d, "f"), _decimals(38, 10), _bucket("truncate[1000]", "truncate[3]")),
    Case("date", DATE, "int", "date_from_unix_date(r)", int, _dates,
         _bucket("year", "month", "day")),
    Case("timestamp", TIMESTAMPTZ, "bigint", "timestamp_micros(r)", int, _timestamps,
         _bucket("year", "month", "day", "hour")),
    Case("timestamp_ntz", TIMESTAMP, "bigint", "CAST(timestamp_micros(r) AS TIMESTAMP_NTZ)",
         int, _timestamps, _bucket("year", "month", "day", "hour")),
    Case("string", STRING, "string", "r", str, _strings,
         _bucket("truncate[1]", "truncate[2]", "truncate[5]")),
    Case("binary", BINARY, "string", "unhex(r)", lambda b: b.hex(), _binaries,
         _bucket("truncate[1]", "truncate[3]", "truncate[8]")),
]


def _spark_call(transform: str) -> str:
    """The reference's SQL for one icectl transform string, applied to column `v`."""
    fn = f"{CATALOG}.system"
    if transform.startswith("bucket["):
        return f"{fn}.bucket({transform[7:-1]}, v)"
    if transform.startswith("truncate["):
        return f"{fn}.truncate({transform[9:-1]}, v)"
    if transform == "day":  # the reference's days() returns a DATE; compare its day number
        return f"unix_date({fn}.days(v))"
    return f"{fn}.{transform}s(v)"


def _normalise(value: Any) -> Any:
    return bytes(value) if isinstance(value, bytearray) else value


def reference_results(spark: Any, case: Case, values: list[Any]) -> list[tuple]:
    """Rows (value index, result per transform) computed by Iceberg Java through Spark."""
    from pyspark.sql.types import LongType, StructField, StructType, _parse_datatype_string

    schema = StructType(
        [StructField("i", LongType(), False),
         StructField("r", _parse_datatype_string(case.spark_raw_type), True)]
    )
    rows = [(i, None if v is None else case.to_raw(v)) for i, v in enumerate(values)]
    spark.createDataFrame(rows, schema).createOrReplaceTempView("transform_input")
    calls = ", ".join(_spark_call(t) for t in case.transforms)
    query = (
        f"SELECT i, {calls} FROM (SELECT i, {case.to_spark} AS v FROM transform_input) "
        "ORDER BY i"
    )
    return [tuple(_normalise(x) for x in row) for row in spark.sql(query).collect()]


@pytest.mark.parametrize("case", CASES, ids=[c.label for c in CASES])
def test_transforms_match_the_reference(spark, case: Case):
    rng = random.Random(f"{SEED}-{case.label}")
    values = case.values(rng) + [None]
    expected_rows = reference_results(spark, case, values)
    assert [row[0] for row in expected_rows] == list(range(len(values)))

    transforms = [parse_transform(t) for t in case.transforms]
    mismatches = []
    for value, row in zip(values, expected_rows):
        for transform, expected in zip(transforms, row[1:]):
            actual = transform.apply(value, case.iceberg_type)
            if actual != expected or type(actual) is not type(expected):
                mismatches.append(f"{transform}({value!r}) = {actual!r}, reference {expected!r}")
    assert not mismatches, f"{len(mismatches)} mismatches, e.g.:\n" + "\n".join(mismatches[:15])


# (The random cases above stay clear of the minimum.) Integer truncation near it overflows in the reference, which computes
# v - (((v % W) + W) % W) in Java int/long arithmetic: the result wraps to the other end of the
# range. Partition values Java writes for such rows carry the wrapped value, so icectl must
# compute the same one to agree on partitions.
@pytest.mark.parametrize(
    ("iceberg_type", "spark_type", "value", "width"),
    [
        (INT, "int", -(2**31), 3),
        (INT, "int", -(2**31) + 1, 10),
        (LONG, "bigint", -(2**63), 3),
        (LONG, "bigint", -(2**63) + 5, 1000),
    ],
)
def test_integer_truncate_at_type_minimum_matches_the_reference(
    spark, iceberg_type, spark_type, value, width
):
    (expected,) = spark.sql(
        f"SELECT {CATALOG}.system.truncate({width}, CAST({value} AS {spark_type}))"
    ).collect()[0]
    assert parse_transform(f"truncate[{width}]").apply(value, iceberg_type) == expected
