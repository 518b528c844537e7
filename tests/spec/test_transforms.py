"""Transforms: spec vectors (Appendix B hashing, truncate table), time transforms around the
epoch, validity per source type, human strings, and parsing/rendering of transform strings."""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyiceberg.transforms import BucketTransform as PyBucket
from pyiceberg.transforms import TruncateTransform as PyTruncate
from pyiceberg.types import DecimalType as PyDecimal
from pyiceberg.types import LongType, StringType

from icectl.errors import InvalidInput
from icectl.spec import transforms as tr
from icectl.spec.transforms import (
    DAY,
    HOUR,
    IDENTITY,
    MONTH,
    VOID,
    YEAR,
    BucketTransform,
    TruncateTransform,
    UnknownTransform,
    civil_to_days,
    days_to_civil,
    murmur3_hash,
    parse_transform,
)
from icectl.spec.types import (
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMP_NS,
    TIMESTAMPTZ,
    TIMESTAMPTZ_NS,
    UNKNOWN,
    UUID,
    VARIANT,
    DecimalType,
    FixedType,
    GeographyType,
    GeometryType,
    ListType,
    NestedField,
    StructType,
)

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def days_of(d: dt.date) -> int:
    return (d - dt.date(1970, 1, 1)).days


def micros_of(t: dt.datetime) -> int:
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.timezone.utc)
    delta = t - EPOCH
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


TS = micros_of(dt.datetime(2017, 11, 16, 22, 31, 8))

# Spec Appendix B test vectors: (source type, value, expected 32-bit hash)
HASH_VECTORS = [
    (INT, 34, 2017239379),
    (LONG, 34, 2017239379),
    (DecimalType(9, 2), Decimal("14.20"), -500754589),
    (DATE, days_of(dt.date(2017, 11, 16)), -653330422),
    (TIME, (22 * 3600 + 31 * 60 + 8) * 1_000_000, -662762989),
    (TIMESTAMP, TS, -2047944441),
    (TIMESTAMPTZ, micros_of(dt.datetime(2017, 11, 16, 14, 31, 8,
                                        tzinfo=dt.timezone(dt.timedelta(hours=-8)))), -2047944441),
    (TIMESTAMP, TS + 1, -1207196810),
    (TIMESTAMP_NS, TS * 1000, -2047944441),
    (TIMESTAMPTZ_NS, TS * 1000, -2047944441),
    (TIMESTAMP_NS, TS * 1000 + 999, -2047944441),  # nanos are dropped before hashing
    (TIMESTAMPTZ_NS, (TS + 1) * 1000 + 1, -1207196810),
    (STRING, "iceberg", 1210000089),
    (UUID, uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"), 1488055340),
    (FixedType(4), b"\x00\x01\x02\x03", -188683207),
    (BINARY, b"\x00\x01\x02\x03", -188683207),
    # not valid for bucketing, but the spec defines their hashes
    (BOOLEAN, True, 1392991556),
    (FLOAT, 1.0, -142385009),
    (FLOAT, 0.0, 1669671676),
    (FLOAT, -0.0, 1669671676),
    (DOUBLE, 1.0, -142385009),
    (DOUBLE, -0.0, 1669671676),
]


@pytest.mark.parametrize(("source_type", "value", "expected"), HASH_VECTORS,
                         ids=[f"{t}-{v!r}" for t, v, _ in HASH_VECTORS])
def test_appendix_b_hash_vectors(source_type, value, expected):
    assert murmur3_hash(value, source_type) == expected


@pytest.mark.parametrize(("source_type", "value", "expected"), HASH_VECTORS[:16],
                         ids=[f"{t}-{v!r}" for t, v, _ in HASH_VECTORS[:16]])
def test_bucket_uses_positive_hash_mod_n(source_type, value, expected):
    for n in (1, 2, 16, 100, 2**31 - 1):
        assert BucketTransform(n).apply(value, source_type) == (expected & 0x7FFFFFFF) % n
    assert BucketTransform(16).apply(None, source_type) is None


def test_decimal_hash_uses_the_type_scale_not_the_literal_exponent():
    # 14.2 is 14.20 in a decimal(9, 2) column: same unscaled value 1420
    assert murmur3_hash(Decimal("14.2"), DecimalType(9, 2)) == -500754589
    assert BucketTransform(7).bind(DecimalType(9, 2))(Decimal("14.2")) == \
        BucketTransform(7).apply(Decimal("14.20"))


def test_int_and_long_hash_alike_for_all_values():
    for v in (0, -1, 1, 2**31 - 1, -(2**31), 123456789):
        assert murmur3_hash(v, INT) == murmur3_hash(v, LONG)


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1), st.integers(1, 10_000))
def test_bucket_matches_pyiceberg_for_longs(v, n):
    assert BucketTransform(n).apply(v, LONG) == PyBucket(n).transform(LongType())(v)


