"""Property tests: projections, summaries, metrics and residuals never lose a matching row.

For random columns, transforms, filters and rows:
- f(row) implies inclusive_projection(f)(partition(row));
- strict_projection(f)(partition(row)) implies f(row);
- a manifest whose partitions hold a matching row is kept by the manifest evaluator;
- a file holding a matching row is kept by the metrics evaluator, whatever metrics it has;
- a matching row satisfies its partition's residual, and the residual selects only matching
  rows (on null and NaN partitions too: a residual ``true`` means every row matches).
"""

from __future__ import annotations

import math
import uuid
from decimal import Decimal
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icectl.expr.evaluators import (
    ManifestEvaluator,
    MetricsEvaluator,
    ResidualEvaluator,
    StrictMetricsEvaluator,
    evaluate_row,
    value_key,
)
from icectl.expr.expressions import (
    FALSE,
    TRUE,
    BoundPredicate,
    Expression,
    Operation,
    and_,
    make_bound,
    not_,
    or_,
)
from icectl.expr.projection import inclusive_projection, strict_projection
from icectl.spec.manifests import DataFile, FieldSummary, ManifestFile
from icectl.spec.partitioning import PartitionField, PartitionSpec
from icectl.spec.schema import Schema
from icectl.spec.transforms import (
    DAY,
    HOUR,
    IDENTITY,
    MONTH,
    YEAR,
    BucketTransform,
    Transform,
    TruncateTransform,
)
from icectl.spec.types import (
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIMESTAMP,
    TIMESTAMP_NS,
    TIMESTAMPTZ,
    UUID,
    DecimalType,
    IcebergType,
    NestedField,
)
from icectl.spec.values import to_bytes

Op = Operation
DEC = DecimalType(9, 2)
HOUR_US = 3_600_000_000
DAY_US = 24 * HOUR_US

# values near interesting edges: zero, the epoch, month/year boundaries before and after 1970
_day_edges = [-366, -365, -32, -31, -30, -1, 0, 1, 30, 31, 59, 365, 19723, 19724]
_ts_edges = [d * DAY_US + o for d in (-366, -32, -1, 0, 1, 31) for o in (-1, 0, 1, HOUR_US - 1)]


def values_of(t: IcebergType) -> st.SearchStrategy[Any]:
    if t in (INT, LONG):
        # (the type's minimum itself is left out: there the reference's truncate wraps around
        # to the other end of the range, and so does icectl's, on purpose)
        return st.one_of(st.integers(-60, 60), st.sampled_from([-(2**31) + 10, 2**31 - 1]))
    if t == DEC:
        return st.integers(-3000, 3000).map(lambda n: Decimal(n).scaleb(-2))
    if t == DATE:
        return st.one_of(st.sampled_from(_day_edges), st.integers(-800, 800))
    if t in (TIMESTAMP, TIMESTAMPTZ):
        return st.one_of(st.sampled_from(_ts_edges), st.integers(-40 * DAY_US, 40 * DAY_US))
    if t == TIMESTAMP_NS:
        return st.one_of(st.sampled_from([v * 1000 + d for v in _ts_edges for d in (-1, 0, 1)]),
                         st.integers(-40 * DAY_US * 1000, 40 * DAY_US * 1000))
    if t == STRING:
        return st.text(alphabet="ab\u00e9\U0001f600", max_size=5)
    if t == BINARY:
        return st.binary(max_size=4).map(lambda b: bytes(x & 0x81 for x in b))
    if t in (FLOAT, DOUBLE):
        vals = st.sampled_from([-2.5, -1.0, -0.0, 0.0, 0.5, 1.0, 3.25, math.inf, -math.inf])
        return vals
    if t == UUID:
        return st.sampled_from([uuid.UUID(int=n) for n in (0, 1, 2**127, 2**128 - 1, 2**64)])
    if t == BOOLEAN:
        return st.booleans()
    raise AssertionError(t)


TRANSFORMS: dict[IcebergType, list[Transform]] = {
    INT: [IDENTITY, BucketTransform(4), TruncateTransform(10), TruncateTransform(1)],
    LONG: [IDENTITY, BucketTransform(3), TruncateTransform(7)],
    DEC: [IDENTITY, BucketTransform(5), TruncateTransform(50)],
    DATE: [IDENTITY, YEAR, MONTH, DAY, BucketTransform(4)],
    TIMESTAMP: [YEAR, MONTH, DAY, HOUR, BucketTransform(4), IDENTITY],
    TIMESTAMPTZ: [DAY, HOUR, MONTH],
    TIMESTAMP_NS: [DAY, HOUR, YEAR, BucketTransform(2)],
    STRING: [IDENTITY, BucketTransform(4), TruncateTransform(1), TruncateTransform(2),
             TruncateTransform(3)],
    BINARY: [IDENTITY, BucketTransform(4), TruncateTransform(2)],
    DOUBLE: [IDENTITY],
    FLOAT: [IDENTITY],
    UUID: [IDENTITY, BucketTransform(4)],
    BOOLEAN: [IDENTITY],
}

