"""Predicate evaluation for planning: manifest summaries, partition tuples, file metrics.

The rules are the reference's (Iceberg 1.10 ``ManifestEvaluator``, ``Evaluator`` on partition
tuples, ``InclusiveMetricsEvaluator``): see the docs of each function. Everything works on bound
expressions without ``Not`` (:func:`icectl.expr.expressions.rewrite_not`).

File metrics are evaluated column-wise: :func:`metrics_might_match` takes the decoded columns of
one manifest and the indices of the entries to check and returns one boolean per index, decoding
each needed bound column once (fixed-width bounds in one ``struct.iter_unpack`` pass). The
scalar :func:`metrics_reason` applies the same rules to one entry and says which predicate and
which statistic ruled it out (``icectl plan --explain``); tests check that both agree.
"""

from __future__ import annotations

import math
import struct
from typing import Any, Callable, Sequence

from icectl.expr.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BoundPredicate,
    Expression,
    Operation,
    Or,
)
from icectl.io.manifest_columns import ManifestColumns
from icectl.spec.manifests import FieldSummary
from icectl.spec.types import (
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    TIME,
    TIMESTAMP,
    TIMESTAMP_NS,
    TIMESTAMPTZ,
    TIMESTAMPTZ_NS,
    IcebergType,
)
from icectl.spec.values import from_bytes, to_bytes

Op = Operation
IN_PREDICATE_LIMIT = 200

__all__ = ["summary_reason", "metrics_might_match", "metrics_reason",
           "value_key", "IN_PREDICATE_LIMIT"]


# -- ordering ------------------------------------------------------------------------------------


def _float_key(v: float) -> tuple:
    # Java's Float/Double.compare: -0.0 < 0.0 and NaN above everything
    if v != v:
        return (1, 0.0, 0.0)
    return (0, v, math.copysign(1.0, v) if v == 0.0 else 0.0)


def value_key(t: IcebergType) -> Callable[[Any], Any]:
    """A sort key giving the reference's comparator order for values of type ``t``."""
    if t in (FLOAT, DOUBLE):
        return _float_key
    return _identity


def _identity(v: Any) -> Any:
    return v


def _is_nan(v: Any) -> bool:
    return isinstance(v, float) and v != v


def _render(p: BoundPredicate) -> str:
    return str(p)


# -- manifest summaries (ManifestEvaluator) ------------------------------------------------------


def summary_reason(expr: Expression, summaries: Sequence[FieldSummary] | None,
                   positions: dict[int, int], types: dict[int, IcebergType]) -> str | None:
    """None when a manifest with these partition summaries might hold matching files, else why
    not. ``expr`` is the inclusive projection (bound to partition field ids); ``positions``
    maps partition field id -> summary index, ``types`` its result type."""
    if summaries is None:
        return None
    return _summary(expr, summaries, positions, types)


def _summary(expr: Expression, s: Sequence[FieldSummary], pos: dict[int, int],
             types: dict[int, IcebergType]) -> str | None:
    if isinstance(expr, AlwaysTrue):
        return None
    if isinstance(expr, AlwaysFalse):
        return "the filter is always false"
    if isinstance(expr, And):
        return _summary(expr.left, s, pos, types) or _summary(expr.right, s, pos, types)
    if isinstance(expr, Or):
        a = _summary(expr.left, s, pos, types)
        if a is None:
            return None
        b = _summary(expr.right, s, pos, types)
        return None if b is None else f"{a}; and {b}"
    assert isinstance(expr, BoundPredicate)
    i = pos.get(expr.field_id)
    if i is None or i >= len(s):
        return None
    return _summary_pred(expr, s[i], types[expr.field_id])


