"""Filter text for values and column names: what the parser reads back to the same thing."""

from __future__ import annotations

import math
import re
from typing import Any

from icectl.spec.transforms import human_value
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
    IcebergType,
)
from icectl.spec.values import format_date, format_time, format_timestamp

__all__ = ["render_value", "render_name", "KEYWORDS", "quote", "render_float", "render_binary",
           "timestamp_text"]

FLOAT_TYPES = (FLOAT, DOUBLE)
TIMESTAMP_TYPES = (TIMESTAMP, TIMESTAMPTZ, TIMESTAMP_NS, TIMESTAMPTZ_NS)
NS_TYPES = (TIMESTAMP_NS, TIMESTAMPTZ_NS)
_TZ_TYPES = (TIMESTAMPTZ, TIMESTAMPTZ_NS)


def timestamp_text(nanos: int, tz: bool) -> str:
    if nanos % 1000 == 0:
        return format_timestamp(nanos // 1000, nanos=False, tz=tz)
    return format_timestamp(nanos, nanos=True, tz=tz)


def quote(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def render_float(v: float) -> str:
    if math.isinf(v):
        return "double 'Infinity'" if v > 0 else "double '-Infinity'"
    r = repr(float(v))
    return r


def render_binary(b: bytes) -> str:
    return "X'" + bytes(b).hex().upper() + "'"


_NAME_REST = re.compile(r"[\w$]*")
# words of the filter language that must be quoted when used as a column name
KEYWORDS = frozenset({"and", "or", "not", "in", "is", "between", "like", "null", "true", "false"})


def _is_plain_name(part: str) -> bool:
    """Whether the parser reads ``part`` as one name unquoted: a letter of any script or '_',
    then letters, digits, '_' or '$'."""
    return bool(part) and (part[0].isalpha() or part[0] == "_") and \
        _NAME_REST.fullmatch(part, 1) is not None


def render_name(name: str) -> str:
    """A dotted column name as filter text, quoting parts that need it."""
    out = []
    for part in name.split("."):
        if _is_plain_name(part) and part.lower() not in KEYWORDS:
            out.append(part)
        else:
            out.append("`" + part.replace("`", "``") + "`")
    return ".".join(out)


def render_value(t: IcebergType, v: Any) -> str:
    """A value of a type as filter text that parses and binds back to the same value."""
    if t == BOOLEAN:
        return "true" if v else "false"
    if t in (INT, LONG):
        return str(int(v))
    if t in FLOAT_TYPES:
        if math.isinf(v) or math.isnan(v):
            return render_float(float(v))
        return human_value(t, float(v))  # Java's shortest digits; parses back to the value
    if isinstance(t, DecimalType):
        return format(v, "f")
    if t == DATE:
        return f"date {quote(format_date(v))}"
    if t == TIME:
        return f"time {quote(format_time(v))}"
    if t in TIMESTAMP_TYPES:
        nanos = v if t in NS_TYPES else v * 1000
        return (f"{'timestamptz' if t in _TZ_TYPES else 'timestamp'} "
                f"{quote(timestamp_text(nanos, t in _TZ_TYPES))}")
    if t == STRING:
        return quote(v)
    if t == UUID:
        return f"uuid {quote(str(v))}"
    if t == BINARY or isinstance(t, FixedType):
        return render_binary(v)
    return quote(str(v))
