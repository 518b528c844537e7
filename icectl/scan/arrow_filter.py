"""The row filter on Arrow columns: :func:`icectl.expr.eval_rows.evaluate_rows`, vectorized.

The reader filters every batch by the file's residual. The expression module's row evaluator
decides one value at a time in Python; this module asks Arrow's compute kernels the same
questions a whole column at a time, with the same semantics (the reference's row evaluator):

* a null matches only ``is null`` and ``not nan``; NaN matches no comparison but ``!=`` and
  ``not in``; ``not`` has been pushed into the predicates (``rewrite_not``) first;
* values compare as :func:`icectl.expr.ordering.value_key` orders them.

Arrow agrees with ``value_key`` on integers, dates, times, timestamps (compared as their
internal integers), strings (UTF-8 byte order is code-point order), decimals, booleans and on
floats (compared as doubles) except for one thing: IEEE makes ``-0.0 == 0.0`` where the
reference orders ``-0.0 < 0.0``. A predicate whose answer Arrow might give differently - a float
literal that is zero or NaN, and every type not listed above (uuid, fixed, binary, nested) -
is decided by :func:`icectl.expr.eval_rows.values_match` on the column's internal values, so
there is one meaning of a filter and this module only makes it fast. ``tests/scan/
test_arrow_filter.py`` runs both on every type, with nulls, NaN and signed zeros.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import pyarrow as pa
import pyarrow.compute as pc

from icectl.expr.eval_rows import values_match
from icectl.expr.expressions import BoundPredicate, Expression, Operation, rewrite_not
from icectl.expr.visitor import Visitor, visit
from icectl.scan.arrow_values import to_internal

__all__ = ["row_mask", "predicate_mask", "comparable", "constant_mask"]

Op = Operation
_COMPARE = {Op.LT: pc.less, Op.LT_EQ: pc.less_equal, Op.GT: pc.greater,
            Op.GT_EQ: pc.greater_equal, Op.EQ: pc.equal, Op.NOT_EQ: pc.not_equal}


def comparable(arr: Any, floats: bool = True) -> tuple[Any, Any] | None:
    """The column as Arrow compares it like ``value_key`` does, and the type of its literals;
    None when Arrow's order may differ (decided in Python instead). Floats compare as doubles
    (callers still keep zero and NaN literals away); ``floats=False`` refuses them."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    t = arr.type
    if pa.types.is_date32(t):  # days; Arrow casts dates to their own width only
        return arr.cast(pa.int32()).cast(pa.int64()), pa.int64()
    if pa.types.is_integer(t) or pa.types.is_timestamp(t) or pa.types.is_time(t):
        return arr.cast(pa.int64()), pa.int64()
    if pa.types.is_floating(t):
        return (arr.cast(pa.float64()), pa.float64()) if floats else None
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return arr, pa.string()
    if pa.types.is_decimal(t) or pa.types.is_boolean(t):
        return arr, t
    return None


def _float_literal_ok(p: BoundPredicate, ltype: Any) -> bool:
    if not pa.types.is_floating(ltype):
        return True
    return all(isinstance(v, (int, float)) and not math.isnan(v) and v != 0 for v in p.literals)


def _arrow_mask(p: BoundPredicate, arr: Any) -> Any:
    """The predicate over ``arr`` as a boolean array without nulls, or None (not decided here)."""
    op = p.op
    if op == Op.IS_NULL:
        return pc.is_null(arr)
    if op == Op.NOT_NULL:
        return pc.is_valid(arr)
    floating = pa.types.is_floating(arr.type)
    if op == Op.IS_NAN:
        return pc.is_nan(arr).fill_null(False) if floating else constant_mask(False, len(arr))
    if op == Op.NOT_NAN:
        return pc.invert(pc.is_nan(arr).fill_null(False)) if floating else constant_mask(True, len(arr))
    prepared = comparable(arr)
    if prepared is None:
        return None
    col, ltype = prepared
    if not _float_literal_ok(p, ltype):
        return None
    if op in _COMPARE:
        return _COMPARE[op](col, pa.scalar(p.literal, ltype)).fill_null(False)
    if op in (Op.IN, Op.NOT_IN):
        found = pc.is_in(col, value_set=pa.array(list(p.literals), ltype))
        if op == Op.NOT_IN:
            found = pc.invert(found)
        return pc.and_(found.fill_null(False), pc.is_valid(col))
    if op in (Op.STARTS_WITH, Op.NOT_STARTS_WITH) and ltype == pa.string():
        hit = pc.starts_with(col, pattern=p.literal)
        if op == Op.NOT_STARTS_WITH:
            hit = pc.invert(hit)
        return hit.fill_null(False)
    return None


def constant_mask(value: bool, n: int) -> Any:
    return pa.nulls(n, pa.bool_()).fill_null(value)


def predicate_mask(p: BoundPredicate, arr: Any) -> Any:
    """Whether each value of ``arr`` (an Arrow column of ``p``'s type) satisfies ``p``."""
    try:
        got = _arrow_mask(p, arr)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, OverflowError):
        got = None  # e.g. a literal the column's decimal type cannot hold: Python decides
    if got is not None:
        return got
    return pa.array(values_match(p, to_internal(arr, p.type)), pa.bool_())


class _Masks(Visitor[Any]):
    def __init__(self, n: int, column: Callable[[BoundPredicate], Any]):
        self.n = n
        self.column = column

    def predicate(self, p: Any) -> Any:
        if not isinstance(p, BoundPredicate):
            raise TypeError(f"cannot evaluate unbound {p}; bind it first")
        arr = self.column(p)
        if arr is None:  # a column the rows do not have: all null
            return pa.array(values_match(p, [None] * self.n), pa.bool_())
        return predicate_mask(p, arr)

    def always_true(self) -> Any:
        return constant_mask(True, self.n)

    def always_false(self) -> Any:
        return constant_mask(False, self.n)

    def and_done(self, left: Any) -> bool:
        return self.n == 0 or not pc.any(left).as_py()

    def or_done(self, left: Any) -> bool:
        return self.n == 0 or pc.all(left).as_py()

    def and_(self, left: Any, right: Any) -> Any:
        return pc.and_(left, right)

    def or_(self, left: Any, right: Any) -> Any:
        return pc.or_(left, right)


def row_mask(expr: Expression, column: Callable[[BoundPredicate], Any], n: int) -> Any:
    """Which of ``n`` rows match the bound ``expr``, as an Arrow boolean array without nulls.
    ``column(p)`` gives the Arrow column predicate ``p`` reads (None: the rows lack it)."""
    return visit(rewrite_not(expr), _Masks(n, column))
