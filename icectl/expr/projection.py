"""Projections of row filters onto partition values, as the reference computes them.

* The **inclusive** projection of a predicate ``p`` through a transform is a predicate ``q`` on
  the partition value such that ``p(row)`` implies ``q(transform(row))``: partitions where ``q``
  is false hold no matching row (manifest and file pruning).
* The **strict** projection is a ``q`` such that ``q(transform(row))`` implies ``p(row)``: in
  partitions where ``q`` holds every row matches (residuals).

The rules follow the reference transform by transform (identity; bucket: ``=``/``in``
inclusive, ``!=``/``not in`` strict; truncate: ``<`` becomes ``<=`` of the value minus one for
numbers, prefixes for strings; year/month/day/hour: like truncate, then widened for negative
(pre-1970) partition values, as the reference does for data written by its early versions;
void and unknown transforms: no projection). Projected predicates are bound to the partition
struct: ``field_id`` is the partition field id, ``name`` its name, ``type`` its result type.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Callable

from icectl.expr.eval_base import prepare
from icectl.expr.expressions import (
    FALSE,
    TRUE,
    BoundPredicate,
    Expression,
    Operation,
    and_,
    make_bound,
    or_,
)
from icectl.expr.visitor import Visitor, visit
from icectl.spec.partitioning import PartitionField, PartitionSpec
from icectl.spec.schema import Schema
from icectl.spec.transforms import (
    BucketTransform,
    DayTransform,
    IdentityTransform,
    Transform,
    TruncateTransform,
    TimeTransform,
    decimal_from_unscaled,
    decimal_unscaled,
)
from icectl.spec.types import DATE, INT, LONG, STRING, IcebergType
from icectl.spec.values import INT_MAX, INT_MIN, LONG_MAX, LONG_MIN

__all__ = ["project", "project_strict", "inclusive_projection", "strict_projection"]

Op = Operation


# ----------------------------------------------------------------------------------------------
# One predicate through one transform. None means "no projection" (the caller decides what that
# means: true for inclusive, false for strict).


def project(transform: Transform, field: PartitionField, part_type: IcebergType,
            pred: BoundPredicate) -> Expression | None:
    """The inclusive projection of a bound predicate through a partition field, or None."""
    return _Projector(transform, field, part_type, pred).inclusive()


def project_strict(transform: Transform, field: PartitionField, part_type: IcebergType,
                   pred: BoundPredicate) -> Expression | None:
    """The strict projection of a bound predicate through a partition field, or None."""
    return _Projector(transform, field, part_type, pred).strict()


def _type_range(t: IcebergType) -> tuple[int, int] | None:
    if t in (INT, DATE):
        return INT_MIN, INT_MAX
    if t == LONG:
        return LONG_MIN, LONG_MAX
    return None


_ORDERING = (Operation.LT, Operation.LT_EQ, Operation.GT, Operation.GT_EQ)


class _Projector:
    def __init__(self, transform: Transform, field: PartitionField, part_type: IcebergType,
                 pred: BoundPredicate):
        self.t = transform
        self.field = field
        self.ptype = part_type
        self.pred = pred
        self.src = pred.type

    # -- helpers -------------------------------------------------------------------------------

    def apply(self, v: Any) -> Any:
        if isinstance(v, Decimal):
            return self.t.apply(v, None)  # at the value's own scale, like the reference
        return self.t.apply(v, self.src)

    def make(self, op: Operation, values: Any = ()) -> Expression:
        return make_bound(op, self.field.field_id, self.field.name, self.ptype, values)

    def step(self, v: Any, delta: int) -> Any:
        """The value one unit above (+1) or below (-1) ``v``; None beyond the type's range."""
        if isinstance(v, Decimal):
            exp = v.as_tuple().exponent
            assert isinstance(exp, int)
            scale = -exp
            return decimal_from_unscaled(decimal_unscaled(v, scale) + delta, scale)
        n = v + delta
        rng = _type_range(self.src)
        if rng is not None and not rng[0] <= n <= rng[1]:
            return None
        return n

    # -- dispatch ------------------------------------------------------------------------------

    def inclusive(self) -> Expression | None:
        t, pred = self.t, self.pred
        if pred.op.is_unary and isinstance(t, (IdentityTransform, BucketTransform,
                                                TruncateTransform, TimeTransform)):
            return self.make(pred.op)
        if isinstance(t, IdentityTransform):
            return self.make(pred.op, pred.literals)
        if isinstance(t, BucketTransform):
            if pred.op in (Op.EQ, Op.IN):
                return self.make(pred.op, [self.apply(v) for v in pred.literals])
            return None
        if isinstance(t, TruncateTransform):
            if self.src == STRING or not isinstance(pred.literal if pred.literals else 0,
                                                      (int, Decimal)):
                return self._truncate_array_inclusive()
            top = self._wrap_top()
            if top is None or pred.op not in _ORDERING:  # = and in find wrapped values as written
                return self._truncate_number_inclusive()
            if self._literal_wraps():
                return None  # the literal's own truncation wrapped: no bound on the partition
            projected = self._truncate_number_inclusive()
            # a partition value above `top` may hold wrapped values from the type's bottom
            return None if projected is None else or_(projected, self.make(Op.GT, [top]))
        if isinstance(t, TimeTransform):
            projected = self._truncate_number_inclusive()
            if self._time_fix_applies():
                return _fix_inclusive_time(projected)
            return projected
        return None  # void, unknown

    def strict(self) -> Expression | None:
        t, pred = self.t, self.pred
        if pred.op.is_unary and isinstance(t, (IdentityTransform, BucketTransform,
                                                TruncateTransform, TimeTransform)):
            return self.make(pred.op)
        if isinstance(t, IdentityTransform):
            return self.make(pred.op, pred.literals)
        if isinstance(t, BucketTransform):
            if pred.op in (Op.NOT_EQ, Op.NOT_IN):
                return self.make(pred.op, [self.apply(v) for v in pred.literals])
            return None
        if isinstance(t, TruncateTransform):
            if self.src == STRING or not isinstance(pred.literal if pred.literals else 0,
                                                      (int, Decimal)):
                return self._truncate_array_strict()
            top = self._wrap_top()
            if top is None or pred.op not in _ORDERING:
                return self._truncate_number_strict()
            if self._literal_wraps():
                return None
            projected = self._truncate_number_strict()
            # a partition value above `top` may hold wrapped values: it proves nothing
            return None if projected is None else and_(projected, self.make(Op.LT_EQ, [top]))
        if isinstance(t, TimeTransform):
            projected = self._truncate_number_strict()
            if self._time_fix_applies():
                return _fix_strict_time(projected)
            return projected
        return None

    def _wrap_top(self) -> int | None:
        """For truncate of an int or long: the largest partition value that cannot be a wrapped
        one. Iceberg Java truncates in fixed width (``v - ((v % W) + W) % W``), so a value within
        W - 1 of the type's minimum wraps to the top of the range (truncate(10) of Long.MIN_VALUE
        is 9223372036854775806), and icectl writes the same. None for other transforms/types."""
        if not isinstance(self.t, TruncateTransform) or self.src not in (INT, LONG):
            return None
        rng = _type_range(self.src)
        assert rng is not None
        return rng[1] - self.t.width + 1

    def _literal_wraps(self) -> bool:
        return any(isinstance(v, int) and self.apply(v) > v for v in self.pred.literals)

    def _time_fix_applies(self) -> bool:
        # day of a date is the date itself: no early-writer bug to compensate for
        return not (isinstance(self.t, DayTransform) and self.src == DATE)

    # -- numbers (ints, longs, decimals; dates and timestamps for the time transforms) -------

    def _truncate_number_inclusive(self) -> Expression | None:
        op, pred = self.pred.op, self.pred
        if op == Op.IN:
            return self.make(Op.IN, [self.apply(v) for v in pred.literals])
        if op not in (Op.LT, Op.LT_EQ, Op.GT, Op.GT_EQ, Op.EQ):
            return None
        v = pred.literal
        if op == Op.LT:
            below = self.step(v, -1)
            return FALSE if below is None else self.make(Op.LT_EQ, [self.apply(below)])
        if op == Op.LT_EQ:
            return self.make(Op.LT_EQ, [self.apply(v)])
        if op == Op.GT:
            above = self.step(v, 1)
            return FALSE if above is None else self.make(Op.GT_EQ, [self.apply(above)])
        if op == Op.GT_EQ:
            return self.make(Op.GT_EQ, [self.apply(v)])
        return self.make(Op.EQ, [self.apply(v)])

    def _truncate_number_strict(self) -> Expression | None:
        op, pred = self.pred.op, self.pred
        if op == Op.NOT_IN:
            return self.make(Op.NOT_IN, [self.apply(v) for v in pred.literals])
        if op not in (Op.LT, Op.LT_EQ, Op.GT, Op.GT_EQ, Op.NOT_EQ):
            return None
        v = pred.literal
        if op == Op.LT:
            return self.make(Op.LT, [self.apply(v)])
        if op == Op.LT_EQ:
            above = self.step(v, 1)
            # `c <= MAX` holds for every value, but not for nulls: the partition must be non-null
            return self.make(Op.NOT_NULL) if above is None else self.make(Op.LT, [self.apply(above)])
        if op == Op.GT:
            return self.make(Op.GT, [self.apply(v)])
        if op == Op.GT_EQ:
            below = self.step(v, -1)
            return self.make(Op.NOT_NULL) if below is None else self.make(Op.GT, [self.apply(below)])
        return self.make(Op.NOT_EQ, [self.apply(v)])

    # -- strings and binary --------------------------------------------------------------------

    def _truncate_array_inclusive(self) -> Expression | None:
        op, pred = self.pred.op, self.pred
        assert isinstance(self.t, TruncateTransform)
        width = self.t.width
        if op == Op.IN:
            return self.make(Op.IN, [self.apply(v) for v in pred.literals])
        if op in SET_OR_NONE:
            return None
        v = pred.literal
        if op == Op.STARTS_WITH:
            if len(v) < width:
                return self.make(Op.STARTS_WITH, [v])
            if len(v) == width:
                return self.make(Op.EQ, [v])
            return self.make(Op.STARTS_WITH, [self.apply(v)])
        if op == Op.NOT_STARTS_WITH:
            if len(v) < width:
                return self.make(Op.NOT_STARTS_WITH, [v])
            if len(v) == width:
                return self.make(Op.NOT_EQ, [v])
            return None
        if op in (Op.LT, Op.LT_EQ):
            return self.make(Op.LT_EQ, [self.apply(v)])
        if op in (Op.GT, Op.GT_EQ):
            return self.make(Op.GT_EQ, [self.apply(v)])
        if op == Op.EQ:
            return self.make(Op.EQ, [self.apply(v)])
        return None

    def _truncate_array_strict(self) -> Expression | None:
        op, pred = self.pred.op, self.pred
        assert isinstance(self.t, TruncateTransform)
        width = self.t.width
        if op == Op.NOT_IN:
            return self.make(Op.NOT_IN, [self.apply(v) for v in pred.literals])
        if op in SET_OR_NONE:
            return None
        v = pred.literal
        if op == Op.STARTS_WITH:
            if len(v) < width:
                return self.make(Op.STARTS_WITH, [v])
            if len(v) == width:
                return self.make(Op.EQ, [v])
            return None
        if op == Op.NOT_STARTS_WITH:
            if len(v) < width:
                return self.make(Op.NOT_STARTS_WITH, [v])
            if len(v) == width:
                return self.make(Op.NOT_EQ, [v])
            return self.make(Op.NOT_STARTS_WITH, [self.apply(v)])
        if op in (Op.LT, Op.LT_EQ):
            return self.make(Op.LT, [self.apply(v)])
        if op in (Op.GT, Op.GT_EQ):
            return self.make(Op.GT, [self.apply(v)])
        if op == Op.NOT_EQ:
            return self.make(Op.NOT_EQ, [self.apply(v)])
        return None