@given(st.text(), st.integers(1, 10_000))
def test_bucket_matches_pyiceberg_for_strings(v, n):
    try:
        v.encode("utf-8")
    except UnicodeEncodeError:
        return  # lone surrogates are not valid strings
    assert BucketTransform(n).apply(v, STRING) == PyBucket(n).transform(StringType())(v)


@given(st.decimals(allow_nan=False, allow_infinity=False, places=3,
                   min_value=Decimal("-1e20"), max_value=Decimal("1e20")),
       st.integers(1, 1000))
def test_bucket_matches_pyiceberg_for_decimals(v, n):
    v = v.quantize(Decimal("0.001"))
    assert BucketTransform(n).apply(v, DecimalType(38, 3)) == \
        PyBucket(n).transform(PyDecimal(38, 3))(v)


# ----------------------------------------------------------------------------------------------
# truncate (spec table)


@pytest.mark.parametrize(("width", "source_type", "value", "expected"), [
    (10, INT, 1, 0),
    (10, INT, -1, -10),
    (10, INT, 0, 0),
    (10, INT, 10, 10),
    (10, INT, -10, -10),
    (10, INT, -11, -20),
    (10, LONG, 1, 0),
    (10, LONG, -1, -10),
    (3, LONG, 2**63 - 1, 2**63 - 1 - ((2**63 - 1) % 3)),
    (50, DecimalType(9, 2), Decimal("10.65"), Decimal("10.50")),
    (10, DecimalType(9, 2), Decimal("12.34"), Decimal("12.30")),
    (10, DecimalType(9, 2), Decimal("-0.05"), Decimal("-0.10")),
    (10, DecimalType(9, 2), Decimal("12.3"), Decimal("12.30")),
    (3, STRING, "iceberg", "ice"),
    (3, STRING, "ab", "ab"),
    # code points, not UTF-8 bytes or UTF-16 units
    (2, STRING, "\u00e9\u00e9\u00e9", "\u00e9\u00e9"),
    (1, STRING, "\U0001F600abc", "\U0001F600"),
    (3, BINARY, b"\x01\x02\x03\x04\x05", b"\x01\x02\x03"),
    (3, BINARY, b"\x01", b"\x01"),
])
def test_truncate_vectors(width, source_type, value, expected):
    out = TruncateTransform(width).apply(value, source_type)
    assert out == expected
    if isinstance(expected, Decimal):
        assert str(out) == str(expected)  # keeps the column's scale
    assert TruncateTransform(width).apply(None, source_type) is None


@given(st.integers(min_value=-(2**31) + 1000, max_value=2**31 - 1), st.integers(1, 1000))
def test_truncate_int_law(v, w):
    out = TruncateTransform(w).apply(v, INT)
    assert out <= v < out + w and out % w == 0


@pytest.mark.parametrize(("source_type", "value", "width", "expected"), [
    # The reference computes in Java int/long arithmetic, which wraps near the minimum.
    (INT, -(2**31), 3, 2**31 - 1),
    (INT, -(2**31) + 1, 10, 2**31 - 2),
    (INT, -(2**31), 2, -(2**31)),  # divisible: no wrap
    (LONG, -(2**63), 3, 2**63 - 1),
    (LONG, -(2**31), 3, -(2**31) - 1),  # the same value as a long does not wrap
])
def test_truncate_wraps_like_java_near_the_minimum(source_type, value, width, expected):
    assert TruncateTransform(width).apply(value, source_type) == expected


