"""Exact value arithmetic and the reference's text of values, shared by transforms and literals.

- the proleptic Gregorian calendar for any year (Python's ``datetime`` stops at 9999):
  :func:`days_to_civil`, :func:`civil_to_days`;
- unscaled decimals of any precision without a decimal context: :func:`decimal_unscaled`,
  :func:`decimal_from_unscaled`;
- Java's fixed-width truncation (:func:`java_truncate`, what the truncate transform computes);
- Java's text of values as the reference prints them (``java.time`` dates and times,
  ``Double.toString``/``Float.toString``): :func:`java_year`, :func:`human_value` (the human
  string of an identity partition value) and the human strings of year, month, day and hour
  partition values.
"""

from __future__ import annotations

import base64
import math
import struct
from decimal import Decimal
from typing import Any

from icectl.spec.types import (
    DATE,
    FLOAT,
    TIME,
    TIMESTAMP,
    TIMESTAMP_NS,
    TIMESTAMPTZ,
    TIMESTAMPTZ_NS,
    DecimalType,
    IcebergType,
)

__all__ = [
    "days_to_civil", "civil_to_days", "decimal_unscaled", "decimal_from_unscaled", "java_year",
    "human_value", "human_year", "human_month", "human_day", "human_hour", "java_truncate",
]


# -- calendar (proleptic Gregorian, any year) -----------------------------------------------------


def days_to_civil(days: int) -> tuple[int, int, int]:
    """(year, month, day) of a count of days from 1970-01-01."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    return (y + 1 if m <= 2 else y), m, d


def civil_to_days(year: int, month: int, day: int) -> int:
    """Days from 1970-01-01 of a calendar date."""
    y = year - 1 if month <= 2 else year
    era = y // 400
    yoe = y - era * 400
    mp = month - 3 if month > 2 else month + 9
    doy = (153 * mp + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def decimal_unscaled(value: Decimal, scale: int | None = None) -> int:
    """The unscaled integer of a decimal at ``scale`` (its own exponent when None).

    Exact for any number of digits (no decimal context is involved); a value with non-zero
    digits beyond the scale is refused with ValueError.
    """
    sign, digits, exp = value.as_tuple()
    if not isinstance(exp, int):
        raise ValueError(f"{value} is not a finite decimal")
    n = int("".join(map(str, digits)) or "0")
    if sign:
        n = -n
    if scale is None:
        scale = -exp
    shift = exp + scale
    if shift >= 0:
        return n * 10**shift
    q, r = divmod(n, 10**-shift)
    if r:
        raise ValueError(f"{value} has more than {scale} digits after the decimal point")
    return q


def decimal_from_unscaled(unscaled: int, scale: int) -> Decimal:
    """The decimal ``unscaled * 10**-scale``, exactly, with exponent ``-scale``."""
    return Decimal((1 if unscaled < 0 else 0, tuple(int(c) for c in str(abs(unscaled))), -scale))


# -- Java-compatible text (the reference's partition path values) --------------------------------


def java_year(y: int) -> str:
    # java.time's LocalDate.toString: 4 digits at least, '+' above 9999
    if abs(y) < 1000:
        return f"-{abs(y):04d}" if y < 0 else f"{y:04d}"
    return f"+{y}" if y > 9999 else str(y)


def _java_local_time(nanos_of_day: int) -> str:
    # java.time's LocalTime.toString: HH:mm, then :ss and a fraction in groups of 3 digits
    h, rem = divmod(nanos_of_day, 3_600_000_000_000)
    m, rem = divmod(rem, 60_000_000_000)
    s, n = divmod(rem, 1_000_000_000)
    out = f"{h:02d}:{m:02d}"
    if s or n:
        out += f":{s:02d}"
        if n:
            if n % 1_000_000 == 0:
                out += f".{n // 1_000_000:03d}"
            elif n % 1000 == 0:
                out += f".{n // 1000:06d}"
            else:
                out += f".{n:09d}"
    return out


def _java_local_datetime(nanos: int) -> str:
    days, nod = divmod(nanos, 86_400 * 1_000_000_000)
    y, m, d = days_to_civil(days)
    return f"{java_year(y)}-{m:02d}-{d:02d}T{_java_local_time(nod)}"


def _java_double(v: float) -> str:
    """Java's Double.toString for finite and special values."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    if v == 0:
        return "-0.0" if math.copysign(1.0, v) < 0 else "0.0"
    a = abs(v)
    if 1e-3 <= a < 1e7:
        r = repr(v)
        if "e" in r or "E" in r:  # cannot happen in this range, but be safe
            r = f"{v:f}"
        return r if "." in r else r + ".0"
    digits, exp = _shortest_digits(v)
    mant = digits[0] + "." + (digits[1:] or "0")
    return f"{'-' if v < 0 else ''}{mant}E{exp}"


