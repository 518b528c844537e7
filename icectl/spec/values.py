"""Values of Iceberg types: their internal form, binary and JSON serialization, text forms.

Internal representation (what every icectl module passes around):

=====================================  ===============================================
type                                   Python value
=====================================  ===============================================
boolean                                ``bool``
int, long                              ``int``
float, double                          ``float``
decimal(P, S)                          ``decimal.Decimal`` (any exponent; serialized at S)
date                                   ``int`` days from 1970-01-01
time                                   ``int`` microseconds from midnight
timestamp, timestamptz                 ``int`` microseconds from 1970-01-01T00:00 (UTC)
timestamp_ns, timestamptz_ns           ``int`` nanoseconds from 1970-01-01T00:00 (UTC)
string                                 ``str``
uuid                                   ``uuid.UUID``
fixed(L), binary, geometry, geography  ``bytes`` (WKB for the geospatial types)
struct                                 ``dict`` of field id -> value
list                                   ``list``
map                                    ``dict``
=====================================  ===============================================

``to_bytes``/``from_bytes`` implement the spec's binary single-value serialization (Appendix D,
used for column bounds); ``to_json_value``/``from_json_value`` the JSON single-value form (used
for default values and partition values), written the way the reference writes it.
``to_human`` is for display and ``parse_literal`` reads values typed on the command line.
"""

from __future__ import annotations

import math
import re
import struct
import uuid as _uuid
from decimal import Decimal, InvalidOperation
from typing import Any

from icectl.errors import CorruptMetadata, InvalidInput, UnsupportedFeature
from icectl.spec.javatext import (
    civil_to_days,
    days_to_civil,
    decimal_from_unscaled,
    decimal_unscaled,
    java_year,
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
    UUID,
    DecimalType,
    FixedType,
    GeographyType,
    GeometryType,
    IcebergType,
    ListType,
    MapType,
    StructType,
)

__all__ = [
    "to_bytes", "from_bytes", "to_json_value", "from_json_value", "to_human", "parse_literal",
    "decimal_to_unscaled", "unscaled_to_decimal", "format_date", "format_time",
    "format_timestamp", "parse_date", "parse_time", "parse_timestamp",
    "INT_MIN", "INT_MAX", "LONG_MIN", "LONG_MAX",
]

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
MICROS_PER_DAY = 86_400_000_000
NANOS_PER_DAY = 86_400_000_000_000
_TZ_TYPES = (TIMESTAMPTZ, TIMESTAMPTZ_NS)
_NS_TYPES = (TIMESTAMP_NS, TIMESTAMPTZ_NS)
_MICRO_TS_TYPES = (TIMESTAMP, TIMESTAMPTZ)


# ----------------------------------------------------------------------------------------------
# Decimals


def decimal_to_unscaled(value: Decimal, scale: int) -> int:
    """The unscaled integer of a decimal at a scale (exact); ValueError if digits would be lost."""
    return decimal_unscaled(value, scale)


def unscaled_to_decimal(unscaled: int, scale: int) -> Decimal:
    """The decimal with this unscaled value and exponent ``-scale`` (exact)."""
    return decimal_from_unscaled(unscaled, scale)


