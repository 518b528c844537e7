"""Sort orders: JSON forms, defaults for null order, binding terms to a schema."""

from __future__ import annotations

import pytest

from icectl.errors import CorruptMetadata, InvalidInput, NotFound, ValidationError
from icectl.spec.parse import SortTerm, parse_schema
from icectl.spec.sorting import (
    UNSORTED_ORDER,
    NullOrder,
    SortDirection,
    SortField,
    SortOrder,
    build_sort_order,
    default_null_order,
)
from icectl.spec.transforms import DAY, HOUR, IDENTITY, BucketTransform, UnknownTransform

SCHEMA = parse_schema("id long not null, ts timestamptz, cat string, f double, "
                      "loc struct<x: int>, tags list<int>")

ORDER_JSON = {
    "order-id": 1,
    "fields": [
        {"transform": "identity", "source-id": 2, "direction": "asc", "null-order": "nulls-first"},
        {"transform": "bucket[4]", "source-id": 3, "direction": "desc", "null-order": "nulls-last"},
    ],
}


def test_json_round_trip_is_exact_and_keyed_like_the_spec():
    order = SortOrder.from_json(ORDER_JSON)
    assert order.order_id == 1
    assert order.fields[1] == SortField(3, BucketTransform(4), SortDirection.DESC,
                                        NullOrder.NULLS_LAST)
    assert order.to_json() == ORDER_JSON
    assert list(order.to_json()["fields"][0]) == ["transform", "source-id", "direction",
                                                  "null-order"]


def test_unsorted():
    assert UNSORTED_ORDER.order_id == 0 and UNSORTED_ORDER.is_unsorted()
    assert UNSORTED_ORDER.to_json() == {"order-id": 0, "fields": []}
    assert SortOrder.from_json({"order-id": 0, "fields": []}) == UNSORTED_ORDER
    assert not SortOrder.from_json(ORDER_JSON).is_unsorted()


def test_lenient_enum_spellings_and_v3_source_ids():
    obj = {"order-id": 2, "fields": [
        {"transform": "zorder", "source-ids": [1, 2], "direction": "DESC", "null-order": "NULLS_FIRST"}]}
    order = SortOrder.from_json(obj)
    f = order.fields[0]
    assert isinstance(f.transform, UnknownTransform)
    assert f.direction == "desc" and f.null_order == "nulls-first"
    assert f.all_source_ids == (1, 2)
    assert order.to_json()["fields"][0] == {
        "transform": "zorder", "source-ids": [1, 2], "direction": "desc", "null-order": "nulls-first"}


@pytest.mark.parametrize("bad", [
    None, {"order-id": 1}, {"order-id": 1, "fields": {}},
    {"order-id": 1, "fields": [{"transform": "identity", "direction": "asc",
                                 "null-order": "nulls-first"}]},
    {"order-id": 1, "fields": [{"transform": "identity", "source-id": 1, "direction": "up",
                                 "null-order": "nulls-first"}]},
    {"order-id": 1, "fields": [{"transform": "identity", "source-id": 1, "direction": "asc",
                                 "null-order": "sometimes"}]},
    {"order-id": 1, "fields": [{"source-id": 1, "direction": "asc", "null-order": "nulls-last"}]},
])
def test_bad_json_is_corrupt_metadata(bad):
    with pytest.raises(CorruptMetadata):
        SortOrder.from_json(bad)


def test_default_null_order_follows_direction():
    assert default_null_order("asc") == NullOrder.NULLS_FIRST
    assert default_null_order(SortDirection.DESC) == NullOrder.NULLS_LAST


def test_build_sort_order_defaults_and_explicit_choices():
    order = build_sort_order(SCHEMA, [
        SortTerm("id", IDENTITY, "desc"),
        SortTerm("ts", DAY),
        SortTerm("CAT", BucketTransform(4), "asc", "nulls-last"),
        SortTerm("loc.x", IDENTITY, "desc", "nulls-first"),
    ])
    assert order.order_id == 1
    assert order.to_json()["fields"] == [
        {"transform": "identity", "source-id": 1, "direction": "desc", "null-order": "nulls-last"},
        {"transform": "day", "source-id": 2, "direction": "asc", "null-order": "nulls-first"},
        {"transform": "bucket[4]", "source-id": 3, "direction": "asc", "null-order": "nulls-last"},
        {"transform": "identity", "source-id": SCHEMA.find_field("loc.x").field_id,
         "direction": "desc", "null-order": "nulls-first"},
    ]


def test_build_from_text_and_empty():
    order = build_sort_order(SCHEMA, "id desc nulls last, ts, bucket(4, cat) asc", order_id=3)
    assert order.order_id == 3
    assert [str(f) for f in order.fields] == [
        "identity(1) desc nulls-last", "identity(2) asc nulls-first", "bucket[4](3) asc nulls-first"]
    assert build_sort_order(SCHEMA, "") is UNSORTED_ORDER
    with pytest.raises(InvalidInput):
        build_sort_order(SCHEMA, "id", order_id=0)


@pytest.mark.parametrize(("terms", "kind", "word"), [
    ("nope", NotFound, "nope"),  # an unknown column
    ("bucket(4, f)", ValidationError, "'f'"),
    ("hours(cat)", ValidationError, "'cat'"),
    ("loc", ValidationError, "'loc'"),
    ("tags.element", ValidationError, "tags"),
])
def test_refusals(terms, kind, word):
    with pytest.raises(kind) as err:
        build_sort_order(SCHEMA, terms)
    assert word in str(err.value)


def test_satisfies_and_same_order():
    by_hour = build_sort_order(SCHEMA, [SortTerm("ts", HOUR), SortTerm("id", IDENTITY)])
    by_day = build_sort_order(SCHEMA, [SortTerm("ts", DAY)], order_id=2)
    assert by_hour.satisfies(by_day) and not by_day.satisfies(by_hour)
    assert by_day.satisfies(UNSORTED_ORDER)
    assert by_day.same_order(by_day.with_order_id(7)) and by_day != by_day.with_order_id(7)
    desc = build_sort_order(SCHEMA, "days(ts) desc")
    assert not desc.satisfies(by_day)