def test_truncate_decimal_is_exact_beyond_28_digits():
    t = DecimalType(38, 10)
    v = Decimal("-9999999999999999999999999999.9999999999")
    assert TruncateTransform(3).apply(v, t) == v  # unscaled -(10**38 - 1) is divisible by 3
    assert TruncateTransform(1000).apply(v, t) == Decimal("-10000000000000000000000000000.0000000000")
    big = Decimal("1234567890123456789012345678.9012345678")
    assert murmur3_hash(big, t) == murmur3_hash(Decimal("12345678901234567890123456789012345678"),
                                                DecimalType(38, 0))


@given(st.text(), st.integers(1, 20))
def test_truncate_string_matches_pyiceberg(v, w):
    assert TruncateTransform(w).apply(v, STRING) == PyTruncate(w).transform(StringType())(v)


# ----------------------------------------------------------------------------------------------
# time transforms


@pytest.mark.parametrize(("transform", "source_type", "value", "expected", "human"), [
    (YEAR, DATE, days_of(dt.date(2017, 11, 16)), 47, "2017"),
    (MONTH, DATE, days_of(dt.date(2017, 11, 16)), 574, "2017-11"),
    (DAY, DATE, days_of(dt.date(2017, 11, 16)), 17486, "2017-11-16"),
    (YEAR, TIMESTAMP, TS, 47, "2017"),
    (MONTH, TIMESTAMPTZ, TS, 574, "2017-11"),
    (DAY, TIMESTAMP, TS, 17486, "2017-11-16"),
    (HOUR, TIMESTAMPTZ, TS, 17486 * 24 + 22, "2017-11-16-22"),
    (HOUR, TIMESTAMP_NS, TS * 1000 + 5, 17486 * 24 + 22, "2017-11-16-22"),
    (DAY, TIMESTAMPTZ_NS, TS * 1000, 17486, "2017-11-16"),
    # before the epoch: floor, not truncation toward zero
    (YEAR, DATE, -1, -1, "1969"),
    (MONTH, DATE, -1, -1, "1969-12"),
    (DAY, DATE, -1, -1, "1969-12-31"),
    (YEAR, DATE, days_of(dt.date(1969, 1, 1)), -1, "1969"),
    (YEAR, DATE, days_of(dt.date(1968, 12, 31)), -2, "1968"),
    (MONTH, DATE, days_of(dt.date(1969, 2, 1)), -11, "1969-02"),
    (MONTH, DATE, days_of(dt.date(1969, 1, 31)), -12, "1969-01"),
    (YEAR, TIMESTAMP, -1, -1, "1969"),
    (MONTH, TIMESTAMP, -1, -1, "1969-12"),
    (DAY, TIMESTAMP, -1, -1, "1969-12-31"),
    (HOUR, TIMESTAMP, -1, -1, "1969-12-31-23"),
    (HOUR, TIMESTAMP, -3_600_000_000, -1, "1969-12-31-23"),
    (HOUR, TIMESTAMP, -3_600_000_001, -2, "1969-12-31-22"),
    (DAY, TIMESTAMP_NS, -1, -1, "1969-12-31"),
    (DAY, TIMESTAMP, -86_400_000_000, -1, "1969-12-31"),
    (DAY, TIMESTAMP, -86_400_000_001, -2, "1969-12-30"),
    (YEAR, TIMESTAMPTZ, micros_of(dt.datetime(1900, 3, 1, 12)), -70, "1900"),
    (MONTH, TIMESTAMPTZ, micros_of(dt.datetime(1900, 3, 1, 12)), -70 * 12 + 2, "1900-03"),
    (YEAR, DATE, 0, 0, "1970"),
    (HOUR, TIMESTAMP, 0, 0, "1970-01-01-00"),
])
def test_time_transforms(transform, source_type, value, expected, human):
    assert transform.apply(value, source_type) == expected
    assert transform.to_human_string(expected) == human
    assert transform.apply(None, source_type) is None


@given(st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31)))
def test_time_transforms_agree_with_calendar(t):
    m = micros_of(t)
    assert YEAR.apply(m, TIMESTAMP) == t.year - 1970
    assert MONTH.apply(m, TIMESTAMP) == (t.year - 1970) * 12 + t.month - 1
    assert DAY.apply(m, TIMESTAMP) == days_of(t.date())
    assert HOUR.apply(m, TIMESTAMP) == days_of(t.date()) * 24 + t.hour
    assert DAY.apply(m * 1000 + 999, TIMESTAMP_NS) == days_of(t.date())
    assert YEAR.apply(days_of(t.date()), DATE) == t.year - 1970
    assert DAY.to_human_string(days_of(t.date())) == t.date().isoformat()


