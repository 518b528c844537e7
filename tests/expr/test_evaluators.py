"""The reference's pruning rules, case by case, with the reasons shown by plan --explain."""

from __future__ import annotations

import math
import struct

import pytest

from icectl.expr.evaluators import (
    ManifestEvaluator,
    MetricsEvaluator,
    ResidualEvaluator,
    StrictMetricsEvaluator,
    evaluate_row,
)
from icectl.expr.binding import bind
from icectl.expr.expressions import FALSE, TRUE
from icectl.expr.parser import parse_filter
from icectl.expr.projection import inclusive_projection, strict_projection
from icectl.spec.manifests import DataFile, FieldSummary, ManifestFile
from icectl.spec.partitioning import PartitionField, PartitionSpec
from icectl.spec.schema import Schema
from icectl.spec.transforms import DAY, IDENTITY, MONTH, VOID, BucketTransform, TruncateTransform
from icectl.spec.types import (
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIMESTAMPTZ,
    NestedField,
)
from icectl.spec.values import to_bytes

SCHEMA = Schema((
    NestedField(1, "id", LONG),
    NestedField(2, "x", DOUBLE),
    NestedField(3, "s", STRING),
    NestedField(4, "ts", TIMESTAMPTZ),
    NestedField(5, "f", FLOAT),
))


def datafile(records: int = 10, **kw: object) -> DataFile:
    return DataFile(0, "f.parquet", "parquet", (), records, 100, **kw)  # type: ignore[arg-type]


def bounds(fid: int, t: object, lo: object, hi: object) -> dict:
    out = {}
    if lo is not None:
        out["lower_bounds"] = {fid: to_bytes(t, lo)}  # type: ignore[arg-type]
    if hi is not None:
        out["upper_bounds"] = {fid: to_bytes(t, hi)}  # type: ignore[arg-type]
    return out


def metrics(text: str, df: DataFile) -> tuple[bool, str]:
    return MetricsEvaluator(parse_filter(text), SCHEMA).eval(df)


# -- file metrics ----------------------------------------------------------------------------


def test_empty_files_never_match() -> None:
    assert metrics("id is null", datafile(0)) == (False, "the file has no records")
    assert metrics("true", datafile(0))[0] is False


@pytest.mark.parametrize("text, kept, reason", [
    ("id < 500", False, "lower bound of id (1000) >= 500"),
    ("id <= 999", False, "lower bound of id (1000) > 999"),
    ("id <= 1000", True, "column metrics may match"),
    ("id > 2000", False, "upper bound of id (2000) <= 2000"),
    ("id >= 2001", False, "upper bound of id (2000) < 2001"),
    ("id = 2500", False, "upper bound of id (2000) < 2500"),
    ("id = 1500", True, "column metrics may match"),
    ("id in (1, 2, 3)", False, "lower bound of id (1000) > all of (1, 2, 3)"),
    ("id in (1, 2500)", False, "no value of (1, 2500) within the bounds of id [1000, 2000]"),
    ("id != 1500", True, "column metrics may match"),
    ("id not in (1000, 2000)", True, "column metrics may match"),
    ("id is null", False, "id has no nulls"),
    ("id < 500 or id > 2000", False,
     "lower bound of id (1000) >= 500; and upper bound of id (2000) <= 2000"),
])
def test_bounds(text: str, kept: bool, reason: str) -> None:
    df = datafile(value_counts={1: 10}, null_value_counts={1: 0}, **bounds(1, LONG, 1000, 2000))
    assert metrics(text, df) == (kept, reason)


def test_in_with_more_than_200_values_is_not_pruned() -> None:
    df = datafile(**bounds(1, LONG, 1000, 2000))
    many = ", ".join(str(i) for i in range(201))
    assert metrics(f"id in ({many})", df)[0] is True
    few = ", ".join(str(i) for i in range(200))
    assert metrics(f"id in ({few})", df)[0] is False


