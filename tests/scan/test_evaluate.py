"""Vectorized file-metrics pruning equals the scalar MetricsEvaluator (icectl.expr), on
hand-picked rule cases and on hypothesis-generated files and filters."""

from __future__ import annotations

import math
import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from icectl.expr.evaluators import MetricsEvaluator
from icectl.expr.binding import bind
from icectl.expr.expressions import rewrite_not
from icectl.expr.parser import parse_filter
from icectl.io.manifest.records import write_manifest_raw
from icectl.io.manifest.columns import decode_manifest
from icectl.expr.eval_metrics import metrics_might_match
from icectl.spec.manifests import ADDED, DATA, DataFile, ManifestEntry
from icectl.spec.schema import Schema
from icectl.spec.types import DOUBLE, LONG, STRING, NestedField, StructType
from icectl.spec.values import to_bytes

SCHEMA = Schema((NestedField(1, "id", LONG, False), NestedField(2, "s", STRING, False),
                 NestedField(3, "v", DOUBLE, False)))
TYPES = {1: LONG, 2: STRING, 3: DOUBLE}


def _columns(files: list[DataFile]):
    entries = [ManifestEntry(ADDED, 1, None, None, f) for f in files]
    data = write_manifest_raw(entries, partition_type=StructType(()), spec_id=0,
                              partition_spec_json=[], schema_json=SCHEMA.to_json(),
                              format_version=2, snapshot_id=1)
    return decode_manifest(data, wanted_stats={1, 2, 3}, added_snapshot_id=1, sequence_number=1)


def _check(files: list[DataFile], text: str) -> list[bool]:
    expr = rewrite_not(bind(parse_filter(text), SCHEMA))
    cols = _columns(files)
    vec = metrics_might_match(expr, cols, list(range(cols.count)), TYPES)
    scalar = MetricsEvaluator(expr)
    expected = [scalar.eval(f)[0] for f in files]
    assert vec == expected, (text, vec, expected)
    return vec


def _file(k: int, *, lo=None, hi=None, vc=None, nc=None, nanc=None, rc=10) -> DataFile:
    def m(d):
        return {k2: v for k2, v in d.items() if v is not None} or None
    return DataFile(DATA, f"f{k}.parquet", "PARQUET", (), rc, 100,
                    value_counts=m(vc or {}), null_value_counts=m(nc or {}),
                    nan_value_counts=m(nanc or {}), lower_bounds=m(lo or {}),
                    upper_bounds=m(hi or {}))


L = lambda v: to_bytes(LONG, v)  # noqa: E731
D = lambda v: struct.pack("<d", v)  # noqa: E731


def test_rules_examples() -> None:
    files = [
        _file(0, lo={1: L(0)}, hi={1: L(9)}, vc={1: 10}, nc={1: 0}),
        _file(1, lo={1: L(10)}, hi={1: L(19)}, vc={1: 10}, nc={1: 0}),
        _file(2, vc={1: 10}, nc={1: 10}),  # all null
        _file(3),  # no metrics
        _file(4, lo={1: L(5)}, hi={1: L(5)}, rc=0),  # no rows
        _file(5, lo={3: D(math.nan)}, hi={3: D(2.0)}, vc={3: 10}, nanc={3: 1}),
        _file(6, vc={3: 4}, nanc={3: 4}, nc={3: 0}),  # all NaN
        _file(7, lo={2: b"abc"}, hi={2: b"abd"}, vc={2: 10}, nc={2: 0}),
        _file(8, lo={2: b"ab"}, hi={2: b"ab"}, vc={2: 10}, nc={2: 2}),
    ]
    assert _check(files, "id < 10") == [True, False, False, True, False, True, True, True, True]
    assert _check(files, "id = 15") == [False, True, False, True, False, True, True, True, True]
    for text in ["id >= 10", "id > 9", "id <= 9", "id in (3, 25)", "id not in (3)", "id != 5",
                 "id is null", "id is not null", "v is nan", "v is not nan", "v < 1.5",
                 "v > 1.5", "v = 2.0", "s like 'ab%'", "s not like 'ab%'", "s like 'abd%'",
                 "s >= 'abd'", "s < 'abc'", "id < 10 or v > 5", "not (id < 10 and s = 'x')"]:
        _check(files, text)


