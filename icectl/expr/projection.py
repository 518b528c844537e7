"""Projections of row filters onto partition values: the walk over a filter.

Each transform projects one predicate itself (:meth:`icectl.spec.transforms.Transform.project`
and ``strict_project``; the rules are :mod:`icectl.spec.transform_projection`'s). This module
binds what a transform returns to the partition struct (``field_id`` is the partition field id,
``name`` its name, ``type`` its result type) and walks whole filters through a spec:

* The **inclusive** projection of a predicate ``p`` through a transform is a predicate ``q`` on
  the partition value such that ``p(row)`` implies ``q(transform(row))``: partitions where ``q``
  is false hold no matching row (manifest and file pruning).
* The **strict** projection is a ``q`` such that ``q(transform(row))`` implies ``p(row)``: in
  partitions where ``q`` holds every row matches (residuals).
"""

from __future__ import annotations

from typing import Callable

from icectl.expr.eval_base import prepare
from icectl.expr.expressions import (
    FALSE,
    TRUE,
    BoundPredicate,
    Expression,
    and_,
    make_bound,
    or_,
)
from icectl.expr.visitor import Visitor, visit
from icectl.spec.partitioning import PartitionField, PartitionSpec
from icectl.spec.schema import Schema
from icectl.spec.transform_projection import NOTHING, AllOf, AnyOf, On, Projected
from icectl.spec.transforms import Transform
from icectl.spec.types import IcebergType

__all__ = ["project", "project_strict", "inclusive_projection", "strict_projection"]


# ----------------------------------------------------------------------------------------------
# One predicate through one transform. None means "no projection" (the caller decides what that
# means: true for inclusive, false for strict).


def project(transform: Transform, field: PartitionField, part_type: IcebergType,
            pred: BoundPredicate) -> Expression | None:
    """The inclusive projection of a bound predicate through a partition field, or None."""
    return _bind(transform.project(pred.op, pred.literals, pred.type), field, part_type)


def project_strict(transform: Transform, field: PartitionField, part_type: IcebergType,
                   pred: BoundPredicate) -> Expression | None:
    """The strict projection of a bound predicate through a partition field, or None."""
    return _bind(transform.strict_project(pred.op, pred.literals, pred.type), field, part_type)


def _bind(term: Projected | None, field: PartitionField, part_type: IcebergType) -> Expression | None:
    """A transform's projection as a predicate bound to the partition field."""
    if term is None:
        return None
    if term is NOTHING:
        return FALSE
    if isinstance(term, On):
        return make_bound(term.op, field.field_id, field.name, part_type, term.values)
    assert isinstance(term, (AnyOf, AllOf))
    left, right = _bind(term.left, field, part_type), _bind(term.right, field, part_type)
    assert left is not None and right is not None
    return or_(left, right) if isinstance(term, AnyOf) else and_(left, right)


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
    return _through_spec(expr, spec, schema, case_sensitive, project, TRUE, and_)


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
    return _through_spec(expr, spec, schema, case_sensitive, project_strict, FALSE, or_)


def _through_spec(expr: Expression, spec: PartitionSpec, schema: Schema, case_sensitive: bool,
                  one: Callable[..., Expression | None], start: Expression,
                  combine: Callable[[Expression, Expression], Expression]) -> Expression:
    """``expr`` with each predicate replaced by its projections ``one(...)`` through the
    spec's fields of its column, combined from ``start`` with ``combine``."""
    bound = prepare(expr, schema, case_sensitive)
    fields = _fields_by_source(spec, schema)

    def on_pred(p: BoundPredicate) -> Expression:
        result = start
        for pf, ptype in fields.get(p.field_id, ()):
            q = one(pf.transform, pf, ptype, p)
            if q is not None:
                result = combine(result, q)
        return result

    return map_predicates(bound, on_pred)