def _summary_pred(p: BoundPredicate, fs: FieldSummary, t: IcebergType) -> str | None:
    op = p.op
    name = p.name
    if op == Op.IS_NULL:
        return None if fs.contains_null else f"{p}: partition summary has no nulls"
    if op == Op.NOT_NULL:
        all_null = fs.contains_null and fs.lower_bound is None
        if all_null and t in (FLOAT, DOUBLE):
            all_null = fs.contains_nan is not None and not fs.contains_nan
        return f"{p}: every {name} partition value is null" if all_null else None
    if op == Op.IS_NAN:
        if fs.contains_nan is not None and not fs.contains_nan:
            return f"{p}: partition summary has no NaN"
        return None
    if op == Op.NOT_NAN:
        if fs.contains_nan and not fs.contains_null and fs.lower_bound is None \
                and fs.upper_bound is None:
            return f"{p}: every {name} partition value is NaN"
        return None
    if op in (Op.NOT_EQ, Op.NOT_IN):
        return None
    if op == Op.NOT_STARTS_WITH:
        if fs.contains_null or fs.lower_bound is None or fs.upper_bound is None:
            return None
        prefix = to_bytes(t, p.literal)
        lo, hi = fs.lower_bound, fs.upper_bound
        if len(prefix) > len(lo) or lo[:len(prefix)] != prefix:
            return None
        if len(prefix) > len(hi) or hi[:len(prefix)] != prefix:
            return None
        return f"{p}: every {name} partition value starts with the prefix"
    if fs.lower_bound is None:
        return f"{p}: every {name} partition value is null or NaN"
    if op == Op.STARTS_WITH:
        prefix = to_bytes(t, p.literal)
        lo = fs.lower_bound[:len(prefix)]
        if lo > prefix:
            return f"{p}: partition lower bound {_show(t, fs.lower_bound)} is above the prefix"
        if fs.upper_bound is not None:
            hi = fs.upper_bound[:len(prefix)]
            if hi < prefix:
                return f"{p}: partition upper bound {_show(t, fs.upper_bound)} is below the prefix"
        return None
    key = value_key(t)
    lower = from_bytes(t, fs.lower_bound)
    upper = from_bytes(t, fs.upper_bound) if fs.upper_bound is not None else None
    return _range_reason(p, key, lower, upper, "partition", t)


def _show(t: IcebergType, raw: bytes) -> str:
    from icectl.expr.expressions import render_value
    try:
        return render_value(t, from_bytes(t, raw))
    except Exception:  # noqa: BLE001 - only for messages
        return raw.hex()


def _range_reason(p: BoundPredicate, key: Callable, lower: Any, upper: Any, what: str,
                  t: IcebergType) -> str | None:
    """Shared lower/upper bound rules of <, <=, >, >=, =, in (bounds may be None = unknown)."""
    from icectl.expr.expressions import render_value
    op = p.op
    if op in (Op.LT, Op.LT_EQ, Op.EQ, Op.IN) and lower is not None and not _is_nan(lower):
        lo = key(lower)
        if op == Op.LT and lo >= key(p.literal):
            return f"{p}: {what} lower bound {render_value(t, lower)} >= {render_value(t, p.literal)}"
        if op in (Op.LT_EQ,) and lo > key(p.literal):
            return f"{p}: {what} lower bound {render_value(t, lower)} > {render_value(t, p.literal)}"
        if op == Op.EQ and lo > key(p.literal):
            return f"{p}: {what} lower bound {render_value(t, lower)} is above the value"
        if op == Op.IN and len(p.literals) <= IN_PREDICATE_LIMIT \
                and not any(key(v) >= lo for v in p.literals):
            return f"{p}: {what} lower bound {render_value(t, lower)} is above every value"
    if op in (Op.GT, Op.GT_EQ, Op.EQ, Op.IN) and upper is not None:
        hi = key(upper)
        if op == Op.GT and hi <= key(p.literal):
            return f"{p}: {what} upper bound {render_value(t, upper)} <= {render_value(t, p.literal)}"
        if op == Op.GT_EQ and hi < key(p.literal):
            return f"{p}: {what} upper bound {render_value(t, upper)} < {render_value(t, p.literal)}"
        if op == Op.EQ and hi < key(p.literal):
            return f"{p}: {what} upper bound {render_value(t, upper)} is below the value"
        if op == Op.IN and len(p.literals) <= IN_PREDICATE_LIMIT:
            lo_ok = [v for v in p.literals
                     if lower is None or _is_nan(lower) or key(v) >= key(lower)]
            if not any(key(v) <= hi for v in lo_ok):
                return f"{p}: {what} upper bound {render_value(t, upper)} is below every value"
    return None


# -- file metrics (InclusiveMetricsEvaluator) ----------------------------------------------------