def test_all_null_and_all_nan_columns() -> None:
    all_null = datafile(value_counts={2: 10}, null_value_counts={2: 10})
    for text in ("x < 1", "x = 1", "x in (1, 2)", "x is not null", "x is nan"):
        assert metrics(text, all_null) == (False, f"x is all {'null'}"), text
    assert metrics("x is null", all_null)[0] is True
    assert metrics("x != 1", all_null)[0] is True  # notEq never prunes
    all_nan = datafile(value_counts={2: 10}, null_value_counts={2: 0}, nan_value_counts={2: 10})
    for text in ("x < 1", "x >= 1", "x = 1", "x is not nan"):
        assert metrics(text, all_nan) == (False, "x is all NaN"), text
    assert metrics("x is nan", all_nan)[0] is True
    no_nan = datafile(value_counts={2: 10}, nan_value_counts={2: 0})
    assert metrics("x is nan", no_nan) == (False, "x has no NaN values")


def test_nan_lower_bound_is_unreliable() -> None:
    df = datafile(value_counts={2: 10}, null_value_counts={2: 0}, nan_value_counts={2: 2},
                  **bounds(2, DOUBLE, math.nan, 5.0))
    for text in ("x < -100", "x = -100", "x in (-100, -50)", "x <= -100"):
        assert metrics(text, df)[0] is True, text
    # the upper bound is still used, also by = (the reference's eq skips only the lower bound)
    assert metrics("x > 5", df) == (False, "upper bound of x (5.0) <= 5.0")
    assert metrics("x = 6", df)[0] is False


def test_missing_metrics_might_match() -> None:
    df = datafile()
    for text in ("id < 1", "id is null", "id is not null", "x is nan", "s like 'a%'",
                 "s not like 'a%'"):
        assert metrics(text, df)[0] is True, text


def test_starts_with_compares_bounds_truncated_to_the_prefix() -> None:
    df = datafile(value_counts={3: 10}, null_value_counts={3: 0}, **bounds(3, STRING, "abc", "abf"))
    assert metrics("s like 'ab%'", df)[0] is True
    assert metrics("s like 'abd%'", df)[0] is True
    assert metrics("s like 'abcdef%'", df)[0] is True
    assert metrics("s like 'abg%'", df) == (False, "upper bound of s (abf) < prefix abg")
    assert metrics("s like 'aa%'", df) == (False, "lower bound of s (abc) > prefix aa")
    # not starts with prunes only when both bounds start with the prefix and there are no nulls
    assert metrics("s not like 'ab%'", df) == (False, "bounds of s (abc, abf) both start with ab")
    assert metrics("s not like 'abc%'", df)[0] is True
    with_nulls = datafile(value_counts={3: 10}, null_value_counts={3: 1},
                          **bounds(3, STRING, "abc", "abf"))
    assert metrics("s not like 'ab%'", with_nulls)[0] is True


def test_truncated_string_upper_bound() -> None:
    # values "abcz..." truncated to 3 code points: upper bound "abd" (last code point + 1)
    df = datafile(**bounds(3, STRING, "abc", "abd"))
    assert metrics("s = 'abczzz'", df)[0] is True
    assert metrics("s > 'abczzz'", df)[0] is True
    assert metrics("s > 'abd'", df)[0] is False
    # code point order, not UTF-16: U+FFFF < U+1F600
    df2 = datafile(**bounds(3, STRING, "\uffff", "\uffff"))
    assert metrics("s >= '\U0001f600'", df2)[0] is False


def test_bounds_written_before_a_type_promotion() -> None:
    # int -> long and float -> double: 4-byte bounds read through the current type
    df = datafile(lower_bounds={1: struct.pack("<i", 10), 2: struct.pack("<f", 1.5)},
                  upper_bounds={1: struct.pack("<i", 20), 2: struct.pack("<f", 2.5)})
    assert metrics("id > 20", df) == (False, "upper bound of id (20) <= 20")
    assert metrics("id = 15", df)[0] is True
    assert metrics("x < 1.5", df) == (False, "lower bound of x (1.5) >= 1.5")


