"""Filter expressions: the tree, literals, binding to a schema, NOT elimination, rendering.

Two forms of the same tree:

* **unbound** -- what the parser returns: :class:`Predicate` names its column by a dotted path
  (``term``) and carries :class:`Literal` values as typed (an integer, a decimal, a string ...).
* **bound** -- what :func:`icectl.expr.binding.bind` returns: :class:`BoundPredicate` holds the column's field id,
  full name and type, and its literal values already converted to the column's internal
  representation (see :mod:`icectl.spec.values`: ints for dates/times/timestamps, ``Decimal``,
  ``str``, ``bytes``, ``uuid.UUID`` ...). Everything an evaluator needs is a plain attribute:
  ``op``, ``field_id``, ``type``, ``literals``.

Both share :data:`TRUE`, :data:`FALSE`, :class:`And`, :class:`Or` and :class:`Not`. Build trees
with :func:`and_`, :func:`or_` and :func:`not_`, which fold constants away and join many terms
into balanced trees. Trees may still be deep (a user can nest parentheses); every pass over them
-- equality, hashing, rendering, :func:`rewrite_not` here, binding (:mod:`icectl.expr.binding`),
projections and evaluators -- walks an explicit stack (:mod:`icectl.expr.visitor`), never the
Python call stack.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import zip_longest
from typing import Any, Iterable, Iterator

from icectl.errors import InvalidInput
from icectl.expr.ordering import value_key
from icectl.expr.rendering import (
    FLOAT_TYPES,
    KEYWORDS,
    NS_TYPES,
    TIMESTAMP_TYPES,
    quote,
    render_binary,
    render_float,
    render_name,
    render_value,
    timestamp_text,
)
from icectl.expr import visitor as _kinds
from icectl.expr.visitor import balanced, leaves, walk
from icectl.spec.operations import LITERAL_OPS, SET_OPS, UNARY_OPS, Operation
from icectl.spec.types import IcebergType
from icectl.spec.values import format_date, format_time

__all__ = [
    "Operation", "Expression", "AlwaysTrue", "AlwaysFalse", "TRUE", "FALSE", "And", "Or", "Not",
    "Literal", "Predicate", "BoundPredicate", "and_", "or_", "not_", "rewrite_not",
    "referenced_field_ids", "predicates", "make_bound", "render_value",
    "render_name", "is_bound", "KEYWORDS", "LITERAL_KINDS",
    "UNARY_OPS", "LITERAL_OPS", "SET_OPS", "FLOAT_TYPES", "TIMESTAMP_TYPES", "NS_TYPES",
]


# ----------------------------------------------------------------------------------------------
# The tree


class Expression:
    """Base of every expression node. ``a & b``, ``a | b`` and ``~a`` build and/or/not."""

    node_kind = _kinds.LEAF  # what the walk (visitor.py) takes it for

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
    node_kind = _kinds.ALWAYS_TRUE

    def __str__(self) -> str:
        return "true"

    def negate(self) -> Expression:
        return FALSE


@dataclass(frozen=True)
class AlwaysFalse(Expression):
    node_kind = _kinds.ALWAYS_FALSE

    def __str__(self) -> str:
        return "false"

    def negate(self) -> Expression:
        return TRUE


TRUE = AlwaysTrue()
FALSE = AlwaysFalse()


class _Node(Expression):
    """And, Or and Not: equality, hashing and text without recursion (trees may be deep)."""

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if type(other) is not type(self):
            return NotImplemented
        for x, y in zip_longest(walk(self), walk(other)):
            if type(x) is not type(y):
                return False
            if type(x) not in _INNER and x != y:
                return False
        return True

    def __hash__(self) -> int:
        return hash(tuple(type(n).__name__ if type(n) in _INNER else n for n in walk(self)))

    def __str__(self) -> str:
        return _cached_text(self, render)

    def __repr__(self) -> str:
        return f"{type(self).__name__}[{render(self)}]"


@dataclass(frozen=True, eq=False, repr=False)
class And(_Node):
    node_kind = _kinds.AND

    left: Expression
    right: Expression

    def negate(self) -> Expression:
        return rewrite_not(Not(self))


@dataclass(frozen=True, eq=False, repr=False)
class Or(_Node):
    node_kind = _kinds.OR

    left: Expression
    right: Expression

    def negate(self) -> Expression:
        return rewrite_not(Not(self))


@dataclass(frozen=True, eq=False, repr=False)
class Not(_Node):
    node_kind = _kinds.NOT

    child: Expression

    def negate(self) -> Expression:
        return self.child


_INNER = (And, Or, Not)


def _cached_text(e: Expression, make: Any) -> str:
    """The text of an immutable node, rendered once (a plan prints one residual per file)."""
    got = e.__dict__.get("_text")
    if got is None:
        got = make(e)
        object.__setattr__(e, "_text", got)
    return got


def render(expr: Expression) -> str:
    """An expression as filter text (``and`` operands that are ``or`` in parentheses), built
    in one pass over an explicit stack: linear in the output, whatever the depth."""
    out: list[str] = []
    stack: list[Any] = [expr]
    while stack:
        item = stack.pop()
        if type(item) is str:
            out.append(item)
            continue
        cls = type(item)
        if cls is And:
            parts: list[Any] = [*_paren(item.left), " and ", *_paren(item.right)]
        elif cls is Or:
            parts = [item.left, " or ", item.right]
        elif cls is Not:
            parts = ["not (", item.child, ")"]
        else:
            out.append(str(item))
            continue
        stack.extend(reversed(parts))
    return "".join(out)


def _paren(e: Expression) -> list[Any]:
    return ["(", e, ")"] if type(e) is Or else [e]


def and_(*exprs: Expression) -> Expression:
    """The conjunction of any number of expressions (a balanced tree, so depth grows with the
    logarithm of the count); TRUE drops out, FALSE wins."""
    if len(exprs) == 2:  # the common case, without building a list
        a, b = exprs
        if isinstance(a, AlwaysFalse) or isinstance(b, AlwaysTrue):
            return a
        if isinstance(b, AlwaysFalse) or isinstance(a, AlwaysTrue):
            return b
        return And(a, b)
    terms = []
    for e in exprs:
        if isinstance(e, AlwaysFalse):
            return FALSE
        if not isinstance(e, AlwaysTrue):
            terms.append(e)
    return balanced(terms, And) if terms else TRUE


def or_(*exprs: Expression) -> Expression:
    """The disjunction of any number of expressions (a balanced tree); FALSE drops out, TRUE
    wins."""
    if len(exprs) == 2:  # the common case, without building a list
        a, b = exprs
        if isinstance(a, AlwaysTrue) or isinstance(b, AlwaysFalse):
            return a
        if isinstance(b, AlwaysTrue) or isinstance(a, AlwaysFalse):
            return b
        return Or(a, b)
    terms = []
    for e in exprs:
        if isinstance(e, AlwaysTrue):
            return TRUE
        if not isinstance(e, AlwaysFalse):
            terms.append(e)
    return balanced(terms, Or) if terms else FALSE


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
            r = render_float(v)
            return r if ("e" in r or "'" in r) else r + "e0"  # keeps the float kind
        if k == "string":
            return quote(v)
        if k == "boolean":
            return "true" if v else "false"
        if k == "date":
            return f"date {quote(format_date(v))}"
        if k == "time":
            return f"time {quote(format_time(v))}"
        if k == "timestamp":
            return f"timestamp {quote(timestamp_text(v, False))}"
        if k == "timestamptz":
            return f"timestamptz {quote(timestamp_text(v, True))}"
        if k == "uuid":
            return f"uuid {quote(str(v))}"
        return render_binary(v)


# ----------------------------------------------------------------------------------------------
# Predicates


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
    def literal_keys(self) -> frozenset:
        """The :func:`~icectl.expr.ordering.value_key` of every literal, computed once: ``in``
        tests membership in constant time however long the list."""
        got = self.__dict__.get("_literal_keys")
        if got is None:
            got = frozenset(value_key(v) for v in self.literals)
            object.__setattr__(self, "_literal_keys", got)
        return got

    def negate(self) -> Expression:
        return BoundPredicate(self.op.negate(), self.field_id, self.name, self.type, self.literals)

    def __str__(self) -> str:
        return _cached_text(self, lambda p: _render_pred(
            p.op, p.name, [render_value(p.type, v) for v in p.literals]))


def is_bound(expr: Expression) -> bool:
    """Whether an expression holds bound predicates (constants count as bound)."""
    for p in predicates(expr):
        return isinstance(p, BoundPredicate)
    return True


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
            key = value_key(v)  # -0.0 and 0.0 stay distinct, as for the reference
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


# ----------------------------------------------------------------------------------------------
# Walking


def predicates(expr: Expression) -> Iterator[Expression]:
    """Every predicate (bound or unbound) in an expression, left to right."""
    for node in leaves(expr):
        if isinstance(node, (Predicate, BoundPredicate)):
            yield node


def referenced_field_ids(expr: Expression) -> set[int]:
    """Field ids used by a bound expression."""
    out = set()
    for p in predicates(expr):
        if not isinstance(p, BoundPredicate):
            raise TypeError("referenced_field_ids needs a bound expression")
        out.add(p.field_id)
    return out


def rewrite_not(expr: Expression) -> Expression:
    """The same expression without ``Not`` nodes (negations pushed into the predicates), in one
    pass over an explicit stack carrying whether the node is negated."""
    if not any(type(n) is Not for n in walk(expr)):
        return expr
    results: list[Expression] = []
    stack: list[tuple[Expression, bool, bool]] = [(expr, False, False)]
    while stack:
        node, negated, children_done = stack.pop()
        cls = type(node)
        if cls is Not:
            stack.append((node.child, not negated, False))  # type: ignore[attr-defined]
        elif cls is And or cls is Or:
            if not children_done:
                stack.append((node, negated, True))
                stack.append((node.right, negated, False))  # type: ignore[attr-defined]
                stack.append((node.left, negated, False))  # type: ignore[attr-defined]
            else:
                right = results.pop()
                left = results.pop()
                conj = (cls is And) != negated
                results.append(and_(left, right) if conj else or_(left, right))
        else:
            results.append(node.negate() if negated else node)
    return results[0]

