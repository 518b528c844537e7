"""The vectorized row filter (scan/arrow_filter) against the expression module's row evaluator
(expr/eval_rows), on every primitive type: random columns with nulls, NaN and signed zeros,
random predicates and and/or/not trees. One meaning of a filter, two speeds."""

from __future__ import annotations

import uuid
from decimal import Decimal

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from icectl.expr.eval_rows import evaluate_rows
from icectl.expr.expressions import And, BoundPredicate, Not, Operation, Or
from icectl.scan.arrow_filter import row_mask
from icectl.scan.arrow_values import internal_to_arrow
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
)

Op = Operation
FLOATS = st.sampled_from([0.0, -0.0, float("nan"), 1.5, -1.5, 2.25, float("inf"), -float("inf"), 3.0])
FLOAT32 = st.sampled_from([0.0, -0.0, float("nan"), 1.5, -1.5, 2.25, 1.100000023841858, 3.0])
DOMAINS = {
    INT: st.integers(-5, 5),
    LONG: st.integers(-(2 ** 40), 2 ** 40) | st.integers(-3, 3),
    FLOAT: FLOAT32,
    DOUBLE: FLOATS,
    DATE: st.integers(-3, 3),
    TIME: st.integers(0, 5),
    TIMESTAMP: st.integers(-3, 3),
    TIMESTAMPTZ: st.integers(-3, 3),
    TIMESTAMP_NS: st.integers(-3, 3),
    STRING: st.sampled_from(["", "a", "ab", "abc", "b", "é", "\U0001f600", "Z", "a\x00"]),
    BOOLEAN: st.booleans(),
    DecimalType(9, 2): st.sampled_from([Decimal("0.00"), Decimal("-1.25"), Decimal("1.25"), Decimal("99.99")]),
    DecimalType(38, 10): st.sampled_from([Decimal("0E-10"), Decimal("-12345678901234567890.1234567890"),
                                          Decimal("12345678901234567890.1234567891")]),
    UUID: st.sampled_from([uuid.UUID(int=0), uuid.UUID(int=1), uuid.UUID(int=2 ** 127 + 5)]),
    BINARY: st.sampled_from([b"", b"\x00", b"\xff", b"a", b"ab"]),
    FixedType(2): st.sampled_from([b"\x00\x00", b"\x00\xff", b"\xff\x00", b"ab"]),
}
TYPES = list(DOMAINS)
ORDERED = [Op.LT, Op.LT_EQ, Op.GT, Op.GT_EQ, Op.EQ, Op.NOT_EQ]


@st.composite
def predicate(draw, t, fid):
    values = DOMAINS[t]
    ops = [Op.IS_NULL, Op.NOT_NULL, *ORDERED, Op.IN, Op.NOT_IN]
    if t in (FLOAT, DOUBLE):
        ops += [Op.IS_NAN, Op.NOT_NAN]
    if t == STRING:
        ops += [Op.STARTS_WITH, Op.NOT_STARTS_WITH]
    op = draw(st.sampled_from(ops))
    if op in (Op.IS_NULL, Op.NOT_NULL, Op.IS_NAN, Op.NOT_NAN):
        lits = ()
    elif op in (Op.IN, Op.NOT_IN):
        lits = tuple(draw(st.lists(values.filter(lambda v: v == v), min_size=2, max_size=4, unique=True)))
        if len(lits) < 2:
            lits = ()
            op = Op.NOT_NULL
    else:
        lits = (draw(values.filter(lambda v: v == v) if op not in ORDERED else values),)
    return BoundPredicate(op, fid, f"c{fid}", t, lits)


@st.composite
def case(draw):
    t = draw(st.sampled_from(TYPES))
    u = draw(st.sampled_from(TYPES))
    n = draw(st.integers(0, 12))
    a = draw(st.lists(DOMAINS[t] | st.none(), min_size=n, max_size=n))
    b = draw(st.lists(DOMAINS[u] | st.none(), min_size=n, max_size=n))
    p, q = draw(predicate(t, 1)), draw(predicate(u, 2))
    shape = draw(st.sampled_from(["p", "and", "or", "not", "not-or"]))
    expr = {"p": p, "and": And(p, q), "or": Or(p, q), "not": Not(p), "not-or": Not(Or(p, Not(q)))}[shape]
    return t, u, a, b, expr, n


@settings(max_examples=1500, deadline=None)
@given(case())
def test_arrow_mask_equals_the_row_evaluator(c) -> None:
    t, u, a, b, expr, n = c
    columns = {1: internal_to_arrow(a, t), 2: internal_to_arrow(b, u)}
    got = row_mask(expr, lambda p: columns[p.field_id], n).to_pylist()
    assert got == evaluate_rows(expr, {1: a, 2: b}, n), (expr, a, b)


def test_signed_zero_and_nan_follow_the_reference_order() -> None:
    col = [-0.0, 0.0, float("nan"), None, 1.0]
    arr = pa.array(col, pa.float64())
    want = {
        Op.LT: [True, False, False, False, False],   # -0.0 < 0.0; NaN and null match nothing
        Op.EQ: [False, True, False, False, False],
        Op.NOT_EQ: [True, False, True, False, True],  # NaN matches !=, null does not
    }
    for op, expected in want.items():
        p = BoundPredicate(op, 1, "c", DOUBLE, (0.0,))
        assert row_mask(p, lambda _: arr, len(col)).to_pylist() == expected


def test_a_missing_column_reads_as_null() -> None:
    p = Or(BoundPredicate(Op.IS_NULL, 7, "gone", LONG), BoundPredicate(Op.EQ, 7, "gone", LONG, (1,)))
    assert row_mask(p, lambda _: None, 3).to_pylist() == [True, True, True]


FAST = {INT: (1, 2), LONG: (1, 2 ** 40), FLOAT: (1.5, -2.25), DOUBLE: (1.5, float("inf")),
        DATE: (3, -3), TIME: (1, 2), TIMESTAMP: (1, -1), TIMESTAMPTZ: (1, -1), TIMESTAMP_NS: (1, 2),
        STRING: ("a", "é"), BOOLEAN: (True, False), DecimalType(9, 2): (Decimal("1.25"), Decimal("-1.00")),
        DecimalType(38, 10): (Decimal("1.5000000000"), Decimal("-2.0000000000"))}


def test_arrow_decides_the_common_types_itself() -> None:
    """The fast path is taken (no silent fall-back to Python) for every type it claims."""
    from icectl.scan.arrow_filter import _arrow_mask

    for t, lits in FAST.items():
        arr = internal_to_arrow([lits[0], None], t)
        for op in (*ORDERED, Op.IN, Op.NOT_IN):
            got = _arrow_mask(BoundPredicate(op, 1, "c", t, lits if op in (Op.IN, Op.NOT_IN) else lits[:1]), arr)
            assert got is not None, (t, op)