_FIXED = {INT: ("<i", 4), DATE: ("<i", 4), LONG: ("<q", 8), TIME: ("<q", 8),
          TIMESTAMP: ("<q", 8), TIMESTAMPTZ: ("<q", 8), TIMESTAMP_NS: ("<q", 8),
          TIMESTAMPTZ_NS: ("<q", 8), FLOAT: ("<f", 4), DOUBLE: ("<d", 8)}


def _decode_column(t: IcebergType, raw: Sequence[bytes | None]) -> list:
    """Bound values of one column (None where absent), decoded in one pass when possible."""
    fixed = _FIXED.get(t)
    if fixed is not None:
        fmt, width = fixed
        if all(b is not None and len(b) == width for b in raw):
            return [v[0] for v in struct.iter_unpack(fmt, b"".join(raw))]
    return [None if b is None else from_bytes(t, b) for b in raw]


class _Ctx:
    """Decoded statistics of one manifest, computed once per field and reused by predicates."""

    def __init__(self, cols: ManifestColumns, types: dict[int, IcebergType], idx: Sequence[int]):
        self.cols = cols
        self.types = types
        self.idx = idx
        self._lower: dict[int, list] = {}
        self._upper: dict[int, list] = {}

    def stats(self, fid: int):
        return self.cols.stats.get(fid)

    def pick(self, column: Sequence) -> list:
        if len(self.idx) == len(column):
            return list(column)
        return [column[i] for i in self.idx]

    def bounds(self, fid: int, upper: bool) -> list:
        cache = self._upper if upper else self._lower
        got = cache.get(fid)
        if got is None:
            st = self.stats(fid)
            if st is None:
                got = [None] * len(self.idx)
            else:
                raw = self.pick(st.upper if upper else st.lower)
                got = _decode_column(self.types[fid], raw)
            cache[fid] = got
        return got

    def raw_bounds(self, fid: int, upper: bool) -> list:
        st = self.stats(fid)
        if st is None:
            return [None] * len(self.idx)
        return self.pick(st.upper if upper else st.lower)

    def counts(self, fid: int, which: str) -> list:
        st = self.stats(fid)
        if st is None:
            return [None] * len(self.idx)
        return self.pick(getattr(st, which))


def metrics_might_match(expr: Expression, cols: ManifestColumns, idx: Sequence[int],
                        types: dict[int, IcebergType]) -> list[bool]:
    """For entries ``idx`` of a manifest: whether each file might hold rows matching ``expr``
    (bound to the table schema, no ``Not``). ``types`` gives each referenced field's type."""
    ctx = _Ctx(cols, types, idx)
    out = _vec(expr, ctx)
    rc = ctx.pick(cols.record_count)
    return [o and r != 0 for o, r in zip(out, rc)]


def _vec(expr: Expression, ctx: _Ctx) -> list[bool]:
    n = len(ctx.idx)
    if isinstance(expr, AlwaysTrue):
        return [True] * n
    if isinstance(expr, AlwaysFalse):
        return [False] * n
    if isinstance(expr, And):
        a = _vec(expr.left, ctx)
        if not any(a):
            return a
        b = _vec(expr.right, ctx)
        return [x and y for x, y in zip(a, b)]
    if isinstance(expr, Or):
        a = _vec(expr.left, ctx)
        if all(a):
            return a
        b = _vec(expr.right, ctx)
        return [x or y for x, y in zip(a, b)]
    assert isinstance(expr, BoundPredicate), expr
    return _vec_pred(expr, ctx)


def _nulls_only(vc: list, nc: list) -> list[bool]:
    return [v is not None and c is not None and v - c == 0 for v, c in zip(vc, nc)]


def _nans_only(vc: list, nanc: list) -> list[bool]:
    return [v is not None and c is not None and c == v for v, c in zip(vc, nanc)]


