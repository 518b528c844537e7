"""What a predicate on a source column says about a transform's partition values: the rules
the transforms share (:meth:`icectl.spec.transforms.Transform.project` and ``strict_project``
call them).

* The **inclusive** projection of ``p`` is a ``q`` on the partition value such that ``p(row)``
  implies ``q(transform(row))``: partitions where ``q`` is false hold no matching row.
* The **strict** projection is a ``q`` such that ``q(transform(row))`` implies ``p(row)``: in
  partitions where ``q`` holds every row matches.

A projection is a small term on the partition value, which :mod:`icectl.expr.projection` binds to
the partition field: :class:`On` (one predicate), :class:`AnyOf`, :class:`AllOf` and
:data:`NOTHING` (no partition value qualifies); None means "no projection" (true for
inclusive, false for strict).

The rules, as the reference computes them: ordered transforms (truncate, year/month/day/hour)
turn ``<`` into ``<=`` of the value one unit below (``>`` likewise above); strings and binary
truncate by prefix; truncate of an int or long keeps the values Java's fixed-width arithmetic
wrapped to the top of the range apart; the time transforms widen for negative (pre-1970)
partition values, as the reference does for data written by its early versions.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any, Union

from icectl.spec.javatext import decimal_from_unscaled, decimal_unscaled
from icectl.spec.operations import Operation as Op
from icectl.spec.types import DATE, INT, LONG, IcebergType
from icectl.spec.values import INT_MAX, INT_MIN, LONG_MAX, LONG_MIN

if TYPE_CHECKING:
    from icectl.spec.transforms import Transform

__all__ = ["On", "AnyOf", "AllOf", "NOTHING", "Projected", "ORDERING", "ordered_inclusive",
           "ordered_strict", "prefix_projection", "time_widened_inclusive",
           "time_widened_strict", "type_range"]


class On:
    """``partition value <op> values``."""

    __slots__ = ("op", "values")

    def __init__(self, op: Op, values: tuple = ()):
        self.op, self.values = op, values

    def __repr__(self) -> str:
        return f"On({self.op.name}, {self.values!r})"


class _Pair:
    __slots__ = ("left", "right")

    def __init__(self, left: "Projected", right: "Projected"):
        self.left, self.right = left, right


class AnyOf(_Pair):
    """Either term holds."""

    __slots__ = ()


class AllOf(_Pair):
    """Both terms hold."""

    __slots__ = ()


class _Nothing:
    def __repr__(self) -> str:
        return "NOTHING"


NOTHING = _Nothing()
Projected = Union[On, AnyOf, AllOf, _Nothing]

ORDERING = (Op.LT, Op.LT_EQ, Op.GT, Op.GT_EQ)
_SETS = frozenset({Op.IN, Op.NOT_IN})


def type_range(t: IcebergType | None) -> tuple[int, int] | None:
    if t in (INT, DATE):
        return INT_MIN, INT_MAX
    if t == LONG:
        return LONG_MIN, LONG_MAX
    return None


def apply(t: Transform, v: Any, source: IcebergType | None) -> Any:
    if isinstance(v, Decimal):
        return t.apply(v, None)  # at the value's own scale, like the reference
    return t.apply(v, source)


def _step(v: Any, delta: int, source: IcebergType | None) -> Any:
    """The value one unit above (+1) or below (-1) ``v``; None beyond the type's range."""
    if isinstance(v, Decimal):
        exp = v.as_tuple().exponent
        assert isinstance(exp, int)
        scale = -exp
        return decimal_from_unscaled(decimal_unscaled(v, scale) + delta, scale)
    n = v + delta
    rng = type_range(source)
    if rng is not None and not rng[0] <= n <= rng[1]:
        return None
    return n


# -- numbers (ints, longs, decimals; dates and timestamps for the time transforms) ---------------


