"""Manifest pruning by partition field summaries (the reference's ``ManifestEvaluator``).

The filter is the inclusive projection of the row filter onto the partition struct. A manifest
is skipped when its summaries (contains-null, contains-nan, lower and upper bound of each
partition field) prove no entry can match. :class:`ManifestEvaluator` is the scalar form with
reasons; :func:`manifests_might_match` the columnar form over a list of manifests. Both decide
each predicate with :func:`_rule`, which returns None (might match) or the reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from icectl.expr.eval_base import (
    FLOAT_TYPES,
    MIGHT,
    Result,
    evaluate_columns,
    evaluate_reasons,
    show,
    show_literals,
)
from icectl.expr.expressions import AlwaysTrue, BoundPredicate, Expression, Operation, rewrite_not
from icectl.expr.ordering import IN_PREDICATE_LIMIT, compare, uuid_bounds
from icectl.spec.types import UUID, StructType
from icectl.spec.values import from_bytes

if TYPE_CHECKING:
    from icectl.spec.manifests import ManifestFile

__all__ = ["ManifestEvaluator", "manifests_might_match"]

Op = Operation


def _all_null(s: Any, t: Any) -> bool:
    # a null lower bound with nulls present means every value is null; float fields may hold
    # NaN instead, which is only known from contains_nan
    if not (s.contains_null and s.lower_bound is None):
        return False
    if t in FLOAT_TYPES:
        return s.contains_nan is not None and not s.contains_nan
    return True


def _quiet(t: Any, v: Any) -> str:
    """A value left out of a reason nobody reads (planning without explanations)."""
    return ""


def _rule(p: BoundPredicate, s: Any, show: Any = show) -> str | None:
    """None when partitions summarised by ``s`` may satisfy ``p``, else why not (values in the
    reason rendered by ``show``: :func:`_quiet` when only the verdict is wanted)."""
    t, op, name = p.type, p.op, f"partition {p.name}"
    if op == Op.IS_NULL:
        return None if s.contains_null else f"{name}: no null values"
    if op == Op.NOT_NULL:
        return f"{name}: all values are null" if _all_null(s, t) else None
    if op == Op.IS_NAN:
        if s.contains_nan is not None and not s.contains_nan:
            return f"{name}: no NaN values"
        return f"{name}: all values are null" if _all_null(s, t) else None
    if op == Op.NOT_NAN:
        if s.contains_nan and not s.contains_null and s.lower_bound is None:
            return f"{name}: all values are NaN"
        return None
    if op in (Op.NOT_EQ, Op.NOT_IN):
        return None
    lower = None if s.lower_bound is None else from_bytes(t, s.lower_bound)
    upper = None if s.upper_bound is None else from_bytes(t, s.upper_bound)
    if t == UUID and lower is not None:  # either order may have written the pair (ordering.py)
        lower, upper = uuid_bounds(lower, upper)
        if lower is None:
            return None
    if op == Op.NOT_STARTS_WITH:
        if s.contains_null or lower is None or upper is None:
            return None
        prefix = p.literal
        if lower.startswith(prefix) and upper.startswith(prefix):
            return (f"{name}: bounds {show(t, lower)} and {show(t, upper)} both start with "
                    f"{show(t, prefix)}")
        return None
    # comparisons, in, starts with: a missing lower bound means all values are null
    if lower is None:
        return f"{name}: all values are null"
    if op == Op.IN:
        if len(p.literals) > IN_PREDICATE_LIMIT:
            return None
        vals = [v for v in p.literals if compare(v, lower) >= 0]
        if not vals:
            return f"{name}: lower bound {show(t, lower)} > all of {_literals(p, show)}"
        if upper is not None and not [v for v in vals if compare(v, upper) <= 0]:
            return (f"{name}: no value of {_literals(p, show)} within bounds "
                    f"[{show(t, lower)}, {show(t, upper)}]")
        return None
    if op == Op.STARTS_WITH:
        prefix = p.literal
        if lower[:len(prefix)] > prefix:
            return f"{name}: lower bound {show(t, lower)} > prefix {show(t, prefix)}"
        if upper is not None and upper[:len(prefix)] < prefix:
            return f"{name}: upper bound {show(t, upper)} < prefix {show(t, prefix)}"
        return None
    return range_rule(op, t, lower, upper, p.literal,
                      lambda which, v: f"{name}: {which} bound {v}", show)


def _literals(p: BoundPredicate, show: Any) -> str:
    return show_literals(p) if show is not _quiet else ""


def range_rule(op: Operation, t: Any, lower: Any, upper: Any, lit: Any, label: Any,
               show: Any = show) -> str | None:
    """lt/lt_eq/gt/gt_eq/eq against bounds (None = unknown): None or the reason;
    ``label(which, value)`` names a bound in the reason."""
    if op in (Op.LT, Op.LT_EQ, Op.EQ) and lower is not None:
        c = compare(lower, lit)
        if (op == Op.LT and c >= 0) or (op != Op.LT and c > 0):
            sign = ">=" if op == Op.LT else ">"
            return f"{label('lower', show(t, lower))} {sign} {show(t, lit)}"
    if op in (Op.GT, Op.GT_EQ, Op.EQ) and upper is not None:
        c = compare(upper, lit)
        if (op == Op.GT and c <= 0) or (op != Op.GT and c < 0):
            sign = "<=" if op == Op.GT else "<"
            return f"{label('upper', show(t, upper))} {sign} {show(t, lit)}"
    return None


def _summary(summaries: Sequence[Any], positions: dict[int, int], p: BoundPredicate) -> Any:
    pos = positions.get(p.field_id)
    return None if pos is None or pos >= len(summaries) else summaries[pos]


class ManifestEvaluator:
    """Scalar: whether a manifest may hold files matching a filter bound to its partition
    struct (normally the inclusive projection of the row filter), and why not."""

    def __init__(self, partition_expr: Expression, partition_type: StructType):
        self.expr = rewrite_not(partition_expr)
        self.positions = {f.field_id: i for i, f in enumerate(partition_type.fields())}

    def eval(self, manifest: ManifestFile) -> Result:
        if isinstance(self.expr, AlwaysTrue):
            return (True, "no filter on partitions")
        summaries = manifest.partitions
        if summaries is None:
            return (True, "no partition summaries")

        def on_pred(p: BoundPredicate) -> Result:
            s = _summary(summaries, self.positions, p)
            why = None if s is None else _rule(p, s)
            return MIGHT if why is None else (False, why)

        ok, why = evaluate_reasons(self.expr, on_pred)
        return (True, "partition summaries may match") if ok else (False, why)


def manifests_might_match(partition_expr: Expression, manifests: Sequence[Any],
                          partition_type: StructType) -> list:
    """Columnar: :meth:`ManifestEvaluator.eval`'s verdict for every manifest of a list."""
    expr = rewrite_not(partition_expr)
    positions = {f.field_id: i for i, f in enumerate(partition_type.fields())}
    unknown = [m.partitions is None for m in manifests]

    def on_pred(p: BoundPredicate) -> list:
        out = []
        for m, skip in zip(manifests, unknown):
            s = None if skip else _summary(m.partitions, positions, p)
            out.append(s is None or _rule(p, s, _quiet) is None)
        return out

    got = evaluate_columns(expr, len(manifests), on_pred)
    return [u or g for u, g in zip(unknown, got)]
