"""Scalar evaluators: rows, manifest partition summaries, file metrics, residuals.

These evaluate one object at a time and follow the reference's rules exactly; the planner's
vectorized variants must agree with them. Each pruning evaluator returns ``(might_match,
reason)`` where ``reason`` is a short human sentence (``"lower bound of id (1000) > 500"``)
saying which summary or bound ruled the object out (or why it was kept).

Value order is the reference's: numbers numerically with ``-0.0 < 0.0`` and NaN above every
number (bounds never hold NaN, except a NaN lower bound which marks unreliable bounds), strings
by code point, binary as unsigned bytes.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping

from icectl.expr.expressions import (
    FALSE,
    TRUE,
    AlwaysFalse,
    AlwaysTrue,
    And,
    BoundPredicate,
    Expression,
    Not,
    Operation,
    Or,
    Predicate,
    and_,
    bind,
    or_,
    predicates,
    rewrite_not,
)
from icectl.expr.projection import project, project_strict
from icectl.spec.manifests import DataFile, ManifestFile
from icectl.spec.partitioning import PartitionSpec
from icectl.spec.schema import Schema
from icectl.spec.types import DOUBLE, FLOAT, IcebergType, StructType
from icectl.spec.values import from_bytes, to_human

__all__ = [
    "value_key", "evaluate_row", "ManifestEvaluator", "MetricsEvaluator",
    "StrictMetricsEvaluator", "ResidualEvaluator", "IN_PREDICATE_LIMIT",
]

Op = Operation
IN_PREDICATE_LIMIT = 200  # the reference does not prune on `in` lists longer than this


def value_key(v: Any) -> Any:
    """A sort key giving the reference's order within one type (see the module doc)."""
    if isinstance(v, float):
        if math.isnan(v):
            return (1, 0.0, 0.0)
        return (0, v, math.copysign(1.0, v))
    return v


def _is_nan(v: Any) -> bool:
    return isinstance(v, float) and math.isnan(v)


def _cmp(a: Any, b: Any) -> int:
    ka, kb = value_key(a), value_key(b)
    return -1 if ka < kb else (1 if ka > kb else 0)


def _prepare(expr: Expression, schema: Schema | None, case_sensitive: bool) -> Expression:
    if any(isinstance(p, Predicate) for p in predicates(expr)):
        if schema is None:
            raise TypeError("an unbound expression needs a schema")
        expr = bind(expr, schema, case_sensitive)
    return rewrite_not(expr)


# ----------------------------------------------------------------------------------------------
# Rows


def _row_pred(p: BoundPredicate, v: Any) -> bool:
    """A predicate on one value as the engine filters rows: nulls match only ``is null`` (and
    ``is not nan``); NaN matches no comparison but ``!=`` and ``not in``."""
    op = p.op
    if op == Op.IS_NULL:
        return v is None
    if op == Op.NOT_NULL:
        return v is not None
    if op == Op.IS_NAN:
        return _is_nan(v)
    if op == Op.NOT_NAN:
        return not _is_nan(v)
    if v is None:
        return False
    if op == Op.STARTS_WITH:
        return v.startswith(p.literal)
    if op == Op.NOT_STARTS_WITH:
        return not v.startswith(p.literal)
    if op == Op.IN:
        return not _is_nan(v) and any(_cmp(v, x) == 0 for x in p.literals)
    if op == Op.NOT_IN:
        return _is_nan(v) or all(_cmp(v, x) != 0 for x in p.literals)
    if _is_nan(v):
        return op == Op.NOT_EQ
    c = _cmp(v, p.literal)
    if op == Op.LT:
        return c < 0
    if op == Op.LT_EQ:
        return c <= 0
    if op == Op.GT:
        return c > 0
    if op == Op.GT_EQ:
        return c >= 0
    if op == Op.EQ:
        return c == 0
    return c != 0  # NOT_EQ


def evaluate_row(expr: Expression, row: Mapping[Any, Any]) -> bool:
    """Whether a row matches a bound expression. ``row`` maps field ids (or, failing that,
    full column names) to values in the internal representation; missing means null.
    ``not`` is pushed into the predicates first, so ``not (x = 1)`` does not select nulls."""
    return _eval_row(rewrite_not(expr), row)


