"""The one value order every evaluator uses, and the ``in`` pruning limit.

Value order is the reference's comparators': numbers numerically with ``-0.0 < 0.0`` and NaN
above every number, strings by code point, binary as unsigned bytes, decimals by value, uuids
as the reference's unsigned 128-bit order (``uuid.UUID`` compares that way), booleans false
first. :func:`value_key` maps a value of any type to a key with that order, so that equal keys
mean equal values (sets of keys test ``in`` membership).

UUID bounds in metadata may have been written under another order: Iceberg Java up to 1.10
compares uuids as two *signed* longs (``java.util.UUID.compareTo``; it builds manifest partition
summaries that way), so its lower bound may sort after values it covers in the unsigned order
(``8000...`` before ``0000...``, ``...-8000-...`` before ``...-0000-...`` in the second long). A
pair does not say which order made it, so :func:`uuid_bounds` widens it to the unsigned range
covering both readings; every evaluator reads uuid bounds through it. Java 1.10 itself reads
bounds with the signed order, also the unsigned ones Parquet writes; icectl does not follow it
there (that prunes files holding matching rows), so ``plan`` may list other files than Java's
``planFiles`` for ordering predicates on uuid columns.
"""

from __future__ import annotations

import uuid
from typing import Any

from icectl.spec.partition_identity import float_key

__all__ = ["value_key", "compare", "is_nan", "uuid_bounds", "IN_PREDICATE_LIMIT"]

# the reference does not prune on `in` lists longer than this (InclusiveMetricsEvaluator,
# ManifestEvaluator: IN_PREDICATE_LIMIT = 200)
IN_PREDICATE_LIMIT = 200



def value_key(v: Any) -> Any:
    """A sort and membership key giving the reference's order within one type."""
    if isinstance(v, float):
        return float_key(v)
    return v


def compare(a: Any, b: Any) -> int:
    """-1, 0 or 1 as ``a`` sorts before, with or after ``b`` (see :func:`value_key`)."""
    ka, kb = value_key(a), value_key(b)
    return -1 if ka < kb else (1 if ka > kb else 0)


def is_nan(v: Any) -> bool:
    return isinstance(v, float) and v != v


_SIGN_BITS = (1 << 127) | (1 << 63)  # x ^ _SIGN_BITS orders as java.util.UUID orders x
_ALL = (1 << 128) - 1


def _min_xor(a: int, b: int, m: int) -> int:
    """The least ``y ^ m`` for ``a <= y <= b`` (bit by bit from the top)."""
    prefix = 0
    for i in range(127, -1, -1):
        bit = 1 << i
        cand = prefix | (m & bit)  # y's bit equal to m's: a 0 in the result
        if cand <= b and (cand | (bit - 1)) >= a:
            prefix = cand
        else:
            prefix = cand ^ bit
    return prefix ^ m


def uuid_bounds(lower: Any, upper: Any) -> tuple[Any, Any]:
    """Unsigned bounds covering every uuid that ``lower``/``upper`` may bound, whichever of the
    unsigned and the reference's signed order wrote them; (None, None) when not both known."""
    if not isinstance(lower, uuid.UUID) or not isinstance(upper, uuid.UUID):
        return None, None
    lo, hi = lower.int, upper.int
    a, b = lo ^ _SIGN_BITS, hi ^ _SIGN_BITS  # the pair in the signed order's terms
    if a > b:  # not a signed pair: the unsigned order wrote it
        return (lower, upper) if lo <= hi else (None, None)
    if lo >> 64 == hi >> 64 or (not lo >> 63 & 1 and hi >> 63 & 1):
        if lo <= hi:  # the signed reading covers nothing outside [lo, hi] (same order there)
            return lower, upper
    smin = _min_xor(a, b, _SIGN_BITS)
    smax = _ALL ^ _min_xor(a, b, _SIGN_BITS ^ _ALL)
    if lo <= hi:
        smin, smax = min(smin, lo), max(smax, hi)
    return uuid.UUID(int=smin), uuid.UUID(int=smax)
