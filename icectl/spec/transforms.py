"""Partition and sort transforms (spec "Partition Transforms", Appendix B for bucket hashing).

A transform is an immutable value that renders to and parses from the spec's transform strings
(``"identity"``, ``"bucket[16]"``, ``"truncate[4]"``, ``"year"``, ``"month"``, ``"day"``,
``"hour"``, ``"void"``). Strings this version does not know are kept as :class:`UnknownTransform`
so that metadata written by newer writers survives a rewrite unchanged.

Values use icectl's internal representation (see :mod:`icectl.spec.values`): ``int`` for int,
long, date (days), time (micros), timestamp/timestamptz (micros) and the ``_ns`` variants (nanos);
``Decimal``; ``str``; ``bytes``; ``uuid.UUID``; ``bool``; ``float``. An ``int`` alone does not say
whether it counts days, micros or nanos, so :meth:`Transform.apply` takes the source type as its
second argument; it is required for the time transforms and for anything applied to a ``_ns``
column, and optional elsewhere. :meth:`Transform.bind` returns a one-argument function for a
fixed source type.

Time transforms use floor semantics for values before 1970, as the reference does: the hour of
``-1`` micros is ``-1`` and the year of 1969-12-31 is ``-1``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Callable

from icectl.errors import InvalidInput
from icectl.spec.javatext import (  # re-exported: values and expressions use them from here
    civil_to_days,
    days_to_civil,
    decimal_from_unscaled,
    decimal_unscaled,
    human_day,
    human_hour,
    human_month,
    human_value,
    human_year,
    java_truncate,
    java_year,
)
from icectl.spec.murmur3 import murmur3_hash
from icectl.spec.operations import Operation
from icectl.spec.transform_projection import (
    ORDERING,
    AllOf,
    AnyOf,
    On,
    Projected,
    apply as _apply,
    ordered_inclusive,
    ordered_strict,
    prefix_projection,
    time_widened_inclusive,
    time_widened_strict,
    type_range,
)
from icectl.spec.types import (
    BINARY,
    DATE,
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
    DecimalType,
    FixedType,
    IcebergType,
    PrimitiveType,
)

__all__ = [
    "Transform", "IdentityTransform", "BucketTransform", "TruncateTransform", "YearTransform",
    "MonthTransform", "DayTransform", "HourTransform", "VoidTransform", "UnknownTransform",
    "parse_transform", "IDENTITY", "YEAR", "MONTH", "DAY", "HOUR", "VOID",
    "murmur3_hash", "days_to_civil", "civil_to_days", "java_year", "human_value",
    "decimal_unscaled", "decimal_from_unscaled", "Projected",
]

MICROS_PER_HOUR = 3_600_000_000
MICROS_PER_DAY = 86_400_000_000

_NS_TYPES = (TIMESTAMP_NS, TIMESTAMPTZ_NS)
_TS_TYPES = (TIMESTAMP, TIMESTAMPTZ, TIMESTAMP_NS, TIMESTAMPTZ_NS)
_DATE_LIKE = (DATE,) + _TS_TYPES


def _micros_of(value: int, source_type: IcebergType) -> int:
    """Microseconds from the epoch of a timestamp value (nanos are floored to micros)."""
    return value // 1000 if source_type in _NS_TYPES else value


# ----------------------------------------------------------------------------------------------
# Transforms


class Transform:
    """Base of all transforms. Subclasses are frozen dataclasses."""

    name: str = ""
    preserves_order = False
    is_known = True

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self)!r})"

    def to_json(self) -> str:
        return str(self)

    # -- typing --------------------------------------------------------------------------------

    def can_transform(self, source_type: IcebergType) -> bool:
        raise NotImplementedError

    def result_type(self, source_type: IcebergType) -> IcebergType:
        raise NotImplementedError

    # -- values --------------------------------------------------------------------------------

    def apply(self, value: Any, source_type: IcebergType | None = None) -> Any:
        """The transformed value; None stays None."""
        raise NotImplementedError

    def bind(self, source_type: IcebergType) -> Callable[[Any], Any]:
        """A function applying this transform to values of ``source_type``."""
        return lambda v: self.apply(v, source_type)

    def to_human_string(self, value: Any, source_type: IcebergType | None = None) -> str:
        """The reference's text for a transformed value (partition paths); "null" for None.

        ``source_type`` is the column's type; only identity, truncate and void need it.
        """
        if value is None:
            return "null"
        return human_value(None, value)

    # -- relations -----------------------------------------------------------------------------

    @property
    def dedup_name(self) -> str:
        """Two transforms on one column with the same dedup name are redundant."""
        return str(self)

    @property
    def is_void(self) -> bool:
        return False

    @property
    def is_identity(self) -> bool:
        return False

    def satisfies_order_of(self, other: "Transform") -> bool:
        """Whether data ordered by this transform is also ordered by ``other``."""
        return self == other

    # whether the result is null exactly when the source value is (void's is null for every value)
    keeps_nulls = False

    def exact_from_prefixes(self, source_type: IcebergType, lo: Any, hi: Any) -> bool:
        """Whether the transformed values of column bounds that may be truncated prefixes
        (Parquet's string and binary statistics) are still the real ones."""
        return False

    def result_type_without_source(self) -> IcebergType:
        """The result type when the source column is gone: known where it does not depend on
        the source's type."""
        return UNKNOWN

    def partition_name(self, column: str, evolution: bool = False) -> str:
        """The default name of a partition field on ``column``: the one Spark's ``CREATE TABLE
        ... PARTITIONED BY`` gives (the Java builder's), or with ``evolution`` the one of
        ``ALTER TABLE ADD PARTITION FIELD``."""
        raise InvalidInput(f"partition field using transform {self} needs an explicit name")

    # -- projection (icectl.spec.transform_projection) -------------------------------------------

    def project(self, op: Operation, values: tuple, source_type: IcebergType) -> Projected | None:
        """The inclusive projection of ``source <op> values`` onto this transform's values: a
        term every partition holding a matching row satisfies; None when there is none."""
        return None

    def strict_project(self, op: Operation, values: tuple, source_type: IcebergType) -> Projected | None:
        """The strict projection: a term whose partitions hold only matching rows; None when
        there is none."""
        return None


@dataclass(frozen=True, repr=False)
class IdentityTransform(Transform):
    name = "identity"
    preserves_order = True

    def can_transform(self, source_type: IcebergType) -> bool:
        return isinstance(source_type, PrimitiveType) and source_type.name not in (
            "geometry", "geography", "variant")

    def result_type(self, source_type: IcebergType) -> IcebergType:
        return source_type

    def apply(self, value: Any, source_type: IcebergType | None = None) -> Any:
        return value

    def to_human_string(self, value: Any, source_type: IcebergType | None = None) -> str:
        return human_value(source_type, value)

    @property
    def is_identity(self) -> bool:
        return True

    def satisfies_order_of(self, other: Transform) -> bool:
        return other.preserves_order

    keeps_nulls = True

    def partition_name(self, column: str, evolution: bool = False) -> str:
        return column

    def project(self, op: Operation, values: tuple, source_type: IcebergType) -> Projected | None:
        return On(op, tuple(values))

    strict_project = project


_BUCKET_TYPES = (INT, LONG, DATE, TIME, TIMESTAMP, TIMESTAMPTZ, TIMESTAMP_NS, TIMESTAMPTZ_NS,
                 STRING, UUID, BINARY)


@dataclass(frozen=True, repr=False)
class BucketTransform(Transform):
    num_buckets: int

    def __post_init__(self) -> None:
        if not isinstance(self.num_buckets, int) or self.num_buckets <= 0:
            raise InvalidInput(f"invalid number of buckets: {self.num_buckets} (must be > 0)")

    @property
    def name(self) -> str:  # type: ignore[override]
        return "bucket"

    def __str__(self) -> str:
        return f"bucket[{self.num_buckets}]"

    def can_transform(self, source_type: IcebergType) -> bool:
        return source_type in _BUCKET_TYPES or isinstance(source_type, (DecimalType, FixedType))

    def result_type(self, source_type: IcebergType) -> IcebergType:
        return INT

    def apply(self, value: Any, source_type: IcebergType | None = None) -> Any:
        if value is None:
            return None
        return (murmur3_hash(value, source_type) & 0x7FFFFFFF) % self.num_buckets

    keeps_nulls = True

    def result_type_without_source(self) -> IcebergType:
        return INT

    def partition_name(self, column: str, evolution: bool = False) -> str:
        return f"{column}_bucket_{self.num_buckets}" if evolution else f"{column}_bucket"

    def project(self, op: Operation, values: tuple, source_type: IcebergType) -> Projected | None:
        return self._hashed(op, values, source_type, (Operation.EQ, Operation.IN))

    def strict_project(self, op: Operation, values: tuple, source_type: IcebergType) -> Projected | None:
        return self._hashed(op, values, source_type, (Operation.NOT_EQ, Operation.NOT_IN))

    def _hashed(self, op: Operation, values: tuple, source_type: IcebergType,
                kept: tuple[Operation, ...]) -> Projected | None:
        if op.is_unary:
            return On(op)
        if op in kept:  # a hash keeps equality (and inequality) only
            return On(op, tuple(_apply(self, v, source_type) for v in values))
        return None


@dataclass(frozen=True, repr=False)
class TruncateTransform(Transform):
    width: int
    preserves_order = True

    def __post_init__(self) -> None:
        if not isinstance(self.width, int) or self.width <= 0:
            raise InvalidInput(f"invalid truncate width: {self.width} (must be > 0)")

    @property
    def name(self) -> str:  # type: ignore[override]
        return "truncate"

    def __str__(self) -> str:
        return f"truncate[{self.width}]"

    def can_transform(self, source_type: IcebergType) -> bool:
        return source_type in (INT, LONG, STRING, BINARY) or isinstance(source_type, DecimalType)

    def result_type(self, source_type: IcebergType) -> IcebergType:
        return source_type

    def apply(self, value: Any, source_type: IcebergType | None = None) -> Any:
        if value is None:
            return None
        w = self.width
        if isinstance(value, bool):
            raise TypeError("cannot truncate a boolean")
        if isinstance(value, int):
            return java_truncate(value, w, 32 if source_type == INT else 64)
        if isinstance(value, Decimal):
            scale = source_type.scale if isinstance(source_type, DecimalType) else None
            if scale is None:
                exp = value.as_tuple().exponent
                assert isinstance(exp, int), "not a finite decimal"
                scale = -exp
            unscaled = decimal_unscaled(value, scale)
            return decimal_from_unscaled(unscaled - unscaled % w, scale)
        if isinstance(value, str):
            return value[:w]  # Python strings index by code point
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value)[:w]
        raise TypeError(f"cannot truncate {type(value).__name__} value {value!r}")

    def to_human_string(self, value: Any, source_type: IcebergType | None = None) -> str:
        return human_value(source_type, value)

    def satisfies_order_of(self, other: Transform) -> bool:
        # Whether a different width is implied depends on the source type (a longer string
        # prefix implies a shorter one; an integer width must divide the other), so only
        # equal transforms are claimed here.
        return self == other

    keeps_nulls = True

    def partition_name(self, column: str, evolution: bool = False) -> str:
        return f"{column}_trunc_{self.width}" if evolution else f"{column}_trunc"

    def exact_from_prefixes(self, source_type: IcebergType, lo: Any, hi: Any) -> bool:
        # a truncated bound still starts with the real min/max: enough for shorter prefixes
        return source_type in (STRING, BINARY) and self.width < min(len(lo), len(hi))

    def project(self, op: Operation, values: tuple, source_type: IcebergType) -> Projected | None:
        if op.is_unary:
            return On(op)
        if source_type == STRING or not isinstance(values[0], (int, Decimal)):
            return prefix_projection(self, self.width, op, values, source_type, strict=False)
        top = self._wrap_top(source_type)
        if top is None or op not in ORDERING:  # = and in find wrapped values as written
            return ordered_inclusive(self, op, values, source_type)
        if self._literal_wraps(values, source_type):
            return None  # the literal's own truncation wrapped: no bound on the partition
        projected = ordered_inclusive(self, op, values, source_type)
        # a partition value above `top` may hold wrapped values from the type's bottom
        return None if projected is None else AnyOf(projected, On(Operation.GT, (top,)))

    def strict_project(self, op: Operation, values: tuple, source_type: IcebergType) -> Projected | None:
        if op.is_unary:
            return On(op)
        if source_type == STRING or not isinstance(values[0], (int, Decimal)):
            return prefix_projection(self, self.width, op, values, source_type, strict=True)
        top = self._wrap_top(source_type)
        if top is None or op not in ORDERING:
            return ordered_strict(self, op, values, source_type)
        if self._literal_wraps(values, source_type):
            return None
        projected = ordered_strict(self, op, values, source_type)
        # a partition value above `top` may hold wrapped values: it proves nothing
        return None if projected is None else AllOf(projected, On(Operation.LT_EQ, (top,)))

    def _wrap_top(self, source_type: IcebergType) -> int | None:
        """For an int or long: the largest partition value that cannot be a wrapped one. Iceberg
        Java truncates in fixed width (``v - ((v % W) + W) % W``), so a value within W - 1 of
        the type's minimum wraps to the top of the range (truncate(10) of Long.MIN_VALUE is
        9223372036854775806), and icectl writes the same. None for other types."""
        if source_type not in (INT, LONG):
            return None
        rng = type_range(source_type)
        assert rng is not None
        return rng[1] - self.width + 1

    def _literal_wraps(self, values: tuple, source_type: IcebergType) -> bool:
        return any(isinstance(v, int) and self.apply(v, source_type) > v for v in values)