def _vec_pred(p: BoundPredicate, ctx: _Ctx) -> list[bool]:
    fid = p.field_id
    op = p.op
    n = len(ctx.idx)
    t = ctx.types[fid]
    if op == Op.IS_NULL:
        return [c != 0 for c in ctx.counts(fid, "null_counts")]
    if op == Op.NOT_NULL:
        return [not x for x in _nulls_only(ctx.counts(fid, "value_counts"),
                                           ctx.counts(fid, "null_counts"))]
    if op == Op.IS_NAN:
        nanc = ctx.counts(fid, "nan_counts")
        nulls = _nulls_only(ctx.counts(fid, "value_counts"), ctx.counts(fid, "null_counts"))
        return [c != 0 and not z for c, z in zip(nanc, nulls)]
    if op == Op.NOT_NAN:
        return [not x for x in _nans_only(ctx.counts(fid, "value_counts"),
                                          ctx.counts(fid, "nan_counts"))]
    if op in (Op.NOT_EQ, Op.NOT_IN):
        return [True] * n
    if op == Op.NOT_STARTS_WITH:
        nc = ctx.counts(fid, "null_counts")
        prefix = to_bytes(t, p.literal)
        k = len(prefix)
        lo = ctx.raw_bounds(fid, False)
        hi = ctx.raw_bounds(fid, True)
        return [not (c == 0 and a is not None and b is not None and len(a) >= k and len(b) >= k
                     and a[:k] == prefix and b[:k] == prefix)
                for c, a, b in zip(nc, lo, hi)]
    vc = ctx.counts(fid, "value_counts")
    if op in (Op.LT, Op.LT_EQ, Op.GT, Op.GT_EQ, Op.EQ):
        # bounds first; the all-null / all-NaN rules only for the files the bounds keep
        maybe = _vec_range(p, ctx, [False] * n)
        nc = ctx.counts(fid, "null_counts")
        nanc = ctx.counts(fid, "nan_counts")
        for j in range(n):
            if maybe[j]:
                v = vc[j]
                if v is not None and ((nc[j] is not None and v - nc[j] == 0)
                                      or (nanc[j] is not None and nanc[j] == v)):
                    maybe[j] = False
        return maybe
    blocked = _nulls_only(vc, ctx.counts(fid, "null_counts"))
    if op != Op.STARTS_WITH:
        nan_only = _nans_only(vc, ctx.counts(fid, "nan_counts"))
        blocked = [a or b for a, b in zip(blocked, nan_only)]
    if op == Op.STARTS_WITH:
        prefix = to_bytes(t, p.literal)
        k = len(prefix)
        lo = ctx.raw_bounds(fid, False)
        hi = ctx.raw_bounds(fid, True)
        return [not z and not (a is not None and a[:k] > prefix)
                and not (b is not None and b[:k] < prefix)
                for z, a, b in zip(blocked, lo, hi)]
    return _vec_range(p, ctx, blocked)


def _vec_range(p: BoundPredicate, ctx: _Ctx, blocked: list[bool]) -> list[bool]:
    """Bounds rules of <, <=, >, >=, =, in; ``blocked`` marks files already ruled out."""
    fid = p.field_id
    op = p.op
    n = len(ctx.idx)
    t = ctx.types[fid]
    key = value_key(t)
    if op in (Op.LT, Op.LT_EQ, Op.GT, Op.GT_EQ, Op.EQ):
        lit = p.literal
        lo = ctx.bounds(fid, False) if op in (Op.LT, Op.LT_EQ, Op.EQ) else None
        hi = ctx.bounds(fid, True) if op in (Op.GT, Op.GT_EQ, Op.EQ) else None
        if key is _identity:
            if op == Op.LT:
                return [not z and (a is None or not a >= lit) for z, a in zip(blocked, lo)]
            if op == Op.LT_EQ:
                return [not z and (a is None or not a > lit) for z, a in zip(blocked, lo)]
            if op == Op.GT:
                return [not z and (b is None or not b <= lit) for z, b in zip(blocked, hi)]
            if op == Op.GT_EQ:
                return [not z and (b is None or not b < lit) for z, b in zip(blocked, hi)]
            return [not z and (a is None or not a > lit) and (b is None or not b < lit)
                    for z, a, b in zip(blocked, lo, hi)]
        klit = key(lit)
        out = []
        for j in range(n):
            if blocked[j]:
                out.append(False)
                continue
            ok = True
            a = lo[j] if lo is not None else None
            b = hi[j] if hi is not None else None
            if a is not None and not _is_nan(a):
                ka = key(a)
                if (op == Op.LT and ka >= klit) or (op in (Op.LT_EQ, Op.EQ) and ka > klit):
                    ok = False
            if ok and b is not None:
                kb = key(b)
                if (op == Op.GT and kb <= klit) or (op in (Op.GT_EQ, Op.EQ) and kb < klit):
                    ok = False
            out.append(ok)
        return out
    if op == Op.IN:
        if len(p.literals) > IN_PREDICATE_LIMIT:
            return [not z for z in blocked]
        lo = ctx.bounds(fid, False)
        hi = ctx.bounds(fid, True)
        keys = [key(v) for v in p.literals]
        out = []
        for z, a, b in zip(blocked, lo, hi):
            if z:
                out.append(False)
                continue
            cand = keys
            if a is not None and not _is_nan(a):
                ka = key(a)
                cand = [k for k in cand if k >= ka]
            if cand and b is not None:
                kb = key(b)
                cand = [k for k in cand if k <= kb]
            out.append(bool(cand))
        return out
    raise ValueError(f"unsupported operation {op}")