FID = 1
NAME = "c"


def _ops_for(t: IcebergType) -> list[Operation]:
    ops = [Op.IS_NULL, Op.NOT_NULL, Op.LT, Op.LT_EQ, Op.GT, Op.GT_EQ, Op.EQ, Op.NOT_EQ, Op.IN,
           Op.NOT_IN]
    if t in (FLOAT, DOUBLE):
        ops += [Op.IS_NAN, Op.NOT_NAN]
    if t == STRING:
        ops += [Op.STARTS_WITH, Op.NOT_STARTS_WITH]
    return ops


@st.composite
def predicate_on(draw: st.DrawFn, t: IcebergType) -> Expression:
    op = draw(st.sampled_from(_ops_for(t)))
    if op.is_unary:
        return BoundPredicate(op, FID, NAME, t)
    if op.is_set:
        vals = draw(st.lists(values_of(t), min_size=1, max_size=4))
        return make_bound(op, FID, NAME, t, vals)
    v = draw(values_of(t))
    return BoundPredicate(op, FID, NAME, t, (v,))


@st.composite
def filter_on(draw: st.DrawFn, t: IcebergType, depth: int = 2) -> Expression:
    if depth == 0 or draw(st.booleans()):
        return draw(predicate_on(t))
    kind = draw(st.sampled_from(["and", "or", "not"]))
    left = draw(filter_on(t, depth - 1))
    if kind == "not":
        return not_(left)
    right = draw(filter_on(t, depth - 1))
    return and_(left, right) if kind == "and" else or_(left, right)


@st.composite
def case(draw: st.DrawFn) -> tuple[IcebergType, PartitionSpec, Schema, Expression, list[Any]]:
    t = draw(st.sampled_from(list(TRANSFORMS)))
    transforms = draw(st.lists(st.sampled_from(TRANSFORMS[t]), min_size=1, max_size=2,
                               unique_by=str))
    spec = PartitionSpec(0, tuple(PartitionField(FID, 1000 + i, f"p{i}", tr)
                                  for i, tr in enumerate(transforms)))
    schema = Schema((NestedField(FID, NAME, t, False),))
    f = draw(filter_on(t))
    rows = draw(st.lists(st.one_of(st.none(), values_of(t)), min_size=1, max_size=8))
    if t in (FLOAT, DOUBLE):
        rows += draw(st.lists(st.just(math.nan), max_size=2))
    return t, spec, schema, f, rows


def partition_of(spec: PartitionSpec, t: IcebergType, v: Any) -> dict[int, Any]:
    return {pf.field_id: pf.transform.apply(v, t) for pf in spec.fields}


