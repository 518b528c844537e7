"""Metrics modes, the table metrics configuration and bound truncation."""

from __future__ import annotations

import pytest
from pyiceberg.utils.truncate import truncate_upper_bound_binary_string, truncate_upper_bound_text_string

from icectl.errors import InvalidInput
from icectl.spec.metrics import (
    COUNTS,
    DEFAULT_MODE,
    FULL,
    NONE,
    MetricsMode,
    metrics_config,
    parse_metrics_mode,
    truncate_binary_lower,
    truncate_binary_upper,
    truncate_lower_bound,
    truncate_string_lower,
    truncate_string_upper,
    truncate_upper_bound,
)
from icectl.spec.schema import Schema
from icectl.spec.sorting import SortField, SortOrder
from icectl.spec.transforms import parse_transform
from icectl.spec.types import BINARY, INT, LONG, STRING, FixedType, ListType, MapType, NestedField, StructType


@pytest.mark.parametrize("text, mode", [
    ("none", NONE), ("NONE", NONE), ("counts", COUNTS), ("Counts", COUNTS), ("full", FULL),
    ("truncate(16)", DEFAULT_MODE), ("TRUNCATE(3)", MetricsMode("truncate", 3)),
    ("truncate(2147483647)", MetricsMode("truncate", 2**31 - 1)),
])
def test_parse_metrics_mode(text: str, mode: MetricsMode) -> None:
    assert parse_metrics_mode(text) == mode
    assert parse_metrics_mode(str(mode)) == mode


@pytest.mark.parametrize("text", ["", "truncate(0)", "truncate()", "truncate(-1)", " full",
                                  "truncate(2147483648)", "truncate( 4)", "bounds", "truncate(٣)"])
def test_parse_metrics_mode_rejects(text: str) -> None:
    with pytest.raises(InvalidInput):
        parse_metrics_mode(text)


def test_mode_flags() -> None:
    assert not NONE.keeps_metrics and not NONE.has_bounds
    assert COUNTS.keeps_metrics and not COUNTS.has_bounds
    assert DEFAULT_MODE.has_bounds and FULL.has_bounds
    assert str(DEFAULT_MODE) == "truncate(16)"


# -- truncation vectors ---------------------------------------------------------------------------

MAX_CP = "\U0010FFFF"


@pytest.mark.parametrize("value, n, lower, upper", [
    ("abc", 5, "abc", "abc"),                      # short values are kept as they are
    ("abcdef", 3, "abc", "abd"),
    ("ab\U0001F600cd", 3, "ab\U0001F600", "ab\U0001F601"),   # code points, not UTF-16 units
    ("ééééé", 2, "éé", "éê"),
    ("a" + MAX_CP * 3, 2, "a" + MAX_CP, "b"),      # U+10FFFF cannot grow: drop it, bump 'a'
    (MAX_CP * 4, 2, MAX_CP * 2, None),             # nothing can grow: no upper bound
    ("x\ud7ff\ud7ffz", 3, "x\ud7ff\ud7ff", "x\ud7ff\ue000"),  # skip the surrogate block
    ("日本語テキスト", 4, "日本語テ", "日本語デ"),
])
def test_string_truncation(value: str, n: int, lower: str, upper: str | None) -> None:
    assert truncate_string_lower(value, n) == lower
    assert truncate_string_upper(value, n) == upper
    assert lower <= value
    if upper is not None:
        assert value <= upper or value.startswith(upper)
        assert upper >= value[:n]


@pytest.mark.parametrize("value, n, lower, upper", [
    (b"\x01\x02", 4, b"\x01\x02", b"\x01\x02"),
    (b"\x01\x02\x03", 2, b"\x01\x02", b"\x01\x03"),
    (b"\x01\xff\xff\x00", 3, b"\x01\xff\xff", b"\x02"),   # carry: trailing 0xFF dropped
    (b"\xff\xff\xff", 2, b"\xff\xff", None),
    (b"\x00" * 20, 16, b"\x00" * 16, b"\x00" * 15 + b"\x01"),
])
def test_binary_truncation(value: bytes, n: int, lower: bytes, upper: bytes | None) -> None:
    assert truncate_binary_lower(value, n) == lower
    assert truncate_binary_upper(value, n) == upper


# pyiceberg differs from the reference when trailing characters/bytes cannot be incremented
# (U+10FFFF, 0xFF); those cases are covered by the vectors above and the interop test.
@pytest.mark.parametrize("value", ["a" * 20, "é" * 17, "\U0001F600" * 30, "zz", "abc\U0010FFFFdef" * 3])
def test_string_upper_agrees_with_pyiceberg(value: str) -> None:
    assert truncate_string_upper(value, 16) == truncate_upper_bound_text_string(value, 16)


@pytest.mark.parametrize("value", [b"\x00" * 20, b"\x01\xfe" * 10, b"\xff" * 20, b"ab"])
def test_binary_upper_agrees_with_pyiceberg(value: bytes) -> None:
    assert truncate_binary_upper(value, 16) == truncate_upper_bound_binary_string(value, 16)


