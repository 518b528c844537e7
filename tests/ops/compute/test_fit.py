"""Numbers fitted to a column exactly (icectl/ops/compute/fit.py): every value is stored exactly
or refused, never silently changed; with a rounding, the result is Python's Decimal.quantize of
the exact value; float/double columns take the nearest value of their type. The vectorized
array path (Arrow's casts) and the value-by-value rule give the same values and refuse at the
same row, for every source type."""

from __future__ import annotations

import decimal
import math
import struct
from decimal import Decimal
from fractions import Fraction

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icectl.errors import InvalidInput
from icectl.ops.compute.fit import DoesNotFit, fit_array, fit_distinct, fit_value
from icectl.spec.types import DOUBLE, FLOAT, INT, LONG, DecimalType

SETTINGS = settings(derandomize=True, deadline=None, max_examples=400,
                    suppress_health_check=[HealthCheck.too_slow])
MODES = {"half-even": decimal.ROUND_HALF_EVEN, "half-up": decimal.ROUND_HALF_UP, "down": decimal.ROUND_DOWN}
RANGES = {INT: (-(2**31), 2**31 - 1), LONG: (-(2**63), 2**63 - 1)}
BIG = decimal.Context(prec=2000, Emax=10**6, Emin=-(10**6))


# -- the oracle: exact arithmetic on Fractions, independent of the implementation -----------------


def exact(v) -> Fraction:
    """The exact value of a finite input."""
    return Fraction(Decimal(v))


def fits(x: Fraction, t) -> bool:
    if t in RANGES:
        lo, hi = RANGES[t]
        return x.denominator == 1 and lo <= x <= hi
    scaled = x * 10**t.scale
    return scaled.denominator == 1 and abs(scaled) < 10**t.precision


def quantized(x: Fraction, t, mode: str) -> Fraction | None:
    """Decimal.quantize of the exact value with the mode; None when it overflows the type."""
    scale = t.scale if isinstance(t, DecimalType) else 0
    d = BIG.divide(Decimal(x.numerator), Decimal(x.denominator))
    assert Fraction(d) == x  # exact: the denominators here are powers of 2 and 5
    q = d.quantize(Decimal(1).scaleb(-scale), rounding=MODES[mode], context=BIG)
    r = Fraction(q)
    return r if fits(r, t) else None


def f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def next32(x: float, up: bool) -> float:
    bits = struct.unpack("<i", struct.pack("<f", x))[0]
    if x == 0:
        bits = 1 if up else -2147483647
    elif (x > 0) == up:
        bits += 1
    else:
        bits -= 1
    return struct.unpack("<f", struct.pack("<i", bits))[0]


def nearest32(x: Fraction) -> float | None:
    """The float32 nearest to x (ties to even) by comparing its two neighbours exactly."""
    try:
        g = f32(float(x))
    except OverflowError:
        return None
    if math.isinf(g):
        g = math.copysign(3.4028234663852886e38, g)
    lo, hi = (g, next32(g, True)) if Fraction(g) <= x else (next32(g, False), g)
    if math.isinf(hi) or math.isinf(lo):
        limit = Fraction(3.4028234663852886e38) + Fraction(2) ** 103  # max + half an ulp
        return None if abs(x) >= limit else math.copysign(3.4028234663852886e38, float(x))
    dlo, dhi = x - Fraction(lo), Fraction(hi) - x
    if dlo != dhi:
        return lo if dlo < dhi else hi
    return lo if struct.unpack("<i", struct.pack("<f", lo))[0] % 2 == 0 else hi


def nearest(x: Fraction, t) -> float | None:
    if t == DOUBLE:
        try:
            return float(x)  # Fraction -> float is correctly rounded
        except OverflowError:
            return None
    return nearest32(x)


# -- values ---------------------------------------------------------------------------------


decimals = st.builds(lambda u, e: Decimal(u).scaleb(e), st.integers(-(10**40), 10**40), st.integers(-45, 12))
floats = st.floats(allow_nan=False, allow_infinity=False) | st.floats(min_value=-1e6, max_value=1e6) \
    | st.builds(lambda u, s: u / 10**s, st.integers(-(10**9), 10**9), st.integers(0, 4)) \
    | st.builds(lambda k, e: k * 2.0**e, st.integers(-(2**20), 2**20), st.integers(-12, 70))  # exact at some scale
