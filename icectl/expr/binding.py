"""Binding filters to a schema: column lookup and literal conversion.

Literal conversion on binding follows the reference's ``Literal.to(type)``: an integer literal
fits int, long, float, double, date (days), time and timestamps (micros) and decimals; a string
converts to date, time, timestamp(tz), uuid and decimal; a decimal literal takes the column's
scale when that is exact. Additions to the reference, documented in the filter help: a decimal
or float literal also fits a float/double column, and a ``date '...'`` literal fits a timestamp
column (midnight).

A literal the column's type cannot hold is bad input (InvalidInput, one line naming the literal,
the column and its type), for every command that takes a filter: an integer, date or timestamp
beyond the range of an int, long, date, time or timestamp column (``id = 99999999999999999999999``
on a long; ``i < 3000000000`` on an int, which Java's binding settles as always true), and a
decimal with more digits than the column's precision or more digits after the point than its
scale (Java's binding refuses a decimal of another scale). Float columns are the exception: a
double beyond a float's finite range still compares with the column's values, infinities
included (``f > 1e39`` selects +inf).

Binding walks the tree with :func:`icectl.expr.visitor.visit` (no recursion limit).
"""

from __future__ import annotations

import enum
import math
import struct
import uuid as _uuid
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation
from typing import Any

from icectl.errors import InvalidInput, NotFound
from icectl.expr.expressions import (
    FALSE,
    FLOAT_TYPES,
    NS_TYPES,
    SET_OPS,
    TIMESTAMP_TYPES,
    TRUE,
    BoundPredicate,
    Expression,
    Literal,
    Operation,
    Predicate,
    and_,
    make_bound,
    not_,
    or_,
)
from icectl.expr.visitor import Visitor, visit
from icectl.spec.schema import Schema
from icectl.spec.transforms import decimal_from_unscaled, decimal_unscaled
from icectl.spec.types import (
    BINARY,
    BOOLEAN,
    DATE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMPTZ,
    TIMESTAMPTZ_NS,
    UUID,
    DecimalType,
    FixedType,
    IcebergType,
    ListType,
    MapType,
    PrimitiveType,
)
from icectl.spec.values import (
    INT_MAX,
    INT_MIN,
    LONG_MAX,
    LONG_MIN,
    format_date,
    format_timestamp,
    parse_date,
    parse_time,
    parse_timestamp,
)

__all__ = ["bind", "convert_literal", "ABOVE_MAX", "BELOW_MIN"]

_TZ_TYPES = (TIMESTAMPTZ, TIMESTAMPTZ_NS)
_FLOAT32_MAX = struct.unpack("<f", b"\xff\xff\x7f\x7f")[0]


class _Bound(enum.Enum):
    ABOVE_MAX = "above max"
    BELOW_MIN = "below min"


ABOVE_MAX = _Bound.ABOVE_MAX
BELOW_MIN = _Bound.BELOW_MIN


def bind(expr: Expression, schema: Schema, case_sensitive: bool = False) -> Expression:
    """Bind every predicate of ``expr`` to ``schema``; InvalidInput names column and problem.

    Negations are pushed into the predicates first (``not (x > 5)`` is ``x <= 5``), so that a
    predicate settled while binding (a literal beyond the column type's range) is settled with
    its own operator: what it becomes is then right for null and NaN values too, where negating
    a settled ``false`` would wrongly select the nulls."""
    from icectl.expr.expressions import rewrite_not

    return visit(rewrite_not(expr), _Binder(schema, case_sensitive))


class _Binder(Visitor[Expression]):
    def __init__(self, schema: Schema, case_sensitive: bool):
        self.schema = schema
        self.case_sensitive = case_sensitive
        self.columns: dict[str, tuple] = {}  # term -> (field, full name), looked up once

    def always_true(self) -> Expression:
        return TRUE

    def always_false(self) -> Expression:
        return FALSE

    def predicate(self, p: Any) -> Expression:
        if isinstance(p, BoundPredicate):
            return p
        if isinstance(p, Predicate):
            column = self.columns.get(p.term)
            if column is None:
                column = self.columns[p.term] = _column(p.term, self.schema, self.case_sensitive)
            return _bind_predicate(p, *column)
        raise TypeError(f"cannot bind {p!r}")

    def and_(self, left: Expression, right: Expression) -> Expression:
        return and_(left, right)

    def or_(self, left: Expression, right: Expression) -> Expression:
        return or_(left, right)

    def not_(self, child: Expression) -> Expression:
        return not_(child)


def _column(term: str, schema: Schema, case_sensitive: bool) -> tuple[Any, str, bool]:
    """The field a filter's column names, with its full name and whether it can be null."""
    field = schema.find_field_or_none(term, case_sensitive)
    if field is None:
        hint = ""
        if case_sensitive and schema.find_field_or_none(term, False) is not None:
            hint = " (names are case sensitive here)"
        raise NotFound(f"filter column {term!r} not found in the table schema{hint or schema.suggest(term)}")
    fid = field.field_id
    name = schema.column_name(fid)
    nullable = not field.required  # a required field of an optional struct is null with it
    parent = schema.parent_id(fid)
    while parent is not None:
        pfield = schema.find_field(parent)
        if isinstance(pfield.type, (ListType, MapType)):
            raise InvalidInput(f"filter column {name!r} is inside a list or map; filters can "
                               "only use columns reached through structs")
        nullable = nullable or not pfield.required
        parent = schema.parent_id(parent)
    return field, name, nullable