def _shortest_digits(v: float) -> tuple[str, int]:
    r = repr(abs(v))  # Python's repr gives the shortest round-tripping digits
    if "e" in r:
        mant, exp = r.split("e")
        digits = mant.replace(".", "").rstrip("0") or "0"
        lead = mant.split(".")[0]
        return digits, int(exp) + len(lead) - 1
    intpart, _, frac = r.partition(".")
    if intpart != "0":
        digits = (intpart + frac).rstrip("0")
        return digits, len(intpart) - 1
    stripped = frac.lstrip("0")
    return stripped.rstrip("0"), -(len(frac) - len(stripped)) - 1


def _java_float(v: float) -> str:
    """Java's Float.toString: the shortest digits that round-trip through 32 bits."""
    if math.isnan(v) or math.isinf(v) or v == 0:
        return _java_double(v)
    f32 = _to_float32(v)
    if math.isinf(f32):
        return _java_double(f32)
    for prec in range(1, 10):
        # a candidate may round beyond the largest float (3.403e38 for 3.4028235e38): no match
        cand = float(f"{f32:.{prec - 1}e}")
        if _to_float32(cand) == f32:
            return _java_double(cand)
    return _java_double(f32)


def _to_float32(v: float) -> float:
    """``v`` rounded to the nearest float (Java's ``(float) v``): infinite beyond its range."""
    try:
        return struct.unpack("<f", struct.pack("<f", v))[0]
    except OverflowError:
        return math.copysign(math.inf, v)


def human_value(source_type: IcebergType | None, value: Any) -> str:
    """The reference's human string of a value of a type (identity partition paths)."""
    if value is None:
        return "null"
    if source_type == DATE:
        return human_day(value)
    if source_type == TIME:
        return _java_local_time(value * 1000)
    if source_type == TIMESTAMP:
        return _java_local_datetime(value * 1000)
    if source_type == TIMESTAMPTZ:
        return _java_local_datetime(value * 1000) + "Z"
    if source_type == TIMESTAMP_NS:
        return _java_local_datetime(value)
    if source_type == TIMESTAMPTZ_NS:
        return _java_local_datetime(value) + "Z"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, float):
        return _java_float(value) if source_type == FLOAT else _java_double(value)
    if isinstance(value, Decimal):
        if isinstance(source_type, DecimalType):
            value = decimal_from_unscaled(decimal_unscaled(value, source_type.scale),
                                          source_type.scale)
        return str(value)
    return str(value)


def human_year(v: int) -> str:
    return f"{1970 + v:04d}"


def human_month(v: int) -> str:
    return f"{1970 + v // 12:04d}-{v % 12 + 1:02d}"


def human_day(v: int) -> str:
    y, m, d = days_to_civil(v)
    return f"{y:04d}-{m:02d}-{d:02d}"


def human_hour(v: int) -> str:
    days, h = divmod(v, 24)
    y, m, d = days_to_civil(days)
    return f"{y:04d}-{m:02d}-{d:02d}-{h:02d}"


# -- Java's fixed-width integer arithmetic ----------------------------------------------------


def _wrap(n: int, bits: int) -> int:
    """Two's-complement wrap-around of Java int (32) or long (64) arithmetic."""
    m = 1 << bits
    n &= m - 1
    return n - m if n >= m >> 1 else n


def _java_rem(a: int, b: int) -> int:
    """Java's % (the remainder takes the dividend's sign)."""
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def java_truncate(v: int, w: int, bits: int) -> int:
    """The reference's ``v - (((v % W) + W) % W)`` in Java int/long arithmetic.

    Equal to floor truncation except within W of the type's minimum, where Java's result wraps
    to the other end of the range; partition values it wrote carry the wrapped value.
    """
    inner = _wrap(_java_rem(v, w) + w, bits)
    return _wrap(v - _java_rem(inner, w), bits)