def _eval_row(e: Expression, row: Mapping[Any, Any]) -> bool:
    if isinstance(e, AlwaysTrue):
        return True
    if isinstance(e, AlwaysFalse):
        return False
    if isinstance(e, And):
        return _eval_row(e.left, row) and _eval_row(e.right, row)
    if isinstance(e, Or):
        return _eval_row(e.left, row) or _eval_row(e.right, row)
    if isinstance(e, Not):
        return not _eval_row(e.child, row)
    if isinstance(e, BoundPredicate):
        v = row[e.field_id] if e.field_id in row else row.get(e.name)
        return _row_pred(e, v)
    raise TypeError(f"cannot evaluate unbound {e}; bind it first")


# ----------------------------------------------------------------------------------------------
# Shared visiting with reasons


_Result = tuple[bool, str]
_MIGHT: _Result = (True, "")


def _visit(e: Expression, on_pred: Callable[[BoundPredicate], _Result]) -> _Result:
    if isinstance(e, AlwaysTrue):
        return _MIGHT
    if isinstance(e, AlwaysFalse):
        return (False, "the filter is always false")
    if isinstance(e, And):
        left = _visit(e.left, on_pred)
        if not left[0]:
            return left
        return _visit(e.right, on_pred)
    if isinstance(e, Or):
        left = _visit(e.left, on_pred)
        if left[0]:
            return left
        right = _visit(e.right, on_pred)
        if right[0]:
            return right
        return (False, f"{left[1]}; and {right[1]}")
    if isinstance(e, BoundPredicate):
        return on_pred(e)
    raise TypeError(f"cannot evaluate {e!r}")


def _h(t: IcebergType, v: Any) -> str:
    try:
        return to_human(t, v)
    except Exception:  # display only
        return repr(v)


def _lits(p: BoundPredicate) -> str:
    if len(p.literals) == 1:
        return _h(p.type, p.literal)
    shown = ", ".join(_h(p.type, v) for v in p.literals[:5])
    return f"({shown}{', ...' if len(p.literals) > 5 else ''})"


# ----------------------------------------------------------------------------------------------
# Manifests: partition field summaries


class ManifestEvaluator:
    """Whether a manifest may hold files matching a filter bound to its partition struct
    (normally :func:`~icectl.expr.projection.inclusive_projection` of the row filter)."""

    def __init__(self, partition_expr: Expression, partition_type: StructType):
        self.expr = rewrite_not(partition_expr)
        self.positions = {f.field_id: i for i, f in enumerate(partition_type.fields())}

    def eval(self, manifest: ManifestFile) -> _Result:
        if isinstance(self.expr, AlwaysTrue):
            return (True, "no filter on partitions")
        summaries = manifest.partitions
        if summaries is None:
            return (True, "no partition summaries")
        ok, why = _visit(self.expr, lambda p: self._pred(p, summaries))
        return (True, "partition summaries may match") if ok else (False, why)

    def _pred(self, p: BoundPredicate, summaries: Any) -> _Result:
        pos = self.positions.get(p.field_id)
        if pos is None or pos >= len(summaries):
            return _MIGHT
        s = summaries[pos]
        t = p.type
        name = f"partition {p.name}"
        op = p.op
        lower = None if s.lower_bound is None else from_bytes(t, s.lower_bound)
        upper = None if s.upper_bound is None else from_bytes(t, s.upper_bound)

        def all_null() -> bool:
            # a null lower bound with nulls present means every value is null; float fields
            # may hold NaN instead, which is only known from contains_nan
            if not (s.contains_null and s.lower_bound is None):
                return False
            if t in (FLOAT, DOUBLE):
                return s.contains_nan is not None and not s.contains_nan
            return True

        if op == Op.IS_NULL:
            if not s.contains_null:
                return (False, f"{name}: no null values")
            return _MIGHT
        if op == Op.NOT_NULL:
            if all_null():
                return (False, f"{name}: all values are null")
            return _MIGHT
        if op == Op.IS_NAN:
            if s.contains_nan is not None and not s.contains_nan:
                return (False, f"{name}: no NaN values")
            if all_null():
                return (False, f"{name}: all values are null")
            return _MIGHT
        if op == Op.NOT_NAN:
            if s.contains_nan and not s.contains_null and s.lower_bound is None:
                return (False, f"{name}: all values are NaN")
            return _MIGHT
        if op in (Op.NOT_EQ, Op.NOT_IN):
            return _MIGHT
        if op == Op.NOT_STARTS_WITH:
            if s.contains_null or lower is None or upper is None:
                return _MIGHT
            prefix = p.literal
            if (len(lower) >= len(prefix) and lower[:len(prefix)] == prefix
                    and len(upper) >= len(prefix) and upper[:len(prefix)] == prefix):
                return (False, f"{name}: bounds {_h(t, lower)} and {_h(t, upper)} both start "
                               f"with {_h(t, prefix)}")
            return _MIGHT
        # comparisons, in, starts with: a missing lower bound means all values are null
        if s.lower_bound is None:
            return (False, f"{name}: all values are null")
        if op == Op.IN:
            if len(p.literals) > IN_PREDICATE_LIMIT:
                return _MIGHT
            vals = [v for v in p.literals if _cmp(v, lower) >= 0]
            if not vals:
                return (False, f"{name}: lower bound {_h(t, lower)} > all of {_lits(p)}")
            if upper is not None and not [v for v in vals if _cmp(v, upper) <= 0]:
                return (False, f"{name}: no value of {_lits(p)} within bounds "
                               f"[{_h(t, lower)}, {_h(t, upper)}]")
            return _MIGHT
        if op == Op.STARTS_WITH:
            prefix = p.literal
            if lower[:len(prefix)] > prefix:
                return (False, f"{name}: lower bound {_h(t, lower)} > prefix {_h(t, prefix)}")
            if upper is not None and upper[:len(prefix)] < prefix:
                return (False, f"{name}: upper bound {_h(t, upper)} < prefix {_h(t, prefix)}")
            return _MIGHT
        return _range_check(op, t, lower, upper, p.literal,
                            lambda which, v: f"{name}: {which} bound {v}")


