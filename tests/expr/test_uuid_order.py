"""uuid ordering: one order (unsigned, big-endian bytes) in every evaluator, and bounds written
under Iceberg Java's signed order (``java.util.UUID.compareTo``: two signed longs, so
``80000000-...`` sorts first) never prune a matching file or manifest.

Iceberg Java 1.10 builds manifest partition summaries with the signed order: for a uuid
partition holding values on both sides of ``80000000-...`` its lower bound is ``>= 8000...`` and
its upper bound ``< 8000...``. Reading those as an unsigned range lost rows (the differential
fuzzer's ``uuid ordering comparison`` category: ``icectl scan`` missed rows at or above
``8000...`` on tables Spark wrote).
"""

from __future__ import annotations

import itertools
import uuid

import pytest

from icectl.expr.evaluators import (
    ManifestEvaluator,
    MetricsEvaluator,
    StrictMetricsEvaluator,
    evaluate_row,
    manifests_might_match,
    metrics_might_match,
    strict_metrics_match,
)
from icectl.expr.expressions import Operation, make_bound, rewrite_not
from icectl.expr.ordering import compare, uuid_bounds
from icectl.expr.binding import bind
from icectl.expr.parser import parse_filter
from icectl.io.manifest.records import write_manifest_raw
from icectl.io.manifest.columns import decode_manifest
from icectl.spec.manifests import ADDED, DATA, DataFile, FieldSummary, ManifestEntry, ManifestFile
from icectl.spec.schema import Schema
from icectl.spec.types import UUID, NestedField, StructType
from icectl.spec.values import to_bytes

Op = Operation
U = uuid.UUID
LOW = U("00000000-0000-0000-8000-000000000000")
MID_BELOW = U("7fffffff-ffff-ffff-ffff-ffffffffffff")
MID = U("80000000-0000-0000-0000-000000000000")
POOL = [U(int=0), LOW, U("00000000-0000-0001-0000-000000000000"),
        U("12345678-9abc-4def-8123-456789abcdef"), MID_BELOW, MID,
        U("f79c3e09-677c-4bbd-a479-3f349cb785e7"), U("f79c3e09-677c-4bbd-2479-3f349cb785e7"),
        U(int=2**128 - 1)]
SCHEMA = Schema((NestedField(1, "c", UUID, False),))
PTYPE = StructType((NestedField(1, "c", UUID, False),))
OPS = (Op.LT, Op.LT_EQ, Op.GT, Op.GT_EQ, Op.EQ, Op.NOT_EQ, Op.IN, Op.NOT_IN)


def java_key(u: U) -> tuple[int, int]:
    """java.util.UUID.compareTo: most and least significant longs, each signed."""
    def signed(x: int) -> int:
        return x - 2**64 if x >= 2**63 else x
    return signed(u.int >> 64), signed(u.int & (2**64 - 1))


def _bounds(values: list[U], signed: bool) -> tuple[U, U]:
    key = java_key if signed else (lambda u: u.int)
    return min(values, key=key), max(values, key=key)


def _sets() -> list[list[U]]:
    return [list(c) for n in (1, 2, 3) for c in itertools.combinations(POOL, n)]


def _preds() -> list:
    out = []
    for op in OPS:
        for lit in POOL:
            out.append(make_bound(op, 1, "c", UUID, [lit, POOL[0]] if op.is_set else [lit]))
    return out


def test_rows_compare_as_unsigned_bytes() -> None:
    """The row evaluator's order is the byte order (what Spark compares on the uuid text)."""
    for a, b in itertools.product(POOL, POOL):
        want = (a.bytes > b.bytes) - (a.bytes < b.bytes)
        assert compare(a, b) == want
        for op, holds in ((Op.LT, want < 0), (Op.LT_EQ, want <= 0), (Op.GT, want > 0),
                          (Op.GT_EQ, want >= 0)):
            assert evaluate_row(make_bound(op, 1, "c", UUID, [b]), {1: a}) is holds
    # the fuzzer's seed-7 filter: rows at or above 8000... are outside the range, so selected
    flt = bind(parse_filter("c not between uuid '00000000-0000-0000-8000-000000000000' "
                            "and uuid '7fffffff-ffff-ffff-ffff-ffffffffffff'"), SCHEMA)
    assert [evaluate_row(flt, {1: u}) for u in POOL] == [True] + [False] * 4 + [True] * 4


