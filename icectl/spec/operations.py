"""The operations of a predicate (``<``, ``in``, ``starts with``, ``is null`` ...).

They live in the model, below the filter language (:mod:`icectl.expr.expressions` builds its
predicates on them), because transforms speak them too: a transform projects a predicate's
operation and values onto its partition values (:meth:`icectl.spec.transforms.Transform.project`).
"""

from __future__ import annotations

import enum

__all__ = ["Operation", "UNARY_OPS", "SET_OPS", "LITERAL_OPS"]


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