def test_float_order_matches_the_reference() -> None:
    # -0.0 sorts before 0.0
    df = datafile(value_counts={5: 3}, null_value_counts={5: 0}, nan_value_counts={5: 0},
                  **bounds(5, FLOAT, 0.0, 1.0))
    assert metrics("f < 0.0", df)[0] is False
    assert metrics("f <= -0.0", df)[0] is False


def test_strict_metrics() -> None:
    df = datafile(value_counts={1: 10}, null_value_counts={1: 0}, **bounds(1, LONG, 1000, 2000))
    strict = lambda text: StrictMetricsEvaluator(parse_filter(text), SCHEMA).eval(df)  # noqa: E731
    assert strict("id >= 1000") and strict("id < 2001") and strict("id != 5")
    assert not strict("id < 2000") and not strict("id = 1500") and not strict("id is null")
    assert strict("id is not null")
    assert not StrictMetricsEvaluator(parse_filter("id >= 0"), SCHEMA).eval(datafile())


@pytest.mark.parametrize("text", ["x != 5.0", "x not in (5.0, 6.0)", "x < 100.0", "x >= 0.0",
                                  "not (x = 5.0)", "x > -1.0 or x not in (7.0, 8.0)"])
@pytest.mark.parametrize("nulls, nans", [(1, 0), (0, 1), (None, 0), (0, None), (10, 0), (0, 10)])
def test_strict_metrics_never_claim_all_rows_with_nulls_or_nan(text: str, nulls: object,
                                                                nans: object) -> None:
    """Bounds [1, 2] prove these predicates for every non-null, non-NaN value; a null or NaN
    row (or counts that are unknown) must leave the file to be read (the traps of
    apache/iceberg-python#3498: all-null / all-NaN / partly null columns, missing counts)."""
    counts: dict = {"value_counts": {2: 10}}
    if nulls is not None:
        counts["null_value_counts"] = {2: nulls}
    if nans is not None:
        counts["nan_value_counts"] = {2: nans}
    lo_hi = {} if 10 in (nulls, nans) else bounds(2, DOUBLE, 1.0, 2.0)
    df = datafile(**counts, **lo_hi)
    assert not StrictMetricsEvaluator(parse_filter(text), SCHEMA).eval(df)
    clean = datafile(value_counts={2: 10}, null_value_counts={2: 0}, nan_value_counts={2: 0},
                     **bounds(2, DOUBLE, 1.0, 2.0))
    assert StrictMetricsEvaluator(parse_filter(text), SCHEMA).eval(clean)


def test_strict_metrics_nan_bounds_and_null_only_columns() -> None:
    strict = lambda text, df: StrictMetricsEvaluator(parse_filter(text), SCHEMA).eval(df)  # noqa: E731
    # a NaN upper bound (a writer that let NaN in) proves nothing
    nan_hi = datafile(value_counts={2: 2}, null_value_counts={2: 0}, nan_value_counts={2: 1},
                      **bounds(2, DOUBLE, 1.0, math.nan))
    assert not strict("x not in (1.0, 2.0)", nan_hi) and not strict("x < 5.0", nan_hi)
    all_null = datafile(value_counts={2: 10}, null_value_counts={2: 10}, nan_value_counts={2: 0})
    assert strict("x is null", all_null) and strict("x is not nan", all_null)
    assert not strict("x != 5.0", all_null) and not strict("x not in (5.0, 6.0)", all_null)
    all_nan = datafile(value_counts={2: 10}, null_value_counts={2: 0}, nan_value_counts={2: 10})
    assert strict("x is nan", all_nan) and not strict("x < 5.0", all_nan)
    assert not strict("x is not nan", all_nan) and not strict("not (x < 5.0)", all_nan)
    # -0.0 sorts before 0.0: bounds [-0.0, 0.0] prove neither `x != 0.0` nor `x < 0.0`
    zeros = datafile(3, value_counts={2: 3}, null_value_counts={2: 0}, nan_value_counts={2: 0},
                     **bounds(2, DOUBLE, -0.0, 0.0))
    assert not strict("x != 0.0", zeros) and not strict("x < 0.0", zeros)
    assert strict("x <= 0.0", zeros) and strict("x >= -0.0", zeros)


