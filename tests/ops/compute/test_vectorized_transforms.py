"""The vectorized transforms equal the spec's one-value transforms on every source type and every
transform that applies to it, value by value (nulls, extremes, pre-1970 times included)."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icectl.ops.compute import transform_array
from icectl.ops.compute.arrow_values import internal_to_arrow, internal_values
from icectl.spec import types as T
from icectl.spec.transforms import parse_transform
from icectl.spec.types import (
    BINARY, BOOLEAN, DATE, DOUBLE, FLOAT, INT, LONG, STRING, TIME, TIMESTAMP, TIMESTAMP_NS,
    TIMESTAMPTZ, TIMESTAMPTZ_NS, UUID, DecimalType, FixedType,
)
from icectl.spec.values import parse_literal

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
# dates and timestamps Arrow can hold as date32 / microseconds (years -9999..9999)
DAYS = st.integers(-4_371_587, 2_932_896)
MICROS = st.integers(-377_705_116_800_000_000, 253_402_300_799_999_999)
# nanoseconds fit int64: years 1677..2262
NANOS = st.integers(-(2**63) + 1, 2**63 - 1)

# every primitive type icectl writes, with values of it
TYPES = [
    (BOOLEAN, st.booleans()),
    (INT, INT32),
    (LONG, INT64),
    (FLOAT, st.floats(width=32)),
    (DOUBLE, st.floats()),
    (DATE, DAYS),
    (TIME, st.integers(0, 86_399_999_999)),
    (TIMESTAMP, MICROS),
    (TIMESTAMPTZ, MICROS),
    (TIMESTAMP_NS, NANOS),
    (TIMESTAMPTZ_NS, NANOS),
    (STRING, st.text(max_size=12)),
    (UUID, st.uuids()),
    (FixedType(3), st.binary(min_size=3, max_size=3)),
    (BINARY, st.binary(max_size=12)),
    (DecimalType(9, 2), st.decimals(min_value=-9999999, max_value=9999999, places=2)),
    (DecimalType(18, 0), st.decimals(min_value=-(10**18) + 1, max_value=10**18 - 1, places=0)),
    (DecimalType(38, 10), st.decimals(min_value=-(10**28) + 1, max_value=10**28 - 1, places=10)),
]
TRANSFORMS = ["identity", "bucket[1]", "bucket[7]", "bucket[16]", "bucket[2147483647]", "truncate[1]",
              "truncate[3]", "truncate[10]", "truncate[1000000]", "year", "month", "day", "hour", "void"]
CASES = [(t, strategy, text) for t, strategy in TYPES for text in TRANSFORMS
         if parse_transform(text).can_transform(t)]


def test_every_primitive_type_and_transform_is_covered() -> None:
    plain = {v for v in vars(T).values() if type(v) is T.PrimitiveType and v.name not in ("unknown", "variant")}
    assert plain <= {t for t, _ in TYPES}
    covered = {(str(t), parse_transform(x).name) for t, _, x in CASES}
    for t, _ in TYPES:
        for x in TRANSFORMS:
            if parse_transform(x).can_transform(t):
                assert (str(t), parse_transform(x).name) in covered
    assert {parse_transform(x).name for _, _, x in CASES} == {parse_transform(x).name for x in TRANSFORMS}


@pytest.mark.parametrize("t, strategy, text", CASES, ids=[f"{c[0]}-{c[2]}" for c in CASES])
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_vectorized_transform_equals_the_spec_value_by_value(t, strategy, text, data) -> None:
    values = data.draw(st.lists(st.one_of(st.none(), strategy), min_size=1, max_size=25))
    tr = parse_transform(text)
    want = [tr.apply(v, t) for v in values]
    if text.startswith("truncate") and isinstance(t, DecimalType) and any(
            w is not None and len(w.as_tuple().digits) > t.precision for w in want):
        from icectl.ops.compute.fit import DoesNotFit

        with pytest.raises(DoesNotFit):  # a truncated decimal the type cannot hold: refused
            transform_array(tr, internal_to_arrow(values, t), t)
        return
    got = internal_values(transform_array(tr, internal_to_arrow(values, t), t), tr.result_type(t))
    assert _same(got, want), (text, values)


def _same(got: list, want: list) -> bool:
    # NaN partition values (identity of float/double) compare equal to themselves here
    return len(got) == len(want) and all(g == w or (g != g and w != w) for g, w in zip(got, want))


def test_bucket_spec_vectors() -> None:
    """The spec's Appendix B hashes, through the vectorized path (no modulo: bucket[2^31-1])."""
    b = parse_transform("bucket[2147483647]")
    vectors = [(INT, 34, 2017239379), (LONG, 34, 2017239379),
               (DATE, parse_literal(DATE, "2017-11-16"), -653330422 & 0x7FFFFFFF),
               (TIME, parse_literal(TIME, "22:31:08"), -662762989 & 0x7FFFFFFF),
               (TIMESTAMP, parse_literal(TIMESTAMP, "2017-11-16T22:31:08"), -2047944441 & 0x7FFFFFFF),
               (TIMESTAMP_NS, parse_literal(TIMESTAMP_NS, "2017-11-16T22:31:08"), -2047944441 & 0x7FFFFFFF),
               (STRING, "iceberg", 1210000089),
               (UUID, uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"), 1488055340),
               (FixedType(4), b"\x00\x01\x02\x03", -188683207 & 0x7FFFFFFF),
               (BINARY, b"\x00\x01\x02\x03", -188683207 & 0x7FFFFFFF),
               (DecimalType(9, 2), parse_literal(DecimalType(9, 2), "14.20"), -500754589 & 0x7FFFFFFF)]
    for t, v, h in vectors:
        got = internal_values(transform_array(b, internal_to_arrow([v], t), t), INT)
        assert got == [h % 2147483647], t


@pytest.mark.parametrize("t,values,bad", [
    (DecimalType(38, 10), ["1.5", None, "-9999999999999999999999999999.9999999999"], 2),
    (DecimalType(38, 10), ["9999999999999999999999999999.9999999999"], None),  # rounds down: fits
    (DecimalType(2, 1), ["-9.8", "-9.9", "-9.9"], 1),
    (DecimalType(2, 1), ["9.9", "-9.8", "0.1"], None),
])
def test_truncated_decimal_beyond_the_precision_is_refused_at_its_first_row(t, values, bad) -> None:
    """truncate[2] of the most negative odd unscaled value needs one digit more than the type
    has; the reference fails the write, icectl refuses it naming the first position."""
    from icectl.ops.compute.fit import DoesNotFit

    tr = parse_transform("truncate[2]")
    arr = internal_to_arrow([None if v is None else parse_literal(t, v) for v in values], t)
    if bad is None:
        got = transform_array(tr, arr, t)
        assert got.type == arr.type
        assert internal_values(got, t) == [tr.apply(v, t) for v in internal_values(arr, t)]
        return
    with pytest.raises(DoesNotFit) as e:
        transform_array(tr, arr, t)
    assert e.value.index == bad and "truncate[2]" in str(e.value) and str(t) in str(e.value)


def test_internal_to_arrow_builds_uuid_inside_structs_lists_and_maps() -> None:
    """pyarrow builds no extension type from Python values when nested: structs, lists and maps
    holding uuids (nulls at every level) round trip through internal_to_arrow / internal_values."""
    from icectl.io.formats.parquet_write import arrow_type
    from icectl.spec.types import ListType, MapType, NestedField, StructType

    u1, u2 = uuid.UUID(int=1), uuid.UUID(int=2**128 - 1)
    st_t = StructType([NestedField(1, "a", UUID, False), NestedField(2, "b", LONG, True)])
    cases = [
        (st_t, [{1: u1, 2: 5}, None, {1: None, 2: 0}]),
        (ListType(3, UUID, False), [[u1, None, u2], None, []]),
        (MapType(4, UUID, 5, StructType([NestedField(6, "x", UUID, False)]), False),
         [{u1: {6: u2}, u2: None}, None, {}]),
    ]
    for t, values in cases:
        arr = internal_to_arrow(values, t)
        assert arr.type == arrow_type(t)
        got = internal_values(arr, t)
        if isinstance(t, MapType):
            got = [None if g is None else dict(g) for g in got]
        assert got == values
