"""Counts that leave rows out: Iceberg Java 1.10.2 takes a float/double field's value and null
counts from what its writer saw, and does not write a field inside a struct for a row whose
struct is null, so such a file says ``st.b``: 0 values, 0 nulls, 0 NaN for one row whose ``st`` is
null (seen on a Spark-written file; fuzzer seed 7, table s7r4; Spark-backed regression test in
tests/interop/test_fuzz_findings_interop.py). The rows left out hold nulls: every metrics rule,
scalar and columnar, inclusive and strict, counts them so."""

from __future__ import annotations

import pytest

from icectl.expr.evaluators import MetricsEvaluator, StrictMetricsEvaluator
from icectl.expr.eval_metrics import metrics_might_match
from icectl.expr.eval_strict import strict_metrics_match
from icectl.expr.binding import bind
from icectl.expr.expressions import rewrite_not
from icectl.expr.parser import parse_filter
from icectl.io.manifest.records import write_manifest_raw
from icectl.io.manifest.columns import decode_manifest
from icectl.spec.manifests import ADDED, DATA, DataFile, ManifestEntry
from icectl.spec.schema import Schema
from icectl.spec.types import FLOAT, NestedField, StructType
from icectl.spec.values import to_bytes

SCHEMA = Schema((NestedField(1, "id", FLOAT, False),
                 NestedField(4, "st", StructType((NestedField(6, "b", FLOAT, False),)), False)))


def _file(records: int, vc: int, nc: int, nan: int, lo: float | None = None,
          hi: float | None = None) -> DataFile:
    bounds = {} if lo is None else {"lower_bounds": {6: to_bytes(FLOAT, lo)},
                                    "upper_bounds": {6: to_bytes(FLOAT, hi)}}
    return DataFile(DATA, "f.parquet", "PARQUET", (), records, 100,
                    value_counts={6: vc}, null_value_counts={6: nc}, nan_value_counts={6: nan},
                    **bounds)


# (file, filter, some row may match, every row matches)
CASES = [
    # one row, st null: Java's counts say nothing about it
    (_file(1, 0, 0, 0), "st.b is not nan", True, True),
    (_file(1, 0, 0, 0), "not (st.b is nan)", True, True),
    (_file(1, 0, 0, 0), "st.b is null", True, True),
    (_file(1, 0, 0, 0), "st.b is not null", False, False),
    (_file(1, 0, 0, 0), "st.b > 0", False, False),
    # three rows: one st null, two values in [10, 20], no nulls or NaN among them
    (_file(3, 2, 0, 0, 10.0, 20.0), "st.b > 5", True, False),
    (_file(3, 2, 0, 0, 10.0, 20.0), "st.b is not null", True, False),
    (_file(3, 2, 0, 0, 10.0, 20.0), "st.b is null", True, False),
    (_file(3, 2, 0, 0, 10.0, 20.0), "st.b != 30", True, False),
    # two NaN values and a null struct: not all NaN
    (_file(3, 2, 0, 2), "st.b is not nan", True, False),
    (_file(3, 2, 0, 2), "st.b is nan", True, False),
    # complete counts (every row counted) are read as before
    (_file(2, 2, 0, 2), "st.b is not nan", False, False),
    (_file(2, 2, 0, 0, 10.0, 20.0), "st.b is null", False, False),
    (_file(2, 2, 0, 0, 10.0, 20.0), "st.b > 5", True, True),
]


@pytest.mark.parametrize("df, text, might, every", CASES)
def test_rows_left_out_of_the_counts_are_nulls(df: DataFile, text: str, might: bool,
                                               every: bool) -> None:
    expr = parse_filter(text)
    assert MetricsEvaluator(expr, SCHEMA).eval(df)[0] is might
    assert StrictMetricsEvaluator(expr, SCHEMA).eval(df) is every
    # the columnar forms, through a written and decoded manifest, agree
    data = write_manifest_raw([ManifestEntry(ADDED, 1, None, None, df)],
                              partition_type=StructType(()), spec_id=0, partition_spec_json=[],
                              schema_json=SCHEMA.to_json(), format_version=2, snapshot_id=1)
    cols = decode_manifest(data, wanted_stats={6}, added_snapshot_id=1, sequence_number=1)
    bound = rewrite_not(bind(expr, SCHEMA, False))
    assert metrics_might_match(bound, cols, [0], {6: FLOAT}) == [might]
    assert strict_metrics_match(bound, cols, [0], {6: FLOAT}) == [every]
