"""Values: Appendix D binary and JSON single-value serialization, display text, CLI literals."""

from __future__ import annotations

import math
import struct
import uuid
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyiceberg import conversions as pyconv
from pyiceberg import types as pyt

from icectl.errors import CorruptMetadata, InvalidInput, UnsupportedFeature
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
    ListType,
    MapType,
    NestedField,
    StructType,
)
from icectl.spec.values import (
    format_timestamp,
    from_bytes,
    from_json_value,
    parse_literal,
    parse_timestamp,
    to_bytes,
    to_human,
    to_json_value,
)

U = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")
TS = 1_510_871_468_123_456  # 2017-11-16T22:31:08.123456

# ----------------------------------------------------------------------------------------------
# binary (Appendix D)

BINARY_VECTORS = [
    (BOOLEAN, False, "00"),
    (BOOLEAN, True, "01"),
    (INT, 34, "22000000"),
    (INT, -1, "ffffffff"),
    (LONG, 34, "2200000000000000"),
    (DATE, 17486, "4e440000"),
    (TIME, 1, "0100000000000000"),
    (TIMESTAMP, -1, "ffffffffffffffff"),
    (TIMESTAMPTZ, 1_000_000, "40420f0000000000"),
    (TIMESTAMP_NS, 1, "0100000000000000"),
    (TIMESTAMPTZ_NS, 256, "0001000000000000"),
    (FLOAT, 1.0, "0000803f"),
    (DOUBLE, 1.0, "000000000000f03f"),
    (DOUBLE, -0.0, "0000000000000080"),
    (STRING, "iceberg", "69636562657267"),
    (STRING, "\u00e9", "c3a9"),
    (STRING, "", ""),
    (UUID, U, "f79c3e09677c4bbda4793f349cb785e7"),
    (FixedType(4), b"\x00\x01\x02\x03", "00010203"),
    (BINARY, b"\x00\x01\x02\x03", "00010203"),
    (BINARY, b"", ""),
    (DecimalType(9, 2), Decimal("14.20"), "058c"),
    (DecimalType(9, 2), Decimal("-14.20"), "fa74"),
    (DecimalType(9, 2), Decimal("0.00"), "00"),
    (DecimalType(9, 2), Decimal("1.27"), "7f"),
    (DecimalType(9, 2), Decimal("1.28"), "0080"),
    (DecimalType(9, 2), Decimal("-1.28"), "80"),
    (DecimalType(9, 2), Decimal("-1.29"), "ff7f"),
    (DecimalType(38, 0), Decimal(10**38 - 1), "4b3b4ca85a86c47a098a223fffffffff"),
]


@pytest.mark.parametrize(("t", "value", "hexed"), BINARY_VECTORS,
                         ids=[f"{t}-{v!r}" for t, v, _ in BINARY_VECTORS])
def test_binary_vectors(t, value, hexed):
    assert to_bytes(t, value).hex() == hexed
    back = from_bytes(t, bytes.fromhex(hexed))
    assert back == value and type(back) is type(value)
    if isinstance(t, DecimalType):
        assert back.as_tuple().exponent == -t.scale


def test_decimal_serializes_at_the_type_scale():
    assert to_bytes(DecimalType(9, 2), Decimal("14.2")) == bytes.fromhex("058c")
    with pytest.raises(ValueError):
        to_bytes(DecimalType(9, 2), Decimal("14.201"))


def test_promoted_bounds_are_readable():
    assert from_bytes(LONG, struct.pack("<i", -5)) == -5
    assert from_bytes(DOUBLE, struct.pack("<f", 1.5)) == 1.5
    assert from_bytes(TIMESTAMP, struct.pack("<i", 2)) == 2 * 86_400_000_000
    assert from_bytes(TIMESTAMP_NS, struct.pack("<i", -1)) == -86_400_000_000_000
    assert from_bytes(BOOLEAN, b"\x07") is True  # any non-zero byte is true


@pytest.mark.parametrize(("t", "data"), [
    (INT, b"\x01"), (LONG, b"\x01\x02\x03"), (STRING, b"\xff"), (UUID, b"\x00" * 15),
    (BOOLEAN, b""), (DecimalType(9, 2), b""),
])
def test_bad_bytes_are_corrupt(t, data):
    with pytest.raises(CorruptMetadata):
        from_bytes(t, data)


