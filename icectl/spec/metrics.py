"""Column metrics settings and bound truncation, as the reference applies them to data files.

Metrics modes (``write.metadata.metrics.default`` and ``write.metadata.metrics.column.<name>``):

- ``none``: nothing is kept for the column (not even its size or value count);
- ``counts``: sizes, value counts, null and NaN counts, no bounds;
- ``truncate(N)``: counts and bounds, string bounds cut to N code points and binary bounds to N
  bytes (the default is ``truncate(16)``); fixed and other types keep exact bounds, since a
  shorter value would not be a value of the type;
- ``full``: counts and exact bounds.

A truncated lower bound is the prefix. A truncated upper bound is the prefix with its last code
point (byte) incremented; trailing characters that cannot be incremented (U+10FFFF, byte 0xFF)
are dropped first, and when nothing is left there is no upper bound. Incrementing U+D7FF gives
U+E000: surrogates are not characters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from icectl.errors import InvalidInput
from icectl.spec import properties as _props
from icectl.spec.schema import Schema
from icectl.spec.types import (
    BINARY,
    STRING,
    IcebergType,
    ListType,
    MapType,
    PrimitiveType,
    StructType,
)

if TYPE_CHECKING:
    from icectl.spec.sorting import SortOrder

__all__ = [
    "MetricsMode", "NONE", "COUNTS", "FULL", "DEFAULT_MODE", "parse_metrics_mode",
    "MetricsConfig", "metrics_config",
    "DEFAULT_MODE_PROPERTY", "COLUMN_MODE_PREFIX", "MAX_INFERRED_COLUMNS_PROPERTY",
    "MAX_INFERRED_COLUMNS_DEFAULT",
    "truncate_string_lower", "truncate_string_upper", "truncate_binary_lower",
    "truncate_binary_upper", "truncate_lower_bound", "truncate_upper_bound",
]

# the properties read here: keys and defaults from the catalogue (spec/properties.py)
DEFAULT_MODE_PROPERTY = _props.METRICS_DEFAULT_MODE
COLUMN_MODE_PREFIX = _props.METRICS_COLUMN_MODE_PREFIX
MAX_INFERRED_COLUMNS_PROPERTY = _props.METRICS_MAX_INFERRED_COLUMNS
MAX_INFERRED_COLUMNS_DEFAULT = _props.METRICS_MAX_INFERRED_COLUMNS_DEFAULT


@dataclass(frozen=True)
class MetricsMode:
    """``kind`` is ``none``, ``counts``, ``truncate`` (with ``length``) or ``full``."""

    kind: str
    length: int | None = None

    @property
    def keeps_metrics(self) -> bool:
        return self.kind != "none"

    @property
    def has_bounds(self) -> bool:
        return self.kind in ("truncate", "full")

    def __str__(self) -> str:
        return f"truncate({self.length})" if self.kind == "truncate" else self.kind


NONE = MetricsMode("none")
COUNTS = MetricsMode("counts")
FULL = MetricsMode("full")
DEFAULT_MODE = MetricsMode("truncate", 16)

_TRUNCATE_RE = re.compile(r"truncate\(([0-9]+)\)")
_INT_MAX = 2**31 - 1


def parse_metrics_mode(text: str) -> MetricsMode:
    """``none`` | ``counts`` | ``full`` (any case) | ``truncate(N)`` with N >= 1; InvalidInput else."""
    low = text.lower()
    if low in ("none", "counts", "full"):
        return {"none": NONE, "counts": COUNTS, "full": FULL}[low]
    m = _TRUNCATE_RE.fullmatch(low)
    if m:
        n = int(m.group(1))
        if 0 < n <= _INT_MAX:
            return MetricsMode("truncate", n)
        raise InvalidInput(f"invalid metrics mode {text!r}: truncate length must be between 1 and {_INT_MAX}")
    raise InvalidInput(f"invalid metrics mode {text!r}: expected none, counts, full or truncate(N)")


def _parse_or(text: str, fallback: MetricsMode) -> MetricsMode:
    # The reference ignores (with a warning) an invalid mode and uses the fallback.
    try:
        return parse_metrics_mode(text)
    except InvalidInput:
        return fallback


@dataclass(frozen=True)
class MetricsConfig:
    """Metrics mode per column name (full dotted name), with a default for the rest."""

    column_modes: Mapping[str, MetricsMode] = field(default_factory=dict, hash=False)
    default_mode: MetricsMode = DEFAULT_MODE

    def column_mode(self, column_name: str) -> MetricsMode:
        return self.column_modes.get(column_name, self.default_mode)


def _max_inferred(properties: Mapping[str, str]) -> int:
    raw = properties.get(MAX_INFERRED_COLUMNS_PROPERTY)
    if raw is None:
        return MAX_INFERRED_COLUMNS_DEFAULT
    # Parsed like Java's Integer.parseInt: no spaces, no underscores.
    if not re.fullmatch(r"[+-]?[0-9]+", raw) or not -(2**31) <= int(raw) <= _INT_MAX:
        raise InvalidInput(
            f"table property {MAX_INFERRED_COLUMNS_PROPERTY} is not an integer: {raw!r}")
    n = int(raw)
    return MAX_INFERRED_COLUMNS_DEFAULT if n < 0 else n


def _eligible(t: IcebergType) -> bool:
    return isinstance(t, PrimitiveType)


def _projected_leaf_count(schema: Schema) -> int:
    """How many ids the reference's getProjectedIds returns (its rule for "wide" tables)."""
    count = 0

    def visit(t: IcebergType) -> bool:  # True when t has nested results (is not primitive)
        nonlocal count
        if isinstance(t, StructType):
            for f in t.fields():
                visit(f.type)
                if _eligible(f.type):
                    count += 1
            return True
        if isinstance(t, ListType):
            if not visit(t.element_type):
                count += 1
            return True
        if isinstance(t, MapType):
            visit(t.key_type)
            if not visit(t.value_type):
                count += 2  # key and value ids, only when the value is primitive
            return True
        return False

    visit(schema.struct)
    return count


