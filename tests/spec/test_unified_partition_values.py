"""A file's partition tuple placed in the unified partition type (the reference's
PartitionUtil.coercePartition): by partition field id, the fields of other specs null."""

from __future__ import annotations

import math

from icectl.spec.parse import parse_schema
from icectl.spec.partitioning import build_spec, unified_partition_type, unified_partition_values


def test_values_go_to_their_field_ids_and_other_specs_fields_read_null() -> None:
    schema = parse_schema("id long, cat string, v double")
    s0 = build_spec(schema, "cat, v")
    s1 = build_spec(schema, "v, bucket(2, id)", spec_id=1, last_partition_id=1001)
    unified = unified_partition_type([s0, s1], schema)
    assert [pf.field_id for pf in s1.fields] == [1002, 1003]
    assert [f.field_id for f in unified.fields()] == [1000, 1001, 1002, 1003]
    assert unified_partition_values(s0, ("a", -0.0), unified) == {1000: "a", 1001: -0.0}
    assert math.copysign(1.0, unified_partition_values(s0, ("a", -0.0), unified)[1001]) == -1.0
    assert unified_partition_values(s1, (1.5, 1), unified) == {1002: 1.5, 1003: 1}
    got = unified_partition_values(s1, (math.nan, None), unified)
    assert list(got) == [1002] and math.isnan(got[1002])
    assert unified_partition_values(None, ("x",), unified) == {}  # an unknown spec: all null


def test_a_field_the_unified_type_lacks_is_left_out() -> None:
    schema = parse_schema("id long, cat string")
    s0 = build_spec(schema, "cat, bucket(4, id)")
    narrower = unified_partition_type([build_spec(schema, "cat")], schema)
    assert unified_partition_values(s0, ("a", 3), narrower) == {1000: "a"}
    assert unified_partition_values(s0, ("a", 3)) == {1000: "a", 1001: 3}