class TimeTransform(Transform):
    """year / month / day / hour. ``_order`` ranks granularity (smaller is finer)."""

    preserves_order = True
    _order = 0
    _valid: tuple[IcebergType, ...] = _DATE_LIKE

    def can_transform(self, source_type: IcebergType) -> bool:
        return source_type in self._valid

    def result_type(self, source_type: IcebergType) -> IcebergType:
        return INT

    def apply(self, value: Any, source_type: IcebergType | None = None) -> Any:
        if value is None:
            return None
        if source_type is None:
            raise TypeError(f"{self} needs the source type to interpret {value!r}")
        if source_type == DATE:
            return self._from_days(value)
        if source_type in _TS_TYPES:
            return self._from_micros(_micros_of(value, source_type))
        raise TypeError(f"{self} cannot transform values of type {source_type}")

    def _from_days(self, days: int) -> int:
        raise NotImplementedError

    def _from_micros(self, micros: int) -> int:
        return self._from_days(micros // MICROS_PER_DAY)

    @property
    def dedup_name(self) -> str:
        return "time"

    keeps_nulls = True

    def result_type_without_source(self) -> IcebergType:
        return self.result_type(UNKNOWN)

    def partition_name(self, column: str, evolution: bool = False) -> str:
        return f"{column}_{self.name}"

    def project(self, op: Operation, values: tuple, source_type: IcebergType) -> Projected | None:
        if op.is_unary:
            return On(op)
        projected = ordered_inclusive(self, op, values, source_type)
        return time_widened_inclusive(projected) if self._widens(source_type) else projected

    def strict_project(self, op: Operation, values: tuple, source_type: IcebergType) -> Projected | None:
        if op.is_unary:
            return On(op)
        projected = ordered_strict(self, op, values, source_type)
        return time_widened_strict(projected) if self._widens(source_type) else projected

    def _widens(self, source_type: IcebergType) -> bool:
        """Whether projections widen for the reference's early writers (see
        :mod:`icectl.spec.transform_projection`)."""
        return True

    def satisfies_order_of(self, other: Transform) -> bool:
        if isinstance(other, TimeTransform):
            return self._order <= other._order
        return False


@dataclass(frozen=True, repr=False)
class YearTransform(TimeTransform):
    name = "year"
    _order = 3

    def _from_days(self, days: int) -> int:
        return days_to_civil(days)[0] - 1970

    def to_human_string(self, value: Any, source_type: IcebergType | None = None) -> str:
        return "null" if value is None else human_year(value)


@dataclass(frozen=True, repr=False)
class MonthTransform(TimeTransform):
    name = "month"
    _order = 2

    def _from_days(self, days: int) -> int:
        y, m, _ = days_to_civil(days)
        return (y - 1970) * 12 + m - 1

    def to_human_string(self, value: Any, source_type: IcebergType | None = None) -> str:
        return "null" if value is None else human_month(value)


@dataclass(frozen=True, repr=False)
class DayTransform(TimeTransform):
    name = "day"
    _order = 1

    def result_type(self, source_type: IcebergType) -> IcebergType:
        return DATE  # the spec says int; the reference (and its partition type) uses date

    def _from_days(self, days: int) -> int:
        return days

    def _widens(self, source_type: IcebergType) -> bool:
        return source_type != DATE  # day of a date is the date itself: no early-writer bug

    def to_human_string(self, value: Any, source_type: IcebergType | None = None) -> str:
        return "null" if value is None else human_day(value)


@dataclass(frozen=True, repr=False)
class HourTransform(TimeTransform):
    name = "hour"
    _order = 0
    _valid = _TS_TYPES

    def _from_days(self, days: int) -> int:
        return days * 24

    def _from_micros(self, micros: int) -> int:
        return micros // MICROS_PER_HOUR

    def to_human_string(self, value: Any, source_type: IcebergType | None = None) -> str:
        return "null" if value is None else human_hour(value)


@dataclass(frozen=True, repr=False)
class VoidTransform(Transform):
    name = "void"

    def can_transform(self, source_type: IcebergType) -> bool:
        return True

    def result_type(self, source_type: IcebergType) -> IcebergType:
        return source_type

    def apply(self, value: Any, source_type: IcebergType | None = None) -> Any:
        return None

    def to_human_string(self, value: Any, source_type: IcebergType | None = None) -> str:
        return "null"

    def partition_name(self, column: str, evolution: bool = False) -> str:
        return f"{column}_null"

    @property
    def is_void(self) -> bool:
        return True


@dataclass(frozen=True, repr=False)
class UnknownTransform(Transform):
    """A transform string this version does not understand, kept verbatim."""

    text: str
    is_known = False

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.text

    def __str__(self) -> str:
        return self.text

    def can_transform(self, source_type: IcebergType) -> bool:
        return False

    def result_type(self, source_type: IcebergType) -> IcebergType:
        # Readers ignore such partition fields; the value column is read as a string at best.
        return STRING

    def result_type_without_source(self) -> IcebergType:
        return STRING

    def apply(self, value: Any, source_type: IcebergType | None = None) -> Any:
        raise TypeError(f"cannot apply unknown transform {self.text!r}")


IDENTITY = IdentityTransform()
YEAR = YearTransform()
MONTH = MonthTransform()
DAY = DayTransform()
HOUR = HourTransform()
VOID = VoidTransform()

_SIMPLE: dict[str, Transform] = {
    "identity": IDENTITY, "year": YEAR, "month": MONTH, "day": DAY, "hour": HOUR, "void": VOID,
}
_PARAM_RE = re.compile(r"^(bucket|truncate)\[\s*(\d+)\s*\]$")


def parse_transform(text: str) -> Transform:
    """The transform for a spec transform string; unknown strings give an UnknownTransform.

    Matching is case-insensitive, as the reference's parser is.
    """
    if not isinstance(text, str):
        raise InvalidInput(f"transform must be a string, not {text!r}")
    s = text.strip()
    low = s.lower()
    t = _SIMPLE.get(low)
    if t is not None:
        return t
    m = _PARAM_RE.match(low)
    if m:
        n = int(m.group(2))
        if n <= 0 or n > 2**31 - 1:
            return UnknownTransform(text)
        return BucketTransform(n) if m.group(1) == "bucket" else TruncateTransform(n)
    return UnknownTransform(text)