def test_widened_bounds_cover_both_readings() -> None:
    """Whichever order wrote a pair, the widened unsigned bounds cover every value; pairs both
    orders agree on stay as they are (pruning is kept)."""
    for vals in _sets():
        for signed in (False, True):
            lo, hi = uuid_bounds(*_bounds(vals, signed))
            assert all(lo.int <= v.int <= hi.int for v in vals), (vals, signed)
        if len({v.int >> 64 for v in vals}) == 1:  # one high long: the orders agree there
            assert uuid_bounds(*_bounds(vals, False)) == _bounds(vals, False)
    # Java's pair for values on both sides of 8000... in the first long: its signed range is
    # 8000...-ffff... and LOW (the only value with a zero first long above 0...-8000... signed)
    assert uuid_bounds(MID, LOW) == (LOW, U(int=2**128 - 1))
    assert uuid_bounds(MID, U(int=0)) == (U(int=0), U(int=2**128 - 1))
    # unsigned bounds across 8000... cannot come from the signed order: kept
    assert uuid_bounds(LOW, MID) == (LOW, MID)


def _manifest(lo: U, hi: U) -> ManifestFile:
    return ManifestFile("m", 1, 0, partitions=(FieldSummary(False, None, to_bytes(UUID, lo),
                                                            to_bytes(UUID, hi)),))


def _file(k: int, n: int, lo: U, hi: U) -> DataFile:
    return DataFile(DATA, f"f{k}.parquet", "PARQUET", (), n, 100, value_counts={1: n},
                    null_value_counts={1: 0}, lower_bounds={1: to_bytes(UUID, lo)},
                    upper_bounds={1: to_bytes(UUID, hi)})


def _decoded(files: list[DataFile]):
    entries = [ManifestEntry(ADDED, 1, None, None, f) for f in files]
    data = write_manifest_raw(entries, partition_type=StructType(()), spec_id=0,
                              partition_spec_json=[], schema_json=SCHEMA.to_json(),
                              format_version=2, snapshot_id=1)
    return decode_manifest(data, wanted_stats={1}, added_snapshot_id=1, sequence_number=1)


@pytest.mark.parametrize("signed", [False, True], ids=["unsigned-bounds", "signed-bounds"])
def test_bounds_never_lose_a_matching_row(signed: bool) -> None:
    """Manifest summaries and file metrics, scalar and columnar, inclusive and strict: a set
    holding a matching row is kept; "every row matches" only when every row does."""
    sets = _sets()
    manifests = [_manifest(*_bounds(v, signed)) for v in sets]
    files = [_file(k, len(v), *_bounds(v, signed)) for k, v in enumerate(sets)]
    cols = _decoded(files)
    idx = list(range(cols.count))
    for p in _preds():
        p = rewrite_not(p)
        matches = [[evaluate_row(p, {1: v}) for v in vals] for vals in sets]
        any_match = [any(m) for m in matches]
        all_match = [all(m) for m in matches]
        man = manifests_might_match(p, manifests, PTYPE)
        assert man == [ManifestEvaluator(p, PTYPE).eval(m)[0] for m in manifests]
        inc = metrics_might_match(p, cols, idx, {1: UUID})
        assert inc == [MetricsEvaluator(p).eval(f)[0] for f in files]
        strict = strict_metrics_match(p, cols, idx, {1: UUID})
        assert strict == [StrictMetricsEvaluator(p).eval(f) for f in files]
        for vals, want_any, want_all, m, i, s in zip(sets, any_match, all_match, man, inc, strict):
            assert m or not want_any, (p, vals, "manifest pruned a match")
            assert i or not want_any, (p, vals, "file pruned a match")
            assert want_all or not s, (p, vals, "strict claimed a non-matching row")


def test_consistent_bounds_still_prune() -> None:
    """Only crossed pairs are ignored: bounds on one side of 8000... (either order) and unsigned
    bounds across it keep pruning."""
    lt_low = rewrite_not(make_bound(Op.LT, 1, "c", UUID, [LOW]))
    gt_mid = rewrite_not(make_bound(Op.GT, 1, "c", UUID, [MID]))
    high = [MID, U(int=2**128 - 1)]        # one side: both orders agree
    across = [LOW, U(int=2**128 - 1)]      # both sides, unsigned bounds
    for vals, p in ((high, lt_low), (across, lt_low)):
        lo, hi = _bounds(vals, signed=False)
        assert ManifestEvaluator(p, PTYPE).eval(_manifest(lo, hi))[0] is False
        assert MetricsEvaluator(p).eval(_file(0, 2, lo, hi))[0] is False
    low_side = [U(int=0), LOW]
    lo, hi = _bounds(low_side, signed=True)
    assert ManifestEvaluator(gt_mid, PTYPE).eval(_manifest(lo, hi))[0] is False
    assert StrictMetricsEvaluator(rewrite_not(make_bound(Op.LT, 1, "c", UUID, [MID]))).eval(
        _file(0, 2, lo, hi)) is True
