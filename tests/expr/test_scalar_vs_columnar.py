"""Every evaluator's scalar form (one object, with reasons) and columnar form (lists, as the
planner runs them) give equal answers, on every type: decimal(38,2) with 38 digits, negative
values, fixed, binary, uuid, time, timestamp, timestamp_ns, float NaN, strings with non-BMP
code points. Metrics go through a real manifest (written, then decoded column-wise)."""

from __future__ import annotations

import math
import uuid
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icectl.expr.evaluators import (
    ManifestEvaluator,
    MetricsEvaluator,
    ResidualEvaluator,
    StrictMetricsEvaluator,
    evaluate_row,
    evaluate_rows,
    manifests_might_match,
    metrics_might_match,
    partition_matches,
    partitions_match,
    strict_metrics_match,
    value_key,
)
from icectl.expr.expressions import Operation, and_, make_bound, not_, or_, rewrite_not
from icectl.io.manifest.records import write_manifest_raw
from icectl.io.manifest.columns import decode_manifest
from icectl.spec.manifests import ADDED, DATA, DataFile, FieldSummary, ManifestEntry, ManifestFile
from icectl.spec.partitioning import PartitionField, PartitionSpec
from icectl.spec.schema import Schema
from icectl.spec.transforms import IDENTITY
from icectl.spec.types import (
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMP_NS,
    TIMESTAMPTZ,
    UUID,
    DecimalType,
    FixedType,
    NestedField,
    StructType,
)
from icectl.spec.values import to_bytes

Op = Operation
INF = math.inf
POOLS = {
    "int": (INT, [-2**31, -5, 0, 7, 2**31 - 1]),
    "long": (LONG, [-2**63, -1, 0, 10**12, 2**63 - 1]),
    "float": (FLOAT, [-INF, -1.5, -0.0, 0.0, 2.5, INF, math.nan]),
    "double": (DOUBLE, [-INF, -1e300, -0.0, 0.0, 0.1, 1e300, INF, math.nan]),
    "decimal38": (DecimalType(38, 2), [Decimal("-999999999999999999999999999999999999.99"),
                                       Decimal("-0.01"), Decimal("0.00"), Decimal("1.50"),
                                       Decimal("123456789012345678901234567890123456.78")]),
    "date": (DATE, [-719162, -1, 0, 19723]),
    "time": (TIME, [0, 1, 43_200_000_000, 86_399_999_999]),
    "timestamp": (TIMESTAMP, [-2**62, -1, 0, 1_700_000_000_000_000]),
    "timestamptz": (TIMESTAMPTZ, [-2**62, -1, 0, 1_700_000_000_000_000]),
    "timestamp_ns": (TIMESTAMP_NS, [-2**62, -1, 0, 1_700_000_000_000_000_123]),
    "string": (STRING, ["", "a", "ab", "é", "\U0001F600", "a\U0001F600", "\U0010FFFF", "z"]),
    "uuid": (UUID, [uuid.UUID(int=0), uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"),
                    uuid.UUID(int=2**128 - 1)]),
    "fixed": (FixedType(4), [b"\x00\x00\x00\x00", b"\x00\x00\x00\x01", b"\x80\x00\x00\x00",
                             b"\xff\xff\xff\xff"]),
    "binary": (BINARY, [b"", b"\x00", b"\x00\x01", b"\x7f", b"\xff", b"abc"]),
    "boolean": (BOOLEAN, [False, True]),
}


def _is_nan(v) -> bool:
    return isinstance(v, float) and math.isnan(v)


@st.composite
def predicates(draw, t, pool):
    lits = [v for v in pool if not _is_nan(v)]
    ops = [Op.IS_NULL, Op.NOT_NULL, Op.LT, Op.LT_EQ, Op.GT, Op.GT_EQ, Op.EQ, Op.NOT_EQ, Op.IN,
           Op.NOT_IN]
    if t in (FLOAT, DOUBLE):
        ops += [Op.IS_NAN, Op.NOT_NAN]
    if t == STRING:
        ops += [Op.STARTS_WITH, Op.NOT_STARTS_WITH]
    op = draw(st.sampled_from(ops))
    if op.is_unary:
        return make_bound(op, 1, "c", t)
    if op.is_set:
        vals = draw(st.lists(st.sampled_from(lits), min_size=1, max_size=4))
        if t == LONG and draw(st.integers(0, 4)) == 0:
            vals += list(range(100, 400))  # beyond the IN pruning limit
        return make_bound(op, 1, "c", t, vals)
    return make_bound(op, 1, "c", t, [draw(st.sampled_from(lits))])


@st.composite
def filters(draw, t, pool, depth=2):
    if depth == 0 or draw(st.integers(0, 2)) == 0:
        return draw(predicates(t, pool))
    a, b = draw(filters(t, pool, depth - 1)), draw(filters(t, pool, depth - 1))
    kind = draw(st.sampled_from(["and", "or", "not"]))
    return not_(a) if kind == "not" else (and_(a, b) if kind == "and" else or_(a, b))


@st.composite
def groups(draw, pool):
    """Files (or partitions): each a list of values, None for null."""
    return draw(st.lists(st.lists(st.sampled_from(pool + [None]), min_size=0, max_size=5),
                         min_size=1, max_size=6))