@pytest.mark.parametrize("text, residual", [
    # every row of a NaN partition is NaN in x: no comparison holds; != and not in do
    ("x > 5.0", FALSE), ("x < 5.0", FALSE), ("x >= -1.0", FALSE), ("not (x < 5.0)", FALSE),
    ("x = 5.0", FALSE), ("x != 5.0", TRUE), ("x not in (5.0, 6.0)", TRUE), ("x is nan", TRUE),
    ("x is not nan", FALSE), ("x is null", FALSE),
])
def test_residuals_on_nan_partitions_are_sound(text: str, residual: object) -> None:
    spec = PartitionSpec(0, (PartitionField(2, 1000, "x", IDENTITY),))
    ev = ResidualEvaluator(spec, parse_filter(text), SCHEMA)
    assert ev.residual_for((math.nan,)) is residual


@pytest.mark.parametrize("transform", [BucketTransform(4), TruncateTransform(10), IDENTITY])
def test_residuals_on_null_partitions_of_every_transform(transform: object) -> None:
    spec = PartitionSpec(0, (PartitionField(1, 1000, "p", transform),))  # type: ignore[arg-type]
    for text in ("id != 5", "id not in (5, 6)", "not (id = 5)", "id < 5", "id <= 5"):
        assert ResidualEvaluator(spec, parse_filter(text), SCHEMA).residual_for((None,)) is FALSE
    assert ResidualEvaluator(spec, parse_filter("id is null"), SCHEMA).residual_for((None,)) is TRUE
    # a void field is null for every file: it proves nothing
    void = PartitionSpec(0, (PartitionField(1, 1000, "p", VOID),))
    assert str(ResidualEvaluator(void, parse_filter("id != 5"), SCHEMA).residual_for((None,))) \
        == "id != 5"


# -- manifests --------------------------------------------------------------------------------

DAY_SPEC = PartitionSpec(0, (PartitionField(4, 1000, "ts_day", DAY),
                             PartitionField(3, 1001, "s", IDENTITY),
                             PartitionField(2, 1002, "x", IDENTITY)))
PTYPE = DAY_SPEC.partition_type(SCHEMA)


def manifest_eval(text: str, *summaries: FieldSummary) -> tuple[bool, str]:
    full = list(summaries) + [FieldSummary(True)] * (3 - len(summaries))
    expr = inclusive_projection(parse_filter(text), DAY_SPEC, SCHEMA)
    return ManifestEvaluator(expr, PTYPE).eval(ManifestFile("m", 1, 0, partitions=tuple(full)))


def days(lo: int | None, hi: int | None, contains_null: bool = False) -> FieldSummary:
    return FieldSummary(contains_null, None, None if lo is None else to_bytes(DATE, lo),
                        None if hi is None else to_bytes(DATE, hi))


def test_manifest_day_ranges() -> None:
    jan1, jan2 = 19723, 19724
    assert manifest_eval("ts >= '2024-01-02 00:00:00'", days(19000, jan1)) == (
        False, "partition ts_day: upper bound 2024-01-01 < 2024-01-02")
    assert manifest_eval("ts >= '2024-01-02 00:00:00'", days(19000, jan2))[0] is True
    assert manifest_eval("ts < '2024-01-02 00:00:00'", days(jan2, jan2)) == (
        False, "partition ts_day: lower bound 2024-01-02 > 2024-01-01")
    assert manifest_eval("true", days(0, 0)) == (True, "no filter on partitions")
    assert ManifestEvaluator(TRUE, PTYPE).eval(ManifestFile("m", 1, 0))[0] is True


def test_manifest_null_lower_bound_means_all_null() -> None:
    all_null = days(None, None, contains_null=True)
    for text in ("ts < '2024-01-02 00:00:00'", "ts = '2024-01-02 00:00:00'", "ts is not null"):
        assert manifest_eval(text, all_null) == (False, "partition ts_day: all values are null")
    assert manifest_eval("ts is null", all_null)[0] is True
    assert manifest_eval("ts is null", days(1, 2)) == (False, "partition ts_day: no null values")
    assert manifest_eval("s like 'a%'", days(1, 2), FieldSummary(True)) == (
        False, "partition s: all values are null")