ints = st.integers(-(2**64), 2**64)
texts = decimals.map(str) | floats.map(repr) | ints.map(str) | \
    st.builds(lambda d: f"{d:f}", decimals)
values = decimals | floats | ints | texts
decimal_types = st.builds(lambda p, s: DecimalType(p, min(s, p)), st.integers(1, 38), st.integers(0, 38))
exact_types = st.sampled_from([INT, LONG]) | decimal_types


@SETTINGS
@given(values, exact_types)
def test_a_value_is_stored_exactly_or_refused(v, t) -> None:
    x = exact(v)
    try:
        got = fit_value(v, t)
    except DoesNotFit as e:
        assert not fits(x, t), (v, t, e)
        return
    assert fits(x, t), (v, t, got)
    assert Fraction(got) == x
    if isinstance(t, DecimalType):
        assert got.as_tuple().exponent == -t.scale


@SETTINGS
@given(values, exact_types, st.sampled_from(sorted(MODES)))
def test_rounding_equals_decimal_quantize(v, t, mode) -> None:
    x = exact(v)
    want = quantized(x, t, mode)
    try:
        got = fit_value(v, t, mode)
    except DoesNotFit:
        assert want is None, (v, t, mode, want)
        return
    assert Fraction(got) == want, (v, t, mode, got, want)


@SETTINGS
@given(values, st.sampled_from([FLOAT, DOUBLE]))
def test_float_columns_take_the_nearest_value_and_refuse_overflow(v, t) -> None:
    x = exact(v)
    want = nearest(x, t)
    try:
        got = fit_value(v, t)
    except DoesNotFit:
        assert want is None, (v, t)
        return
    assert got == want and math.copysign(1, got) == math.copysign(1, want) or x == 0, (v, t, got, want)


@pytest.mark.parametrize("v, t, mode, want", [
    (2.999, DecimalType(12, 2), None, None),  # the double is 2.99900000000000011..., not 2.999
    ("2.999", DecimalType(12, 2), None, None),
    ("12.555", DecimalType(12, 2), None, None),
    ("12.555", DecimalType(12, 2), "half-even", Decimal("12.56")),
    ("12.565", DecimalType(12, 2), "half-even", Decimal("12.56")),
    ("12.565", DecimalType(12, 2), "half-up", Decimal("12.57")),
    ("-12.565", DecimalType(12, 2), "half-up", Decimal("-12.57")),
    ("12.569", DecimalType(12, 2), "down", Decimal("12.56")),
    (2.675, DecimalType(12, 2), "half-up", Decimal("2.67")),  # the double is 2.67499999...
    ("12.550", DecimalType(12, 2), None, Decimal("12.55")),  # trailing zeros are not digits lost
    ("1e3", DecimalType(12, 2), None, Decimal("1000.00")),
    ("0.1", DecimalType(12, 2), None, Decimal("0.10")),
    (0.1, DecimalType(12, 2), None, None),
    (0.1, DecimalType(12, 2), "half-even", Decimal("0.10")),
    (0.5, DecimalType(3, 1), None, Decimal("0.5")),
    ("9999999999.995", DecimalType(12, 2), "half-up", None),  # rounds up past the precision
    ("9999999999.995", DecimalType(12, 2), "down", Decimal("9999999999.99")),
    ("-99999999999999999999999999999999999999", DecimalType(38, 0), None,
     Decimal("-99999999999999999999999999999999999999")),
    ("100000000000000000000000000000000000000", DecimalType(38, 0), None, None),
    (2**31 - 1, INT, None, 2**31 - 1),
    (2**31, INT, None, None),
    (300, INT, None, 300),
    (2.5, INT, None, None),
    (2.5, INT, "half-even", 2),
    (2.5, INT, "half-up", 3),
    (-2.5, INT, "half-up", -3),
    (-2.7, INT, "down", -2),
    (2.0**63, LONG, None, None),
    (-(2.0**63), LONG, None, -(2**63)),
    ("2.0", LONG, None, 2),
    (Decimal("7.00"), INT, None, 7),
    (float("nan"), INT, "half-even", None),
    (float("inf"), DecimalType(12, 2), None, None),
    ("nan", DecimalType(12, 2), None, None),
    ("\u0661\u0662", LONG, None, None),  # Arabic-Indic digits are not a number here
    (True, LONG, None, None),
])
def test_examples(v, t, mode, want) -> None:
    if want is None:
        with pytest.raises(DoesNotFit):
            fit_value(v, t, mode)
    else:
        got = fit_value(v, t, mode)
        assert got == want and type(got) is type(want)
        if isinstance(want, Decimal):
            assert got.as_tuple() == want.as_tuple()


