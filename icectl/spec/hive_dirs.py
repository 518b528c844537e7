"""Hive-style partition directories (``k=v/`` paths, as Spark and Hive lay out Parquet tables):
which names a directory listing skips, what a directory's ``k=v`` parts say, and the types of
the partition columns as Spark's partition discovery infers them.

Names skipped, as Spark's file index skips them: files and directories whose name starts with
``.``, those starting with ``_`` unless they hold ``=`` (so ``_SUCCESS``, ``_temporary/`` and
``.hive-staging/`` are skipped, ``_c=1/`` is not), and files still being copied (``._COPYING_``).

Values are unescaped as Hive escapes them: ``%XX`` sequences only (a ``+`` is a plus sign, not a
space as in Iceberg's own partition paths); ``__HIVE_DEFAULT_PARTITION__`` is null.

Types (:func:`infer_partition_type`), with Spark's default settings
(``spark.sql.sources.partitionColumnTypeInference.enabled``): each value is tried as an int, a
long, a decimal with no fraction (an integer beyond a long, up to 38 digits), a double (Java's
``Double.parseDouble`` forms, ``NaN`` and ``Infinity`` too), a timestamp
(``yyyy-MM-dd HH:mm:ss[.fraction]``, read in UTC: Spark reads it in its session time zone), a
date (``yyyy-MM-dd``), else a string; the column's type is the widest of its values' types as
Spark widens them (int < long < decimal, int < double, date < timestamp; long or a decimal with a
double, and any other mix, is a string); a column of nulls only is a string (Spark's discovery
types it NullType, which no Iceberg v1 or v2 column can be).
"""

from __future__ import annotations

import datetime
import re
from typing import Iterable, Sequence
from urllib.parse import unquote

from icectl.spec.types import DATE, DOUBLE, INT, LONG, STRING, TIMESTAMPTZ, DecimalType, IcebergType

__all__ = ["HIVE_NULL", "skipped_name", "partition_parts", "hive_unescape", "infer_partition_type"]

HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"

_INTEGER = re.compile(r"^[+-]?[0-9]+$")
_DOUBLE = re.compile(r"^[+-]?(NaN|Infinity|(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?)[fFdD]?)$")
_DATE = re.compile(r"^([0-9]{4})-([0-9]{2})-([0-9]{2})$")
_TIMESTAMP = re.compile(r"^([0-9]{4})-([0-9]{2})-([0-9]{2}) ([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]{1,9})?$")
_INT_RANGE = (-(2 ** 31), 2 ** 31 - 1)
_LONG_RANGE = (-(2 ** 63), 2 ** 63 - 1)
_NULL = "null-type"  # the type of __HIVE_DEFAULT_PARTITION__ before widening


def skipped_name(name: str, is_dir: bool) -> bool:
    """Whether a directory listing leaves out this file or directory name (see the module docs)."""
    if name.startswith("."):
        return True
    if name.startswith("_") and not (is_dir and "=" in name):
        return True
    return not is_dir and name.endswith("._COPYING_")


def hive_unescape(text: str) -> str:
    """A name or value of a ``k=v`` directory as Hive escapes it (``%XX`` only)."""
    return unquote(text) if "%" in text else text


def partition_parts(segments: Sequence[str]) -> list[tuple[str, str]] | str:
    """``(key, value)`` of each directory segment (unescaped), or the first segment that is not
    ``key=value``."""
    out = []
    for seg in segments:
        key, eq, value = seg.partition("=")
        if not eq or not key:
            return seg
        out.append((hive_unescape(key), hive_unescape(value)))
    return out


def _valid_date(y: str, m: str, d: str) -> bool:
    try:
        datetime.date(int(y), int(m), int(d))
    except ValueError:
        return False
    return True


def _value_type(text: str) -> IcebergType | str:
    if text == HIVE_NULL:
        return _NULL
    if _INTEGER.match(text):
        v = int(text)
        if _INT_RANGE[0] <= v <= _INT_RANGE[1]:
            return INT
        if _LONG_RANGE[0] <= v <= _LONG_RANGE[1]:
            return LONG
        digits = len(text.lstrip("+-").lstrip("0")) or 1
        if digits <= 38:
            return DecimalType(digits, 0)
    if _DOUBLE.match(text.strip()):
        return DOUBLE
    m = _TIMESTAMP.match(text)
    if m and _valid_date(*m.groups()[:3]) and int(m.group(4)) < 24 and int(m.group(5)) < 60 \
            and int(m.group(6)) < 60:
        return TIMESTAMPTZ
    m = _DATE.match(text)
    if m and _valid_date(*m.groups()):
        return DATE
    return STRING


def _wider(a: IcebergType | str, b: IcebergType | str) -> IcebergType | str:
    if a == b:
        return a
    if a == _NULL:
        return b
    if b == _NULL:
        return a
    pair = {a, b}
    if pair == {INT, LONG}:
        return LONG
    if pair == {INT, DOUBLE}:
        return DOUBLE
    if pair == {DATE, TIMESTAMPTZ}:
        return TIMESTAMPTZ
    integral = {INT: 10, LONG: 20}
    if isinstance(a, DecimalType) or isinstance(b, DecimalType):
        pa_ = a.precision if isinstance(a, DecimalType) else integral.get(a)  # type: ignore[arg-type]
        pb_ = b.precision if isinstance(b, DecimalType) else integral.get(b)  # type: ignore[arg-type]
        if pa_ is not None and pb_ is not None:
            return DecimalType(min(38, max(pa_, pb_)), 0)
    return STRING


def infer_partition_type(values: Iterable[str]) -> IcebergType:
    """The type Spark's partition discovery gives a column with these (unescaped) values."""
    t: IcebergType | str = _NULL
    for v in values:
        t = _wider(t, _value_type(v))
        if t == STRING:
            break
    return STRING if t == _NULL else t  # type: ignore[return-value]