def metrics_reason(expr: Expression, cols: ManifestColumns, i: int,
                   types: dict[int, IcebergType]) -> str | None:
    """The scalar form of :func:`metrics_might_match` for entry ``i``: None when the file might
    match, else the reason it cannot."""
    if cols.record_count[i] == 0:
        return "the file has no rows"
    return _reason(expr, cols, i, types)


def _reason(expr: Expression, cols: ManifestColumns, i: int,
            types: dict[int, IcebergType]) -> str | None:
    if isinstance(expr, AlwaysTrue):
        return None
    if isinstance(expr, AlwaysFalse):
        return "the filter is always false"
    if isinstance(expr, And):
        return _reason(expr.left, cols, i, types) or _reason(expr.right, cols, i, types)
    if isinstance(expr, Or):
        a = _reason(expr.left, cols, i, types)
        if a is None:
            return None
        b = _reason(expr.right, cols, i, types)
        return None if b is None else f"{a}; and {b}"
    assert isinstance(expr, BoundPredicate)
    p = expr
    st = cols.stats.get(p.field_id)
    t = types[p.field_id]
    vc = st.value_counts[i] if st else None
    nc = st.null_counts[i] if st else None
    nanc = st.nan_counts[i] if st else None
    lo_raw = st.lower[i] if st else None
    hi_raw = st.upper[i] if st else None
    nulls_only = vc is not None and nc is not None and vc - nc == 0
    nans_only = vc is not None and nanc is not None and nanc == vc
    op = p.op
    if op == Op.IS_NULL:
        return f"{p}: null count is 0" if nc == 0 else None
    if op == Op.NOT_NULL:
        return f"{p}: every value is null ({nc} nulls)" if nulls_only else None
    if op == Op.IS_NAN:
        if nanc == 0:
            return f"{p}: NaN count is 0"
        return f"{p}: every value is null" if nulls_only else None
    if op == Op.NOT_NAN:
        return f"{p}: every value is NaN" if nans_only else None
    if op in (Op.NOT_EQ, Op.NOT_IN):
        return None
    if op == Op.NOT_STARTS_WITH:
        prefix = to_bytes(t, p.literal)
        k = len(prefix)
        if nc == 0 and lo_raw is not None and hi_raw is not None and len(lo_raw) >= k \
                and len(hi_raw) >= k and lo_raw[:k] == prefix and hi_raw[:k] == prefix:
            return f"{p}: lower and upper bounds both start with the prefix"
        return None
    if nulls_only:
        return f"{p}: every value is null ({nc} nulls)"
    if op == Op.STARTS_WITH:
        prefix = to_bytes(t, p.literal)
        k = len(prefix)
        if lo_raw is not None and lo_raw[:k] > prefix:
            return f"{p}: lower bound {_show(t, lo_raw)} is above the prefix"
        if hi_raw is not None and hi_raw[:k] < prefix:
            return f"{p}: upper bound {_show(t, hi_raw)} is below the prefix"
        return None
    if nans_only:
        return f"{p}: every value is NaN"
    if op == Op.IN and len(p.literals) > IN_PREDICATE_LIMIT:
        return None
    lower = from_bytes(t, lo_raw) if lo_raw is not None else None
    upper = from_bytes(t, hi_raw) if hi_raw is not None else None
    return _range_reason(p, value_key(t), lower, upper, "file", t)
