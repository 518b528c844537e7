"""Filter expressions: the tree, literals, binding to a schema, NOT elimination, rendering.

Two forms of the same tree:

* **unbound** -- what the parser returns: :class:`Predicate` names its column by a dotted path
  (``term``) and carries :class:`Literal` values as typed (an integer, a decimal, a string ...).
* **bound** -- what :func:`bind` returns: :class:`BoundPredicate` holds the column's field id,
  full name and type, and its literal values already converted to the column's internal
  representation (see :mod:`icectl.spec.values`: ints for dates/times/timestamps, ``Decimal``,
  ``str``, ``bytes``, ``uuid.UUID`` ...). Everything an evaluator needs is a plain attribute:
  ``op``, ``field_id``, ``type``, ``literals``.

Both share :data:`TRUE`, :data:`FALSE`, :class:`And`, :class:`Or` and :class:`Not`. Build trees
with :func:`and_`, :func:`or_` and :func:`not_`, which fold constants away.

Literal conversion on binding follows the reference's ``Literal.to(type)``: an integer literal
fits int, long, float, double, date (days), time and timestamps (micros) and decimals; beyond
an int (or long) column's range it makes the comparison constant (``id < 3000000000`` on an int
column is always true); a string converts to date, time, timestamp(tz), uuid and decimal;
decimals keep their value (rescaled to the column's scale when that is exact). Additions to the
reference, documented in the filter help: a decimal or float literal also fits a float/double
column, and a ``date '...'`` literal fits a timestamp column (midnight).
"""

from __future__ import annotations

import enum
import math
import re
import struct
import uuid as _uuid
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation
from typing import Any, Iterable, Iterator

from icectl.errors import InvalidInput
from icectl.spec.schema import Schema
from icectl.spec.transforms import decimal_from_unscaled, decimal_unscaled, human_value
from icectl.spec.types import (
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMP_NS,
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
    format_time,
    format_timestamp,
    parse_date,
    parse_time,
    parse_timestamp,
)

__all__ = [
    "Operation", "Expression", "AlwaysTrue", "AlwaysFalse", "TRUE", "FALSE", "And", "Or", "Not",
    "Literal", "Predicate", "BoundPredicate", "and_", "or_", "not_", "bind", "rewrite_not",
    "referenced_field_ids", "predicates", "make_bound", "convert_literal", "render_value",
    "render_name", "is_bound", "ABOVE_MAX", "BELOW_MIN", "KEYWORDS", "LITERAL_KINDS",
    "UNARY_OPS", "LITERAL_OPS", "SET_OPS", "FLOAT_TYPES", "TIMESTAMP_TYPES", "NS_TYPES",
]

FLOAT_TYPES = (FLOAT, DOUBLE)
TIMESTAMP_TYPES = (TIMESTAMP, TIMESTAMPTZ, TIMESTAMP_NS, TIMESTAMPTZ_NS)
NS_TYPES = (TIMESTAMP_NS, TIMESTAMPTZ_NS)
_TZ_TYPES = (TIMESTAMPTZ, TIMESTAMPTZ_NS)
_FLOAT32_MAX = struct.unpack("<f", b"\xff\xff\x7f\x7f")[0]


# ----------------------------------------------------------------------------------------------
# Operations


class Operation(enum.Enum):
    IS_NULL = "is_null"
    NOT_NULL = "not_null"
    IS_NAN = "is_nan"
    NOT_NAN = "not_nan"
    LT = "lt"
    LT_EQ = "lt_eq"
    GT = "gt"
    GT_EQ = "gt_eq"
    EQ = "eq"
    NOT_EQ = "not_eq"
    IN = "in"
    NOT_IN = "not_in"
    STARTS_WITH = "starts_with"
    NOT_STARTS_WITH = "not_starts_with"

    def negate(self) -> "Operation":
        """The operation selecting exactly the rows this one rejects (nulls aside)."""
        return _NEGATE[self]

    def flip(self) -> "Operation":
        """The operation with its operands swapped (``a < b`` is ``b > a``)."""
        try:
            return _FLIP[self]
        except KeyError:
            raise ValueError(f"{self.name} has no flipped form") from None

    @property
    def is_unary(self) -> bool:
        return self in UNARY_OPS

    @property
    def is_set(self) -> bool:
        return self in SET_OPS

    @property
    def is_literal(self) -> bool:
        return self in LITERAL_OPS

    @property
    def symbol(self) -> str:
        return _SYMBOLS[self]