def test_float_examples() -> None:
    assert fit_value(16777217, FLOAT) == 16777216.0  # nearest float, as Spark stores it
    assert fit_value(2**53 + 1, DOUBLE) == 2.0**53
    assert fit_value(1e300, DOUBLE) == 1e300
    with pytest.raises(DoesNotFit, match="beyond the range of float"):
        fit_value(1e300, FLOAT)  # would become infinity
    with pytest.raises(DoesNotFit):
        fit_value("1e400", DOUBLE)
    assert math.isnan(fit_value("NaN", FLOAT)) and fit_value("-inf", DOUBLE) == -math.inf
    assert math.copysign(1, fit_value(-0.0, FLOAT)) == -1
    assert math.copysign(1, fit_value("-0", DOUBLE)) == -1
    # the float32 nearest to a decimal, not the float32 nearest to the double nearest to it
    assert Fraction(Decimal("1.000000059604644775390625")) == 1 + Fraction(1, 2**24)  # a float32 tie
    above = "1.0000000596046447753906250000001"
    assert float(above) == 1 + 2.0**-24  # the double rounds to the exact halfway point...
    assert fit_value(above, FLOAT) == 1 + 2.0**-23  # ...the float32 must still round up
    assert fit_value("1.000000059604644775390625", FLOAT) == 1.0  # a true tie: to even


def test_messages_name_the_value_the_type_and_why() -> None:
    with pytest.raises(DoesNotFit) as e:
        fit_value("12.555", DecimalType(12, 2))
    assert str(e.value) == "12.555 does not fit decimal(12, 2): more than 2 digits after the point"
    assert e.value.roundable and isinstance(e.value, InvalidInput)
    with pytest.raises(DoesNotFit) as e:
        fit_value(2.999, DecimalType(12, 2))
    assert str(e.value).startswith("2.999 does not fit decimal(12, 2): more than 2 digits after the point "
                                   "(as a binary floating-point number it is exactly 2.99900000000000011")
    with pytest.raises(DoesNotFit) as e:
        fit_value("123456789012", DecimalType(12, 2))
    assert str(e.value) == "123456789012 does not fit decimal(12, 2): more than 10 digits before the point"
    assert not e.value.roundable
    with pytest.raises(DoesNotFit) as e:
        fit_value(3_000_000_000, INT)
    assert str(e.value) == "3000000000 does not fit int: out of range (-2147483648 to 2147483647)"
    with pytest.raises(DoesNotFit, match=r"^'abc' does not fit long: not a number$"):
        fit_value("abc", LONG)


# -- arrays: the vectorized path equals the rule ---------------------------------------------------


def same(a: list, b: list) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if isinstance(x, float) and isinstance(y, float):
            if not (x == y and math.copysign(1, x) == math.copysign(1, y) or math.isnan(x) and math.isnan(y)):
                return False
        elif x != y or type(x) is not type(y):
            return False
    return True


def outcome(fn, arr, t, mode):
    try:
        return "ok", fn(arr, t, mode).to_pylist()
    except DoesNotFit as e:
        return "refused", e.index


