"""Z-order byte forms (spec/zorder): vectors worked by hand from the reference's rules, the
sort-order text, the binding's refusals."""

from __future__ import annotations

import datetime as dt
import struct

import pytest

from icectl.errors import InvalidInput, NotFound
from icectl.spec import zorder as Z
from icectl.spec.schema import Schema

SCHEMA = Schema.from_json({"type": "struct", "schema-id": 0, "fields": [
    {"id": 1, "name": "a", "type": "long", "required": False},
    {"id": 2, "name": "B", "type": "double", "required": False},
    {"id": 3, "name": "s", "type": "string", "required": False},
    {"id": 4, "name": "dec", "type": "decimal(9,2)", "required": False},
    {"id": 5, "name": "ts", "type": "timestamp", "required": False},
    {"id": 6, "name": "p", "type": "string", "required": False},
    {"id": 7, "name": "st", "type": {"type": "struct", "fields": [
        {"id": 8, "name": "x", "type": "int", "required": False}]}, "required": False},
    {"id": 9, "name": "u", "type": "uuid", "required": False},
    {"id": 10, "name": "t", "type": "time", "required": False},
]})


@pytest.mark.parametrize("kind, value, expected", [
    ("long", 0, "8000000000000000"),
    ("long", -1, "7fffffffffffffff"),
    ("long", 5, "8000000000000005"),
    ("long", -2**63, "0000000000000000"),
    ("long", 2**63 - 1, "ffffffffffffffff"),
    ("long", None, "0000000000000000"),
    # doubles: sign bit set; a negative value's bits XORed with its 31-bit arithmetic shift
    ("float", 1.0, "bff0000000000000" if False else None),
    ("float", -0.0, "7fffffff00000000"),
    ("float", 0.0, "8000000000000000"),
    ("float", float("nan"), "fff80000fff00000"),
    ("float", float("-inf"), "000fffffffe00000"),
    ("seconds", -1, "7fffffffffffffff"),  # -1 microsecond: second -1 (floor)
    ("seconds", 1_999_999, "8000000000000001"),
    ("seconds", dt.datetime(1969, 12, 31, 23, 59, 59, tzinfo=dt.timezone.utc), "7fffffffffffffff"),
    ("days", dt.date(1969, 12, 31), "7fffffffffffffff"),
    ("days", 1, "8000000000000001"),
    ("boolean", True, "8100000000000000"),
    ("boolean", False, "0000000000000000"),
    ("boolean", None, "0000000000000000"),
    ("string", "ab", "6162000000000000"),
    ("string", "abcdefghij", "6162636465666768"),
    ("string", "abcdefg\u00e9", "6162636465666700"),  # é (2 bytes) does not fit whole: left out
    ("string", "abcde\U0001F600", "6162636465000000"),
    ("string", None, "0000000000000000"),
    ("binary", b"\x01\x02", "0102000000000000"),
    ("binary", bytes(range(10)), "0001020304050607"),
])
def test_byte_forms(kind, value, expected):
    if expected is None:  # 1.0: bits 3ff0000000000000, positive: only the sign bit and the shift
        bits = struct.unpack(">q", struct.pack(">d", 1.0))[0]
        expected = ((bits ^ ((bits >> 31) | -(2**63))) & (2**64 - 1)).to_bytes(8, "big").hex()
        assert expected == "bff000007fe00000"
    assert Z.ordered_bytes(kind, value).hex() == expected


def test_forms_order_as_values():
    for kind, values in [("long", [-2**63, -5, -1, 0, 1, 7, 2**63 - 1]),
                         ("float", [float("-inf"), -1e300, -2.5, -1.0, -0.0, 0.0, 1e-300, 1.0, 3.5, float("inf"), float("nan")]),
                         ("string", ["", "a", "ab", "b", "\u00e9"])]:
        forms = [Z.ordered_bytes(kind, v) for v in values]
        assert [f[:4] for f in forms] == sorted(f[:4] for f in forms), kind


def test_interleave_bit_by_bit_and_skips_exhausted_columns():
    assert Z.interleave([b"\xff", b"\x00"], 2) == b"\xaa\xaa"
    assert Z.interleave([b"\x00", b"\xff"], 2) == b"\x55\x55"
    # the longer column's second byte follows alone
    assert Z.interleave([b"\xf0\x0f", b"\x0f"], 3) == b"\xaa\x55\x0f"
    assert Z.interleave([b"\xff\xff", b"\xff\xff"], 1) == b"\xff"  # cut to the output size
    assert Z.output_size([8, 8, 3], 10) == 10 and Z.output_size([8, 3]) == 11


def test_zorder_value_of_a_row():
    v = Z.zorder_value(["long", "string"], [0, "a"], var_length=1)
    # 0x80 (then 7 zero bytes) and 'a' = 0x61 = 0b01100001, bit pairs: 10 01 01 00, 00 00 00 01
    assert v == bytes([0b10010100, 0b00000001]) + bytes(7)


@pytest.mark.parametrize("text, columns", [
    ("zorder(a, b)", ["a", "b"]),
    ("ZORDER(a,b) desc nulls last", ["a", "b"]),
    ("zorder(a), zorder(`b`)", ["a", "b"]),
    ("a desc, b", None),
    (None, None),
])
def test_zorder_terms(text, columns):
    assert Z.parse_zorder_terms(text) == columns


@pytest.mark.parametrize("text, match", [
    ("zorder(a), b", "cannot mix"),
    ("zorder(a, b", "unbalanced"),
    ("zorder(a,) ", "empty column"),
    ("zorder(a) sideways", "unexpected text"),
])
def test_bad_zorder_terms(text, match):
    with pytest.raises(InvalidInput, match=match):
        Z.parse_zorder_terms(text)


def test_bind_resolves_case_insensitively_and_ignores_identity_partition_columns():
    order, ignored = Z.bind_zorder(SCHEMA, {6}, ["A", "b", "p", "u"])
    assert order.source_ids == (1, 2, 9) and ignored == ["p"]
    assert order.order_id == 0 and order.var_length_contribution == 8
    assert order.max_output_size == 2**31 - 1
    back = Z.sort_order_from_json(order.to_json())
    assert back == order and isinstance(back, Z.ZOrder)


@pytest.mark.parametrize("columns, kind, match", [
    (["nope"], NotFound, "cannot find column 'nope'"),
    (["dec"], InvalidInput, "decimal"),
    (["ts"], InvalidInput, "type timestamp"),
    (["t"], InvalidInput, "type time"),
    (["st"], InvalidInput, "not supported"),
    (["st.x"], InvalidInput, "top-level"),
    (["p"], InvalidInput, "every column given is an identity partition column"),
    ([], InvalidInput, "without columns"),
])
def test_bind_refusals(columns, kind, match):
    with pytest.raises(kind, match=match) as e:
        Z.bind_zorder(SCHEMA, {6}, columns)
    assert e.value.argument == "zorder_columns"


def test_options_below_one_byte_are_refused():
    with pytest.raises(InvalidInput, match="less than 1 byte") as e:
        Z.bind_zorder(SCHEMA, set(), ["a"], var_length_contribution=0)
    assert e.value.argument == "var_length_contribution"
    with pytest.raises(InvalidInput, match="less than 1 byte") as e:
        Z.bind_zorder(SCHEMA, set(), ["a"], max_output_size=-3)
    assert e.value.argument == "max_output_size"