_NEGATE = {
    Operation.IS_NULL: Operation.NOT_NULL, Operation.NOT_NULL: Operation.IS_NULL,
    Operation.IS_NAN: Operation.NOT_NAN, Operation.NOT_NAN: Operation.IS_NAN,
    Operation.LT: Operation.GT_EQ, Operation.GT_EQ: Operation.LT,
    Operation.LT_EQ: Operation.GT, Operation.GT: Operation.LT_EQ,
    Operation.EQ: Operation.NOT_EQ, Operation.NOT_EQ: Operation.EQ,
    Operation.IN: Operation.NOT_IN, Operation.NOT_IN: Operation.IN,
    Operation.STARTS_WITH: Operation.NOT_STARTS_WITH,
    Operation.NOT_STARTS_WITH: Operation.STARTS_WITH,
}
_FLIP = {
    Operation.LT: Operation.GT, Operation.GT: Operation.LT,
    Operation.LT_EQ: Operation.GT_EQ, Operation.GT_EQ: Operation.LT_EQ,
    Operation.EQ: Operation.EQ, Operation.NOT_EQ: Operation.NOT_EQ,
}
_SYMBOLS = {
    Operation.IS_NULL: "is null", Operation.NOT_NULL: "is not null",
    Operation.IS_NAN: "is nan", Operation.NOT_NAN: "is not nan",
    Operation.LT: "<", Operation.LT_EQ: "<=", Operation.GT: ">", Operation.GT_EQ: ">=",
    Operation.EQ: "=", Operation.NOT_EQ: "!=", Operation.IN: "in", Operation.NOT_IN: "not in",
    Operation.STARTS_WITH: "starts with", Operation.NOT_STARTS_WITH: "not starts with",
}
UNARY_OPS = frozenset({Operation.IS_NULL, Operation.NOT_NULL, Operation.IS_NAN,
                       Operation.NOT_NAN})
SET_OPS = frozenset({Operation.IN, Operation.NOT_IN})
LITERAL_OPS = frozenset(set(Operation) - UNARY_OPS - SET_OPS)


# ----------------------------------------------------------------------------------------------
# The tree


class Expression:
    """Base of every expression node. ``a & b``, ``a | b`` and ``~a`` build and/or/not."""

    def __and__(self, other: "Expression") -> "Expression":
        return and_(self, other)

    def __or__(self, other: "Expression") -> "Expression":
        return or_(self, other)

    def __invert__(self) -> "Expression":
        return not_(self)

    def negate(self) -> "Expression":
        raise NotImplementedError


@dataclass(frozen=True)
class AlwaysTrue(Expression):
    def __str__(self) -> str:
        return "true"

    def negate(self) -> Expression:
        return FALSE


@dataclass(frozen=True)
class AlwaysFalse(Expression):
    def __str__(self) -> str:
        return "false"

    def negate(self) -> Expression:
        return TRUE


TRUE = AlwaysTrue()
FALSE = AlwaysFalse()


@dataclass(frozen=True)
class And(Expression):
    left: Expression
    right: Expression

    def __str__(self) -> str:
        return f"{_paren(self.left, Or)} and {_paren(self.right, Or)}"

    def negate(self) -> Expression:
        return Or(self.left.negate(), self.right.negate())


