"""Residuals: the part of a row filter left to check on the rows of one partition (the
reference's ``ResidualEvaluator``).

For each predicate on a partition source column: when its strict projection holds for the
partition value the predicate is true for every row (it drops out); when its inclusive
projection fails it is false; otherwise it stays.

Both projections are decided with the *row* semantics
(:func:`~icectl.expr.eval_rows.value_matches` without ``nulls_first``), not the reference's
partition comparator, which sorts a null before every value and NaN after every number. That
comparator is right for pruning (it only keeps
more), but not for proving that every row matches: for a null partition value the reference
concludes ``true`` for ``x < 5``, ``x != 5``, ``x not in (...)`` and ``not starts with`` although
no row of that partition (every one of them null in ``x``) satisfies them, and for a NaN
partition ``true`` for ``x > 5``. Here a null partition value (of a transform other than void,
so every row's source value is null) leaves ``false`` for every predicate but ``is null`` and
``is not nan``, and a NaN partition value ``false`` for every comparison but ``!=``. So a
residual of ``true`` always means every row matches; it differs from Java's ResidualEvaluator
on such partitions on purpose (the planned files are the same).

:meth:`ResidualEvaluator.residual_for` is the scalar form (one partition);
:meth:`ResidualEvaluator.residuals_for` the columnar form (a list of partitions, each distinct
tuple evaluated once).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from icectl.expr.eval_base import prepare
from icectl.expr.eval_rows import value_matches
from icectl.spec.partition_identity import partition_key
from icectl.expr.expressions import (
    FALSE,
    TRUE,
    AlwaysFalse,
    AlwaysTrue,
    And,
    BoundPredicate,
    Expression,
    Or,
)
from icectl.expr.projection import map_predicates, project, project_strict
from icectl.spec.partitioning import PartitionSpec
from icectl.spec.schema import Schema
from icectl.spec.types import IcebergType

__all__ = ["ResidualEvaluator", "holds"]


def holds(projected: Expression | None, value: Any) -> bool:
    """Whether a projected predicate (or constant) holds for one partition value, with the
    row semantics: a null satisfies only ``is null`` and ``is not nan``, NaN no comparison but
    ``!=`` and ``not in``."""
    if isinstance(projected, AlwaysTrue):
        return True
    if isinstance(projected, AlwaysFalse) or projected is None:
        return False
    if isinstance(projected, And):  # truncate of ints/longs guards wrapped values (projection.py)
        return holds(projected.left, value) and holds(projected.right, value)
    if isinstance(projected, Or):
        return holds(projected.left, value) or holds(projected.right, value)
    assert isinstance(projected, BoundPredicate)
    return value_matches(projected, value)


_MISSING = object()


def _residual_predicate(ev: "ResidualEvaluator", partition: Any, p: BoundPredicate) -> Expression:
    for pf, ptype, pos in ev.fields.get(p.field_id, ()):
        value = ev.value(partition, pf, pos)
        if value is _MISSING:  # a tuple without this field: nothing known
            continue
        if value is None and pf.transform.keeps_nulls:
            # every row of the partition is null in the source column: decided outright
            return TRUE if value_matches(p, None) else FALSE
        strict, inclusive = ev.projections(p, pf, ptype)
        if strict is not None and holds(strict, value):
            return TRUE
        if inclusive is not None and not holds(inclusive, value):
            return FALSE
    return p


class ResidualEvaluator:
    """The part of a row filter left to check on the rows of a given partition."""

    def __init__(self, spec: PartitionSpec, expr: Expression, schema: Schema,
                 case_sensitive: bool = False):
        self.spec = spec
        self.expr = prepare(expr, schema, case_sensitive)
        ptype = spec.partition_type(schema)
        self.fields: dict[int, list[tuple[Any, IcebergType, int]]] = {}
        for pos, (pf, nf) in enumerate(zip(spec.fields, ptype.fields())):
            if len(pf.all_source_ids) == 1:
                self.fields.setdefault(pf.source_id, []).append((pf, nf.type, pos))
        self._projected: dict[tuple[int, int], tuple] = {}

    def projections(self, p: BoundPredicate, pf: Any, ptype: IcebergType) -> tuple:
        """(strict, inclusive) projections of ``p`` through ``pf``, computed once each."""
        key = (id(p), pf.field_id)
        got = self._projected.get(key)
        if got is None:
            got = self._projected[key] = (project_strict(pf.transform, pf, ptype, p),
                                          project(pf.transform, pf, ptype, p), p)
        return got[:2]

    @staticmethod
    def value(partition: Any, pf: Any, pos: int) -> Any:
        if isinstance(partition, Mapping):
            return partition.get(pf.field_id, _MISSING)
        return partition[pos] if pos < len(partition) else _MISSING

    def residual_for(self, partition: tuple | Mapping[int, Any]) -> Expression:
        """Scalar. ``partition``: values in spec field order (or a dict of partition field id
        -> value)."""
        if not self.spec.fields:
            return self.expr
        return map_predicates(self.expr, lambda p: _residual_predicate(self, partition, p))

    def residuals_for(self, partitions: Sequence[tuple]) -> list:
        """Columnar: :meth:`residual_for` of every partition tuple of a list."""
        seen: dict[tuple, Expression] = {}
        out = []
        for part in partitions:
            key = partition_key(part)
            r = seen.get(key)
            if r is None:
                r = seen[key] = self.residual_for(part)
            out.append(r)
        return out