def test_a_nan_lower_bound_keeps_in_files() -> None:
    """A NaN lower bound is unreliable: Java's `in` then says the file might match without
    looking at the upper bound. The columnar evaluator skipped such a file (found by the
    property test below: it held no value of the list between NaN and -1.0)."""
    files = [_file(0, lo={3: D(math.nan)}, hi={3: D(-1.0)}), _file(1, lo={3: D(0.5)}, hi={3: D(2.0)})]
    assert _check(files, "v in (-0.0, 0.0)") == [True, False]
    assert _check(files, "not (v not in (-0.0, 0.0))") == [True, False]
    assert _check(files, "v in (1.5, 9.0)") == [True, True]


VALUES = {1: [-5, 0, 3, 10, 2**40], 2: ["", "a", "ab", "abc", "b", "é"], 3: [-1.0, -0.0, 0.0, 1.5, 8.5]}
SER = {1: L, 2: lambda s: s.encode(), 3: D}


@st.composite
def data_files(draw):
    files = []
    for k in range(draw(st.integers(1, 8))):
        lo, hi, vc, nc, nanc = {}, {}, {}, {}, {}
        for fid in (1, 2, 3):
            if draw(st.booleans()):
                a, b = sorted(draw(st.sampled_from(VALUES[fid])) for _ in range(2))
                lo[fid], hi[fid] = SER[fid](a), SER[fid](b)
                if fid == 3 and draw(st.integers(0, 5)) == 0:
                    lo[fid] = D(math.nan)
            if draw(st.booleans()):
                vc[fid] = draw(st.integers(0, 5))
                nc[fid] = draw(st.integers(0, vc[fid]))
                if fid == 3:
                    nanc[fid] = draw(st.integers(0, vc[fid]))
        files.append(_file(k, lo=lo, hi=hi, vc=vc, nc=nc, nanc=nanc,
                           rc=draw(st.sampled_from([0, 5, 10]))))
    return files


def _lit(fid: int, v) -> str:
    if fid == 2:
        return "'" + v + "'"
    return repr(v) if fid == 3 else str(v)


@st.composite
def filters(draw, depth: int = 2):
    if depth == 0 or draw(st.integers(0, 2)) == 0:
        fid = draw(st.sampled_from([1, 2, 3]))
        name = {1: "id", 2: "s", 3: "v"}[fid]
        ops = ["=", "!=", "<", "<=", ">", ">=", "in", "not in", "is null", "is not null"]
        if fid == 2:
            ops += ["like", "not like"]
        if fid == 3:
            ops += ["is nan", "is not nan"]
        op = draw(st.sampled_from(ops))
        v = draw(st.sampled_from(VALUES[fid]))
        if op in ("is null", "is not null", "is nan", "is not nan"):
            return f"{name} {op}"
        if op in ("in", "not in"):
            w = draw(st.sampled_from(VALUES[fid]))
            return f"{name} {op} ({_lit(fid, v)}, {_lit(fid, w)})"
        if op in ("like", "not like"):
            return f"{name} {op} '{v}%'"
        return f"{name} {op} {_lit(fid, v)}"
    a = draw(filters(depth - 1))
    b = draw(filters(depth - 1))
    kind = draw(st.sampled_from(["and", "or", "not"]))
    return f"not ({a})" if kind == "not" else f"({a}) {kind} ({b})"


@settings(max_examples=150, deadline=None)
@given(data_files(), filters())
def test_vectorized_equals_scalar(files, text) -> None:
    _check(files, text)