def _range_check(op: Operation, t: IcebergType, lower: Any, upper: Any, lit: Any,
                 label: Callable[[str, str], str]) -> _Result:
    """lt/lt_eq/gt/gt_eq/eq against bounds (None = unknown); ``label(which, value)`` names a
    bound in the reason."""
    shown = _h(t, lit)
    if op in (Op.LT, Op.LT_EQ, Op.EQ) and lower is not None:
        c = _cmp(lower, lit)
        if (op == Op.LT and c >= 0) or (op != Op.LT and c > 0):
            sign = ">=" if op == Op.LT else ">"
            return (False, f"{label('lower', _h(t, lower))} {sign} {shown}")
    if op in (Op.GT, Op.GT_EQ, Op.EQ) and upper is not None:
        c = _cmp(upper, lit)
        if (op == Op.GT and c <= 0) or (op != Op.GT and c < 0):
            sign = "<=" if op == Op.GT else "<"
            return (False, f"{label('upper', _h(t, upper))} {sign} {shown}")
    return _MIGHT


# ----------------------------------------------------------------------------------------------
# Files: column metrics


class _Metrics:
    """Lazy access to one file's metrics for a schema's field types."""

    def __init__(self, f: DataFile):
        self.f = f
        self.values = f.value_counts or {}
        self.nulls = f.null_value_counts or {}
        self.nans = f.nan_value_counts or {}
        self.has_values = f.value_counts is not None
        self.has_nulls = f.null_value_counts is not None
        self.has_nans = f.nan_value_counts is not None

    def nulls_only(self, fid: int) -> bool:
        return fid in self.values and fid in self.nulls and self.values[fid] - self.nulls[fid] == 0

    def nans_only(self, fid: int) -> bool:
        return fid in self.nans and fid in self.values and self.nans[fid] == self.values[fid]

    def may_contain_null(self, fid: int) -> bool:
        return fid not in self.nulls or self.nulls[fid] != 0

    def bound(self, which: str, fid: int, t: IcebergType) -> Any:
        src = self.f.lower_bounds if which == "lower" else self.f.upper_bounds
        if not src or fid not in src:
            return None
        return from_bytes(t, src[fid])