@dataclass(frozen=True)
class Or(Expression):
    left: Expression
    right: Expression

    def __str__(self) -> str:
        return f"{self.left} or {self.right}"

    def negate(self) -> Expression:
        return And(self.left.negate(), self.right.negate())


@dataclass(frozen=True)
class Not(Expression):
    child: Expression

    def __str__(self) -> str:
        return f"not ({self.child})"

    def negate(self) -> Expression:
        return self.child


def _paren(e: Expression, kind: type) -> str:
    return f"({e})" if isinstance(e, kind) else str(e)


def and_(*exprs: Expression) -> Expression:
    """The conjunction of any number of expressions; TRUE drops out, FALSE wins."""
    out: Expression = TRUE
    for e in exprs:
        if e is FALSE or isinstance(e, AlwaysFalse):
            return FALSE
        if isinstance(e, AlwaysTrue):
            continue
        out = e if isinstance(out, AlwaysTrue) else And(out, e)
    return out


def or_(*exprs: Expression) -> Expression:
    """The disjunction of any number of expressions; FALSE drops out, TRUE wins."""
    out: Expression = FALSE
    for e in exprs:
        if isinstance(e, AlwaysTrue):
            return TRUE
        if isinstance(e, AlwaysFalse):
            continue
        out = e if isinstance(out, AlwaysFalse) else Or(out, e)
    return out


def not_(e: Expression) -> Expression:
    """The negation of an expression; constants and double negation fold away."""
    if isinstance(e, AlwaysTrue):
        return FALSE
    if isinstance(e, AlwaysFalse):
        return TRUE
    if isinstance(e, Not):
        return e.child
    return Not(e)


# ----------------------------------------------------------------------------------------------
# Literals (unbound)

# kinds of literal a filter can hold, with the Python value each carries
#   integer: int (any size)       decimal: Decimal       float: float (never NaN)
#   string: str                   boolean: bool          date: int days
#   time: int micros              timestamp / timestamptz: int nanos from the epoch (UTC for tz)
#   uuid: uuid.UUID               binary: bytes
LITERAL_KINDS = ("integer", "decimal", "float", "string", "boolean", "date", "time",
                 "timestamp", "timestamptz", "uuid", "binary")


@dataclass(frozen=True)
class Literal:
    """A literal as written in a filter: a kind (see ``LITERAL_KINDS``) and a Python value."""

    kind: str
    value: Any

    def __post_init__(self) -> None:
        if self.kind not in LITERAL_KINDS:
            raise ValueError(f"unknown literal kind {self.kind!r}")
        if self.kind == "float" and math.isnan(self.value):
            raise InvalidInput("NaN cannot be used as a literal; use 'is nan' / 'is not nan'")

    def __str__(self) -> str:
        k, v = self.kind, self.value
        if k == "integer":
            return str(v)
        if k == "decimal":
            return format(v, "f")
        if k == "float":
            r = _render_float(v)
            return r if ("e" in r or "'" in r) else r + "e0"  # keeps the float kind
        if k == "string":
            return _quote(v)
        if k == "boolean":
            return "true" if v else "false"
        if k == "date":
            return f"date {_quote(format_date(v))}"
        if k == "time":
            return f"time {_quote(format_time(v))}"
        if k == "timestamp":
            return f"timestamp {_quote(_ts_text(v, False))}"
        if k == "timestamptz":
            return f"timestamptz {_quote(_ts_text(v, True))}"
        if k == "uuid":
            return f"uuid {_quote(str(v))}"
        return _render_binary(v)


