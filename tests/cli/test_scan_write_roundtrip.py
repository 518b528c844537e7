"""What ``scan --format jsonl|csv`` prints, ``write`` reads back as the same values, for every type.

A table with a column of every type icectl writes (nested ones included, nulls at every level)
gets random rows (hypothesis) through the Python API; ``icectl scan --format jsonl`` and
``--format csv`` print them; ``icectl write`` writes each output into a twin table; the twins'
rows must equal the original Arrow values (NaN as NaN, -0.0 apart from 0.0) and the twins must
print the very same text. Run as a user runs it (tests/clirun.py).
"""

from __future__ import annotations

import math
import shutil
import struct
import tempfile
from decimal import Context, Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clirun import icectl
from icectl.api import load_table
from icectl.io.formats.parquet_write import arrow_schema
from icectl.scan.arrow_values import internal_to_arrow, to_internal
from icectl.spec.types import (
    BINARY, BOOLEAN, DATE, DOUBLE, FLOAT, INT, LONG, STRING, TIME, TIMESTAMP, TIMESTAMP_NS, TIMESTAMPTZ,
    TIMESTAMPTZ_NS, UUID, DecimalType, FixedType, IcebergType, ListType, MapType, StructType,
)
from icectl.spec.values import LONG_MAX, LONG_MIN
from support.tables import empty_table

SCHEMA = ", ".join([
    "id long not null", "b boolean", "i int", "l long", "f float", "d double", "dec decimal(9, 2)",
    "big decimal(38, 10)", "day date", "t time", "ts timestamp", "tz timestamptz",
    "ns timestamp_ns", "nz timestamptz_ns", "s string", "u uuid", "fx fixed[3]", "bin binary",
    "st struct<a: int, inner: struct<c: string not null, x: binary>, xs: list<double>>",
    "items list<struct<k: long, v: fixed[2]>>",
    "tags map<string, list<int>>",  # string keys and list values: also an object's shape
    "codes map<int, string>",
    "when map<date, decimal(9, 2)>",
    "ids map<uuid, struct<n: float>>",
])

# internal values (icectl.spec.values): days, micros, nanos, Decimal, bytes, UUID, dicts by id
_DAY = 86_400
_EXACT = Context(prec=80)  # the default context (28 digits) would round 38-digit decimals
_TS_MICROS = st.integers(-62_135_596_800 * 10**6, 253_402_300_799 * 10**6 + 999_999)  # 0001..9999


def _values(t: IcebergType, required: bool = False) -> st.SearchStrategy:
    v = _value(t)
    return v if required else st.none() | v


def _value(t: IcebergType) -> st.SearchStrategy:
    if t == BOOLEAN:
        return st.booleans()
    if t == INT:
        return st.integers(-2**31, 2**31 - 1)
    if t == LONG:
        return st.integers(LONG_MIN, LONG_MAX)
    if t == FLOAT:
        return st.floats(width=32) | st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 0.0])
    if t == DOUBLE:
        return st.floats() | st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 0.0, 5e-324])
    if isinstance(t, DecimalType):
        top = 10**t.precision - 1  # unscaled, so every value has exactly the type's scale
        return st.integers(-top, top).map(lambda u: Decimal(u).scaleb(-t.scale, context=_EXACT))
    if t == DATE:
        return st.integers(-719_162, 2_932_896) | st.integers(-2**31, 2**31 - 1)  # 0001..9999, any
    if t == TIME:
        return st.integers(0, _DAY * 10**6 - 1)
    if t in (TIMESTAMP, TIMESTAMPTZ):
        return _TS_MICROS
    if t in (TIMESTAMP_NS, TIMESTAMPTZ_NS):
        return st.integers(LONG_MIN, LONG_MAX)
    if t == STRING:
        specials = st.sampled_from(["", "null", "NULL", " a ", "a,b", 'say "hi"', "line\nbreak\r\n",
                                    "é中🙂", "\\", "{}", "[1]", "0AFF"])
        return specials | st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)
    if t == UUID:
        return st.uuids()
    if isinstance(t, FixedType):
        return st.binary(min_size=t.length, max_size=t.length)
    if t == BINARY:
        return st.binary(max_size=6)
    if isinstance(t, StructType):
        return st.fixed_dictionaries({f.field_id: _values(f.type, f.required) for f in t.fields()})
    if isinstance(t, ListType):
        return st.lists(_values(t.element_type, t.element_required), max_size=3)
    if isinstance(t, MapType):
        return st.dictionaries(_value(t.key_type), _values(t.value_type, t.value_required), max_size=3)
    raise AssertionError(f"no values for {t}")