def _limited_field_ids(schema: Schema, limit: int) -> list[int]:
    """The first ``limit`` metrics-eligible field ids, in the reference's visiting order: a
    struct's own primitive fields first, then its children depth first."""
    ids: list[int] = []

    def more() -> bool:
        return len(ids) < limit

    def visit(t: IcebergType) -> None:
        if isinstance(t, StructType):
            for f in t.fields():
                if not more():
                    break
                if _eligible(f.type):
                    ids.append(f.field_id)
            for f in t.fields():
                if not more():
                    break
                visit(f.type)
        elif isinstance(t, ListType):
            if more() and _eligible(t.element_type):
                ids.append(t.element_id)
            visit(t.element_type)
        elif isinstance(t, MapType):
            if more() and _eligible(t.key_type):
                ids.append(t.key_id)
            if more() and _eligible(t.value_type):
                ids.append(t.value_id)
            visit(t.key_type)
            visit(t.value_type)

    visit(schema.struct)
    return ids


def _sorted_column_names(sort_order: SortOrder | None, schema: Schema | None) -> Iterator[str]:
    if sort_order is None or schema is None:
        return
    for sf in sort_order.fields:
        if sf.transform.preserves_order:
            f = schema.find_field_or_none(sf.source_id)
            if f is not None:
                yield schema.column_name(sf.source_id)


