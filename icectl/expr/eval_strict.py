"""Whether every row of a file matches, from its metrics (the reference's
``StrictMetricsEvaluator``, for the common predicates; anything it cannot prove counts as "not
all rows").

:class:`StrictMetricsEvaluator` is the scalar form (one data file);
:func:`strict_metrics_match` the columnar form over one decoded manifest's columns. Both decide
each predicate with :func:`_rule` on a file's statistics, reached through
:class:`~icectl.expr.eval_base.FileStats` or :class:`_Entry` (one entry of the columns).
"""

from __future__ import annotations

from typing import Any, Sequence

from icectl.expr.eval_base import FLOAT_TYPES, ColumnStats, FileMetrics, FileStats, evaluate_columns, prepare
from icectl.expr.eval_rows import Bools
from icectl.expr.expressions import BoundPredicate, Expression, Operation
from icectl.expr.ordering import compare
from icectl.expr.visitor import visit
from icectl.spec.schema import Schema
from icectl.spec.types import IcebergType, PrimitiveType

__all__ = ["StrictMetricsEvaluator", "strict_metrics_match"]

Op = Operation


def _rule(p: BoundPredicate, nulls_only: bool, nans_only: bool, nulls: Any, nans: Any,
          lower: Any, upper: Any) -> bool:
    """Whether every row satisfies ``p``, given one column's statistics: all null / all NaN
    flags, null and NaN counts (None = unknown), decoded bounds (None = unknown)."""
    op = p.op
    if not isinstance(p.type, PrimitiveType):
        return False  # a struct, list or map: its fields' metrics do not tell its own nulls
    if op == Op.IS_NULL:
        return nulls_only
    if op == Op.NOT_NULL:
        return nulls == 0
    if op == Op.IS_NAN:
        return nans_only
    if op == Op.NOT_NAN:
        return nans == 0 or nulls_only
    # every other predicate: no nulls (they never match) and no NaN (they compare false)
    if nulls != 0 or (p.type in FLOAT_TYPES and nans != 0):
        return False
    if op in (Op.LT, Op.LT_EQ):
        if upper is None:
            return False
        c = compare(upper, p.literal)
        return c < 0 if op == Op.LT else c <= 0
    if op in (Op.GT, Op.GT_EQ):
        if lower is None:
            return False
        c = compare(lower, p.literal)
        return c > 0 if op == Op.GT else c >= 0
    if op == Op.EQ:
        return (lower is not None and upper is not None and compare(lower, p.literal) == 0
                and compare(upper, p.literal) == 0)
    if op in (Op.NOT_EQ, Op.NOT_IN):
        for v in p.literals:
            if lower is not None and compare(lower, v) > 0:
                continue
            if upper is not None and compare(upper, v) < 0:
                continue
            return False
        return True
    return False  # in, starts with, not starts with: not proven


class StrictMetricsEvaluator:
    """Scalar: whether every row of a data file matches a row filter."""

    def __init__(self, expr: Expression, schema: Schema | None = None,
                 case_sensitive: bool = False):
        self.expr = prepare(expr, schema, case_sensitive)

    def eval(self, data_file: FileMetrics) -> bool:
        if data_file.record_count <= 0:
            return True
        m = FileStats(data_file)

        def on_pred(p: BoundPredicate) -> bool:
            fid, t = p.field_id, p.type
            return _rule(p, m.nulls_only(fid), m.nans_only(fid), m.nulls.get(fid),
                         m.nans.get(fid), m.bound(False, fid, t), m.bound(True, fid, t))

        return visit(self.expr, Bools(on_pred))


def strict_metrics_match(expr: Expression, cols: Any, idx: Sequence[int],
                         types: dict[int, IcebergType]) -> list:
    """Columnar: :meth:`StrictMetricsEvaluator.eval` for entries ``idx`` of a decoded manifest
    (``expr`` bound, without NOT)."""
    ctx = ColumnStats(cols, types, idx)

    def on_pred(p: BoundPredicate) -> list:
        fid = p.field_id
        return [_rule(p, *s) for s in zip(
            ctx.nulls_only(fid), ctx.nans_only(fid), ctx.counts(fid, "null_counts"),
            ctx.counts(fid, "nan_counts"), ctx.bounds(fid, False), ctx.bounds(fid, True))]

    out = evaluate_columns(expr, ctx.n, on_pred)
    return [r <= 0 or o for o, r in zip(out, ctx.record_counts())]