def test_unsupported_types():
    for t in (UNKNOWN, VARIANT, StructType(()), ListType(1, INT)):
        with pytest.raises(UnsupportedFeature):
            to_bytes(t, 1)
        with pytest.raises(UnsupportedFeature):
            from_bytes(t, b"\x00")


def test_out_of_range_values_are_refused():
    with pytest.raises(ValueError):
        to_bytes(INT, 2**31)
    with pytest.raises(ValueError):
        to_bytes(FixedType(3), b"\x00")


PY_TYPES = {
    "int": pyt.IntegerType(), "long": pyt.LongType(), "date": pyt.DateType(),
    "time": pyt.TimeType(), "timestamp": pyt.TimestampType(), "timestamptz": pyt.TimestamptzType(),
    "string": pyt.StringType(), "uuid": pyt.UUIDType(), "binary": pyt.BinaryType(),
    "double": pyt.DoubleType(), "boolean": pyt.BooleanType(),
}

VALUES = {
    INT: st.integers(-(2**31), 2**31 - 1),
    LONG: st.integers(-(2**63), 2**63 - 1),
    DATE: st.integers(-(2**31), 2**31 - 1),
    TIME: st.integers(0, 86_400_000_000 - 1),
    TIMESTAMP: st.integers(-(2**63), 2**63 - 1),
    TIMESTAMPTZ: st.integers(-(2**63), 2**63 - 1),
    STRING: st.text().filter(lambda s: not any(0xD800 <= ord(c) <= 0xDFFF for c in s)),
    UUID: st.uuids(),
    BINARY: st.binary(),
    DOUBLE: st.floats(allow_nan=False),
    BOOLEAN: st.booleans(),
}


@pytest.mark.parametrize("t", list(VALUES), ids=str)
@given(data=st.data())
def test_binary_round_trip_and_agreement_with_pyiceberg(t, data):
    v = data.draw(VALUES[t])
    b = to_bytes(t, v)
    assert from_bytes(t, b) == v
    assert b == pyconv.to_bytes(PY_TYPES[str(t)], v)


@given(st.integers(1, 38).flatmap(lambda p: st.tuples(
    st.just(p), st.integers(0, p), st.integers(-(10**p) + 1, 10**p - 1))))
def test_decimal_round_trip_any_precision(case):
    p, s, unscaled = case
    t = DecimalType(p, s)
    v = Decimal(unscaled).scaleb(-s, __import__("decimal").Context(prec=100))
    b = to_bytes(t, v)
    assert from_bytes(t, b) == v
    assert int.from_bytes(b, "big", signed=True) == unscaled
    assert b == pyconv.to_bytes(pyt.DecimalType(p, s), v)
    assert from_json_value(t, to_json_value(t, v)) == v


# ----------------------------------------------------------------------------------------------
# JSON (Appendix D)

JSON_VECTORS = [
    (BOOLEAN, True, True),
    (INT, 34, 34),
    (LONG, 34, 34),
    (FLOAT, 1.0, 1.0),
    (DOUBLE, 1.0, 1.0),
    (DecimalType(9, 2), Decimal("14.20"), "14.20"),
    (DecimalType(9, 2), Decimal("-0.05"), "-0.05"),
    (DecimalType(20, 10), Decimal("1E-10"), "0.0000000001"),  # plain, never scientific
    (DecimalType(9, 0), Decimal("7"), "7"),
    (DATE, 17486, "2017-11-16"),
    (DATE, -1, "1969-12-31"),
    (TIME, 81_068_123_456, "22:31:08.123456"),
    (TIME, 81_068_000_000, "22:31:08"),
    (TIME, 81_068_100_000, "22:31:08.1"),  # trailing zeros trimmed like java.time
    (TIMESTAMP, TS, "2017-11-16T22:31:08.123456"),
    (TIMESTAMPTZ, TS, "2017-11-16T22:31:08.123456+00:00"),
    (TIMESTAMPTZ, 0, "1970-01-01T00:00:00+00:00"),
    (TIMESTAMP, -1, "1969-12-31T23:59:59.999999"),
    (TIMESTAMP_NS, TS * 1000 + 789, "2017-11-16T22:31:08.123456789"),
    (TIMESTAMPTZ_NS, TS * 1000 + 789, "2017-11-16T22:31:08.123456789+00:00"),
    (STRING, "iceberg", "iceberg"),
    (UUID, U, "f79c3e09-677c-4bbd-a479-3f349cb785e7"),
    (FixedType(4), b"\x00\x01\x02\xff", "000102FF"),
    (BINARY, b"\x00\x01\x02\xff", "000102FF"),
    (StructType([NestedField(1, "a", INT), NestedField(2, "b", STRING)]), {1: 1, 2: "bar"},
     {"1": 1, "2": "bar"}),
    (ListType(3, INT), [1, 2, 3], [1, 2, 3]),
    (MapType(4, STRING, 5, INT), {"a": 1, "b": 2}, {"keys": ["a", "b"], "values": [1, 2]}),
    (ListType(3, DATE, False), [0, None], ["1970-01-01", None]),
]


