"""The filter language: structure, round trips through str(), error positions."""

from __future__ import annotations

import math
import uuid
from decimal import Decimal

import pytest

from icectl.errors import InvalidInput
from icectl.expr.expressions import (
    FALSE,
    TRUE,
    And,
    Literal,
    Not,
    Operation,
    Or,
    Predicate,
)
from icectl.expr.parser import FILTER_HELP, parse_filter

Op = Operation


def P(op: Operation, term: str, *lits: Literal) -> Predicate:
    return Predicate(op, term, lits)


def i(v: int) -> Literal:
    return Literal("integer", v)


def s(v: str) -> Literal:
    return Literal("string", v)


@pytest.mark.parametrize("text, expected", [
    ("id = 5", P(Op.EQ, "id", i(5))),
    ("id == 5", P(Op.EQ, "id", i(5))),
    ("id != -5", P(Op.NOT_EQ, "id", i(-5))),
    ("id <> 5", P(Op.NOT_EQ, "id", i(5))),
    ("id<5", P(Op.LT, "id", i(5))),
    ("id <= 5", P(Op.LT_EQ, "id", i(5))),
    ("id > 5", P(Op.GT, "id", i(5))),
    ("id >= 5", P(Op.GT_EQ, "id", i(5))),
    ("5 < id", P(Op.GT, "id", i(5))),
    ("'a' >= name", P(Op.LT_EQ, "name", s("a"))),
    ("id IN (1, 2, 3)", P(Op.IN, "id", i(1), i(2), i(3))),
    ("id not in (1)", P(Op.NOT_IN, "id", i(1))),
    ("id is null", P(Op.IS_NULL, "id")),
    ("id IS NOT NULL", P(Op.NOT_NULL, "id")),
    ("x is nan", P(Op.IS_NAN, "x")),
    ("x is not NaN", P(Op.NOT_NAN, "x")),
    ("name starts with 'ab'", P(Op.STARTS_WITH, "name", s("ab"))),
    ("name not starts with 'ab'", P(Op.NOT_STARTS_WITH, "name", s("ab"))),
    ("name like 'ab%'", P(Op.STARTS_WITH, "name", s("ab"))),
    ("name not like 'ab%'", P(Op.NOT_STARTS_WITH, "name", s("ab"))),
    ("name like 'ab'", P(Op.EQ, "name", s("ab"))),
    (r"name like '50\%\_off%'", P(Op.STARTS_WITH, "name", s("50%_off"))),
    ("name = 'it''s'", P(Op.EQ, "name", s("it's"))),
    ("a.b.c = 1", P(Op.EQ, "a.b.c", i(1))),
    ('"my col" = 1', P(Op.EQ, "my col", i(1))),
    ("`order`.`x y` = 1", P(Op.EQ, "order.x y", i(1))),
    ('"and" = 1', P(Op.EQ, "and", i(1))),
    ("date = date '2024-01-02'", P(Op.EQ, "date", Literal("date", 19724))),
    ("p = 12.50", P(Op.EQ, "p", Literal("decimal", Decimal("12.50")))),
    ("p = -0.5", P(Op.EQ, "p", Literal("decimal", Decimal("-0.5")))),
    ("f > 1e3", P(Op.GT, "f", Literal("float", 1000.0))),
    ("f > 2.5E-1", P(Op.GT, "f", Literal("float", 0.25))),
    ("f > double '-Infinity'", P(Op.GT, "f", Literal("float", -math.inf))),
    ("b = true", P(Op.EQ, "b", Literal("boolean", True))),
    ("b = X'0a0B'", P(Op.EQ, "b", Literal("binary", b"\x0a\x0b"))),
    ("b = x''", P(Op.EQ, "b", Literal("binary", b""))),
    ("u = uuid 'F79C3E09-677C-4BBD-A479-3F349CB785E7'",
     P(Op.EQ, "u", Literal("uuid", uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")))),
    ("t = time '10:15'", P(Op.EQ, "t", Literal("time", 36_900_000_000))),
    ("ts = timestamp '1970-01-01 00:00:01.5'",
     P(Op.EQ, "ts", Literal("timestamp", 1_500_000_000))),
    ("ts = timestamptz '1970-01-01T01:00:00+01:00'",
     P(Op.EQ, "ts", Literal("timestamptz", 0))),
    ("ts = timestamp '1970-01-01 00:00:00.000000001'",
     P(Op.EQ, "ts", Literal("timestamp", 1))),
])
def test_predicates(text: str, expected: Predicate) -> None:
    assert parse_filter(text) == expected


def test_precedence_and_grouping() -> None:
    a, b, c = (P(Op.EQ, n, i(1)) for n in "abc")
    assert parse_filter("a = 1 or b = 1 and c = 1") == Or(a, And(b, c))
    assert parse_filter("(a = 1 or b = 1) and c = 1") == And(Or(a, b), c)
    assert parse_filter("not a = 1 and b = 1") == And(Not(a), b)
    assert parse_filter("NOT (a = 1 OR b = 1)") == Not(Or(a, b))
    assert parse_filter("not not a = 1") == a
    assert parse_filter("a = 1 and true") == a
    assert parse_filter("a = 1 or true") == TRUE
    assert parse_filter("false") == FALSE


def test_between() -> None:
    assert parse_filter("x between 1 and 5") == And(P(Op.GT_EQ, "x", i(1)), P(Op.LT_EQ, "x", i(5)))
    assert parse_filter("x not between 1 and 5 and y = 2") == And(
        Or(P(Op.LT, "x", i(1)), P(Op.GT, "x", i(5))), P(Op.EQ, "y", i(2)))


ROUND_TRIP = [
    "id = 5 and (name like 'a%' or name is null)",
    "not (x in (1, 2, 3)) or y not in ('a', 'b''c')",
    "ts >= timestamptz '2024-01-02 10:00:00+01:00' and ts < timestamp '2024-01-03'",
    "d between date '1969-12-31' and '2024-01-01'",
    "`weird.name`.x <= 1e-7 and \"true\" = false",
    "f > 1e300 or f < double '-inf' or g = 3.25",
    "b = X'00FF' or u = uuid 'f79c3e09-677c-4bbd-a479-3f349cb785e7' or t > time '23:59:59.999'",
    "a is not nan and b is nan and c is not null",
]


@pytest.mark.parametrize("text", ROUND_TRIP)
def test_round_trip(text: str) -> None:
    e = parse_filter(text)
    assert parse_filter(str(e)) == e


@pytest.mark.parametrize("text, position, fragment", [
    ("id =", 5, "expected a value after '='"),
    ("id = null", 6, "IS NULL"),
    ("x < nan", 5, "IS NAN"),
    ("(id = 1", 8, "expected ')'"),
    ("id = 1)", 7, "unbalanced ')'"),
    ("id ~ 3", 4, "unexpected character '~'"),
    ("name like '%a'", 11, "only prefix patterns"),
    ("name like 'a_b%'", 11, "'_' wildcards"),
    ("and = 1", 1, "keyword AND"),
    ("", 1, "empty filter"),
    ("id in ()", 8, "at least one value"),
    ("id in (1, 2", 12, "expected ')'"),
    ("d = date '2024-13-01'", 10, "invalid date literal"),
    ("id = 'abc", 6, "unterminated string"),
    ("id = 1 id = 2", 8, "expected AND, OR"),
    ("id is 5", 7, "expected NULL or NAN"),
    ("id not = 5", 8, "after NOT"),
    ("b = X'abc'", 5, "even number of hex digits"),
    ("id = 12abc", 6, "invalid number"),
    ("a.", 3, "expected a column name"),
    ("ts = timestamp '2024-01-01 10:00:00+01:00'", 16, "must not have an offset"),
    ("f = double 'nan'", 12, "NaN is refused"),
    ("name starts with 5", 18, "quoted string"),
])
def test_errors_point_at_the_problem(text: str, position: int, fragment: str) -> None:
    with pytest.raises(InvalidInput) as info:
        parse_filter(text)
    msg = str(info.value)
    assert f"at position {position}:" in msg
    assert fragment in msg
    assert "near " in msg
    assert "\n" not in msg
    assert info.value.position == position  # type: ignore[attr-defined]


def test_help_mentions_every_construct() -> None:
    for word in ("between", "is null", "is nan", "starts with", "like", "not in", "date '",
                 "timestamptz '", "uuid '", "X'", "--case-sensitive", "`backticks`"):
        assert word in FILTER_HELP


@pytest.mark.parametrize("text", [
    "a = 1", "a == 1", "a != 1", "a <> 1", "a < 1", "a <= 1", "a > 1", "a >= 1", "5 < a",
    "a in (1, 2)", "a not in (1, 2)", "a between 1 and 2", "a not between 1 and 2",
    "a is null", "a is not null", "a is nan", "a is not nan", "s starts with 'x'",
    "s not starts with 'x'", "s like 'x%'", "s not like 'x%'", "not a = 1 and (b = 2 or c = 3)",
    "true", "false", "catégorie = 'x'", "类别 = 'y'", "t = timestamp_ntz '2024-01-02 10:00:00'",
    "f = float '1.5'", "d = decimal '12.50'", "f = double 'Infinity'",
])
def test_every_documented_operator_parses(text: str) -> None:
    e = parse_filter(text)
    assert parse_filter(str(e)) == e


def test_non_ascii_names_and_empty_filters() -> None:
    assert parse_filter("catégorie = 'x'") == P(Op.EQ, "catégorie", Literal("string", "x"))
    assert parse_filter("类别.子 >= 1") == P(Op.GT_EQ, "类别.子", i(1))
    for text in ("", " ", "\t\n"):
        with pytest.raises(InvalidInput, match="empty filter"):
            parse_filter(text)
    with pytest.raises(InvalidInput, match="unexpected character"):
        parse_filter("a = ²")