def _canon(t: IcebergType, v: Any) -> Any:
    """A value made comparable: floats by their bits (NaN as one value), nested as tuples."""
    if v is None:
        return None
    if t in (FLOAT, DOUBLE):
        return "NaN" if math.isnan(v) else struct.pack(">d", v)
    if isinstance(t, StructType):
        return tuple(_canon(f.type, v.get(f.field_id)) for f in t.fields())
    if isinstance(t, ListType):
        return tuple(_canon(t.element_type, e) for e in v)
    if isinstance(t, MapType):
        return tuple((_canon(t.key_type, k), _canon(t.value_type, x)) for k, x in v.items())
    if isinstance(t, (FixedType,)) or t == BINARY:
        return bytes(v)
    return v


def _rows(location: str) -> list[tuple]:
    table = load_table(location)
    data = table.scan().to_arrow()
    fields = table.metadata.schema.fields
    cols = [[_canon(f.type, v) for v in to_internal(data.column(f.name).combine_chunks(), f.type)]
            for f in fields]
    return sorted(zip(*cols), key=lambda r: r[0])


def _fields() -> Any:
    d = tempfile.mkdtemp()
    try:
        empty_table(f"{d}/t", SCHEMA, format_version=3)
        return load_table(f"{d}/t").metadata.schema.fields
    finally:
        shutil.rmtree(d)


FIELDS = _fields()


def _table_rows() -> st.SearchStrategy:
    row = st.fixed_dictionaries({f.name: _values(f.type, f.required) for f in FIELDS[1:]})
    return st.lists(row, min_size=1, max_size=5)


def check_round_trip(rows: list[dict[str, Any]], tmp: Path) -> None:
    """Write ``rows`` (internal values; ``id`` numbers them), scan them as jsonl and csv, write
    each into a twin, and compare the twins' values and text with the original's."""
    original = str(tmp / "original")
    empty_table(original, SCHEMA, format_version=3)
    schema = load_table(original).metadata.schema
    rows = [{"id": i, **r} for i, r in enumerate(rows)]
    data = pa.Table.from_arrays([internal_to_arrow([r[f.name] for r in rows], f.type) for f in schema.fields],
                                schema=arrow_schema(schema))
    load_table(original).write(data)
    expected = _rows(original)
    assert expected == sorted((tuple(_canon(f.type, r[f.name]) for f in schema.fields) for r in rows),
                              key=lambda r: r[0])
    for fmt in ("jsonl", "csv"):
        out = icectl("scan", original, "--format", fmt)
        assert out.returncode == 0, out.output
        text = tmp / f"rows.{fmt}"
        text.write_text(out.stdout, encoding="utf-8")
        twin = str(tmp / f"twin-{fmt}")
        empty_table(twin, SCHEMA, format_version=3)
        w = icectl("write", twin, text)
        assert w.returncode == 0, w.output
        assert _rows(twin) == expected, fmt
        again = icectl("scan", twin, "--format", fmt)
        assert again.returncode == 0 and again.stdout == out.stdout, fmt
        # from stdin too, as in `icectl scan T --format jsonl | icectl write T2 -`
        piped = icectl("write", twin, "-", input=out.stdout)
        assert piped.returncode == 0, piped.output
        assert sorted(_rows(twin)) == sorted(expected + expected), fmt


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=_table_rows())
def test_scan_output_written_back_is_the_same_rows(rows: list[dict[str, Any]]) -> None:
    tmp = Path(tempfile.mkdtemp())
    try:
        check_round_trip(rows, tmp)
    finally:
        shutil.rmtree(tmp)