def _bind_predicate(pred: Predicate, field: Any, name: str, nullable: bool = True) -> Expression:
    fid, t = field.field_id, field.type
    op = pred.op
    if not isinstance(t, PrimitiveType) and op not in (Operation.IS_NULL, Operation.NOT_NULL):
        raise InvalidInput(f"filter column {name!r} is a {type(t).__name__.replace('Type', '').lower()}"
                           "; a struct, list or map column takes only 'is null' and "
                           "'is not null'")
    if op in (Operation.IS_NULL, Operation.NOT_NULL):
        if not nullable:
            return FALSE if op == Operation.IS_NULL else TRUE
        return BoundPredicate(op, fid, name, t)
    if op in (Operation.IS_NAN, Operation.NOT_NAN):
        if t not in FLOAT_TYPES:
            raise InvalidInput(f"'{op.symbol}' needs a float or double column; {name!r} is {t}")
        return BoundPredicate(op, fid, name, t)
    if op in (Operation.STARTS_WITH, Operation.NOT_STARTS_WITH):
        if t != STRING:
            raise InvalidInput(f"'{op.symbol}' needs a string column; {name!r} is {t}")
    if op in SET_OPS:
        values = []
        for lit in pred.literals:
            v = _convert_or_fail(lit, t, name)
            if not isinstance(v, _Bound):  # a float beyond float's range: no value equals it
                values.append(v)
        if op == Operation.NOT_IN and not values:  # no value of the type is listed
            return _non_null(fid, name, t, nullable)
        return make_bound(op, fid, name, t, values)
    v = _convert_or_fail(pred.literal, t, name)
    if isinstance(v, _Bound):
        return _beyond_range(op, v, fid, name, t, nullable)
    return BoundPredicate(op, fid, name, t, (v,))


def _non_null(fid: int, name: str, t: IcebergType, nullable: bool) -> Expression:
    return BoundPredicate(Operation.NOT_NULL, fid, name, t) if nullable else TRUE


def _beyond_range(op: Operation, v: Any, fid: int, name: str, t: IcebergType,
                  nullable: bool) -> Expression:
    """A comparison with a literal beyond the column type's range, settled as far as values
    allow. The reference settles it as true or false, and true would select null rows; here a
    null stays unknown (never selected), NaN is selected only by ``!=``, and a float column's
    infinities compare as they do with the literal (``x > 1e39`` holds for +inf)."""
    above = v is ABOVE_MAX
    if op == Operation.EQ:
        return FALSE
    if op == Operation.NOT_EQ:
        return _non_null(fid, name, t, nullable)
    below_literal = op in (Operation.GT, Operation.GT_EQ)  # the values that pass lie above it
    if t == FLOAT:  # beyond float's finite range: the infinities lie beyond the literal
        if above:
            limit = Operation.GT if below_literal else Operation.LT_EQ
            return BoundPredicate(limit, fid, name, t, (_FLOAT32_MAX,))
        limit = Operation.GT_EQ if below_literal else Operation.LT
        return BoundPredicate(limit, fid, name, t, (-_FLOAT32_MAX,))
    if below_literal == above:  # x > above-max, x < below-min: no value
        return FALSE
    return _non_null(fid, name, t, nullable)


def _convert_or_fail(lit: Literal, t: IcebergType, name: str) -> Any:
    try:
        v = convert_literal(lit, t)
    except (ValueError, InvalidOperation, OverflowError) as e:
        raise InvalidInput(f"cannot use {lit} with column {name!r} of type {t}: {e}") from None
    if v is None:
        raise InvalidInput(f"cannot compare column {name!r} of type {t} with "
                           f"{_KIND_NAMES.get(lit.kind, lit.kind)} {lit}")
    if isinstance(v, _Bound) and t != FLOAT:
        lo, hi = _RANGES.get(t, (LONG_MIN, LONG_MAX))
        raise InvalidInput(f"{_KIND_NAMES.get(lit.kind, lit.kind)} {lit} is out of range for column "
                           f"{name!r} of type {t} ({_range_text(t, lo, hi)})")
    return v


_RANGES = {INT: (INT_MIN, INT_MAX), DATE: (INT_MIN, INT_MAX)}


def _range_text(t: IcebergType, lo: int, hi: int) -> str:
    if t == DATE:
        return f"{format_date(lo)} to {format_date(hi)}"
    if t in TIMESTAMP_TYPES:
        return f"{format_timestamp(lo, nanos=t in NS_TYPES)} to {format_timestamp(hi, nanos=t in NS_TYPES)}"
    return f"{lo} to {hi}"