SET_OR_NONE = frozenset({Op.IN, Op.NOT_IN})


# ----------------------------------------------------------------------------------------------
# The reference's widening for time transforms of negative values (see module doc)


def _fix_inclusive_time(e: Expression | None) -> Expression | None:
    if not isinstance(e, BoundPredicate):
        return e
    op = e.op

    def remake(new_op: Operation, values: Any) -> Expression:
        return make_bound(new_op, e.field_id, e.name, e.type, values)

    if op in (Op.LT, Op.LT_EQ):
        v = e.literal
        return remake(op, [v + 1]) if v < 0 else e
    if op in (Op.GT, Op.GT_EQ):
        return e
    if op == Op.EQ:
        v = e.literal
        return remake(Op.IN, [v, v + 1]) if v < 0 else e
    if op == Op.IN:
        if any(v < 0 for v in e.literals):
            vals: list[int] = []
            for v in e.literals:
                vals.append(v)
                if v < 0:
                    vals.append(v + 1)
            return remake(Op.IN, vals)
        return e
    if op in (Op.NOT_EQ, Op.NOT_IN):
        return None
    return e


def _fix_strict_time(e: Expression | None) -> Expression | None:
    if not isinstance(e, BoundPredicate):
        return e
    op = e.op

    def remake(new_op: Operation, values: Any) -> Expression:
        return make_bound(new_op, e.field_id, e.name, e.type, values)

    if op in (Op.LT, Op.LT_EQ):
        return e
    if op in (Op.GT, Op.GT_EQ):
        v = e.literal
        return remake(op, [v + 1]) if v <= 0 else e
    if op in (Op.EQ, Op.IN):
        return None
    if op == Op.NOT_EQ:
        v = e.literal
        return remake(Op.NOT_IN, [v, v + 1]) if v < 0 else e
    if op == Op.NOT_IN:
        if any(v < 0 for v in e.literals):
            vals: list[int] = []
            for v in e.literals:
                vals.append(v)
                if v < 0:
                    vals.append(v + 1)
            return remake(Op.NOT_IN, vals)
        return e
    return None


