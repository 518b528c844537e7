"""Binding: literal conversion as the reference's Literal.to(type), folding, errors."""

from __future__ import annotations

import struct
import uuid
from decimal import Decimal

import pytest

from icectl.errors import InvalidInput, NotFound
from icectl.expr.binding import bind
from icectl.expr.expressions import (
    FALSE,
    TRUE,
    And,
    BoundPredicate,
    Not,
    Operation,
    Or,
    referenced_field_ids,
    rewrite_not,
)
from icectl.expr.parser import parse_filter
from icectl.spec.schema import Schema
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
    UUID,
    DecimalType,
    FixedType,
    ListType,
    MapType,
    NestedField,
    StructType,
)

Op = Operation
SCHEMA = Schema((
    NestedField(1, "i", INT, True),
    NestedField(2, "l", LONG),
    NestedField(3, "f", FLOAT),
    NestedField(4, "d", DOUBLE),
    NestedField(5, "dec", DecimalType(9, 2)),
    NestedField(6, "day", DATE),
    NestedField(7, "t", TIME),
    NestedField(8, "ts", TIMESTAMP),
    NestedField(9, "tstz", TIMESTAMPTZ),
    NestedField(10, "tsns", TIMESTAMP_NS),
    NestedField(11, "s", STRING),
    NestedField(12, "u", UUID),
    NestedField(13, "bin", BINARY),
    NestedField(14, "fx", FixedType(2)),
    NestedField(15, "b", BOOLEAN),
    NestedField(16, "Point", StructType([NestedField(17, "X", LONG)])),
    NestedField(18, "pts", ListType(19, StructType([NestedField(20, "y", INT)]))),
    NestedField(21, "m", MapType(22, STRING, 23, INT)),
))
MICROS_PER_DAY = 86_400_000_000


def lit(text: str) -> object:
    e = bind(parse_filter(text), SCHEMA)
    assert isinstance(e, BoundPredicate), e
    return e.literals[0] if len(e.literals) == 1 else e.literals


def f32(v: float) -> float:
    return struct.unpack("<f", struct.pack("<f", v))[0]