def ordered_inclusive(t: Transform, op: Op, values: tuple, source: IcebergType | None) -> Projected | None:
    if op == Op.IN:
        return On(Op.IN, tuple(apply(t, v, source) for v in values))
    if op not in (Op.LT, Op.LT_EQ, Op.GT, Op.GT_EQ, Op.EQ):
        return None
    v = values[0]
    if op == Op.LT:
        below = _step(v, -1, source)
        return NOTHING if below is None else On(Op.LT_EQ, (apply(t, below, source),))
    if op == Op.GT:
        above = _step(v, 1, source)
        return NOTHING if above is None else On(Op.GT_EQ, (apply(t, above, source),))
    return On(op, (apply(t, v, source),))  # <=, >=, =


def ordered_strict(t: Transform, op: Op, values: tuple, source: IcebergType | None) -> Projected | None:
    if op == Op.NOT_IN:
        return On(Op.NOT_IN, tuple(apply(t, v, source) for v in values))
    if op not in (Op.LT, Op.LT_EQ, Op.GT, Op.GT_EQ, Op.NOT_EQ):
        return None
    v = values[0]
    if op == Op.LT_EQ:
        above = _step(v, 1, source)
        # `c <= MAX` holds for every value, but not for nulls: the partition must be non-null
        return On(Op.NOT_NULL) if above is None else On(Op.LT, (apply(t, above, source),))
    if op == Op.GT_EQ:
        below = _step(v, -1, source)
        return On(Op.NOT_NULL) if below is None else On(Op.GT, (apply(t, below, source),))
    return On(op, (apply(t, v, source),))  # <, >, !=


# -- strings and binary (truncate) ----------------------------------------------------------------


def prefix_projection(t: Transform, width: int, op: Op, values: tuple, source: IcebergType | None,
                      strict: bool) -> Projected | None:
    """Truncate of a string or binary: a longer prefix implies the truncated one, so inclusive
    keeps ``in``, ``=`` and ``starts with``, strict their negations; a range bound widens to
    its prefix (inclusive ``<=``/``>=``) or narrows (strict ``<``/``>``)."""
    kept = (Op.NOT_IN, Op.NOT_EQ, Op.NOT_STARTS_WITH) if strict else (Op.IN, Op.EQ, Op.STARTS_WITH)
    if op in _SETS:
        return On(op, tuple(apply(t, v, source) for v in values)) if op in kept else None
    v = values[0]
    if op in (Op.STARTS_WITH, Op.NOT_STARTS_WITH):
        if len(v) < width:
            return On(op, (v,))
        if len(v) == width:
            return On(Op.EQ if op == Op.STARTS_WITH else Op.NOT_EQ, (v,))
    elif op in (Op.LT, Op.LT_EQ):
        return On(Op.LT if strict else Op.LT_EQ, (apply(t, v, source),))
    elif op in (Op.GT, Op.GT_EQ):
        return On(Op.GT if strict else Op.GT_EQ, (apply(t, v, source),))
    return On(op, (apply(t, v, source),)) if op in kept else None


# -- the reference's widening for time transforms of negative values ------------------------------


def _with_next(values: tuple) -> tuple:
    out: list[int] = []
    for v in values:
        out.append(v)
        if v < 0:
            out.append(v + 1)
    return tuple(out)


def time_widened_inclusive(p: Projected | None) -> Projected | None:
    if not isinstance(p, On):
        return p
    op = p.op
    if op in (Op.LT, Op.LT_EQ):
        v = p.values[0]
        return On(op, (v + 1,)) if v < 0 else p
    if op in (Op.EQ, Op.IN):
        return On(Op.IN, _with_next(p.values)) if any(v < 0 for v in p.values) else p
    if op in (Op.NOT_EQ, Op.NOT_IN):
        return None
    return p


def time_widened_strict(p: Projected | None) -> Projected | None:
    if not isinstance(p, On):
        return p
    op = p.op
    if op in (Op.LT, Op.LT_EQ):
        return p
    if op in (Op.GT, Op.GT_EQ):
        v = p.values[0]
        return On(op, (v + 1,)) if v <= 0 else p
    if op in (Op.NOT_EQ, Op.NOT_IN):
        return On(Op.NOT_IN, _with_next(p.values)) if any(v < 0 for v in p.values) else p
    return None