class MetricsEvaluator:
    """Whether a data file may hold rows matching a row filter, from its metrics (the
    reference's inclusive metrics evaluator)."""

    def __init__(self, expr: Expression, schema: Schema | None = None,
                 case_sensitive: bool = False):
        self.expr = _prepare(expr, schema, case_sensitive)

    def eval(self, data_file: DataFile) -> _Result:
        if data_file.record_count == 0:
            return (False, "the file has no records")
        if data_file.record_count < 0:
            return (True, "unknown record count")
        if isinstance(self.expr, AlwaysTrue):
            return (True, "no filter")
        m = _Metrics(data_file)
        ok, why = _visit(self.expr, lambda p: self._pred(p, m))
        return (True, "column metrics may match") if ok else (False, why)

    def _pred(self, p: BoundPredicate, m: _Metrics) -> _Result:
        fid, t, op, name = p.field_id, p.type, p.op, p.name
        if op == Op.IS_NULL:
            if fid in m.nulls and m.nulls[fid] == 0:
                return (False, f"{name} has no nulls")
            return _MIGHT
        if op == Op.NOT_NULL:
            if m.nulls_only(fid):
                return (False, f"{name} is all null")
            return _MIGHT
        if op == Op.IS_NAN:
            if fid in m.nans and m.nans[fid] == 0:
                return (False, f"{name} has no NaN values")
            if m.nulls_only(fid):
                return (False, f"{name} is all null")
            return _MIGHT
        if op == Op.NOT_NAN:
            if m.nans_only(fid):
                return (False, f"{name} is all NaN")
            return _MIGHT
        if op in (Op.NOT_EQ, Op.NOT_IN):
            return _MIGHT
        if op == Op.NOT_STARTS_WITH:
            if m.may_contain_null(fid):
                return _MIGHT
            lower, upper = m.bound("lower", fid, t), m.bound("upper", fid, t)
            prefix = p.literal
            if (lower is not None and upper is not None
                    and len(lower) >= len(prefix) and lower[:len(prefix)] == prefix
                    and len(upper) >= len(prefix) and upper[:len(prefix)] == prefix):
                return (False, f"bounds of {name} ({_h(t, lower)}, {_h(t, upper)}) both start "
                               f"with {_h(t, prefix)}")
            return _MIGHT
        if op == Op.STARTS_WITH:
            if m.nulls_only(fid):
                return (False, f"{name} is all null")
            prefix = p.literal
            lower, upper = m.bound("lower", fid, t), m.bound("upper", fid, t)
            if lower is not None and lower[:len(prefix)] > prefix:
                return (False, f"lower bound of {name} ({_h(t, lower)}) > prefix "
                               f"{_h(t, prefix)}")
            if upper is not None and upper[:len(prefix)] < prefix:
                return (False, f"upper bound of {name} ({_h(t, upper)}) < prefix "
                               f"{_h(t, prefix)}")
            return _MIGHT
        # comparisons and in
        if m.nulls_only(fid):
            return (False, f"{name} is all null")
        if m.nans_only(fid):
            return (False, f"{name} is all NaN")
        lower, upper = m.bound("lower", fid, t), m.bound("upper", fid, t)
        if lower is not None and _is_nan(lower):
            # a NaN lower bound is unreliable: <, <= and in might match; >, >= and = still
            # check the upper bound (the reference's eq skips only the lower bound)
            if op not in (Op.GT, Op.GT_EQ, Op.EQ):
                return _MIGHT
            lower = None
        if op == Op.IN:
            if len(p.literals) > IN_PREDICATE_LIMIT:
                return _MIGHT
            vals = list(p.literals)
            if lower is not None:
                vals = [v for v in vals if _cmp(v, lower) >= 0]
                if not vals:
                    return (False, f"lower bound of {name} ({_h(t, lower)}) > all of {_lits(p)}")
            if upper is not None:
                vals = [v for v in vals if _cmp(v, upper) <= 0]
                if not vals:
                    return (False, f"no value of {_lits(p)} within the bounds of {name} "
                                   f"[{_h(t, lower) if lower is not None else '?'}, "
                                   f"{_h(t, upper)}]")
            return _MIGHT
        return _range_check(op, t, lower, upper, p.literal,
                            lambda which, v: f"{which} bound of {name} ({v})")


class StrictMetricsEvaluator:
    """Whether every row of a data file matches a row filter, from its metrics (the
    reference's strict metrics evaluator, for the common predicates; anything it cannot prove
    counts as "not all rows")."""

    def __init__(self, expr: Expression, schema: Schema | None = None,
                 case_sensitive: bool = False):
        self.expr = _prepare(expr, schema, case_sensitive)

    def eval(self, data_file: DataFile) -> bool:
        if data_file.record_count <= 0:
            return True
        m = _Metrics(data_file)
        return self._eval(self.expr, m)

    def _eval(self, e: Expression, m: _Metrics) -> bool:
        if isinstance(e, AlwaysTrue):
            return True
        if isinstance(e, AlwaysFalse):
            return False
        if isinstance(e, And):
            return self._eval(e.left, m) and self._eval(e.right, m)
        if isinstance(e, Or):
            return self._eval(e.left, m) or self._eval(e.right, m)
        assert isinstance(e, BoundPredicate)
        fid, t, op = e.field_id, e.type, e.op
        if op == Op.IS_NULL:
            return m.nulls_only(fid)
        if op == Op.NOT_NULL:
            return fid in m.nulls and m.nulls[fid] == 0
        if op == Op.IS_NAN:
            return m.nans_only(fid)
        if op == Op.NOT_NAN:
            if fid in m.nans and m.nans[fid] == 0:
                return True
            return m.nulls_only(fid)
        # every other predicate: no nulls (they never match) and no NaN (they compare false)
        if m.may_contain_null(fid):
            return False
        if t in (FLOAT, DOUBLE) and (fid not in m.nans or m.nans[fid] != 0):
            return False
        lower, upper = m.bound("lower", fid, t), m.bound("upper", fid, t)
        if op in (Op.LT, Op.LT_EQ):
            if upper is None:
                return False
            c = _cmp(upper, e.literal)
            return c < 0 if op == Op.LT else c <= 0
        if op in (Op.GT, Op.GT_EQ):
            if lower is None:
                return False
            c = _cmp(lower, e.literal)
            return c > 0 if op == Op.GT else c >= 0
        if op == Op.EQ:
            return (lower is not None and upper is not None and _cmp(lower, e.literal) == 0
                    and _cmp(upper, e.literal) == 0)
        if op in (Op.NOT_EQ, Op.NOT_IN):
            for v in e.literals:
                if lower is not None and _cmp(lower, v) > 0:
                    continue
                if upper is not None and _cmp(upper, v) < 0:
                    continue
                return False
            return True
        return False  # in, starts with, not starts with: not proven


