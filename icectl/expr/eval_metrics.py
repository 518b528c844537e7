"""File pruning by column metrics (the reference's ``InclusiveMetricsEvaluator``).

Whether a data file may hold rows matching a row filter, from its value, null and NaN counts
and lower/upper bounds, with the reference's rules for all-null and all-NaN columns, NaN lower
bounds (unreliable: only ``>``, ``>=`` and ``=`` still use the upper bound) and ``in`` lists
longer than :data:`~icectl.expr.ordering.IN_PREDICATE_LIMIT` (never pruned).

:class:`MetricsEvaluator` is the scalar form (one :class:`~icectl.spec.manifests.DataFile`, with
the reason ``plan --explain`` prints); :func:`metrics_might_match` the columnar form over the
decoded columns of one manifest, decoding each needed bound column once.
"""

from __future__ import annotations

from typing import Any, Sequence

from icectl.expr.eval_base import (
    MIGHT,
    ColumnStats,
    FileMetrics,
    FileStats,
    Result,
    evaluate_columns,
    evaluate_reasons,
    prepare,
    show,
    show_literals,
)
from icectl.expr.eval_manifest import range_rule
from icectl.expr.expressions import AlwaysTrue, BoundPredicate, Expression, Operation
from icectl.expr.ordering import IN_PREDICATE_LIMIT, compare, is_nan, value_key
from icectl.spec.schema import Schema
from icectl.spec.types import IcebergType, PrimitiveType

__all__ = ["MetricsEvaluator", "metrics_might_match"]

Op = Operation
_RANGE = (Op.LT, Op.LT_EQ, Op.GT, Op.GT_EQ, Op.EQ)


class MetricsEvaluator:
    """Scalar: whether a data file may hold rows matching a row filter, and why not."""

    def __init__(self, expr: Expression, schema: Schema | None = None,
                 case_sensitive: bool = False):
        self.expr = prepare(expr, schema, case_sensitive)

    def eval(self, data_file: FileMetrics) -> Result:
        if data_file.record_count == 0:
            return (False, "the file has no records")
        if data_file.record_count < 0:
            return (True, "unknown record count")
        if isinstance(self.expr, AlwaysTrue):
            return (True, "no filter")
        m = FileStats(data_file)

        def on_pred(p: BoundPredicate) -> Result:
            why = _rule(p, m)
            return MIGHT if why is None else (False, why)

        ok, why = evaluate_reasons(self.expr, on_pred)
        return (True, "column metrics may match") if ok else (False, why)


def _prefix_rule(p: BoundPredicate, m: FileStats) -> str | None:
    fid, t, name, prefix = p.field_id, p.type, p.name, p.literal
    lower, upper = m.bound(False, fid, t), m.bound(True, fid, t)
    if p.op == Op.NOT_STARTS_WITH:
        if (not m.may_contain_null(fid) and lower is not None and upper is not None
                and lower.startswith(prefix) and upper.startswith(prefix)):
            return (f"bounds of {name} ({show(t, lower)}, {show(t, upper)}) both start with "
                    f"{show(t, prefix)}")
        return None
    if m.nulls_only(fid):
        return f"{name} is all null"
    if lower is not None and lower[:len(prefix)] > prefix:
        return f"lower bound of {name} ({show(t, lower)}) > prefix {show(t, prefix)}"
    if upper is not None and upper[:len(prefix)] < prefix:
        return f"upper bound of {name} ({show(t, upper)}) < prefix {show(t, prefix)}"
    return None


def _in_rule(p: BoundPredicate, lower: Any, upper: Any) -> str | None:
    if len(p.literals) > IN_PREDICATE_LIMIT:
        return None
    t, name, vals = p.type, p.name, list(p.literals)
    if lower is not None:
        vals = [v for v in vals if compare(v, lower) >= 0]
        if not vals:
            return f"lower bound of {name} ({show(t, lower)}) > all of {show_literals(p)}"
    if upper is not None:
        vals = [v for v in vals if compare(v, upper) <= 0]
        if not vals:
            shown_lower = show(t, lower) if lower is not None else "?"
            return (f"no value of {show_literals(p)} within the bounds of {name} "
                    f"[{shown_lower}, {show(t, upper)}]")
    return None


def _rule(p: BoundPredicate, m: FileStats) -> str | None:
    """None when the file may hold rows satisfying ``p``, else why not."""
    fid, t, op, name = p.field_id, p.type, p.op, p.name
    if not isinstance(t, PrimitiveType):
        return None  # a struct, list or map: its fields' metrics do not tell its own nulls
    if op == Op.IS_NULL:
        return f"{name} has no nulls" if fid in m.nulls and m.nulls[fid] == 0 else None
    if op == Op.NOT_NULL:
        return f"{name} is all null" if m.nulls_only(fid) else None
    if op == Op.IS_NAN:
        if fid in m.nans and m.nans[fid] == 0:
            return f"{name} has no NaN values"
        return f"{name} is all null" if m.nulls_only(fid) else None
    if op == Op.NOT_NAN:
        return f"{name} is all NaN" if m.nans_only(fid) else None
    if op in (Op.NOT_EQ, Op.NOT_IN):
        return None
    if op in (Op.STARTS_WITH, Op.NOT_STARTS_WITH):
        return _prefix_rule(p, m)
    # comparisons and in
    if m.nulls_only(fid):
        return f"{name} is all null"
    if m.nans_only(fid):
        return f"{name} is all NaN"
    lower, upper = m.bound(False, fid, t), m.bound(True, fid, t)
    if lower is not None and is_nan(lower):
        # a NaN lower bound is unreliable: <, <= and in might match; >, >= and = still check
        # the upper bound (the reference's eq skips only the lower bound)
        if op not in (Op.GT, Op.GT_EQ, Op.EQ):
            return None
        lower = None
    if op == Op.IN:
        return _in_rule(p, lower, upper)
    return range_rule(op, t, lower, upper, p.literal,
                      lambda which, v: f"{which} bound of {name} ({v})")