@pytest.mark.parametrize(("t", "value", "obj"), JSON_VECTORS,
                         ids=[f"{t}-{v!r}" for t, v, _ in JSON_VECTORS])
def test_json_vectors(t, value, obj):
    assert to_json_value(t, value) == obj
    assert from_json_value(t, obj) == value
    assert to_json_value(t, None) is None and from_json_value(t, None) is None


@pytest.mark.parametrize(("t", "obj", "value"), [
    (FixedType(4), "000102ff", b"\x00\x01\x02\xff"),  # the spec's lower-case example
    (TIME, "22:31", 81_060_000_000),
    (TIMESTAMPTZ, "2017-11-16T22:31:08.123456Z", TS),
    (TIMESTAMP, "2017-11-16T22:31:08.123456000", TS),
    (DecimalType(9, 0), "2E+2", None),  # scale -2 does not match the type's 0
    (DOUBLE, "NaN", math.nan),
    (DOUBLE, 3, 3.0),
])
def test_json_lenient_reading(t, obj, value):
    if value is None:
        with pytest.raises(CorruptMetadata):
            from_json_value(t, obj)
        return
    got = from_json_value(t, obj)
    assert (math.isnan(got) and math.isnan(value)) if isinstance(value, float) and math.isnan(value) \
        else got == value


@pytest.mark.parametrize(("t", "obj"), [
    (INT, "34"), (INT, True), (INT, 2**31), (BOOLEAN, 1), (DecimalType(9, 2), 14.2),
    (DecimalType(9, 2), "14.2"), (DATE, "2017-13-01"), (DATE, "2017-02-29"), (DATE, 17486),
    (TIMESTAMPTZ, "2017-11-16T22:31:08+01:00"), (TIMESTAMP, "2017-11-16T22:31:08+00:00"),
    (UUID, "f79c3e09677c4bbda4793f349cb785e7"), (FixedType(2), "000102"), (BINARY, "zz"),
    (StructType(()), []), (MapType(1, STRING, 2, INT), {"keys": ["a"], "values": []}),
    (TIME, "25:00:00"),
])
def test_bad_json_values_are_corrupt(t, obj):
    with pytest.raises(CorruptMetadata):
        from_json_value(t, obj)


def test_json_special_floats_follow_the_reference():
    assert to_json_value(DOUBLE, math.nan) == "NaN"
    assert to_json_value(FLOAT, -math.inf) == "-Infinity"
    assert from_json_value(DOUBLE, "Infinity") == math.inf


@given(st.integers(-(2**62), 2**62))
def test_timestamp_text_round_trips(v):
    for nanos in (False, True):
        for tz in (False, True):
            text = format_timestamp(v, nanos=nanos, tz=tz)
            assert parse_timestamp(text, nanos=nanos, tz=tz) == v