# ----------------------------------------------------------------------------------------------
# Residuals


def _partition_pred(p: BoundPredicate, v: Any) -> bool:
    """A predicate on a partition value as the reference's residual evaluator sees it: null
    sorts before every value (so ``null < 5`` holds), NaN after every number."""
    op = p.op
    if op == Op.IS_NULL:
        return v is None
    if op == Op.NOT_NULL:
        return v is not None
    if op == Op.IS_NAN:
        return _is_nan(v)
    if op == Op.NOT_NAN:
        return not _is_nan(v)
    if op == Op.IN:
        return v is not None and any(_cmp(v, x) == 0 for x in p.literals)
    if op == Op.NOT_IN:
        return v is None or all(_cmp(v, x) != 0 for x in p.literals)
    if op == Op.STARTS_WITH:
        return v is not None and v.startswith(p.literal)
    if op == Op.NOT_STARTS_WITH:
        return v is None or not v.startswith(p.literal)
    c = -1 if v is None else _cmp(v, p.literal)
    return {Op.LT: c < 0, Op.LT_EQ: c <= 0, Op.GT: c > 0, Op.GT_EQ: c >= 0, Op.EQ: c == 0,
            Op.NOT_EQ: c != 0}[op]


class ResidualEvaluator:
    """The part of a row filter left to check on the rows of a given partition."""

    def __init__(self, spec: PartitionSpec, expr: Expression, schema: Schema,
                 case_sensitive: bool = False):
        self.spec = spec
        self.expr = _prepare(expr, schema, case_sensitive)
        ptype = spec.partition_type(schema)
        self.fields: dict[int, list[tuple[Any, IcebergType, int]]] = {}
        for pos, (pf, nf) in enumerate(zip(spec.fields, ptype.fields())):
            if len(pf.all_source_ids) == 1:
                self.fields.setdefault(pf.source_id, []).append((pf, nf.type, pos))

    def residual_for(self, partition: tuple | Mapping[int, Any]) -> Expression:
        """``partition``: values in spec field order (or a dict of partition field id -> value)."""
        if not self.spec.fields:
            return self.expr
        return self._visit(self.expr, partition)

    def _value(self, partition: Any, pf: Any, pos: int) -> Any:
        if isinstance(partition, Mapping):
            return partition.get(pf.field_id)
        return partition[pos] if pos < len(partition) else None

    def _visit(self, e: Expression, partition: Any) -> Expression:
        if isinstance(e, (AlwaysTrue, AlwaysFalse)):
            return e
        if isinstance(e, And):
            return and_(self._visit(e.left, partition), self._visit(e.right, partition))
        if isinstance(e, Or):
            return or_(self._visit(e.left, partition), self._visit(e.right, partition))
        assert isinstance(e, BoundPredicate)
        for pf, ptype, pos in self.fields.get(e.field_id, ()):
            value = self._value(partition, pf, pos)
            strict = project_strict(pf.transform, pf, ptype, e)
            if strict is not None and self._holds(strict, value):
                return TRUE
            inclusive = project(pf.transform, pf, ptype, e)
            if inclusive is not None and not self._holds(inclusive, value):
                return FALSE
        return e

    @staticmethod
    def _holds(projected: Expression, value: Any) -> bool:
        if isinstance(projected, AlwaysTrue):
            return True
        if isinstance(projected, AlwaysFalse):
            return False
        assert isinstance(projected, BoundPredicate)
        return _partition_pred(projected, value)