def test_truncation_only_for_strings_and_binary() -> None:
    mode = MetricsMode("truncate", 2)
    assert truncate_lower_bound(STRING, "abc", mode) == "ab"
    assert truncate_upper_bound(BINARY, b"abc", mode) == b"ac"
    fixed = FixedType(4)
    assert truncate_lower_bound(fixed, b"abcd", mode) == b"abcd"
    assert truncate_upper_bound(fixed, b"\xff" * 4, mode) == b"\xff" * 4
    assert truncate_upper_bound(LONG, 10**12, mode) == 10**12
    assert truncate_upper_bound(STRING, "abc", FULL) == "abc"
    with pytest.raises(ValueError):
        truncate_string_lower("a", 0)


# -- configuration -----------------------------------------------------------------------------


def _schema(n_ints: int = 3) -> Schema:
    fields = [NestedField(1, "id", LONG, True),
              NestedField(2, "s", StructType([NestedField(10, "a", INT), NestedField(11, "b", STRING)])),
              NestedField(3, "l", ListType(12, INT)),
              NestedField(4, "m", MapType(13, STRING, 14, INT))]
    fields += [NestedField(100 + i, f"c{i}", INT) for i in range(n_ints)]
    return Schema(tuple(fields))


def test_default_config() -> None:
    cfg = metrics_config({}, _schema())
    assert cfg.default_mode == DEFAULT_MODE
    assert cfg.column_mode("s.a") == DEFAULT_MODE


def test_configured_default_and_overrides() -> None:
    props = {
        "write.metadata.metrics.default": "counts",
        "write.metadata.metrics.column.s.b": "truncate(4)",
        "write.metadata.metrics.column.id": "not-a-mode",
    }
    cfg = metrics_config(props, _schema())
    assert cfg.column_mode("s.a") == COUNTS
    assert cfg.column_mode("s.b") == MetricsMode("truncate", 4)
    assert cfg.column_mode("id") == COUNTS  # an invalid override falls back to the default


def test_invalid_default_is_ignored() -> None:
    assert metrics_config({"write.metadata.metrics.default": "all"}).default_mode == DEFAULT_MODE


def test_wide_table_keeps_metrics_for_the_first_columns_only() -> None:
    # 7 eligible leaves: id, s.a, s.b, l.element, m.key, m.value, c0
    schema = _schema(1)
    cfg = metrics_config({"write.metadata.metrics.max-inferred-column-defaults": "7"}, schema)
    assert cfg.default_mode == DEFAULT_MODE and not cfg.column_modes
    cfg = metrics_config({"write.metadata.metrics.max-inferred-column-defaults": "4"}, schema)
    assert cfg.default_mode == NONE
    # top-level primitives first (id, c0), then the struct's (s.a, s.b)
    assert {k for k, v in cfg.column_modes.items() if v == DEFAULT_MODE} == {"id", "c0", "s.a", "s.b"}
    assert cfg.column_mode("l.element") == NONE


def test_default_limit_is_100_columns() -> None:
    assert metrics_config({}, _schema(94)).default_mode == DEFAULT_MODE   # 6 + 94 = 100
    cfg = metrics_config({}, _schema(95))
    assert cfg.default_mode == NONE
    # 96 top-level primitives first, then s.a, s.b, l.element, m.key: m.value is the 101st
    assert cfg.column_mode("c94") == DEFAULT_MODE and cfg.column_mode("m.key") == DEFAULT_MODE
    assert cfg.column_mode("m.value") == NONE
    assert metrics_config({"write.metadata.metrics.max-inferred-column-defaults": "-5"},
                          _schema(94)).default_mode == DEFAULT_MODE


def test_limit_must_be_an_integer() -> None:
    with pytest.raises(InvalidInput):
        metrics_config({"write.metadata.metrics.max-inferred-column-defaults": "ten"})


def test_sorted_columns_get_bounds() -> None:
    order = SortOrder(1, (SortField(101, parse_transform("identity")),
                          SortField(102, parse_transform("bucket[4]")),
                          SortField(10, parse_transform("truncate[3]"))))
    schema = _schema(3)
    cfg = metrics_config({"write.metadata.metrics.default": "none"}, schema, order)
    assert cfg.column_mode("c1") == DEFAULT_MODE
    assert cfg.column_mode("s.a") == DEFAULT_MODE
    assert cfg.column_mode("c2") == NONE  # bucket does not preserve order
    cfg = metrics_config({"write.metadata.metrics.default": "full"}, schema, order)
    assert cfg.column_mode("c1") == FULL
    cfg = metrics_config({"write.metadata.metrics.default": "none",
                          "write.metadata.metrics.column.c1": "counts"}, schema, order)
    assert cfg.column_mode("c1") == COUNTS  # explicit settings win