@pytest.mark.parametrize("text, value", [
    ("i = 5", 5),
    ("l = 5", 5),
    ("f = 5", 5.0),
    ("f = 1.1", f32(1.1)),
    ("d = 1.1", 1.1),
    ("d = 1e3", 1000.0),
    ("dec = 1.5", Decimal("1.50")),
    ("dec = 2", Decimal("2.00")),
    ("dec = '3.1'", Decimal("3.10")),
    ("dec = 1.005e0", Decimal("1.01")),  # a float literal rounds half up, as BigDecimal.setScale
    ("day = '2024-01-02'", 19724),
    ("day = 19724", 19724),
    ("day = date '1969-12-31'", -1),
    ("day = timestamp '2024-01-02 23:00:00'", 19724),  # floor to the day, as the reference
    ("t = '10:00'", 36_000_000_000),
    ("t = 5", 5),
    ("ts = '1970-01-02 00:00:00'", MICROS_PER_DAY),
    ("ts = 7", 7),
    ("ts = date '1970-01-02'", MICROS_PER_DAY),
    ("tstz = '1970-01-01T01:00:00+01:00'", 0),
    ("tstz = '1970-01-01 00:00:01'", 1_000_000),
    ("tstz = timestamp '1970-01-01 00:00:01'", 1_000_000),
    ("tsns = '1970-01-01 00:00:00.000000001'", 1),
    ("tsns = 3", 3000),  # the reference reads an integer as micros
    ("ts = timestamp '1969-12-31 23:59:59.9999999'", -1),  # nanos to micros floors
    ("s = 'x'", "x"),
    ("u = 'f79c3e09-677c-4bbd-a479-3f349cb785e7'",
     uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")),
    ("bin = X'0102'", b"\x01\x02"),
    ("fx = X'0102'", b"\x01\x02"),
    ("b = false", False),
    ("point.x = 3", 3),
])
def test_literal_conversion(text: str, value: object) -> None:
    got = lit(text)
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize("text, expected", [
    # required columns
    ("i is null", FALSE), ("i is not null", TRUE),
])
def test_constant_folding(text: str, expected: object) -> None:
    assert bind(parse_filter(text), SCHEMA) is expected


@pytest.mark.parametrize("text, op, limit", [
    # a float literal beyond float's finite range: the infinities still compare with it
    ("f > 1e39", "gt", 1), ("f >= 1e39", "gt", 1), ("f < 1e39", "lt_eq", 1),
    ("f <= 1e39", "lt_eq", 1), ("f < -1e39", "lt", -1), ("f > -1e39", "gt_eq", -1),
])
def test_float_literals_beyond_the_range_keep_the_infinities(text: str, op: str, limit: int) -> None:
    e = bind(parse_filter(text), SCHEMA)
    assert e.op.value == op and e.literal == limit * struct.unpack("<f", b"\xff\xff\x7f\x7f")[0]
    assert bind(parse_filter(text.split(" ")[0] + " = 1e39"), SCHEMA) is FALSE


_LONG = "long (-9223372036854775808 to 9223372036854775807)"
_INT = "int (-2147483648 to 2147483647)"
_DATE = "date (-5877641-06-23 to +5881580-07-11)"


@pytest.mark.parametrize("text, message", [
    # a literal the column's type cannot hold is bad input, whatever the operator
    ("o = 99999999999999999999999", f"the integer 99999999999999999999999 is out of range for column 'o' of type {_LONG}"),
    *[(f"o {op} 9223372036854775808", f"the integer 9223372036854775808 is out of range for column 'o' of type {_LONG}")
      for op in ("<", "<=", ">", ">=", "=", "!=")],
    ("o > -9223372036854775809", f"the integer -9223372036854775809 is out of range for column 'o' of type {_LONG}"),
    ("not (o != 9223372036854775808)", "9223372036854775808 is out of range"),
    ("o in (1, 9223372036854775808)", "9223372036854775808 is out of range"),
    ("o not in (9223372036854775808)", "9223372036854775808 is out of range"),
    ("o between 1 and 9223372036854775808", "9223372036854775808 is out of range"),
    ("i < 3000000000", f"the integer 3000000000 is out of range for column 'i' of type {_INT}"),
    ("i = -3000000000", f"the integer -3000000000 is out of range for column 'i' of type {_INT}"),
    ("i in (3000000000, 4000000000)", "3000000000 is out of range for column 'i'"),
    ("day > 3000000000", f"the integer 3000000000 is out of range for column 'day' of type {_DATE}"),
    ("day = '9999999-01-01'", f"the string '9999999-01-01' is out of range for column 'day' of type {_DATE}"),
    ("day = date '9999999-01-01'", f"the date date '+9999999-01-01' is out of range for column 'day' of type {_DATE}"),
    ("ts = '300000-01-01 00:00:00'", "is out of range for column 'ts' of type timestamp (-290308-12-21T19:59:05.224192"),
    ("tsns = 9223372036854775807", "the integer 9223372036854775807 is out of range for column 'tsns' of type "
                                   "timestamp_ns (1677-09-21T00:12:43.145224192 to 2262-04-11T23:47:16.854775807)"),
    ("tsns = date '3000-01-01'", "is out of range for column 'tsns'"),
    ("dec = 1.555", "cannot use 1.555 with column 'dec' of type decimal(9, 2): more than 2 digit(s) after the point"),
    ("dec < 12345678.9", "cannot use 12345678.9 with column 'dec' of type decimal(9, 2): more than 9 digits"),
    ("dec = 10000000", "cannot use 10000000 with column 'dec' of type decimal(9, 2): more than 9 digits"),
    ("dec = '1.001'", "more than 2 digit(s) after the point"),
    ("dec = 1e300", "more than 9 digits"),
])
def test_literals_beyond_the_column_type_are_bad_input(text: str, message: str) -> None:
    schema = Schema((*SCHEMA.fields, NestedField(90, "o", LONG, False)))
    with pytest.raises(InvalidInput) as info:
        bind(parse_filter(text), schema)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_sets_are_deduplicated_and_single_values_become_equality() -> None:
    e = bind(parse_filter("l in (1, 2, 2, 1)"), SCHEMA)
    assert e == BoundPredicate(Op.IN, 2, "l", LONG, (1, 2))
    assert bind(parse_filter("l in (1, 1)"), SCHEMA) == BoundPredicate(Op.EQ, 2, "l", LONG, (1,))
    assert bind(parse_filter("l not in (4)"), SCHEMA) == BoundPredicate(
        Op.NOT_EQ, 2, "l", LONG, (4,))


def test_names_bind_case_insensitively_by_default() -> None:
    e = bind(parse_filter("POINT.x = 1 and S = 'a'"), SCHEMA)
    assert referenced_field_ids(e) == {17, 11}
    assert str(e) == "Point.X = 1 and s = 'a'"
    with pytest.raises(NotFound, match="case sensitive"):  # an unknown column: not found
        bind(parse_filter("POINT.x = 1"), SCHEMA, case_sensitive=True)
    assert bind(parse_filter("Point.X = 1"), SCHEMA, case_sensitive=True) is not None


@pytest.mark.parametrize("text, fragment", [
    ("nope = 1", "'nope' not found"),
    ("i is nan", "'is nan' needs a float or double column; 'i' is int"),
    ("s > 5", "column 's' of type string with the integer 5"),
    ("i = 'x'", "column 'i' of type int with the string 'x'"),
    ("i = 1.5", "with the decimal 1.5"),
    ("day = '2024-02-30'", "invalid day of month"),
    ("day = 1.5", "column 'day' of type date"),
    ("i starts with 'a'", "'starts with' needs a string column"),
    ("fx = X'01'", "fixed[2]"),
    ("u = 'nope'", "column 'u'"),
    ("b = 1", "column 'b' of type boolean"),
    ("ts = '2024-01-01 10:00:00+01:00'", "must not have an offset"),
    ("pts.y = 1", "inside a list or map"),
    ("m.value = 1", "inside a list or map"),
    ("point = 1", "'Point' is a struct"),
    ("u = uuid 'f79c3e09-677c-4bbd-a479-3f349cb785e7' and s = uuid "
     "'f79c3e09-677c-4bbd-a479-3f349cb785e7'", "column 's' of type string"),
])
def test_binding_errors_name_column_and_problem(text: str, fragment: str) -> None:
    with pytest.raises((InvalidInput, NotFound)) as info:  # an unknown column is NotFound
        bind(parse_filter(text), SCHEMA)
    assert fragment in str(info.value)


def test_rewrite_not_pushes_negation_into_predicates() -> None:
    e = bind(parse_filter("not (l < 5 and (s like 'a%' or f is nan)) and not l in (1, 2)"), SCHEMA)
    r = rewrite_not(e)
    assert str(r) == "(l >= 5 or s not starts with 'a' and f is not nan) and l not in (1, 2)"
    assert isinstance(r, And) and isinstance(r.left, Or)
    assert not any(isinstance(x, Not) for x in _nodes(r))


def _nodes(e: object):  # type: ignore[no-untyped-def]
    yield e
    for attr in ("left", "right", "child"):
        if hasattr(e, attr):
            yield from _nodes(getattr(e, attr))


@pytest.mark.parametrize("text", [
    "dec = 1.5 and dec < 1.55",
    "f = 1.1 or d = 1.1 or d > 1e300",
    "day >= '1969-12-31' and ts < '2024-01-02 10:00:00.123456' and tstz > '2024-01-02T10:00:00Z'",
    "tsns = '2024-01-02 10:00:00.123456789' and t < '12:00:00.5'",
    "u = 'f79c3e09-677c-4bbd-a479-3f349cb785e7' and bin = X'00ff' and fx != X'0102'",
    "s in ('a', 'b''c', 'select') and b = true and l not in (1, 2) and f is not nan",
    "point.x is null or not (s starts with 'x')",
])
def test_bound_expressions_render_to_text_that_binds_back(text: str) -> None:
    e = bind(parse_filter(text), SCHEMA)
    assert bind(parse_filter(str(e)), SCHEMA) == e
