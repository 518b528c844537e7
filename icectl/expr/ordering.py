"""The one value order every evaluator uses, and the ``in`` pruning limit.

Value order is the reference's comparators': numbers numerically with ``-0.0 < 0.0`` and NaN
above every number, strings by code point, binary as unsigned bytes, decimals by value, uuids
as the reference's unsigned 128-bit order (``uuid.UUID`` compares that way), booleans false
first. :func:`value_key` maps a value of any type to a key with that order, so that equal keys
mean equal values (sets of keys test ``in`` membership).
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["value_key", "compare", "is_nan", "IN_PREDICATE_LIMIT"]

# the reference does not prune on `in` lists longer than this (InclusiveMetricsEvaluator,
# ManifestEvaluator: IN_PREDICATE_LIMIT = 200)
IN_PREDICATE_LIMIT = 200

_NAN_KEY = (1, 0.0, 0.0)


def value_key(v: Any) -> Any:
    """A sort and membership key giving the reference's order within one type."""
    if isinstance(v, float):
        if v != v:
            return _NAN_KEY
        return (0, v, math.copysign(1.0, v))
    return v


def compare(a: Any, b: Any) -> int:
    """-1, 0 or 1 as ``a`` sorts before, with or after ``b`` (see :func:`value_key`)."""
    ka, kb = value_key(a), value_key(b)
    return -1 if ka < kb else (1 if ka > kb else 0)


def is_nan(v: Any) -> bool:
    return isinstance(v, float) and v != v