def test_manifest_not_eq_and_not_in_never_prune() -> None:
    one = FieldSummary(False, None, to_bytes(STRING, "a"), to_bytes(STRING, "a"))
    assert manifest_eval("s != 'a'", days(1, 2), one)[0] is True
    assert manifest_eval("s not in ('a', 'b')", days(1, 2), one)[0] is True
    assert manifest_eval("s = 'b'", days(1, 2), one) == (False, "partition s: upper bound a < b")
    assert manifest_eval("s = ''", days(1, 2), one) == (False, "partition s: lower bound a > ")


def test_manifest_in_and_starts_with() -> None:
    ab = FieldSummary(False, None, to_bytes(STRING, "abc"), to_bytes(STRING, "abf"))
    assert manifest_eval("s in ('x', 'y')", days(1, 2), ab)[0] is False
    assert manifest_eval("s in ('a', 'abd')", days(1, 2), ab)[0] is True
    many = ", ".join(f"'z{i}'" for i in range(201))
    assert manifest_eval(f"s in ({many})", days(1, 2), ab)[0] is True
    assert manifest_eval("s like 'abz%'", days(1, 2), ab) == (
        False, "partition s: upper bound abf < prefix abz")
    assert manifest_eval("s like 'ab%'", days(1, 2), ab)[0] is True
    assert manifest_eval("s not like 'ab%'", days(1, 2), ab)[0] is False
    assert manifest_eval("s not like 'abc%'", days(1, 2), ab)[0] is True


def test_manifest_nan_rules() -> None:
    d = days(1, 2)
    no_nan = FieldSummary(False, False, to_bytes(DOUBLE, 1.0), to_bytes(DOUBLE, 2.0))
    assert manifest_eval("x is nan", d, FieldSummary(False), no_nan) == (
        False, "partition x: no NaN values")
    unknown = FieldSummary(False, None, to_bytes(DOUBLE, 1.0), to_bytes(DOUBLE, 2.0))
    assert manifest_eval("x is nan", d, FieldSummary(False), unknown)[0] is True
    only_nan = FieldSummary(False, True, None, None)
    assert manifest_eval("x is not nan", d, FieldSummary(False), only_nan) == (
        False, "partition x: all values are NaN")
    # null lower bound on a float field with NaN present: not all null
    null_and_nan = FieldSummary(True, True, None, None)
    assert manifest_eval("x is not null", d, FieldSummary(False), null_and_nan)[0] is True
    null_no_nan = FieldSummary(True, False, None, None)
    assert manifest_eval("x is not null", d, FieldSummary(False), null_no_nan)[0] is False


# -- residuals --------------------------------------------------------------------------------


def test_residuals_by_partition() -> None:
    spec = PartitionSpec(0, (PartitionField(4, 1000, "ts_day", DAY),))
    ev = ResidualEvaluator(spec, parse_filter("ts >= '2024-01-02 12:00:00' and id = 5"), SCHEMA)
    assert str(ev.residual_for((19725,))) == "id = 5"
    assert ev.residual_for((19723,)) is FALSE
    assert str(ev.residual_for((19724,))) == (
        "ts >= timestamptz '2024-01-02T12:00:00+00:00' and id = 5")
    unpartitioned = ResidualEvaluator(PartitionSpec(0, ()), parse_filter("id = 5"), SCHEMA)
    assert str(unpartitioned.residual_for(())) == "id = 5"