@given(st.integers(min_value=-(10**8), max_value=10**8))
def test_civil_day_conversions_round_trip(days):
    y, m, d = days_to_civil(days)
    assert civil_to_days(y, m, d) == days
    if 1 <= y <= 9999:
        assert dt.date(1970, 1, 1) + dt.timedelta(days=days) == dt.date(y, m, d)


def test_time_transforms_need_the_source_type():
    with pytest.raises(TypeError):
        DAY.apply(5)


def test_void_always_null():
    for t, v in ((INT, 3), (STRING, "x"), (TIMESTAMP, 5), (StructType(()), {})):
        assert VOID.apply(v, t) is None
        assert VOID.result_type(t) == t
        assert VOID.can_transform(t)
    assert VOID.to_human_string(None) == "null"


# ----------------------------------------------------------------------------------------------
# validity and result types


PRIMS = [BOOLEAN, INT, LONG, FLOAT, DOUBLE, DecimalType(9, 2), DATE, TIME, TIMESTAMP, TIMESTAMPTZ,
         TIMESTAMP_NS, TIMESTAMPTZ_NS, STRING, UUID, FixedType(3), BINARY, UNKNOWN, VARIANT,
         GeometryType(), GeographyType()]
VALID = {
    "identity": {str(t) for t in PRIMS} - {"variant", "geometry", "geography"},
    "bucket[4]": {"int", "long", "decimal(9, 2)", "date", "time", "timestamp", "timestamptz",
                  "timestamp_ns", "timestamptz_ns", "string", "uuid", "fixed[3]", "binary"},
    "truncate[4]": {"int", "long", "decimal(9, 2)", "string", "binary"},
    "year": {"date", "timestamp", "timestamptz", "timestamp_ns", "timestamptz_ns"},
    "month": {"date", "timestamp", "timestamptz", "timestamp_ns", "timestamptz_ns"},
    "day": {"date", "timestamp", "timestamptz", "timestamp_ns", "timestamptz_ns"},
    "hour": {"timestamp", "timestamptz", "timestamp_ns", "timestamptz_ns"},
    "void": {str(t) for t in PRIMS},
}


@pytest.mark.parametrize("transform", list(VALID))
def test_can_transform_matrix(transform):
    t = parse_transform(transform)
    assert {str(p) for p in PRIMS if t.can_transform(p)} == VALID[transform]


def test_reference_rejections():
    # observed with Spark + Iceberg 1.10.2 (see the reference notes)
    assert not TruncateTransform(4).can_transform(DATE)
    assert not TruncateTransform(4).can_transform(TIMESTAMPTZ)
    assert not HOUR.can_transform(DATE)
    assert not YEAR.can_transform(INT)
    assert not DAY.can_transform(STRING)
    for t in (FLOAT, DOUBLE, BOOLEAN):
        assert not BucketTransform(4).can_transform(t)
    assert not TruncateTransform(4).can_transform(DOUBLE)
    assert not IDENTITY.can_transform(StructType([NestedField(1, "a", INT)]))
    assert not IDENTITY.can_transform(ListType(1, INT))
    assert IDENTITY.can_transform(DOUBLE) and IDENTITY.can_transform(BOOLEAN)


def test_result_types():
    assert BucketTransform(3).result_type(STRING) == INT
    assert TruncateTransform(3).result_type(STRING) == STRING
    assert TruncateTransform(3).result_type(DecimalType(9, 2)) == DecimalType(9, 2)
    assert YEAR.result_type(TIMESTAMP) == INT
    assert MONTH.result_type(DATE) == INT
    assert DAY.result_type(TIMESTAMPTZ) == DATE  # the reference's partition type says date
    assert HOUR.result_type(TIMESTAMP_NS) == INT
    assert IDENTITY.result_type(UUID) == UUID


# ----------------------------------------------------------------------------------------------
# strings


@pytest.mark.parametrize("text", ["identity", "bucket[16]", "truncate[4]", "year", "month",
                                  "day", "hour", "void", "bucket[1]", "truncate[2147483647]"])
def test_transform_strings_round_trip(text):
    t = parse_transform(text)
    assert t.is_known
    assert str(t) == text
    assert parse_transform(str(t)) == t