_KIND_NAMES = {"integer": "the integer", "decimal": "the decimal", "float": "the number",
               "string": "the string", "boolean": "the boolean", "date": "the date",
               "time": "the time", "timestamp": "the timestamp",
               "timestamptz": "the timestamp", "uuid": "the uuid", "binary": "the binary value"}


def _range_check(v: int, lo: int, hi: int) -> Any:
    if v > hi:
        return ABOVE_MAX
    if v < lo:
        return BELOW_MIN
    return v


def _to_decimal(d: Decimal, t: DecimalType) -> Decimal:
    """A decimal at the column's scale; ValueError when that would change it or it has more
    digits than the column's precision."""
    if not d.is_finite():
        raise ValueError("not a finite number")
    try:
        unscaled = decimal_unscaled(d, t.scale)
    except ValueError:
        raise ValueError(f"more than {t.scale} digit(s) after the point") from None
    if len(str(abs(unscaled))) > t.precision:
        raise ValueError(f"more than {t.precision} digits")
    return decimal_from_unscaled(unscaled, t.scale)


def _round_half_up(d: Decimal, scale: int) -> Decimal:
    ctx = Context(prec=max(60, len(d.as_tuple().digits) + scale + 5))
    return d.quantize(Decimal((0, (1,), -scale)), rounding=ROUND_HALF_UP, context=ctx)


def convert_literal(lit: Literal, t: IcebergType) -> Any:
    """The literal's value as a value of type ``t``: a value in the internal representation,
    :data:`ABOVE_MAX` / :data:`BELOW_MIN` when it lies beyond the type's range, or None when
    the literal cannot be used with the type. Text that does not parse raises ValueError."""
    k, v = lit.kind, lit.value
    if k == "integer":
        if t == INT or t == DATE:
            return _range_check(v, INT_MIN, INT_MAX)
        if t in (LONG, TIME, TIMESTAMP, TIMESTAMPTZ):
            return _range_check(v, LONG_MIN, LONG_MAX)
        if t in NS_TYPES:  # the reference reads the integer as micros
            return _range_check(v * 1000, LONG_MIN, LONG_MAX)
        if t in FLOAT_TYPES:
            return _to_float(float(v), t)
        if isinstance(t, DecimalType):
            return _to_decimal(Decimal(v), t)
        return None
    if k == "decimal":
        if isinstance(t, DecimalType):
            return _to_decimal(v, t)
        if t in FLOAT_TYPES:
            return _to_float(float(v), t)
        return None
    if k == "float":
        if t in FLOAT_TYPES:
            return _to_float(v, t)
        if isinstance(t, DecimalType):
            if math.isinf(v):
                return None
            # BigDecimal.valueOf(double): the shortest digits that read back as the double
            d = Decimal(repr(v))
            if d and d.adjusted() >= t.precision - t.scale:
                raise ValueError(f"more than {t.precision} digits")
            return _to_decimal(_round_half_up(d, t.scale), t)
        return None
    if k == "string":
        if t == STRING:
            return v
        if t == DATE:
            return _range_check(parse_date(v), INT_MIN, INT_MAX)
        if t == TIME:
            return parse_time(v)
        if t in TIMESTAMP_TYPES:
            return _range_check(parse_timestamp(v, nanos=t in NS_TYPES, tz=t in _TZ_TYPES), LONG_MIN, LONG_MAX)
        if t == UUID:
            return _uuid.UUID(v.strip())
        if isinstance(t, DecimalType):
            return _to_decimal(Decimal(v.strip()), t)
        return None
    if k == "boolean":
        return v if t == BOOLEAN else None
    if k == "date":
        if t == DATE:
            return _range_check(v, INT_MIN, INT_MAX)
        if t in (TIMESTAMP, TIMESTAMPTZ):
            return _range_check(v * 86_400_000_000, LONG_MIN, LONG_MAX)
        if t in NS_TYPES:
            return _range_check(v * 86_400_000_000_000, LONG_MIN, LONG_MAX)
        return None
    if k == "time":
        return v if t == TIME else None
    if k in ("timestamp", "timestamptz"):
        if t in (TIMESTAMP, TIMESTAMPTZ):
            return _range_check(v // 1000, LONG_MIN, LONG_MAX)
        if t in NS_TYPES:
            return _range_check(v, LONG_MIN, LONG_MAX)
        if t == DATE:
            return _range_check(v // 86_400_000_000_000, INT_MIN, INT_MAX)
        return None
    if k == "uuid":
        return v if t == UUID else None
    if k == "binary":
        if t == BINARY:
            return bytes(v)
        if isinstance(t, FixedType):
            return bytes(v) if len(v) == t.length else None
        return None
    return None


def _to_float(v: float, t: IcebergType) -> Any:
    if t == FLOAT:
        if math.isinf(v):
            # a float holds the infinities exactly (the reference calls a double infinity
            # above max / below min, which makes `c = double 'Infinity'` miss such rows)
            return v
        if v > _FLOAT32_MAX:
            return ABOVE_MAX
        if v < -_FLOAT32_MAX:
            return BELOW_MIN
        return struct.unpack("<f", struct.pack("<f", v))[0]
    return v