SETTINGS = settings(max_examples=400, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(case())
def test_projections_are_sound(c: tuple) -> None:
    t, spec, schema, f, rows = c
    inc = inclusive_projection(f, spec, schema)
    strict = strict_projection(f, spec, schema)
    for v in rows:
        part = partition_of(spec, t, v)
        matches = evaluate_row(f, {FID: v})
        if matches:
            assert evaluate_row(inc, part), (str(f), str(inc), v, part)
        if evaluate_row(strict, part):
            assert matches, (str(f), str(strict), v, part)


def _summary(ptype: IcebergType, values: list[Any]) -> FieldSummary:
    present = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    lo = min(present, key=value_key) if present else None
    hi = max(present, key=value_key) if present else None
    return FieldSummary(
        contains_null=any(v is None for v in values),
        contains_nan=any(isinstance(v, float) and math.isnan(v) for v in values)
        if ptype in (FLOAT, DOUBLE) else None,
        lower_bound=None if lo is None else to_bytes(ptype, lo),
        upper_bound=None if hi is None else to_bytes(ptype, hi))


@SETTINGS
@given(case())
def test_manifest_evaluator_keeps_manifests_with_matching_rows(c: tuple) -> None:
    t, spec, schema, f, rows = c
    ptype = spec.partition_type(schema)
    parts = [partition_of(spec, t, v) for v in rows]
    summaries = tuple(_summary(nf.type, [p[nf.field_id] for p in parts]) for nf in ptype.fields())
    manifest = ManifestFile("m.avro", 1, 0, partitions=summaries)
    projected = inclusive_projection(f, spec, schema)
    kept, reason = ManifestEvaluator(projected, ptype).eval(manifest)
    if any(evaluate_row(f, {FID: v}) for v in rows):
        assert kept, (str(f), reason)
    if not kept:
        # pruned either by a partition summary or because the filter folded to false
        # (e.g. `not (c <= 2147483647)` on an int column)
        assert reason.startswith("partition p") or (projected is FALSE and "always false" in reason), reason


def _truncate_upper(s: str, n: int) -> str | None:
    if len(s) <= n:
        return s
    cps = list(s[:n])
    for i in range(n - 1, -1, -1):
        cp = ord(cps[i]) + 1
        if 0xD800 <= cp <= 0xDFFF:
            cp = 0xE000
        if cp <= 0x10FFFF:
            return "".join(cps[:i]) + chr(cp)
    return None


@st.composite
def file_case(draw: st.DrawFn) -> tuple[Schema, Expression, list[Any], DataFile]:
    t = draw(st.sampled_from(list(TRANSFORMS)))
    schema = Schema((NestedField(FID, NAME, t, False),))
    f = draw(filter_on(t))
    rows = draw(st.lists(st.one_of(st.none(), values_of(t)), min_size=0, max_size=6))
    if t in (FLOAT, DOUBLE):
        rows += draw(st.lists(st.just(math.nan), max_size=2))
    present = [v for v in rows if v is not None and not (isinstance(v, float) and math.isnan(v))]
    nan_count = sum(isinstance(v, float) and math.isnan(v) for v in rows)
    lower = upper = None
    if present and draw(st.booleans()):
        lower, upper = min(present, key=value_key), max(present, key=value_key)
        if t == STRING and draw(st.booleans()):  # truncate(n) bounds
            n = draw(st.integers(1, 3))
            lower, upper = lower[:n], _truncate_upper(upper, n)
        if t == BINARY and draw(st.booleans()):
            n = draw(st.integers(1, 2))
            lower, upper = lower[:n], None if len(upper) > n else upper
        if nan_count and draw(st.booleans()):
            lower = math.nan  # bounds from writers that let NaN in: unreliable
    keep_counts = draw(st.booleans())
    df = DataFile(
        0, "f.parquet", "parquet", (), len(rows), 100,
        value_counts={FID: len(rows)} if keep_counts else None,
        null_value_counts={FID: sum(v is None for v in rows)} if keep_counts else None,
        nan_value_counts={FID: nan_count} if keep_counts and t in (FLOAT, DOUBLE) else None,
        lower_bounds={FID: to_bytes(t, lower)} if lower is not None else None,
        upper_bounds={FID: to_bytes(t, upper)} if upper is not None else None)
    return schema, f, rows, df


@SETTINGS
@given(file_case())
def test_metrics_evaluator_keeps_files_with_matching_rows(c: tuple) -> None:
    schema, f, rows, df = c
    kept, reason = MetricsEvaluator(f, schema).eval(df)
    if any(evaluate_row(f, {FID: v}) for v in rows):
        assert kept, (str(f), rows, reason)
    assert reason


@SETTINGS
@given(file_case())
def test_strict_metrics_evaluator_claims_all_rows_only_when_true(c: tuple) -> None:
    schema, f, rows, df = c
    if not rows or any(isinstance(v, float) and math.isnan(v) for v in df_bounds(df)):
        return
    if StrictMetricsEvaluator(f, schema).eval(df):
        assert all(evaluate_row(f, {FID: v}) for v in rows), (str(f), rows)


def df_bounds(df: DataFile) -> list[Any]:
    from icectl.spec.values import from_bytes
    out = []
    for m in (df.lower_bounds, df.upper_bounds):
        if m and FID in m and len(m[FID]) in (4, 8):
            try:
                out.append(from_bytes(DOUBLE, m[FID]))
            except Exception:
                pass
    return out


@SETTINGS
@given(case())
def test_residuals_keep_matching_rows(c: tuple) -> None:
    t, spec, schema, f, rows = c
    ev = ResidualEvaluator(spec, f, schema)
    for v in rows:
        part = partition_of(spec, t, v)
        residual = ev.residual_for(part)
        matches = evaluate_row(f, {FID: v})
        if matches:
            assert residual is not FALSE and evaluate_row(residual, {FID: v}), (str(f), v)
        if residual is TRUE:  # null and NaN partitions included: true means every row matches
            assert matches, (str(f), v, part)
        elif residual is not FALSE:  # what is left selects exactly the matching rows
            assert evaluate_row(residual, {FID: v}) == matches, (str(f), v, part)
