"""SpecUpdate: partition evolution with the reference's v1 and v2 rules."""

from __future__ import annotations

import pytest

from icectl.errors import NotFound, ValidationError
from icectl.spec.metadata import new_table_metadata
from icectl.spec.parse import parse_schema
from icectl.spec.partitioning import build_spec
from icectl.spec.spec_update import SpecUpdate, evolution_partition_name, update_table_spec
from icectl.spec.transforms import parse_transform

SCHEMA = parse_schema("id long not null, ts timestamptz, d date, cat string, x double, "
                      "tags list<string>, loc struct<lat: double, zone: string>")


def md_with(spec: str, version: int):
    return new_table_metadata(SCHEMA, build_spec(SCHEMA, spec), location="/tmp/t",
                              format_version=version, timestamp_ms=1)


def fields(md) -> list[tuple[int, str, str]]:
    return [(f.field_id, f.name, str(f.transform)) for f in md.spec.fields]


def change(md, fn):
    u = SpecUpdate(md)
    fn(u)
    return update_table_spec(md, u)


@pytest.mark.parametrize("transform,name", [
    ("identity", "cat"), ("bucket[8]", "cat_bucket_8"), ("truncate[4]", "cat_trunc_4"),
    ("day", "cat_day"), ("void", "cat_null"),
])
def test_alter_table_names(transform: str, name: str) -> None:
    assert evolution_partition_name("cat", parse_transform(transform)) == name


def test_v1_drop_is_void_and_ids_stay_sequential() -> None:
    md = md_with("days(ts), cat", 1)
    md = change(md, lambda u: u.remove_field("cat"))
    assert fields(md) == [(1000, "ts_day", "day"), (1001, "cat", "void")]
    md = change(md, lambda u: u.add_field("bucket(8, id)"))
    assert fields(md)[-1] == (1002, "id_bucket_8", "bucket[8]")
    md = change(md, lambda u: u.add_field("cat"))
    # the void field gives up its name, a new id is assigned (v1 never recycles)
    assert fields(md) == [(1000, "ts_day", "day"), (1001, "cat_1001", "void"),
                          (1002, "id_bucket_8", "bucket[8]"), (1003, "cat", "identity")]
    assert md.last_partition_id == 1003


def test_v2_drop_removes_and_readd_recycles_id() -> None:
    md = md_with("days(ts), cat", 2)
    md = change(md, lambda u: u.remove_field("cat"))
    assert fields(md) == [(1000, "ts_day", "day")]
    assert md.default_spec_id == 1
    md = change(md, lambda u: u.add_field("bucket(8, id)"))
    assert fields(md) == [(1000, "ts_day", "day"), (1002, "id_bucket_8", "bucket[8]")]
    md = change(md, lambda u: u.add_field("cat"))
    assert fields(md)[-1] == (1001, "cat", "identity")  # recycled
    assert md.last_partition_id == 1002


def test_v2_readd_with_other_name_gets_new_id() -> None:
    md = md_with("cat", 2)
    md = change(md, lambda u: u.remove_field("cat"))
    md = change(md, lambda u: u.add_field("cat", "category"))
    assert fields(md) == [(1001, "category", "identity")]


def test_identical_spec_is_reused() -> None:
    md = md_with("days(ts)", 2)
    md = change(md, lambda u: u.add_field("bucket(8, id)"))
    assert md.default_spec_id == 1
    md = change(md, lambda u: u.remove_field("id_bucket_8"))
    assert md.default_spec_id == 0 and len(md.specs) == 2
    md = change(md, lambda u: u.add_field("bucket(8, id)"))
    assert md.default_spec_id == 1 and len(md.specs) == 2


def test_rename_and_replace() -> None:
    md = md_with("days(ts)", 2)
    md = change(md, lambda u: u.rename_field("ts_day", "day"))
    assert fields(md) == [(1000, "day", "day")]
    md = change(md, lambda u: u.replace_field("day", "hours(ts)"))
    assert fields(md) == [(1001, "ts_hour", "hour")]
    md1 = change(md_with("days(ts)", 1), lambda u: u.replace_field("ts_day", "hours(ts)", "h"))
    assert fields(md1) == [(1000, "ts_day", "void"), (1001, "h", "hour")]


def test_drop_by_term() -> None:
    md = change(md_with("bucket(4, id), cat", 2), lambda u: u.remove_field("bucket(4, id)"))
    assert fields(md) == [(1001, "cat", "identity")]


@pytest.mark.parametrize("build,error", [
    (lambda u: u.add_field("bucket(4, x)"), ValidationError),          # bucket on double
    (lambda u: u.add_field("hours(d)"), ValidationError),              # hour on date
    (lambda u: u.add_field("tags"), ValidationError),                  # inside a list
    (lambda u: u.add_field("loc"), ValidationError),                   # a struct
    (lambda u: u.add_field("days(ts)"), ValidationError),              # duplicate field
    (lambda u: u.add_field("bucket(2, id)", "ts_day"), ValidationError),  # duplicate name
    (lambda u: u.add_field("bucket(2, id)", "cat"), ValidationError),  # name of another column
    (lambda u: u.add_field("days(d)").add_field("months(d)"), ValidationError),  # redundant adds
    (lambda u: u.remove_field("nope"), Exception),
    (lambda u: u.rename_field("nope", "x"), NotFound),
    (lambda u: u.add_field("nope"), Exception),
])
def test_refusals(build, error) -> None:
    md = md_with("days(ts)", 2)
    with pytest.raises(error):
        change(md, build)


def test_location_zone_in_struct_is_allowed() -> None:
    md = change(md_with("", 2), lambda u: u.add_field("loc.zone"))
    assert fields(md) == [(1000, "loc.zone", "identity")]