@given(st.datetimes(timezones=st.just(__import__("datetime").timezone.utc)))
def test_timestamptz_json_agrees_with_isoformat(d):
    import datetime as dt

    delta = d - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    micros = (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
    text = to_json_value(TIMESTAMPTZ, micros)
    assert dt.datetime.fromisoformat(text) == d
    assert from_json_value(TIMESTAMPTZ, d.isoformat()) == micros


# ----------------------------------------------------------------------------------------------
# display


@pytest.mark.parametrize(("t", "value", "text"), [
    (DATE, 17486, "2017-11-16"),
    (TIMESTAMPTZ, TS, "2017-11-16T22:31:08.123456+00:00"),
    (TIMESTAMP, TS, "2017-11-16T22:31:08.123456"),
    (DecimalType(9, 2), Decimal("12.3"), "12.30"),
    (BINARY, b"\xab\x01", "ab01"),
    (FixedType(1), b"\xff", "ff"),
    (UUID, U, str(U)),
    (BOOLEAN, False, "false"),
    (DOUBLE, 0.1, "0.1"),
    (DOUBLE, math.nan, "NaN"),
    (STRING, "x", "x"),
    (INT, None, "null"),
    (ListType(1, INT), [1, None], "[1, null]"),
    (StructType([NestedField(1, "a", DATE)]), {1: 0}, "{a: 1970-01-01}"),
    (MapType(1, STRING, 2, INT), {"k": 1}, "{k: 1}"),
])
def test_to_human(t, value, text):
    assert to_human(t, value) == text


# ----------------------------------------------------------------------------------------------
# CLI literals


@pytest.mark.parametrize(("t", "text", "value"), [
    (BOOLEAN, "true", True),
    (BOOLEAN, "FALSE", False),
    (INT, "-42", -42),
    (LONG, "9223372036854775807", 2**63 - 1),
    (FLOAT, "1.1", struct.unpack("<f", struct.pack("<f", 1.1))[0]),
    (DOUBLE, "1e3", 1000.0),
    (DOUBLE, "-inf", -math.inf),
    (DecimalType(9, 2), "12.3", Decimal("12.30")),
    (DecimalType(9, 2), "12.30", Decimal("12.30")),
    (DecimalType(9, 2), "-7", Decimal("-7.00")),
    (DATE, "2024-01-02", 19724),
    (DATE, "1969-12-31", -1),
    (TIME, "10:00", 36_000_000_000),
    (TIME, "10:00:00.5", 36_000_500_000),
    (TIMESTAMP, "2024-01-02T10:00:00", 19724 * 86_400_000_000 + 36_000_000_000),
    (TIMESTAMP, "2024-01-02 10:00", 19724 * 86_400_000_000 + 36_000_000_000),
    (TIMESTAMP, "2024-01-02", 19724 * 86_400_000_000),
    (TIMESTAMPTZ, "2024-01-02T10:00:00", 19724 * 86_400_000_000 + 36_000_000_000),
    (TIMESTAMPTZ, "2024-01-02T11:30:00+01:30", 19724 * 86_400_000_000 + 36_000_000_000),
    (TIMESTAMPTZ, "2024-01-02T10:00:00Z", 19724 * 86_400_000_000 + 36_000_000_000),
    (TIMESTAMP_NS, "2024-01-02T10:00:00.000000001", (19724 * 86_400 + 36_000) * 10**9 + 1),
    (STRING, "  keep spaces ", "  keep spaces "),
    (UUID, str(U).upper(), U),
    (BINARY, "0x00ff", b"\x00\xff"),
    (FixedType(2), "ABCD", b"\xab\xcd"),
])
def test_parse_literal(t, text, value):
    assert parse_literal(t, text) == value


@pytest.mark.parametrize(("t", "text", "word"), [
    (BOOLEAN, "yes", "true or false"),
    (INT, "2147483648", "out of range"),
    (INT, "1.5", "integer"),
    (LONG, "", "integer"),
    (DOUBLE, "abc", "number"),
    (DecimalType(9, 2), "12.345", "digits"),
    (DecimalType(4, 2), "123.4", "digits"),
    (DATE, "2024-02-30", "day"),
    (DATE, "02/01/2024", "YYYY-MM-DD"),
    (TIME, "24:00", "time"),
    (TIMESTAMP, "2024-01-02T10:00:00+01:00", "offset"),
    (TIMESTAMP, "2024-01-02T10:00:00.1234567", "precision"),
    (UUID, "not-a-uuid", "UUID"),
    (BINARY, "abc", "hex"),
    (FixedType(3), "0011", "3 bytes"),
    (StructType(()), "x", "cannot be given"),
])
def test_parse_literal_errors(t, text, word):
    with pytest.raises(InvalidInput) as err:
        parse_literal(t, text)
    assert word in str(err.value)