SOURCES = {
    "int64": st.lists(st.integers(-(2**63), 2**63 - 1) | st.integers(-3000, 3000) | st.none(), max_size=8),
    "uint64": st.lists(st.integers(0, 2**64 - 1) | st.none(), max_size=8),
    "int32": st.lists(st.integers(-(2**31), 2**31 - 1) | st.none(), max_size=8),
    "float64": st.lists(floats | st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 0.5, 2.5, -2.5])
                        | st.none(), max_size=8),
    "float32": st.lists(st.floats(width=32) | st.none(), max_size=8),
    "string": st.lists(texts | st.sampled_from(["nan", "-inf", " 7 ", "+5", "1e3", ".5", "x", ""])
                       | st.none(), max_size=8),
}
ARROW = {"int64": pa.int64(), "uint64": pa.uint64(), "int32": pa.int32(), "float64": pa.float64(),
         "float32": pa.float32(), "string": pa.string()}
all_types = exact_types | st.sampled_from([FLOAT, DOUBLE])


@st.composite
def arrays(draw):
    kind = draw(st.sampled_from(sorted(SOURCES) + ["decimal"]))
    if kind == "decimal":
        p = draw(st.integers(1, 38))
        s = draw(st.integers(0, p))
        dt = pa.decimal128(p, s)
        vals = draw(st.lists(st.integers(-(10**p) + 1, 10**p - 1).map(
            lambda u: Decimal((int(u < 0), tuple(map(int, str(abs(u)))), -s))) | st.none(), max_size=8))
        return pa.array(vals, dt)
    return pa.array(draw(SOURCES[kind]), ARROW[kind])


@settings(derandomize=True, deadline=None, max_examples=600, suppress_health_check=[HealthCheck.too_slow])
@given(arrays(), all_types, st.sampled_from([None, *sorted(MODES)]))
def test_vectorized_arrays_equal_the_rule_value_by_value(arr, t, mode) -> None:
    fast = outcome(fit_array, arr, t, mode)
    slow = outcome(fit_distinct, arr, t, mode)
    if fast[0] == slow[0] == "ok":
        assert same(fast[1], slow[1]), (arr, t, mode, fast, slow)
    else:
        assert fast == slow, (arr, t, mode, fast, slow)
    # and the rule, one value at a time, refuses first at that index
    if slow[0] == "refused":
        for i, v in enumerate(arr.to_pylist()):
            if v is None:
                continue
            try:
                fit_value(v, t, mode)
            except DoesNotFit:
                assert i == slow[1]
                break


def test_refusal_index_is_the_first_row_that_does_not_fit() -> None:
    arr = pa.array(["1.5", "2.25", None, "2.25", "3.125", "1.5", "9.999"])
    with pytest.raises(DoesNotFit) as e:
        fit_array(arr, DecimalType(9, 2))
    assert e.value.index == 4 and e.value.value == "3.125"
    arr = pa.array([1.0, 2.0, float("nan"), 2.5])
    with pytest.raises(DoesNotFit) as e:
        fit_array(arr, INT)
    assert e.value.index == 2


def test_common_arrays_take_the_vectorized_path(monkeypatch) -> None:
    """Exact doubles into a decimal, text into decimals and integers, narrower integers: Arrow's
    casts, no value-by-value work (which stays the fallback that names the row)."""
    from icectl.ops.compute import fit

    def rule(*_a, **_k):
        raise AssertionError("the value-by-value rule ran")

    monkeypatch.setattr(fit, "fit_distinct", rule)
    got = fit_array(pa.array([0.5, -0.25, None, 1e9, 123456.75, -0.0]), DecimalType(12, 2)).to_pylist()
    assert got == [Decimal("0.50"), Decimal("-0.25"), None, Decimal("1000000000.00"), Decimal("123456.75"),
                   Decimal("0.00")]
    assert fit_array(pa.array(["1.5", "-2", None]), DecimalType(5, 1)).to_pylist() == [
        Decimal("1.5"), Decimal("-2.0"), None]
    assert fit_array(pa.array(["7", "-9"]), INT).to_pylist() == [7, -9]
    assert fit_array(pa.array([1, 2], pa.int64()), INT).type == pa.int32()
    assert fit_array(pa.array([Decimal("1.25")]), DecimalType(10, 1), "half-even").to_pylist() == [Decimal("1.2")]