def metrics_config(
    properties: Mapping[str, str], schema: Schema | None = None, sort_order: SortOrder | None = None,
) -> MetricsConfig:
    """The metrics configuration of a table, as the reference derives it (MetricsConfig.forTable).

    - ``write.metadata.metrics.default`` sets the default (an invalid value is ignored);
    - otherwise the default is ``truncate(16)``, unless the schema has more metrics-eligible
      columns than ``write.metadata.metrics.max-inferred-column-defaults`` (100): then only the
      first that many get ``truncate(16)`` and the rest ``none``;
    - columns of the sort order (with order-preserving transforms) get at least ``truncate(16)``
      (the default itself when it keeps bounds);
    - ``write.metadata.metrics.column.<name>`` overrides a column (an invalid value falls back to
      the default).
    """
    limit = _max_inferred(properties)
    modes: dict[str, MetricsMode] = {}
    configured = properties.get(DEFAULT_MODE_PROPERTY)
    if configured is not None:
        default = _parse_or(configured, DEFAULT_MODE)
    elif schema is None or _projected_leaf_count(schema) <= limit:
        default = DEFAULT_MODE
    else:
        for fid in _limited_field_ids(schema, limit):
            modes[schema.column_name(fid)] = DEFAULT_MODE
        default = NONE
    sorted_mode = DEFAULT_MODE if default in (NONE, COUNTS) else default
    for name in _sorted_column_names(sort_order, schema):
        modes[name] = sorted_mode
    for key, value in properties.items():
        if key.startswith(COLUMN_MODE_PREFIX):
            modes[key[len(COLUMN_MODE_PREFIX):]] = _parse_or(value, default)
    return MetricsConfig(modes, default)


# -- truncation --------------------------------------------------------------------------------

_MAX_CODE_POINT = 0x10FFFF


def _next_code_point(cp: int) -> int | None:
    if cp == 0xD7FF:
        return 0xE000  # skip the surrogate block
    if cp >= _MAX_CODE_POINT:
        return None
    return cp + 1


def truncate_string_lower(value: str, length: int) -> str:
    """The first ``length`` code points (a lower bound of ``value``)."""
    if length <= 0:
        raise ValueError("truncate length must be positive")
    return value[:length]


def truncate_string_upper(value: str, length: int) -> str | None:
    """A string of at most ``length`` code points that is >= ``value``; None if there is none."""
    if length <= 0:
        raise ValueError("truncate length must be positive")
    if len(value) <= length:
        return value
    prefix = value[:length]
    for i in range(length - 1, -1, -1):
        nxt = _next_code_point(ord(prefix[i]))
        if nxt is not None:
            return prefix[:i] + chr(nxt)
    return None


def truncate_binary_lower(value: bytes, length: int) -> bytes:
    """The first ``length`` bytes (a lower bound of ``value``)."""
    if length <= 0:
        raise ValueError("truncate length must be positive")
    return bytes(value[:length])


def truncate_binary_upper(value: bytes, length: int) -> bytes | None:
    """At most ``length`` bytes, >= ``value`` (unsigned order); None if there is none."""
    if length <= 0:
        raise ValueError("truncate length must be positive")
    if len(value) <= length:
        return bytes(value)
    prefix = bytearray(value[:length])
    for i in range(length - 1, -1, -1):
        if prefix[i] != 0xFF:
            prefix[i] += 1
            return bytes(prefix[: i + 1])
    return None


def _truncatable(t: IcebergType) -> str | None:
    if t == STRING:
        return "string"
    if t == BINARY:
        return "binary"
    return None  # fixed(L) included: a truncated value would not be L bytes long


def truncate_lower_bound(t: IcebergType, value: Any, mode: MetricsMode) -> Any:
    """The lower bound to keep for a column minimum under a mode (strings and binary only)."""
    kind = _truncatable(t)
    if mode.kind != "truncate" or kind is None or mode.length is None:
        return value
    if kind == "string":
        return truncate_string_lower(value, mode.length)
    return truncate_binary_lower(value, mode.length)


def truncate_upper_bound(t: IcebergType, value: Any, mode: MetricsMode) -> Any | None:
    """The upper bound to keep for a column maximum under a mode; None when none can be kept."""
    kind = _truncatable(t)
    if mode.kind != "truncate" or kind is None or mode.length is None:
        return value
    if kind == "string":
        return truncate_string_upper(value, mode.length)
    return truncate_binary_upper(value, mode.length)
