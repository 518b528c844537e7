"""Parsers for the CLI's small text languages: types, column lists, partition terms, sort orders.

Term values produced here (:class:`PartitionTerm`, :class:`SortTerm`) are unbound: they name a
column and carry a transform. :func:`icectl.spec.partitioning.build_spec` and
:func:`icectl.spec.sorting.build_sort_order` bind them to a schema.
"""

from __future__ import annotations

from dataclasses import dataclass

from icectl.spec.transforms import Transform

__all__ = ["PartitionTerm", "SortTerm"]


@dataclass(frozen=True)
class PartitionTerm:
    """``transform(column) [AS name]`` before binding. ``column`` is a dotted column path."""

    column: str
    transform: Transform
    name: str | None = None


@dataclass(frozen=True)
class SortTerm:
    """``transform(column) [ASC|DESC] [NULLS FIRST|LAST]`` before binding.

    ``direction`` is ``"asc"``/``"desc"`` and ``null_order`` ``"nulls-first"``/``"nulls-last"``;
    None means the default (ascending; nulls first when ascending, last when descending).
    """

    column: str
    transform: Transform
    direction: str | None = None
    null_order: str | None = None
