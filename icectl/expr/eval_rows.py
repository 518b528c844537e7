"""Evaluating a bound filter on values: rows, and partition tuples.

Two semantics, both the reference's:

* **rows** as the engine filters them (:func:`evaluate_row`, :func:`evaluate_rows`): a null
  matches only ``is null`` and ``is not nan``; NaN matches no comparison but ``!=`` and
  ``not in``. ``not`` is pushed into the predicates first, so ``not (x = 1)`` selects no nulls.
* **partition tuples** as the reference's ``Evaluator`` sees them (:func:`partition_matches`,
  :func:`partitions_match`, used for partition pruning only, so icectl keeps the files Java
  keeps): null sorts before every value (so ``null < 5`` holds), NaN after every number. This
  only ever keeps more than the row semantics would, so it is sound for pruning; it is never
  used to conclude that every row matches (residuals decide with the row semantics).

Each has a scalar form (one row or tuple) and a columnar form (lists of values, one result per
position); both decide each predicate through the same operator table.
"""

from __future__ import annotations

import operator
from typing import Any, Callable, Mapping, Sequence

from icectl.expr.eval_base import evaluate_columns
from icectl.expr.expressions import BoundPredicate, Expression, Operation, rewrite_not
from icectl.expr.ordering import is_nan, value_key
from icectl.expr.visitor import Visitor, visit

__all__ = ["evaluate_row", "evaluate_rows", "partition_matches", "partitions_match",
           "value_matches", "values_match"]

Op = Operation
_COMPARE: dict[Operation, Callable[[Any, Any], bool]] = {
    Op.LT: operator.lt, Op.LT_EQ: operator.le, Op.GT: operator.gt, Op.GT_EQ: operator.ge,
    Op.EQ: operator.eq, Op.NOT_EQ: operator.ne}
# what a null is for each operation when nulls sort first (partition tuples)
_NULL_FIRST = {Op.LT: True, Op.LT_EQ: True, Op.GT: False, Op.GT_EQ: False, Op.EQ: False,
               Op.NOT_EQ: True, Op.IN: False, Op.NOT_IN: True, Op.STARTS_WITH: False,
               Op.NOT_STARTS_WITH: True}


def value_matches(p: BoundPredicate, v: Any, nulls_first: bool = False) -> bool:
    """Scalar: whether value ``v`` (None = null) satisfies predicate ``p``."""
    op = p.op
    if op == Op.IS_NULL:
        return v is None
    if op == Op.NOT_NULL:
        return v is not None
    if op == Op.IS_NAN:
        return is_nan(v)
    if op == Op.NOT_NAN:
        return not is_nan(v)
    if v is None:
        return nulls_first and _NULL_FIRST[op]
    if op == Op.IN:
        return value_key(v) in p.literal_keys
    if op == Op.NOT_IN:
        return value_key(v) not in p.literal_keys
    if op == Op.STARTS_WITH:
        return v.startswith(p.literal)
    if op == Op.NOT_STARTS_WITH:
        return not v.startswith(p.literal)
    if not nulls_first and is_nan(v):
        return op == Op.NOT_EQ
    return _COMPARE[op](value_key(v), value_key(p.literal))


def values_match(p: BoundPredicate, values: Sequence[Any], nulls_first: bool = False) -> list:
    """Columnar: :func:`value_matches` for every value of a list."""
    op = p.op
    if op == Op.IS_NULL:
        return [v is None for v in values]
    if op == Op.NOT_NULL:
        return [v is not None for v in values]
    if op == Op.IS_NAN:
        return [is_nan(v) for v in values]
    if op == Op.NOT_NAN:
        return [not is_nan(v) for v in values]
    null = nulls_first and _NULL_FIRST[op]
    if op in (Op.IN, Op.NOT_IN):
        keys, want = p.literal_keys, op == Op.IN
        return [null if v is None else (value_key(v) in keys) == want for v in values]
    if op in (Op.STARTS_WITH, Op.NOT_STARTS_WITH):
        prefix, want = p.literal, op == Op.STARTS_WITH
        return [null if v is None else v.startswith(prefix) == want for v in values]
    f, k = _COMPARE[op], value_key(p.literal)
    if nulls_first:
        return [null if v is None else f(value_key(v), k) for v in values]
    nan = op == Op.NOT_EQ
    return [False if v is None else (nan if is_nan(v) else f(value_key(v), k)) for v in values]


class Bools(Visitor[bool]):
    def __init__(self, on_pred: Callable[[BoundPredicate], bool]):
        self.on_pred = on_pred

    def predicate(self, p: Any) -> bool:
        if not isinstance(p, BoundPredicate):
            raise TypeError(f"cannot evaluate unbound {p}; bind it first")
        return self.on_pred(p)

    def always_true(self) -> bool:
        return True

    def always_false(self) -> bool:
        return False

    def and_done(self, left: bool) -> bool:
        return not left

    def or_done(self, left: bool) -> bool:
        return left

    def and_(self, left: bool, right: bool) -> bool:
        return right

    def or_(self, left: bool, right: bool) -> bool:
        return right


def _lookup(row: Mapping[Any, Any], p: BoundPredicate) -> Any:
    return row[p.field_id] if p.field_id in row else row.get(p.name)


def evaluate_row(expr: Expression, row: Mapping[Any, Any]) -> bool:
    """Scalar: whether a row matches a bound expression. ``row`` maps field ids (or, failing
    that, full column names) to values in the internal representation; missing means null."""
    return visit(rewrite_not(expr), Bools(lambda p: value_matches(p, _lookup(row, p))))


def evaluate_rows(expr: Expression, columns: Mapping[Any, Sequence[Any]], n: int) -> list:
    """Columnar: whether each of ``n`` rows matches; ``columns`` maps field ids (or full names)
    to value lists of length ``n`` (a missing column is all null)."""
    def on_pred(p: BoundPredicate) -> list:
        col = columns[p.field_id] if p.field_id in columns else columns.get(p.name)
        return values_match(p, [None] * n if col is None else col)

    return evaluate_columns(rewrite_not(expr), n, on_pred)


def _position_value(partition: Sequence[Any], positions: Mapping[int, int], fid: int) -> Any:
    i = positions.get(fid)
    return partition[i] if i is not None and i < len(partition) else None


def partition_matches(expr: Expression, partition: Sequence[Any],
                      positions: Mapping[int, int]) -> bool:
    """Scalar: the reference's ``Evaluator`` on one partition tuple. ``expr`` is bound to
    partition field ids (an inclusive projection) without NOT; ``positions`` maps partition
    field id -> tuple index."""
    return visit(expr, Bools(lambda p: value_matches(
        p, _position_value(partition, positions, p.field_id), True)))


def partitions_match(expr: Expression, partitions: Sequence[Sequence[Any]],
                     positions: Mapping[int, int]) -> list:
    """Columnar: :func:`partition_matches` for every tuple of a list."""
    def on_pred(p: BoundPredicate) -> list:
        return values_match(p, [_position_value(t, positions, p.field_id) for t in partitions],
                            True)

    return evaluate_columns(expr, len(partitions), on_pred)