def _stats(t, values, draw_flags):
    present = [v for v in values if v is not None and not _is_nan(v)]
    lo = min(present, key=value_key) if present else None
    hi = max(present, key=value_key) if present else None
    return present, lo, hi


def _data_file(k, t, values, flags) -> DataFile:
    present, lo, hi = _stats(t, values, flags)
    keep_counts, keep_bounds, nan_lower = flags
    counts = {"value_counts": {1: len(values)}, "null_value_counts":
              {1: sum(v is None for v in values)}}
    if t in (FLOAT, DOUBLE):
        counts["nan_value_counts"] = {1: sum(_is_nan(v) for v in values)}
    bounds = {}
    if keep_bounds and lo is not None:
        lower = to_bytes(t, lo)
        if nan_lower and t in (FLOAT, DOUBLE):
            lower = to_bytes(t, math.nan)
        bounds = {"lower_bounds": {1: lower}, "upper_bounds": {1: to_bytes(t, hi)}}
    return DataFile(DATA, f"f{k}.parquet", "PARQUET", (), len(values), 100,
                    **(counts if keep_counts else {}), **bounds)


SCHEMA_OF = {name: Schema((NestedField(1, "c", t, False),)) for name, (t, _) in POOLS.items()}


def _decode(files, schema):
    entries = [ManifestEntry(ADDED, 1, None, None, f) for f in files]
    data = write_manifest_raw(entries, partition_type=StructType(()), spec_id=0,
                              partition_spec_json=[], schema_json=schema.to_json(),
                              format_version=2, snapshot_id=1)
    return decode_manifest(data, wanted_stats={1}, added_snapshot_id=1, sequence_number=1)


@pytest.mark.parametrize("name", list(POOLS))
@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_scalar_equals_columnar(name: str, data) -> None:
    t, pool = POOLS[name]
    schema = SCHEMA_OF[name]
    expr = data.draw(filters(t, pool))
    plain = rewrite_not(expr)
    gs = data.draw(groups(pool))
    rows = [v for g in gs for v in g] or [None]

    # rows (engine semantics) and partition tuples (nulls first)
    assert [evaluate_row(expr, {1: v}) for v in rows] == evaluate_rows(expr, {1: rows}, len(rows))
    tuples = [(v,) for v in rows]
    assert [partition_matches(plain, p, {1: 0}) for p in tuples] == \
        partitions_match(plain, tuples, {1: 0})

    # residuals through an identity partition
    spec = PartitionSpec(0, (PartitionField(1, 1000, "c", IDENTITY),))
    ev = ResidualEvaluator(spec, expr, schema)
    assert [ev.residual_for(p) for p in tuples] == ev.residuals_for(tuples)

    # manifest summaries (the filter bound to a partition struct of the same shape)
    ptype = StructType((NestedField(1, "c", t, False),))
    manifests = []
    for g in gs:
        _, lo, hi = _stats(t, g, None)
        fs = FieldSummary(any(v is None for v in g),
                          any(_is_nan(v) for v in g) if t in (FLOAT, DOUBLE) else None,
                          None if lo is None else to_bytes(t, lo),
                          None if hi is None else to_bytes(t, hi))
        manifests.append(ManifestFile("m", 1, 0, partitions=(fs,)))
    manifests.append(ManifestFile("m", 1, 0))  # no summaries
    scalar = ManifestEvaluator(plain, ptype)
    assert [scalar.eval(m)[0] for m in manifests] == manifests_might_match(plain, manifests, ptype)

    # file metrics, inclusive and strict, through a written and decoded manifest
    flags = [data.draw(st.tuples(st.booleans(), st.booleans(), st.booleans())) for _ in gs]
    files = [_data_file(k, t, g, f) for k, (g, f) in enumerate(zip(gs, flags))]
    cols = _decode(files, schema)
    idx = list(range(cols.count))
    inclusive = MetricsEvaluator(plain)
    assert [inclusive.eval(f)[0] for f in files] == metrics_might_match(plain, cols, idx, {1: t})
    strict = StrictMetricsEvaluator(plain)
    assert [strict.eval(f) for f in files] == strict_metrics_match(plain, cols, idx, {1: t})


def test_minus_zero_and_zero_are_different_partitions(tmp_path) -> None:
    """Per-partition caches key -0.0 apart from 0.0 (equal in Python, not for the reference):
    `c < 0` keeps the -0.0 partition only, and each file shows its own partition."""
    import json

    from clirun import icectl

    loc = str(tmp_path / "t")
    assert icectl("create", loc, "--schema", "c double", "--partition", "c").returncode == 0
    csv = tmp_path / "z.csv"
    csv.write_text("c\n0.0\n-0.0\n")
    assert icectl("write", loc, str(csv)).returncode == 0
    r = icectl("plan", loc, "--filter", "c < 0", "--json")
    assert r.returncode == 0, r.stderr
    assert [f["partition"] for f in json.loads(r.stdout)["files"]] == [{"c": -0.0}]
    r = icectl("plan", loc, "--json")
    parts = sorted(str(f["partition"]["c"]) for f in json.loads(r.stdout)["files"])
    assert parts == ["-0.0", "0.0"]
