"""When two partition tuples are the same partition: the one home of partition identity.

The reference keys every partition map by ``StructLikeWrapper``: values compared with the
type's comparator and hashed with the type's Java hash. For float and double that is
``Float.compare``/``Double.compare`` and ``floatToIntBits``/``doubleToLongBits``: every NaN (any
sign, any payload) is one partition, and -0.0 and 0.0 are two. Python's tuples say the
opposite on both counts (``nan != nan`` unless it is the same object; ``-0.0 == 0.0`` with equal
hashes), so a dict or set keyed by raw partition tuples loses NaN partitions (a delete never
meets its data file) and merges the signed zeros (rows of one written into the other).

Every map, set or comparison of partition tuples in icectl goes through :func:`partition_key`
(or :func:`same_partition`); tests/table/test_partition_identity.py checks that no map is
keyed by raw partition tuples.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

__all__ = ["partition_key", "same_partition", "float_key", "NAN_KEY"]

# the key of every NaN; it sorts after the keys of numbers, as NaN sorts in the reference
NAN_KEY = (1, 0.0, 0.0)


def float_key(v: float) -> tuple:
    """The identity (and order) key of a float: NaN one key after all numbers, -0.0 before and
    apart from 0.0."""
    if v != v:
        return NAN_KEY
    return (0, v, math.copysign(1.0, v))


def partition_key(partition: Iterable[Any]) -> tuple:
    """A hashable key equal for two partition tuples exactly when the reference takes them
    for the same partition: the tuple itself unless a float is among its values."""
    values = tuple(partition)
    for v in values:
        if isinstance(v, float):
            return tuple(float_key(x) if isinstance(x, float) else x for x in values)
    return values


def same_partition(a: Iterable[Any], b: Iterable[Any]) -> bool:
    """Whether two partition tuples (or two one-value tuples) are the same partition."""
    return partition_key(a) == partition_key(b)
