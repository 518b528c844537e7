"""Numbers fitted to a column's type exactly: ``fit_value`` (one value, the rule) and
``fit_array`` (a whole Arrow array: vectorized where Arrow can prove exactness, the rule value
by distinct value otherwise; a property test holds the two equal).

The rule, for ``int``, ``long`` and ``decimal(P,S)`` columns: a value is stored exactly or
refused, never silently changed.

- The value is taken exactly: an integer as itself, a decimal as its digits, text as the decimal
  number it spells (``"12.50"``, ``"1e3"``; ASCII digits only), a binary float (``double``,
  ``float``) as the exact binary value it holds - the double ``2.999`` is
  2.99899999999999966604491419275291264057159423828125, so it does not fit ``decimal(12,2)``.
- ``int``/``long``: the value must be integral and within the type's range.
- ``decimal(P,S)``: at most S digits after the point (trailing zeros do not count) and at most
  P digits in all once scaled to S.
- NaN and infinities fit no int, long or decimal column.

Rounding happens only when asked, with one of :data:`ROUNDINGS` - ``half-even`` (ties to the
even digit), ``half-up`` (ties away from zero, Spark's and Java's HALF_UP) or ``down`` (toward
zero): it applies to digits beyond a decimal's scale and to the fraction of a value bound for an
integer column, computed on the exact value with integer arithmetic (equal to Python's
``Decimal.quantize`` with that rounding). Too many digits before the point, or an integer out of
range, is refused even then.

``float`` and ``double`` columns hold binary approximations by nature: a value written to one is
the nearest value of that type (IEEE 754 round-to-nearest-even, whatever the source: text,
decimal, integer or a wider float), as Spark stores it. A finite value beyond the type's range,
which would become an infinity, is refused; NaN and infinities are kept.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icectl.errors import InvalidInput
from icectl.io.formats.parquet_write import arrow_type
from icectl.spec.types import DOUBLE, FLOAT, INT, LONG, DecimalType, IcebergType

__all__ = ["ROUNDINGS", "DoesNotFit", "fit_value", "fit_array", "is_numeric", "check_rounding",
           "nearest_binary"]

ROUNDINGS = ("half-even", "half-up", "down")
_ARROW_MODES = {"half-even": "half_to_even", "half-up": "half_towards_infinity", "down": "towards_zero"}
_RANGES = {INT: (-(2**31), 2**31 - 1), LONG: (-(2**63), 2**63 - 1)}
# (significand bits, minimum normal exponent, maximum exponent) of IEEE binary32 / binary64
_BINARY = {FLOAT: (24, -126, 127), DOUBLE: (53, -1022, 1023)}
_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?", re.ASCII)
_NAN = ("nan", "+nan", "-nan")
_INF = ("inf", "+inf", "infinity", "+infinity")


class DoesNotFit(InvalidInput):
    """A value that does not fit its column: ``index`` is its position in the array fitted,
    ``value`` the value as given, ``reason`` why (``text`` replaces the whole message);
    ``roundable`` when rounding would fit it."""

    def __init__(self, value: Any, t: IcebergType, reason: str, *, roundable: bool = False,
                 index: int | None = None, text: str | None = None) -> None:
        super().__init__(text or f"{_show(value)} does not fit {t}: {reason}")
        self.value, self.type, self.reason, self.roundable, self.index = value, t, reason, roundable, index
        self.text = text

    def at(self, index: int) -> "DoesNotFit":
        return DoesNotFit(self.value, self.type, self.reason, roundable=self.roundable, index=index,
                          text=self.text)


def _show(value: Any) -> str:
    if isinstance(value, str):
        if _NUMBER.fullmatch(value.strip()) and len(value) <= 80:
            return value.strip()  # a number as text (CSV, JSON): shown as written
        text = value if len(value) <= 60 else value[:57] + "..."
        return repr(text)
    if isinstance(value, float):
        return repr(value)
    return str(value)


def check_rounding(rounding: str | None) -> str | None:
    """``rounding`` if it is one of :data:`ROUNDINGS` (or None); InvalidInput otherwise."""
    if rounding is None or rounding in ROUNDINGS:
        return rounding
    raise InvalidInput(f"unknown rounding {rounding!r} (expected {', '.join(ROUNDINGS)})",
                       argument="rounding")


def is_numeric(t: IcebergType) -> bool:
    return t in (INT, LONG, FLOAT, DOUBLE) or isinstance(t, DecimalType)


# -- one value: the rule ---------------------------------------------------------------------------


def _exact(value: Any, t: IcebergType) -> Decimal | float:
    """The exact value of ``value`` (a Decimal, or a float NaN/infinity)."""
    if isinstance(value, bool):
        raise DoesNotFit(value, t, "a boolean is not a number")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        return value if not math.isfinite(value) else Decimal(value)  # Decimal(float) is exact
    if isinstance(value, Decimal):
        return value if value.is_finite() else float(value)
    if isinstance(value, str):
        s = value.strip()
        low = s.lower()
        if low in _NAN:
            return math.nan
        if low in _INF:
            return math.inf
        if low in ("-inf", "-infinity"):
            return -math.inf
        if not _NUMBER.fullmatch(s):
            raise DoesNotFit(value, t, "not a number")
        return Decimal(s)
    raise DoesNotFit(value, t, f"a {type(value).__name__} is not a number")


def _rounded(d: Decimal, scale: int, rounding: str | None, value: Any, t: IcebergType) -> int:
    """The unscaled integer of ``d`` at ``scale``: exact, or rounded as asked (integer
    arithmetic, any number of digits)."""
    sign, digits, exp = d.as_tuple()
    n = int("".join(map(str, digits)) or "0")
    shift = int(exp) + scale
    if shift >= 0:
        q = n * 10**shift
    else:
        q, r = divmod(n, 10**-shift)
        if r:
            if rounding is None:
                raise DoesNotFit(value, t, _lost_digits(value, d, scale, t), roundable=True)
            half = 10**-shift
            if rounding == "half-up" and 2 * r >= half or \
                    rounding == "half-even" and (2 * r > half or 2 * r == half and q % 2):
                q += 1
    return -q if sign else q


def _lost_digits(value: Any, d: Decimal, scale: int, t: IcebergType) -> str:
    if isinstance(t, DecimalType):
        what = f"more than {scale} digit{'s' if scale != 1 else ''} after the point"
    else:
        what = "it has a fractional part"
    if isinstance(value, float) and Decimal(repr(value)) != d:
        return f"{what} (as a binary floating-point number it is exactly {d})"
    return what


def nearest_binary(d: Decimal, t: IcebergType) -> float:
    """The ``float``/``double`` nearest to ``d`` (ties to even); OverflowError beyond the range."""
    bits, emin, emax = _BINARY[t]
    x = Fraction(d)
    if x == 0:
        return -0.0 if d.is_signed() else 0.0
    a = abs(x)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    quantum = Fraction(2) ** (max(e, emin) - bits + 1)
    m, r = divmod(a, quantum)
    if r * 2 > quantum or r * 2 == quantum and m % 2:
        m += 1
    v = m * quantum
    if v >= Fraction(2) ** (emax + 1):
        raise OverflowError
    f = float(v)  # exact: v has at most `bits` significant bits
    return -f if x < 0 else f


def fit_value(value: Any, t: IcebergType, rounding: str | None = None) -> Any:
    """``value`` (int, float, Decimal or text) as an internal value of the numeric type ``t``
    (int for int/long, Decimal with exponent -S for decimal, float for float/double) under the
    rule of the module docs; DoesNotFit otherwise."""
    d = _exact(value, t)
    if isinstance(d, float):  # NaN or an infinity
        if t in (FLOAT, DOUBLE):
            return d
        raise DoesNotFit(value, t, "not a finite number")
    if t in (FLOAT, DOUBLE):
        try:
            return nearest_binary(d, t)
        except OverflowError:
            raise DoesNotFit(value, t, f"beyond the range of {t}") from None
    if t in (INT, LONG):
        v = _rounded(d, 0, rounding, value, t)
        lo, hi = _RANGES[t]
        if not lo <= v <= hi:
            raise DoesNotFit(value, t, f"out of range ({lo} to {hi})")
        return v
    if isinstance(t, DecimalType):
        unscaled = _rounded(d, t.scale, rounding, value, t)
        if abs(unscaled) >= 10**t.precision:
            before = t.precision - t.scale
            raise DoesNotFit(value, t, f"more than {before} digit{'s' if before != 1 else ''} before the point")
        return Decimal((1 if unscaled < 0 else 0, tuple(int(c) for c in str(abs(unscaled))), -t.scale))
    raise TypeError(f"not a numeric type: {t}")


# -- whole arrays ---------------------------------------------------------------------------------


def _kind(src: pa.DataType) -> str | None:
    if pa.types.is_integer(src):
        return "int"
    if pa.types.is_floating(src):
        return "float"
    if pa.types.is_decimal(src):
        return "decimal"
    if pa.types.is_string(src) or pa.types.is_large_string(src):
        return "text"
    return None


def fits_source(src: pa.DataType) -> bool:
    """Whether :func:`fit_array` takes arrays of this Arrow type."""
    return _kind(src) is not None


def fit_array(arr: pa.Array, t: IcebergType, rounding: str | None = None) -> pa.Array:
    """``arr`` (integers, floats, decimals or text) as an array of ``arrow_type(t)`` under the
    rule of the module docs; DoesNotFit (with ``index``, the first position that does not fit)
    otherwise."""
    target = arrow_type(t)
    if arr.type == target:
        return arr
    try:
        out = _vectorized(arr, t, target, rounding)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        out = None
    return out if out is not None else fit_distinct(arr, t, rounding)


def _round(arr: pa.Array, ndigits: int, rounding: str) -> pa.Array:
    return pc.round(arr, ndigits=ndigits, round_mode=_ARROW_MODES[rounding])


def _vectorized(arr: pa.Array, t: IcebergType, target: pa.DataType, rounding: str | None) -> pa.Array | None:
    """Arrow's own casts where they are exact or fail (a safe cast refuses lost digits, integer
    overflow and fractions); None when only the value-by-value rule can decide."""
    kind = _kind(arr.type)
    if t in (FLOAT, DOUBLE):
        if kind == "decimal":  # decimal text to binary: correctly rounded by Arrow's parser
            arr = arr.cast(pa.string())
        if kind == "int":
            out = pc.cast(arr, target, safe=False)
        else:
            out = pc.cast(arr, target)
        if kind in ("float", "text", "decimal") and pc.any(pc.is_inf(out)).as_py():
            return None  # an infinity: given, or an overflow? the rule decides
        return out
    if kind == "float":
        if isinstance(t, DecimalType):
            return _float_to_decimal(arr, t, target) if rounding is None else None
        if rounding is not None:
            arr = _round(arr, 0, rounding)
        return pc.cast(arr, target)  # refuses NaN, fractions, out of range
    if kind == "text":
        return pc.cast(arr, target) if rounding is None else None
    if kind == "int" and isinstance(t, DecimalType):
        arr = pc.cast(arr, pa.decimal128(20, 0))  # exact for every integer type
        kind = "decimal"
    if kind == "decimal":
        if arr.type.precision > 38:
            return None  # wider than 38 digits: the rule decides
        # Arrow rescales in the source's width without an overflow check (3062541303 to
        # decimal(30,30) wraps around in 128 bits): widen first; 38 digits + 38 of scale fit 256
        arr = arr.cast(pa.decimal256(76, arr.type.scale))
        scale = t.scale if isinstance(t, DecimalType) else 0
        if rounding is not None and arr.type.scale > scale:
            arr = _round(arr, scale, rounding)
    return pc.cast(arr, target)


def _float_to_decimal(arr: pa.Array, t: DecimalType, target: pa.DataType) -> pa.Array | None:
    """Binary floats that are exact at the column's scale, vectorized; None when a value is not
    (or is too large for this proof) and the rule must decide.

    A double x = m * 2**e (m odd) has at most S digits after the point exactly when x * 2**S is
    an integer (both mean e + S >= 0), and scaling by a power of two is exact. When moreover
    |x| * 10**S < 2**53 (and S <= 22, so 10**S is a double), the product x * 10**S is an integer
    a double holds, so the floating-point multiplication gives it exactly: the unscaled value."""
    s = t.scale
    if s > 22:
        return None
    x = arr.cast(pa.float64())  # float32 -> float64 is exact
    scaled2 = pc.multiply(x, 2.0**s)
    ok = pc.and_(pc.less(pc.abs(x), 2.0**53 / 10**s), pc.equal(pc.floor(scaled2), scaled2))
    if not pc.all(ok).as_py() in (True, None):  # nulls are skipped; NaN fails the comparisons
        return None
    unscaled = pc.cast(pc.multiply(x, float(10**s)), pa.int64())
    as_decimal = pc.cast(unscaled, pa.decimal128(38, 0)).view(pa.decimal128(38, s))
    return pc.cast(as_decimal, target)  # refuses more digits than the precision


def fit_distinct(arr: pa.Array, t: IcebergType, rounding: str | None = None) -> pa.Array:
    """:func:`fit_value` on each distinct value of ``arr``; DoesNotFit names the first position
    (distinct values come in order of first appearance, so the first that fails is the
    earliest)."""
    from icectl.ops.compute.arrow_values import internal_to_arrow

    uniques = pc.unique(arr)
    codes = pc.index_in(arr, value_set=uniques)
    out = []
    for i, v in enumerate(uniques.to_pylist()):
        if v is None:
            out.append(None)
            continue
        try:
            out.append(fit_value(v, t, rounding))
        except DoesNotFit as e:
            raise e.at(pc.index(codes, i).as_py()) from None
    return pc.take(internal_to_arrow(out, t), codes)