def _edge_rows() -> list[dict[str, Any]]:
    null_row = {f.name: None for f in FIELDS[1:]}
    edges = [
        dict(null_row, f=math.nan, d=-0.0, s="", bin=b"", dec=Decimal("-0.01"), day=-1, t=0,
             ts=-1, tz=-86_400_000_001, ns=LONG_MIN, nz=LONG_MAX, fx=b"\x00\x00\x00",
             st={1: None, 2: None, 3: None}, items=[], tags={}, codes={}, when={}, ids={}),
        dict(null_row, f=math.inf, d=-math.inf, s="null", bin=b"0aff", dec=Decimal("9999999.99"),
             big=Decimal("-9999999999999999999999999999.9999999999"), day=-719_162, t=_DAY * 10**6 - 1,
             st={1: 7, 2: None, 3: [math.nan, -0.0, None]}, items=[None, {1: None, 2: None}],
             tags={"keys": [1], "values": None, "": [], "null": [None]}, codes={-1: None, 0: ""}),
        dict(null_row, f=-0.0, d=math.nan, s='a,"b"\nc', bin=b"\n,\"", day=2**31 - 1,
             ts=253_402_300_799 * 10**6, st={1: None, 2: {1: "", 2: b""}, 3: []},
             items=[{1: LONG_MIN, 2: b"\xff\xfe"}], when={-25_000: Decimal("0.00")}),
    ]
    return edges


def test_edge_values_written_back_are_the_same(tmp_path: Path) -> None:
    """NaN, infinities, -0.0, empty and 'null'-looking text and binary, pre-1970 and extreme
    dates and timestamps, map keys that spell 'keys', empty and null nested values."""
    check_round_trip(_edge_rows(), tmp_path)


@pytest.mark.parametrize("cell, text", [
    ("0aff", "0AFF"), ("0x0AFF", "0AFF"), ("", ""),
])
def test_binary_text_is_hex(tmp_path: Path, cell: str, text: str) -> None:
    """`write` reads binary and fixed text as hex, the form scan prints (a breaking change from
    taking text as its UTF-8 bytes): 0aff is the two bytes 0a ff."""
    t = str(tmp_path / "t")
    assert icectl("create", t, "--schema", "id int, bin binary").returncode == 0
    (tmp_path / "r.jsonl").write_text(f'{{"id": 1, "bin": "{cell}"}}\n')
    assert icectl("write", t, tmp_path / "r.jsonl").returncode == 0
    out = icectl("scan", t, "--format", "jsonl")
    assert out.stdout == f'{{"id":1,"bin":"{text}"}}\n'


@pytest.mark.parametrize("cell", ["hello", "0af", "zz"])
def test_text_that_is_not_hex_is_refused_for_binary(tmp_path: Path, cell: str) -> None:
    t = str(tmp_path / "t")
    assert icectl("create", t, "--schema", "id int, bin binary, fx fixed[2]").returncode == 0
    for col in ("bin", "fx"):
        (tmp_path / "r.csv").write_text(f"id,{col}\n1,{cell}\n")
        r = icectl("write", t, tmp_path / "r.csv")
        assert r.returncode == 2, r.output
        assert "row 1, column " + col in r.stderr and "hex" in r.stderr and len(r.stderr.splitlines()) == 1
    assert load_table(t).current_snapshot_id is None  # nothing written


def test_bad_json_in_a_nested_csv_cell_is_refused(tmp_path: Path) -> None:
    t = str(tmp_path / "t")
    assert icectl("create", t, "--schema", "id int, tags list<string>").returncode == 0
    (tmp_path / "r.csv").write_text('id,tags\n1,"[""a""]"\n2,[a]\n')
    r = icectl("write", t, tmp_path / "r.csv")
    assert r.returncode == 2 and "row 2, column tags" in r.stderr, r.output
    assert load_table(t).current_snapshot_id is None


def test_map_keys_and_values_of_different_lengths_are_refused(tmp_path: Path) -> None:
    t = str(tmp_path / "t")
    assert icectl("create", t, "--schema", "id int, m map<int, string>").returncode == 0
    (tmp_path / "r.jsonl").write_text('{"id": 1, "m": {"keys": [1, 2], "values": ["a"]}}\n')
    r = icectl("write", t, tmp_path / "r.jsonl")
    assert r.returncode == 2 and "row 1, column m" in r.stderr, r.output