@pytest.mark.parametrize("text, residual", [
    # every row of a null partition is null in ``s``: only ``is null`` / ``is not nan`` hold.
    # (the reference's comparator sorts null first and says true for the first six: unsound)
    ("s < 'b'", FALSE), ("s <= 'b'", FALSE), ("s != 'b'", FALSE), ("s not in ('a', 'b')", FALSE),
    ("not (s = 'b')", FALSE), ("s not like 'a%'", FALSE),
    ("s > 'b'", FALSE), ("s = 'b'", FALSE), ("s in ('a', 'b')", FALSE), ("s like 'a%'", FALSE),
    ("s is null", TRUE), ("s is not null", FALSE), ("not (s is not null)", TRUE),
    ("s < 'b' or s is null", TRUE), ("s != 'b' and s is null", FALSE),
])
def test_residuals_on_null_partitions_are_sound(text: str, residual: object) -> None:
    spec = PartitionSpec(0, (PartitionField(3, 1000, "s", IDENTITY),))
    assert ResidualEvaluator(spec, parse_filter(text), SCHEMA).residual_for((None,)) is residual


def test_residual_needs_all_partition_fields_of_a_column() -> None:
    spec = PartitionSpec(0, (PartitionField(3, 1000, "s_trunc", TruncateTransform(2)),
                             PartitionField(3, 1001, "s_bucket", BucketTransform(4))))
    ev = ResidualEvaluator(spec, parse_filter("s = 'abc'"), SCHEMA)
    bucket = BucketTransform(4).apply("abc", STRING)
    assert str(ev.residual_for(("ab", bucket))) == "s = 'abc'"
    assert ev.residual_for(("ab", (bucket + 1) % 4)) is FALSE
    assert ev.residual_for(("zz", bucket)) is FALSE


# -- rows and projections ----------------------------------------------------------------------


def test_row_semantics() -> None:
    e = lambda text: bind(parse_filter(text), SCHEMA)  # noqa: E731
    assert evaluate_row(e("x > 8.5"), {2: 9.0})
    assert not evaluate_row(e("x > 8.5"), {2: math.nan})  # NaN compares false
    assert evaluate_row(e("x != 8.5"), {2: math.nan})
    assert not evaluate_row(e("id != 1"), {})  # nulls match no comparison
    assert not evaluate_row(e("id not in (1, 2)"), {1: None})
    assert not evaluate_row(e("not (id = 1)"), {1: None})
    assert evaluate_row(e("id is null"), {1: None})
    assert evaluate_row(e("s like 'ab%'"), {"s": "abc"})  # by name too


def test_projection_of_pre_1970_values_is_widened_like_the_reference() -> None:
    spec = PartitionSpec(0, (PartitionField(4, 1000, "ts_month", MONTH),))
    inc = inclusive_projection(parse_filter("ts = '1969-11-15 00:00:00'"), spec, SCHEMA)
    assert str(inc) == "ts_month in (-2, -1)"
    inc = inclusive_projection(parse_filter("ts < '1969-11-15 00:00:00'"), spec, SCHEMA)
    assert str(inc) == "ts_month <= -1"
    strict = strict_projection(parse_filter("ts > '1969-11-15 00:00:00'"), spec, SCHEMA)
    assert str(strict) == "ts_month > -1"
    strict = strict_projection(parse_filter("ts != '1969-11-15 00:00:00'"), spec, SCHEMA)
    assert str(strict) == "ts_month not in (-2, -1)"
    # day of a date is not widened
    dspec = PartitionSpec(0, (PartitionField(1, 1000, "d", DAY),))
    dschema = Schema((NestedField(1, "d", DATE),))
    assert str(inclusive_projection(parse_filter("d = '1969-12-31'"), dspec, dschema)) == (
        "d = date '1969-12-31'")


def test_projection_combines_fields_of_one_column() -> None:
    schema = Schema((NestedField(1, "i", INT),))
    spec = PartitionSpec(0, (PartitionField(1, 1000, "b", BucketTransform(4)),
                             PartitionField(1, 1001, "t", TruncateTransform(10))))
    assert str(inclusive_projection(parse_filter("i = 34"), spec, schema)) == "b = 3 and t = 30"
    assert str(strict_projection(parse_filter("i != 34"), spec, schema)) == "b != 3 or t != 30"
    assert strict_projection(parse_filter("i = 34"), spec, schema) is FALSE
    assert inclusive_projection(parse_filter("i != 34"), spec, schema) is TRUE