def test_transform_parsing_is_case_insensitive_and_typed():
    assert parse_transform("Bucket[8]") == BucketTransform(8)
    assert parse_transform(" DAY ") is DAY
    assert isinstance(parse_transform("truncate[3]"), TruncateTransform)


@pytest.mark.parametrize("text", ["zorder", "bucket[0]", "bucket[]", "truncate[x]",
                                  "geohash[5]", "bucket[16", "custom(a, b)"])
def test_unknown_transforms_are_kept_verbatim(text):
    t = parse_transform(text)
    assert isinstance(t, UnknownTransform)
    assert not t.is_known
    assert str(t) == text
    assert not t.can_transform(INT)
    with pytest.raises(TypeError):
        t.apply(1, INT)


def test_invalid_parameters_refused_when_constructed():
    with pytest.raises(InvalidInput):
        BucketTransform(0)
    with pytest.raises(InvalidInput):
        TruncateTransform(-3)


def test_dedup_names_and_order_relations():
    assert YEAR.dedup_name == MONTH.dedup_name == DAY.dedup_name == HOUR.dedup_name == "time"
    assert BucketTransform(4).dedup_name == "bucket[4]"
    assert HOUR.satisfies_order_of(DAY) and DAY.satisfies_order_of(YEAR)
    assert not YEAR.satisfies_order_of(DAY)
    assert IDENTITY.satisfies_order_of(DAY) and IDENTITY.satisfies_order_of(TruncateTransform(3))
    assert not IDENTITY.satisfies_order_of(BucketTransform(3))
    assert BucketTransform(3).satisfies_order_of(BucketTransform(3))


# ----------------------------------------------------------------------------------------------
# human strings (partition path values, as the reference renders them)


@pytest.mark.parametrize(("source_type", "value", "expected"), [
    (INT, 34, "34"),
    (LONG, -5, "-5"),
    (STRING, "a/b c", "a/b c"),
    (BOOLEAN, True, "true"),
    (DATE, 17486, "2017-11-16"),
    (DATE, -1, "1969-12-31"),
    (TIME, (22 * 3600 + 31 * 60 + 8) * 1_000_000, "22:31:08"),
    (TIME, 10 * 3600 * 1_000_000, "10:00"),
    (TIME, 1_500, "00:00:00.001500"),
    (TIMESTAMP, TS, "2017-11-16T22:31:08"),
    (TIMESTAMP, TS + 123_000, "2017-11-16T22:31:08.123"),
    (TIMESTAMPTZ, TS, "2017-11-16T22:31:08Z"),
    (TIMESTAMPTZ, 0, "1970-01-01T00:00Z"),
    (TIMESTAMP_NS, TS * 1000 + 1, "2017-11-16T22:31:08.000000001"),
    (DecimalType(9, 2), Decimal("14.20"), "14.20"),
    (DecimalType(9, 2), Decimal("14.2"), "14.20"),
    (UUID, uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"),
     "f79c3e09-677c-4bbd-a479-3f349cb785e7"),
    (BINARY, b"\x00\x01\x02\x03", "AAECAw=="),
    (FixedType(2), b"\xff\xfe", "//4="),
    (DOUBLE, 1.0, "1.0"),
    (DOUBLE, 1e10, "1.0E10"),
    (DOUBLE, 1.5e-5, "1.5E-5"),
    (DOUBLE, 123456.789, "123456.789"),
    (FLOAT, 123456.789, "123456.79"),
    (DOUBLE, float("nan"), "NaN"),
    (DOUBLE, float("-inf"), "-Infinity"),
    (STRING, None, "null"),
])
def test_identity_human_strings(source_type, value, expected):
    assert IDENTITY.to_human_string(value, source_type) == expected


def test_other_human_strings():
    assert BucketTransform(16).to_human_string(3) == "3"
    assert TruncateTransform(3).to_human_string("ice", STRING) == "ice"
    assert TruncateTransform(3).to_human_string(b"\x01\x02", BINARY) == "AQI="
    assert HOUR.to_human_string(None) == "null"
    assert MONTH.to_human_string(-13) == "1968-12"
    assert YEAR.to_human_string(-1971) == "-001"  # Java's %04d of year -1


def test_module_exports_exist():
    for name in tr.__all__:
        assert hasattr(tr, name), name