# ----------------------------------------------------------------------------------------------
# Whole expressions through a spec


class _Project(Visitor[Expression]):
    """Rebuild a NOT-free bound expression with each predicate replaced by ``on_pred(p)``."""

    def __init__(self, on_pred: Callable[[BoundPredicate], Expression]):
        self.predicate = on_pred  # type: ignore[method-assign]

    def always_true(self) -> Expression:
        return TRUE

    def always_false(self) -> Expression:
        return FALSE

    def and_(self, left: Expression, right: Expression) -> Expression:
        return and_(left, right)

    def or_(self, left: Expression, right: Expression) -> Expression:
        return or_(left, right)


def map_predicates(expr: Expression, on_pred: Callable[[BoundPredicate], Expression]) -> Expression:
    """``expr`` (bound, NOT-free) rebuilt with each predicate replaced by ``on_pred(p)``."""
    return visit(expr, _Project(on_pred))


def _fields_by_source(spec: PartitionSpec, schema: Schema
                      ) -> dict[int, list[tuple[PartitionField, IcebergType]]]:
    out: dict[int, list[tuple[PartitionField, IcebergType]]] = {}
    for pf, nf in zip(spec.fields, spec.partition_type(schema).fields()):
        if len(pf.all_source_ids) == 1:  # multi-argument transforms are not projected
            out.setdefault(pf.source_id, []).append((pf, nf.type))
    return out