def _ts_text(nanos: int, tz: bool) -> str:
    if nanos % 1000 == 0:
        return format_timestamp(nanos // 1000, nanos=False, tz=tz)
    return format_timestamp(nanos, nanos=True, tz=tz)


def _quote(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _render_float(v: float) -> str:
    if math.isinf(v):
        return "double 'Infinity'" if v > 0 else "double '-Infinity'"
    r = repr(float(v))
    return r


def _render_binary(b: bytes) -> str:
    return "X'" + bytes(b).hex().upper() + "'"


# ----------------------------------------------------------------------------------------------
# Predicates


_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
# words of the filter language that must be quoted when used as a column name
KEYWORDS = frozenset({"and", "or", "not", "in", "is", "between", "like", "null", "true", "false"})


def render_name(name: str) -> str:
    """A dotted column name as filter text, quoting parts that need it."""
    out = []
    for part in name.split("."):
        if _PLAIN_NAME.fullmatch(part) and part.lower() not in KEYWORDS:
            out.append(part)
        else:
            out.append("`" + part.replace("`", "``") + "`")
    return ".".join(out)


def _render_pred(op: Operation, name: str, lits: list[str]) -> str:
    col = render_name(name)
    if op in UNARY_OPS:
        return f"{col} {op.symbol}"
    if op in SET_OPS:
        return f"{col} {op.symbol} ({', '.join(lits)})"
    return f"{col} {op.symbol} {lits[0]}"


@dataclass(frozen=True)
class Predicate(Expression):
    """An unbound predicate: ``term`` is a dotted column path, ``literals`` as typed."""

    op: Operation
    term: str
    literals: tuple[Literal, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "literals", tuple(self.literals))
        n = len(self.literals)
        if self.op in UNARY_OPS and n:
            raise ValueError(f"{self.op.name} takes no literal")
        if self.op in LITERAL_OPS and n != 1:
            raise ValueError(f"{self.op.name} takes exactly one literal")
        if self.op in SET_OPS and n == 0:
            raise ValueError(f"{self.op.name} needs at least one literal")

    @property
    def literal(self) -> Literal:
        return self.literals[0]

    def negate(self) -> Expression:
        return Predicate(self.op.negate(), self.term, self.literals)

    def __str__(self) -> str:
        return _render_pred(self.op, self.term, [str(lit) for lit in self.literals])


@dataclass(frozen=True)
class BoundPredicate(Expression):
    """A predicate bound to a field: values in the field type's internal representation.

    For set operations ``literals`` holds distinct values (at least two, in first-seen order);
    for literal operations exactly one; for unary operations none. Projections produce bound
    predicates on partition fields the same way (``field_id`` = partition field id).
    """

    op: Operation
    field_id: int
    name: str
    type: IcebergType
    literals: tuple = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "literals", tuple(self.literals))

    @property
    def literal(self) -> Any:
        return self.literals[0]

    @property
    def literal_set(self) -> frozenset:
        return frozenset(self.literals)

    def negate(self) -> Expression:
        return BoundPredicate(self.op.negate(), self.field_id, self.name, self.type, self.literals)

    def __str__(self) -> str:
        return _render_pred(self.op, self.name, [render_value(self.type, v)
                                                 for v in self.literals])


def is_bound(expr: Expression) -> bool:
    """Whether an expression holds bound predicates (constants count as bound)."""
    for p in predicates(expr):
        return isinstance(p, BoundPredicate)
    return True


def render_value(t: IcebergType, v: Any) -> str:
    """A value of a type as filter text that parses and binds back to the same value."""
    if t == BOOLEAN:
        return "true" if v else "false"
    if t in (INT, LONG):
        return str(int(v))
    if t in FLOAT_TYPES:
        if math.isinf(v) or math.isnan(v):
            return _render_float(float(v))
        return human_value(t, float(v))  # Java's shortest digits; parses back to the value
    if isinstance(t, DecimalType):
        return format(v, "f")
    if t == DATE:
        return f"date {_quote(format_date(v))}"
    if t == TIME:
        return f"time {_quote(format_time(v))}"
    if t in TIMESTAMP_TYPES:
        nanos = v if t in NS_TYPES else v * 1000
        return (f"{'timestamptz' if t in _TZ_TYPES else 'timestamp'} "
                f"{_quote(_ts_text(nanos, t in _TZ_TYPES))}")
    if t == STRING:
        return _quote(v)
    if t == UUID:
        return f"uuid {_quote(str(v))}"
    if t == BINARY or isinstance(t, FixedType):
        return _render_binary(v)
    return _quote(str(v))


def make_bound(op: Operation, field_id: int, name: str, t: IcebergType,
               values: Iterable[Any] = ()) -> Expression:
    """A bound predicate from already converted values, normalized like the reference's binder:
    set operations drop duplicates, ``in`` of one value becomes ``=`` (``not in`` ``!=``), and
    ``in ()`` is false (``not in ()`` true)."""
    vals = tuple(values)
    if op in SET_OPS:
        distinct: list[Any] = []
        seen: set = set()
        for v in vals:
            key = _set_key(v)
            if key not in seen:
                seen.add(key)
                distinct.append(v)
        if not distinct:
            return FALSE if op == Operation.IN else TRUE
        if len(distinct) == 1:
            single = Operation.EQ if op == Operation.IN else Operation.NOT_EQ
            return BoundPredicate(single, field_id, name, t, (distinct[0],))
        return BoundPredicate(op, field_id, name, t, tuple(distinct))
    return BoundPredicate(op, field_id, name, t, vals)


def _set_key(v: Any) -> Any:
    # -0.0 and 0.0 are distinct values for the reference's comparators
    if isinstance(v, float) and v == 0.0:
        return ("float-zero", math.copysign(1.0, v))
    return v


# ----------------------------------------------------------------------------------------------
# Walking


def predicates(expr: Expression) -> Iterator[Expression]:
    """Every predicate (bound or unbound) in an expression, left to right."""
    if isinstance(expr, (And, Or)):
        yield from predicates(expr.left)
        yield from predicates(expr.right)
    elif isinstance(expr, Not):
        yield from predicates(expr.child)
    elif isinstance(expr, (Predicate, BoundPredicate)):
        yield expr


def referenced_field_ids(expr: Expression) -> set[int]:
    """Field ids used by a bound expression."""
    out = set()
    for p in predicates(expr):
        if not isinstance(p, BoundPredicate):
            raise TypeError("referenced_field_ids needs a bound expression")
        out.add(p.field_id)
    return out


def rewrite_not(expr: Expression) -> Expression:
    """The same expression without ``Not`` nodes (negations pushed into the predicates)."""
    if isinstance(expr, Not):
        return rewrite_not(expr.child.negate())
    if isinstance(expr, And):
        return and_(rewrite_not(expr.left), rewrite_not(expr.right))
    if isinstance(expr, Or):
        return or_(rewrite_not(expr.left), rewrite_not(expr.right))
    return expr


# ----------------------------------------------------------------------------------------------
# Binding


class _Bound(enum.Enum):
    ABOVE_MAX = "above max"
    BELOW_MIN = "below min"


ABOVE_MAX = _Bound.ABOVE_MAX
BELOW_MIN = _Bound.BELOW_MIN


def bind(expr: Expression, schema: Schema, case_sensitive: bool = False) -> Expression:
    """Bind every predicate of ``expr`` to ``schema``; InvalidInput names column and problem."""
    if isinstance(expr, (AlwaysTrue, AlwaysFalse, BoundPredicate)):
        return expr
    if isinstance(expr, And):
        return and_(bind(expr.left, schema, case_sensitive), bind(expr.right, schema, case_sensitive))
    if isinstance(expr, Or):
        return or_(bind(expr.left, schema, case_sensitive), bind(expr.right, schema, case_sensitive))
    if isinstance(expr, Not):
        return not_(bind(expr.child, schema, case_sensitive))
    if isinstance(expr, Predicate):
        return _bind_predicate(expr, schema, case_sensitive)
    raise TypeError(f"cannot bind {expr!r}")


def _bind_predicate(pred: Predicate, schema: Schema, case_sensitive: bool) -> Expression:
    field = schema.find_field_or_none(pred.term, case_sensitive)
    if field is None:
        hint = ""
        if case_sensitive and schema.find_field_or_none(pred.term, False) is not None:
            hint = " (names are case sensitive here)"
        raise InvalidInput(f"filter column {pred.term!r} not found in the table schema{hint}")
    fid = field.field_id
    name = schema.column_name(fid)
    parent = schema.parent_id(fid)
    while parent is not None:
        ptype = schema.find_field(parent).type
        if isinstance(ptype, (ListType, MapType)):
            raise InvalidInput(f"filter column {name!r} is inside a list or map; filters can "
                               "only use columns reached through structs")
        parent = schema.parent_id(parent)
    t = field.type
    if not isinstance(t, PrimitiveType):
        raise InvalidInput(f"filter column {name!r} is a {type(t).__name__.replace('Type', '').lower()}"
                           "; only primitive columns can be compared")
    op = pred.op
    if op in (Operation.IS_NULL, Operation.NOT_NULL):
        if field.required:
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
            if not isinstance(v, _Bound):
                values.append(v)
        return make_bound(op, fid, name, t, values)
    v = _convert_or_fail(pred.literal, t, name)
    if v is ABOVE_MAX:
        return TRUE if op in (Operation.LT, Operation.LT_EQ, Operation.NOT_EQ) else FALSE
    if v is BELOW_MIN:
        return TRUE if op in (Operation.GT, Operation.GT_EQ, Operation.NOT_EQ) else FALSE
    return BoundPredicate(op, fid, name, t, (v,))


def _convert_or_fail(lit: Literal, t: IcebergType, name: str) -> Any:
    try:
        v = convert_literal(lit, t)
    except (ValueError, InvalidOperation, OverflowError) as e:
        raise InvalidInput(f"cannot use {lit} with column {name!r} of type {t}: {e}") from None
    if v is None:
        raise InvalidInput(f"cannot compare column {name!r} of type {t} with "
                           f"{_KIND_NAMES.get(lit.kind, lit.kind)} {lit}")
    return v


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
    """A decimal at the column's scale when that loses nothing; otherwise unchanged."""
    try:
        return decimal_from_unscaled(decimal_unscaled(d, t.scale), t.scale)
    except ValueError:
        return d


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
            r = _range_check(v, LONG_MIN, LONG_MAX)
            return r if isinstance(r, _Bound) else _range_check(v * 1000, LONG_MIN, LONG_MAX)
        if t in FLOAT_TYPES:
            return _to_float(float(v), t)
        if isinstance(t, DecimalType):
            return decimal_from_unscaled(v * 10**t.scale, t.scale)
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
            return _round_half_up(Decimal(repr(v)), t.scale)
        return None
    if k == "string":
        if t == STRING:
            return v
        if t == DATE:
            return parse_date(v)
        if t == TIME:
            return parse_time(v)
        if t in TIMESTAMP_TYPES:
            return parse_timestamp(v, nanos=t in NS_TYPES, tz=t in _TZ_TYPES)
        if t == UUID:
            return _uuid.UUID(v.strip())
        if isinstance(t, DecimalType):
            return _to_decimal(Decimal(v.strip()), t)
        return None
    if k == "boolean":
        return v if t == BOOLEAN else None
    if k == "date":
        if t == DATE:
            return v
        if t in (TIMESTAMP, TIMESTAMPTZ):
            return v * 86_400_000_000
        if t in NS_TYPES:
            return v * 86_400_000_000_000
        return None
    if k == "time":
        return v if t == TIME else None
    if k in ("timestamp", "timestamptz"):
        if t in (TIMESTAMP, TIMESTAMPTZ):
            return v // 1000
        if t in NS_TYPES:
            return v
        if t == DATE:
            return v // 86_400_000_000_000
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
        if v > _FLOAT32_MAX:
            return ABOVE_MAX
        if v < -_FLOAT32_MAX:
            return BELOW_MIN
        return struct.unpack("<f", struct.pack("<f", v))[0]
    return v