# -- columnar ------------------------------------------------------------------------------------


def metrics_might_match(expr: Expression, cols: Any, idx: Sequence[int],
                        types: dict[int, IcebergType]) -> list:
    """Columnar: for entries ``idx`` of a decoded manifest, whether each file might hold rows
    matching ``expr`` (bound, without NOT); ``types`` gives each referenced field's type."""
    ctx = ColumnStats(cols, types, idx)
    out = evaluate_columns(expr, ctx.n, lambda p: _column_rule(p, ctx))
    # no records: nothing matches; a negative count is unknown (older writers): might match
    return [r < 0 or (o and r != 0) for o, r in zip(out, ctx.record_counts())]


def _column_prefix(p: BoundPredicate, ctx: ColumnStats) -> list:
    fid, prefix = p.field_id, p.literal
    lo, hi = ctx.bounds(fid, False), ctx.bounds(fid, True)
    if p.op == Op.NOT_STARTS_WITH:
        nc = ctx.counts(fid, "null_counts")
        return [not (c == 0 and a is not None and b is not None and a.startswith(prefix)
                     and b.startswith(prefix)) for c, a, b in zip(nc, lo, hi)]
    k = len(prefix)
    return [not z and not (a is not None and a[:k] > prefix) and not (b is not None and b[:k] < prefix)
            for z, a, b in zip(ctx.nulls_only(fid), lo, hi)]


def _column_rule(p: BoundPredicate, ctx: ColumnStats) -> list:
    fid, op, n = p.field_id, p.op, ctx.n
    if not isinstance(p.type, PrimitiveType):
        return [True] * n  # a struct, list or map (see _rule)
    if op == Op.IS_NULL:
        return [c != 0 for c in ctx.counts(fid, "null_counts")]
    if op == Op.NOT_NULL:
        return [not x for x in ctx.nulls_only(fid)]
    if op == Op.IS_NAN:
        nanc = ctx.counts(fid, "nan_counts")
        return [c != 0 and not z for c, z in zip(nanc, ctx.nulls_only(fid))]
    if op == Op.NOT_NAN:
        return [not x for x in ctx.nans_only(fid)]
    if op in (Op.NOT_EQ, Op.NOT_IN):
        return [True] * n
    if op in (Op.STARTS_WITH, Op.NOT_STARTS_WITH):
        return _column_prefix(p, ctx)
    blocked = [a or b for a, b in zip(ctx.nulls_only(fid), ctx.nans_only(fid))]
    if op == Op.IN:
        return _column_in(p, ctx, blocked)
    return _column_range(p, ctx, blocked)


def _column_range(p: BoundPredicate, ctx: ColumnStats, blocked: list) -> list:
    """Bounds rules of <, <=, >, >=, =; ``blocked`` marks files already ruled out."""
    fid, op, lit = p.field_id, p.op, p.literal
    lo = ctx.bounds(fid, False) if op in (Op.LT, Op.LT_EQ, Op.EQ) else [None] * ctx.n
    hi = ctx.bounds(fid, True) if op in (Op.GT, Op.GT_EQ, Op.EQ) else [None] * ctx.n
    if not isinstance(lit, float):  # keys are the values themselves: compare directly
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
    klit = value_key(lit)
    out = []
    for z, a, b in zip(blocked, lo, hi):
        ok = not z
        if ok and a is not None and not is_nan(a):
            ka = value_key(a)
            ok = not ((op == Op.LT and ka >= klit) or (op in (Op.LT_EQ, Op.EQ) and ka > klit))
        if ok and b is not None:
            kb = value_key(b)
            ok = not ((op == Op.GT and kb <= klit) or (op in (Op.GT_EQ, Op.EQ) and kb < klit))
        out.append(ok)
    return out


def _column_in(p: BoundPredicate, ctx: ColumnStats, blocked: list) -> list:
    if len(p.literals) > IN_PREDICATE_LIMIT:
        return [not z for z in blocked]
    fid = p.field_id
    keys = [value_key(v) for v in p.literals]
    out = []
    for z, a, b in zip(blocked, ctx.bounds(fid, False), ctx.bounds(fid, True)):
        if z:
            out.append(False)
            continue
        if a is not None and is_nan(a):  # an unreliable lower bound: might match, as in Java
            out.append(True)
            continue
        cand = keys
        if a is not None:
            ka = value_key(a)
            cand = [k for k in cand if k >= ka]
        if cand and b is not None:
            kb = value_key(b)
            cand = [k for k in cand if k <= kb]
        out.append(bool(cand))
    return out