def inclusive_projection(expr: Expression, spec: PartitionSpec, schema: Schema,
                         case_sensitive: bool = False) -> Expression:
    """A filter on partition values that holds for every partition holding a matching row.

    ``expr`` may be bound to ``schema`` or unbound (it is bound first). The result is bound to
    the spec's partition struct. Predicates projected through several partition fields of one
    column are combined with AND.
    """
    bound = prepare(expr, schema, case_sensitive)
    fields = _fields_by_source(spec, schema)

    def on_pred(p: BoundPredicate) -> Expression:
        result: Expression = TRUE
        for pf, ptype in fields.get(p.field_id, ()):
            q = project(pf.transform, pf, ptype, p)
            if q is not None:
                result = and_(result, q)
        return result

    return map_predicates(bound, on_pred)


def strict_projection(expr: Expression, spec: PartitionSpec, schema: Schema,
                      case_sensitive: bool = False) -> Expression:
    """A filter on partition values that implies the row filter for every row of a partition.

    Predicates projected through several partition fields of one column are combined with OR;
    a predicate with no strict projection becomes false. The implication holds when the
    projection is evaluated on the partition tuple with the *row* semantics
    (:func:`icectl.expr.eval_rows.evaluate_row`: a null partition value satisfies only
    ``is null`` / ``is not nan``), never with the reference's nulls-first comparator
    (:func:`~icectl.expr.eval_rows.partition_matches`), for which ``null < 5`` holds.
    """
    bound = prepare(expr, schema, case_sensitive)
    fields = _fields_by_source(spec, schema)

    def on_pred(p: BoundPredicate) -> Expression:
        result: Expression = FALSE
        for pf, ptype in fields.get(p.field_id, ()):
            q = project_strict(pf.transform, pf, ptype, p)
            if q is not None:
                result = or_(result, q)
        return result

    return map_predicates(bound, on_pred)