def _min_be(n: int) -> bytes:
    return n.to_bytes((n + (n < 0)).bit_length() // 8 + 1, "big", signed=True)


# ----------------------------------------------------------------------------------------------
# Binary single-value serialization (Appendix D)


def to_bytes(t: IcebergType, value: Any) -> bytes:
    """Binary single-value serialization of a non-null value."""
    try:
        if t == BOOLEAN:
            return b"\x01" if value else b"\x00"
        if t in (INT, DATE):
            return struct.pack("<i", value)
        if t in (LONG, TIME, TIMESTAMP, TIMESTAMPTZ, TIMESTAMP_NS, TIMESTAMPTZ_NS):
            return struct.pack("<q", value)
        if t == FLOAT:
            return struct.pack("<f", value)
        if t == DOUBLE:
            return struct.pack("<d", value)
        if t == STRING:
            return value.encode("utf-8")
        if t == UUID:
            return value.bytes
        if isinstance(t, DecimalType):
            return _min_be(decimal_to_unscaled(value, t.scale))
        if isinstance(t, FixedType):
            b = bytes(value)
            if len(b) != t.length:
                raise ValueError(f"expected {t.length} bytes, got {len(b)}")
            return b
        if t == BINARY or isinstance(t, (GeometryType, GeographyType)):
            return bytes(value)
    except (struct.error, AttributeError, TypeError, ValueError) as e:
        raise ValueError(f"cannot serialize {value!r} as {t}: {e}") from None
    raise UnsupportedFeature(f"type {t} has no binary single-value serialization")


def from_bytes(t: IcebergType, data: bytes) -> Any:
    """Decode a binary single value. Also reads values written before a type promotion
    (4-byte int as long, 4-byte float as double, 4-byte date as timestamp)."""
    data = bytes(data)
    n = len(data)
    try:
        if t == BOOLEAN:
            if n != 1:
                raise ValueError("expected 1 byte")
            return data != b"\x00"
        if t in (INT, DATE):
            return struct.unpack("<i", data)[0]
        if t in (LONG, TIME):
            return struct.unpack("<i" if n == 4 else "<q", data)[0]
        if t in _MICRO_TS_TYPES or t in _NS_TYPES:
            if n == 4:  # a date bound, written before date -> timestamp promotion
                days = struct.unpack("<i", data)[0]
                return days * (NANOS_PER_DAY if t in _NS_TYPES else MICROS_PER_DAY)
            return struct.unpack("<q", data)[0]
        if t == FLOAT:
            return struct.unpack("<f", data)[0]
        if t == DOUBLE:
            return struct.unpack("<f" if n == 4 else "<d", data)[0]
        if t == STRING:
            return data.decode("utf-8")
        if t == UUID:
            return _uuid.UUID(bytes=data)
        if isinstance(t, DecimalType):
            if n == 0:
                raise ValueError("empty decimal")
            return unscaled_to_decimal(int.from_bytes(data, "big", signed=True), t.scale)
        if isinstance(t, FixedType) or t == BINARY or isinstance(t, (GeometryType, GeographyType)):
            return data
    except (struct.error, UnicodeDecodeError, ValueError) as e:
        raise CorruptMetadata(f"cannot read {t} value from bytes {data.hex()}: {e}") from None
    raise UnsupportedFeature(f"type {t} has no binary single-value serialization")


# ----------------------------------------------------------------------------------------------
# Date/time text (ISO 8601, any year; the reference's java.time formatting)


def _fraction(n: int, digits: int) -> str:
    """A fraction of a second with trailing zeros removed (java.time's ISO formatters)."""
    if n == 0:
        return ""
    return "." + f"{n:0{digits}d}".rstrip("0")


def format_date(days: int) -> str:
    y, m, d = days_to_civil(days)
    return f"{java_year(y)}-{m:02d}-{d:02d}"


def format_time(micros: int, nanos: bool = False) -> str:
    unit = 1_000_000_000 if nanos else 1_000_000
    secs, frac = divmod(micros, unit)
    h, rem = divmod(secs, 3600)
    m, s = divmod(rem, 60)
    return f"{h:02d}:{m:02d}:{s:02d}{_fraction(frac, 9 if nanos else 6)}"


def format_timestamp(value: int, nanos: bool = False, tz: bool = False) -> str:
    per_day = NANOS_PER_DAY if nanos else MICROS_PER_DAY
    days, tod = divmod(value, per_day)
    return f"{format_date(days)}T{format_time(tod, nanos)}{'+00:00' if tz else ''}"


_DATE_RE = re.compile(r"([+-]?\d{4,})-(\d{1,2})-(\d{1,2})")
_TIME_RE = re.compile(r"(\d{1,2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?")
_OFFSET_RE = re.compile(r"(Z|z|[+-]\d{2}(?::?\d{2})?(?::?\d{2})?)")
_TS_RE = re.compile(
    rf"{_DATE_RE.pattern}(?:[Tt ]{_TIME_RE.pattern})?\s*{_OFFSET_RE.pattern}?(?:\[UTC\])?")


def _days(y: int, m: int, d: int, text: str) -> int:
    if not 1 <= m <= 12:
        raise ValueError(f"invalid month in {text!r}")
    days = civil_to_days(y, m, d)
    if d < 1 or days_to_civil(days) != (y, m, d):
        raise ValueError(f"invalid day of month in {text!r}")
    return days


def _time_of_day(h: str, mi: str, s: str | None, frac: str | None, nanos: bool, text: str) -> int:
    hh, mm, ss = int(h), int(mi), int(s or 0)
    if hh > 23 or mm > 59 or ss > 59:
        raise ValueError(f"invalid time in {text!r}")
    frac = frac or ""
    max_digits = 9 if nanos else 6
    if len(frac) > max_digits and frac[max_digits:].strip("0"):
        raise ValueError(f"{text!r} has more precision than {'nano' if nanos else 'micro'}seconds")
    frac = (frac + "0" * 9)[:max_digits]
    unit = 10**max_digits
    return (hh * 3600 + mm * 60 + ss) * unit + int(frac)


def _offset_seconds(off: str | None) -> int | None:
    if off is None:
        return None
    if off in ("Z", "z"):
        return 0
    sign = -1 if off[0] == "-" else 1
    digits = off[1:].replace(":", "")
    h = int(digits[0:2])
    m = int(digits[2:4] or 0)
    s = int(digits[4:6] or 0)
    if h > 18 or m > 59 or s > 59:
        raise ValueError(f"invalid zone offset {off!r}")
    return sign * (h * 3600 + m * 60 + s)


def parse_date(text: str) -> int:
    """Days from the epoch of an ISO date (``2024-01-02``)."""
    m = _DATE_RE.fullmatch(text.strip())
    if not m:
        raise ValueError(f"invalid date {text!r} (expected YYYY-MM-DD)")
    return _days(int(m.group(1)), int(m.group(2)), int(m.group(3)), text)


def parse_time(text: str, nanos: bool = False) -> int:
    """Micros (or nanos) from midnight of an ISO time (``10:00``, ``10:00:01.5``)."""
    m = _TIME_RE.fullmatch(text.strip())
    if not m:
        raise ValueError(f"invalid time {text!r} (expected HH:MM[:SS[.ffffff]])")
    return _time_of_day(m.group(1), m.group(2), m.group(3), m.group(4), nanos, text)


def parse_timestamp(text: str, nanos: bool = False, tz: bool = False,
                    require_utc: bool = False) -> int:
    """Micros (or nanos) from the epoch of an ISO timestamp.

    A date alone means midnight. With ``tz`` an offset is allowed (the value is converted to
    UTC; none means UTC); with ``require_utc`` it must be ``+00:00``/``Z``. Without ``tz`` an
    offset is refused.
    """
    s = text.strip()
    m = _TS_RE.fullmatch(s)
    if not m:
        raise ValueError(f"invalid timestamp {text!r} (expected YYYY-MM-DDTHH:MM[:SS[.ffffff]])")
    days = _days(int(m.group(1)), int(m.group(2)), int(m.group(3)), text)
    tod = 0
    if m.group(4) is not None:
        tod = _time_of_day(m.group(4), m.group(5), m.group(6), m.group(7), nanos, text)
    offset = _offset_seconds(m.group(8))
    if offset is not None and not tz:
        raise ValueError(f"timestamp without zone must not have an offset: {text!r}")
    if require_utc and offset not in (None, 0):
        raise ValueError(f"timestamptz offset must be +00:00: {text!r}")
    unit = 1_000_000_000 if nanos else 1_000_000
    return days * (NANOS_PER_DAY if nanos else MICROS_PER_DAY) + tod - (offset or 0) * unit


# ----------------------------------------------------------------------------------------------
# JSON single-value serialization (Appendix D)


def _java_float_json(v: float) -> Any:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return v


def to_json_value(t: IcebergType, value: Any, names: bool = False) -> Any:
    """The JSON single-value form of a value (None -> None). ``names``: structs keyed by their
    fields' names instead of ids (how rows are shown to people; not the spec's form)."""
    if value is None:
        return None
    if t == BOOLEAN:
        return bool(value)
    if t in (INT, LONG):
        return int(value)
    if t in (FLOAT, DOUBLE):
        return _java_float_json(float(value))
    if isinstance(t, DecimalType):
        unscaled = decimal_to_unscaled(value, t.scale)
        d = unscaled_to_decimal(unscaled, t.scale)
        return format(d, "f")  # plain notation at the type's scale, like toPlainString
    if t == DATE:
        return format_date(value)
    if t == TIME:
        return format_time(value)
    if t in _MICRO_TS_TYPES or t in _NS_TYPES:
        return format_timestamp(value, nanos=t in _NS_TYPES, tz=t in _TZ_TYPES)
    if t == STRING:
        return str(value)
    if t == UUID:
        return str(value)
    if isinstance(t, FixedType) or t == BINARY:
        return bytes(value).hex().upper()  # the reference writes upper-case hex
    if isinstance(t, StructType):
        return {(f.name if names else str(f.field_id)): to_json_value(f.type, value[f.field_id], names)
                for f in t.fields() if f.field_id in value}
    if isinstance(t, ListType):
        return [to_json_value(t.element_type, v, names) for v in value]
    if isinstance(t, MapType):
        return {"keys": [to_json_value(t.key_type, k, names) for k in value],
                "values": [to_json_value(t.value_type, v, names) for v in value.values()]}
    raise UnsupportedFeature(f"type {t} has no JSON single-value serialization in icectl")


def from_json_value(t: IcebergType, obj: Any) -> Any:
    """Read a JSON single value; raises CorruptMetadata when it does not fit the type."""
    if obj is None:
        return None
    try:
        return _from_json(t, obj)
    except CorruptMetadata:
        raise
    except (ValueError, TypeError, KeyError, InvalidOperation, AttributeError) as e:
        raise CorruptMetadata(f"cannot read {obj!r} as a {t} value: {e}") from None


def _need(cond: bool, t: IcebergType, obj: Any) -> None:
    if not cond:
        raise CorruptMetadata(f"cannot read {obj!r} as a {t} value")


def _from_json(t: IcebergType, obj: Any) -> Any:
    if t == BOOLEAN:
        _need(isinstance(obj, bool), t, obj)
        return obj
    if t in (INT, LONG):
        _need(isinstance(obj, int) and not isinstance(obj, bool), t, obj)
        lo, hi = (INT_MIN, INT_MAX) if t == INT else (LONG_MIN, LONG_MAX)
        _need(lo <= obj <= hi, t, obj)
        return obj
    if t in (FLOAT, DOUBLE):
        if isinstance(obj, str) and obj in ("NaN", "Infinity", "-Infinity"):
            return float(obj.replace("Infinity", "inf"))
        _need(isinstance(obj, (int, float)) and not isinstance(obj, bool), t, obj)
        return float(obj)
    if isinstance(t, DecimalType):
        _need(isinstance(obj, str), t, obj)
        d = Decimal(obj)
        _need(d.is_finite() and -d.as_tuple().exponent == t.scale, t, obj)  # type: ignore[operator]
        return d
    if t == DATE:
        _need(isinstance(obj, str), t, obj)
        return parse_date(obj)
    if t == TIME:
        _need(isinstance(obj, str), t, obj)
        return parse_time(obj)
    if t in _MICRO_TS_TYPES or t in _NS_TYPES:
        _need(isinstance(obj, str), t, obj)
        return parse_timestamp(obj, nanos=t in _NS_TYPES, tz=t in _TZ_TYPES,
                               require_utc=t in _TZ_TYPES)
    if t == STRING:
        _need(isinstance(obj, str), t, obj)
        return obj
    if t == UUID:
        _need(isinstance(obj, str) and len(obj) == 36, t, obj)
        return _uuid.UUID(obj)
    if isinstance(t, FixedType) or t == BINARY:
        _need(isinstance(obj, str), t, obj)
        b = bytes.fromhex(obj)
        if isinstance(t, FixedType):
            _need(len(b) == t.length, t, obj)
        return b
    if isinstance(t, StructType):
        _need(isinstance(obj, dict), t, obj)
        out = {}
        for f in t.fields():
            key = str(f.field_id)
            if key in obj:
                out[f.field_id] = None if obj[key] is None else _from_json(f.type, obj[key])
        return out
    if isinstance(t, ListType):
        _need(isinstance(obj, list), t, obj)
        return [None if v is None else _from_json(t.element_type, v) for v in obj]
    if isinstance(t, MapType):
        _need(isinstance(obj, dict) and isinstance(obj.get("keys"), list)
              and isinstance(obj.get("values"), list) and len(obj["keys"]) == len(obj["values"]),
              t, obj)
        return {_from_json(t.key_type, k): (None if v is None else _from_json(t.value_type, v))
                for k, v in zip(obj["keys"], obj["values"])}
    raise UnsupportedFeature(f"type {t} has no JSON single-value serialization in icectl")


# ----------------------------------------------------------------------------------------------
# Display


def to_human(t: IcebergType, value: Any) -> str:
    """Text for display: ISO dates/times (``+00:00`` for zoned timestamps), plain decimals,
    lower-case hex for binary, canonical UUIDs, ``null`` for None."""
    if value is None:
        return "null"
    if t == BOOLEAN:
        return "true" if value else "false"
    if t in (FLOAT, DOUBLE):
        v = float(value)
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        return repr(v)
    if isinstance(t, DecimalType):
        try:
            return format(unscaled_to_decimal(decimal_to_unscaled(value, t.scale), t.scale), "f")
        except ValueError:
            return format(value, "f")
    if isinstance(t, FixedType) or t in (BINARY,) or isinstance(t, (GeometryType, GeographyType)):
        return bytes(value).hex()
    if isinstance(t, (StructType, ListType, MapType)):
        if isinstance(t, StructType):
            inner = ", ".join(f"{f.name}: {to_human(f.type, value.get(f.field_id))}"
                              for f in t.fields())
            return "{" + inner + "}"
        if isinstance(t, ListType):
            return "[" + ", ".join(to_human(t.element_type, v) for v in value) + "]"
        return "{" + ", ".join(f"{to_human(t.key_type, k)}: {to_human(t.value_type, v)}"
                               for k, v in value.items()) + "}"
    j = to_json_value(t, value)
    return j if isinstance(j, str) else str(j)


# ----------------------------------------------------------------------------------------------
# Command-line literals


def parse_literal(t: IcebergType, text: str) -> Any:
    """A value of type ``t`` from command-line text; InvalidInput when it does not fit.

    Accepted forms: ``true``/``false``; integers; decimal numbers (``12.30``; at most the
    type's scale digits, padded to it); ISO dates, times and timestamps (``2024-01-02``,
    ``10:00:00``, ``2024-01-02T10:00:00[.ffffff][+01:00]`` with a space allowed for ``T``; an
    offset only for timestamptz, where it is converted to UTC and none means UTC); canonical
    UUIDs; hex for binary and fixed (an optional ``0x`` prefix).
    """
    if not isinstance(text, str):
        raise InvalidInput(f"expected text for a {t} value, got {text!r}")
    s = text if t == STRING else text.strip()
    try:
        return _parse_literal(t, s)
    except InvalidInput:
        raise
    except (ValueError, InvalidOperation, OverflowError) as e:
        raise InvalidInput(f"invalid {t} value {text!r}: {e}") from None


def _parse_literal(t: IcebergType, s: str) -> Any:
    if t == BOOLEAN:
        low = s.lower()
        if low in ("true", "false"):
            return low == "true"
        raise ValueError("expected true or false")
    if t in (INT, LONG):
        if not re.fullmatch(r"[+-]?\d+", s):
            raise ValueError("expected an integer")
        v = int(s)
        lo, hi = (INT_MIN, INT_MAX) if t == INT else (LONG_MIN, LONG_MAX)
        if not lo <= v <= hi:
            raise ValueError(f"out of range for {t} ({lo} to {hi})")
        return v
    if t in (FLOAT, DOUBLE):
        low = s.lower()
        if low in ("nan", "+nan", "-nan"):
            return math.nan
        if low in ("inf", "+inf", "infinity", "+infinity"):
            return math.inf
        if low in ("-inf", "-infinity"):
            return -math.inf
        if not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", s):
            raise ValueError("expected a number")
        v = float(s)
        if t == FLOAT and math.isfinite(v):
            v = struct.unpack("<f", struct.pack("<f", v))[0]
        return v
    if isinstance(t, DecimalType):
        if not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", s):
            raise ValueError("expected a decimal number")
        d = Decimal(s)
        unscaled = decimal_to_unscaled(d, t.scale)
        if len(str(abs(unscaled))) > t.precision:
            raise ValueError(f"more than {t.precision} digits")
        return unscaled_to_decimal(unscaled, t.scale)
    if t == DATE:
        v = parse_date(s)
        if not INT_MIN <= v <= INT_MAX:
            raise ValueError("date out of range")
        return v
    if t == TIME:
        return parse_time(s)
    if t in _MICRO_TS_TYPES or t in _NS_TYPES:
        v = parse_timestamp(s, nanos=t in _NS_TYPES, tz=t in _TZ_TYPES)
        if not LONG_MIN <= v <= LONG_MAX:
            raise ValueError("timestamp out of range")
        return v
    if t == STRING:
        return s
    if t == UUID:
        if not re.fullmatch(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                            r"[0-9a-fA-F]{12}", s):
            raise ValueError("expected a UUID like 123e4567-e89b-12d3-a456-426614174000")
        return _uuid.UUID(s)
    if isinstance(t, FixedType) or t == BINARY:
        h = s[2:] if s[:2] in ("0x", "0X") else s
        if not re.fullmatch(r"(?:[0-9a-fA-F]{2})*", h):
            raise ValueError("expected hex digits (an even number)")
        b = bytes.fromhex(h)
        if isinstance(t, FixedType) and len(b) != t.length:
            raise ValueError(f"expected {t.length} bytes, got {len(b)}")
        return b
    raise InvalidInput(f"values of type {t} cannot be given as text")
