"""What the evaluators share: result combination, reasons, statistics access.

Each evaluator module holds one set of rules in two forms side by side: a scalar form for one
object that also says *why* (``(might_match, reason)``, the text ``plan --explain`` prints), and
a columnar form over Python lists (one boolean per object) that the planner runs on whole
manifests. Both walk the expression with :func:`icectl.expr.visitor.visit` through the two
visitors below, which differ only in what a result is; property tests run both forms on the
same inputs and require equal answers.
"""

from __future__ import annotations

import struct
from typing import Any, Callable, Mapping, Protocol, Sequence

from icectl.expr.binding import bind
from icectl.expr.expressions import BoundPredicate, Expression, is_bound, rewrite_not
from icectl.expr.ordering import uuid_bounds
from icectl.expr.visitor import Visitor, visit
from icectl.spec.schema import Schema
from icectl.spec.types import (
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    TIME,
    TIMESTAMP,
    TIMESTAMP_NS,
    TIMESTAMPTZ,
    TIMESTAMPTZ_NS,
    UUID,
    IcebergType,
)
from icectl.spec.values import from_bytes, to_human

__all__ = ["Result", "MIGHT", "prepare", "evaluate_reasons", "evaluate_columns", "show",
           "show_literals", "FileMetrics", "FileStats", "ColumnStats", "complete_counts", "decode_column", "FLOAT_TYPES"]

Result = tuple[bool, str]
MIGHT: Result = (True, "")
FLOAT_TYPES = (FLOAT, DOUBLE)


def prepare(expr: Expression, schema: Schema | None, case_sensitive: bool) -> Expression:
    """``expr`` bound (when it is not yet) and without NOT."""
    if not is_bound(expr):  # trees are bound or unbound as a whole: one leaf tells
        if schema is None:
            raise TypeError("an unbound expression needs a schema")
        expr = bind(expr, schema, case_sensitive)
    return rewrite_not(expr)


class _Reasons(Visitor[Result]):
    """Scalar results with reasons: ``and`` stops at the first child that rules out, ``or``
    at the first that might match and otherwise joins both reasons."""

    def __init__(self, on_pred: Callable[[BoundPredicate], Result]):
        self.predicate = on_pred  # type: ignore[method-assign]

    def always_true(self) -> Result:
        return MIGHT

    def always_false(self) -> Result:
        return (False, "the filter is always false")

    def and_done(self, left: Result) -> bool:
        return not left[0]

    def or_done(self, left: Result) -> bool:
        return left[0]

    def and_(self, left: Result, right: Result) -> Result:
        return right

    def or_(self, left: Result, right: Result) -> Result:
        return right if right[0] else (False, f"{left[1]}; and {right[1]}")


def evaluate_reasons(expr: Expression, on_pred: Callable[[BoundPredicate], Result]) -> Result:
    """The scalar form's walk: ``on_pred`` decides each predicate."""
    return visit(expr, _Reasons(on_pred))


class _Columns(Visitor[list]):
    """Columnar results: one boolean per object; a child that decides every object skips its
    sibling."""

    def __init__(self, n: int, on_pred: Callable[[BoundPredicate], list]):
        self.n = n
        self.predicate = on_pred  # type: ignore[method-assign]

    def always_true(self) -> list:
        return [True] * self.n

    def always_false(self) -> list:
        return [False] * self.n

    def and_done(self, left: list) -> bool:
        return not any(left)

    def or_done(self, left: list) -> bool:
        return all(left)

    def and_(self, left: list, right: list) -> list:
        return [a and b for a, b in zip(left, right)]

    def or_(self, left: list, right: list) -> list:
        return [a or b for a, b in zip(left, right)]


def evaluate_columns(expr: Expression, n: int, on_pred: Callable[[BoundPredicate], list]) -> list:
    """The columnar form's walk over ``n`` objects: ``on_pred`` gives each predicate's list."""
    return visit(expr, _Columns(n, on_pred))


def show(t: IcebergType, v: Any) -> str:
    """A value for a reason text."""
    try:
        return to_human(t, v)
    except Exception:  # noqa: BLE001 - display only
        return repr(v)


def show_literals(p: BoundPredicate) -> str:
    if len(p.literals) == 1:
        return show(p.type, p.literal)
    shown = ", ".join(show(p.type, v) for v in p.literals[:5])
    return f"({shown}{', ...' if len(p.literals) > 5 else ''})"


# -- file statistics, one file (scalar) or one manifest's columns (columnar) ---------------------


# Iceberg Java 1.10.2 takes the value and null counts of a float or double field from what its
# writer saw, and a field inside a struct is not written for a row whose struct is null: such a
# field's counts leave those rows out (value count < record count; the fuzzer's seed 7, s7r4).
# Within a struct a field has one value per row, so the rows left out hold a null there: count
# them as nulls. This only ever makes a rule more careful (Java's own planning, which trusts the
# counts, skips files for `is null` / `is not nan` that hold matching rows).


def _short(v: Any, r: Any) -> bool:
    return v is not None and r is not None and 0 <= v < r


def complete_counts(record_count: Any, values: dict, nulls: dict) -> tuple[dict, dict]:
    """Value and null counts with the rows a writer left out of a field counted as nulls."""
    short = [fid for fid, v in values.items() if _short(v, record_count)]
    if not short:
        return values, nulls
    values, nulls = dict(values), dict(nulls)
    for fid in short:
        if fid in nulls and nulls[fid] is not None:
            nulls[fid] += record_count - values[fid]
        values[fid] = record_count
    return values, nulls


class FileMetrics(Protocol):
    """What the metrics evaluators read of a file: a manifest's data file or a Parquet footer's
    (or one row group's) metrics; maps keyed by field id, bounds single-value serialized."""

    @property
    def record_count(self) -> int: ...
    @property
    def value_counts(self) -> Mapping[int, int] | None: ...
    @property
    def null_value_counts(self) -> Mapping[int, int] | None: ...
    @property
    def nan_value_counts(self) -> Mapping[int, int] | None: ...
    @property
    def lower_bounds(self) -> Mapping[int, bytes] | None: ...
    @property
    def upper_bounds(self) -> Mapping[int, bytes] | None: ...


class FileStats:
    """One data file's metrics, bounds decoded on demand."""

    def __init__(self, f: FileMetrics):
        self.f = f
        self.record_count = f.record_count
        self.values, self.nulls = complete_counts(f.record_count, f.value_counts or {},
                                                  f.null_value_counts or {})
        self.nans = f.nan_value_counts or {}

    def nulls_only(self, fid: int) -> bool:
        return fid in self.values and fid in self.nulls and self.values[fid] - self.nulls[fid] == 0

    def nans_only(self, fid: int) -> bool:
        return fid in self.nans and fid in self.values and self.nans[fid] == self.values[fid]

    def may_contain_null(self, fid: int) -> bool:
        return fid not in self.nulls or self.nulls[fid] != 0

    def bound(self, upper: bool, fid: int, t: IcebergType) -> Any:
        src = self.f.upper_bounds if upper else self.f.lower_bounds
        if not src or fid not in src:
            return None
        got = from_bytes(t, src[fid])
        if t == UUID:  # either order may have written the pair (ordering.py)
            other = (self.f.lower_bounds if upper else self.f.upper_bounds) or {}
            if fid not in other:
                return None
            theirs = from_bytes(t, other[fid])
            return uuid_bounds(*((theirs, got) if upper else (got, theirs)))[upper]
        return got


_FIXED = {INT: ("<i", 4), DATE: ("<i", 4), LONG: ("<q", 8), TIME: ("<q", 8),
          TIMESTAMP: ("<q", 8), TIMESTAMPTZ: ("<q", 8), TIMESTAMP_NS: ("<q", 8),
          TIMESTAMPTZ_NS: ("<q", 8), FLOAT: ("<f", 4), DOUBLE: ("<d", 8)}


def decode_column(t: IcebergType, raw: Sequence[bytes | None]) -> list:
    """Bound values of one column (None where absent), decoded in one pass when possible."""
    fixed = _FIXED.get(t)
    if fixed is not None:
        fmt, width = fixed
        if None not in raw and set(map(len, raw)) <= {width}:  # (C-level scans of the column)
            return [v[0] for v in struct.iter_unpack(fmt, b"".join(raw))]  # type: ignore[arg-type]
    return [None if b is None else from_bytes(t, b) for b in raw]


class ColumnStats:
    """The metrics of entries ``idx`` of one decoded manifest (``cols``: record_count and
    ``stats[fid]`` with lower, upper, value_counts, null_counts, nan_counts lists), each column
    picked and decoded once."""

    def __init__(self, cols: Any, types: dict[int, IcebergType], idx: Sequence[int]):
        self.cols = cols
        self.types = types
        self.idx = idx
        self.n = len(idx)
        self._bounds: dict[tuple[int, bool], list] = {}

    def pick(self, column: Sequence) -> list:
        if len(self.idx) == len(column):
            return list(column)
        return [column[i] for i in self.idx]

    def record_counts(self) -> list:
        return self.pick(self.cols.record_count)

    def counts(self, fid: int, which: str) -> list:
        st = self.cols.stats.get(fid)
        if st is None:
            return [None] * self.n
        got = self.pick(getattr(st, which))
        if which in ("value_counts", "null_counts"):  # (see complete_counts)
            vc = got if which == "value_counts" else self.pick(st.value_counts)
            rc = self.record_counts()
            if any(_short(v, r) for v, r in zip(vc, rc)):
                if which == "value_counts":
                    return [r if _short(v, r) else v for v, r in zip(vc, rc)]
                return [c + r - v if c is not None and _short(v, r) else c
                        for c, v, r in zip(got, vc, rc)]
        return got

    def raw_bounds(self, fid: int, upper: bool) -> list:
        st = self.cols.stats.get(fid)
        if st is None:
            return [None] * self.n
        return self.pick(st.upper if upper else st.lower)

    def bounds(self, fid: int, upper: bool) -> list:
        got = self._bounds.get((fid, upper))
        if got is None:
            t = self.types[fid]
            got = self._bounds[(fid, upper)] = decode_column(t, self.raw_bounds(fid, upper))
            if t == UUID:  # either order may have written the pairs (ordering.py)
                other = decode_column(t, self.raw_bounds(fid, not upper))
                pairs = [uuid_bounds(*((b, a) if upper else (a, b))) for a, b in zip(got, other)]
                got[:] = [pair[upper] for pair in pairs]
        return got

    def nulls_only(self, fid: int) -> list:
        vc, nc = self.counts(fid, "value_counts"), self.counts(fid, "null_counts")
        return [v is not None and c is not None and v - c == 0 for v, c in zip(vc, nc)]

    def nans_only(self, fid: int) -> list:
        vc, nanc = self.counts(fid, "value_counts"), self.counts(fid, "nan_counts")
        return [v is not None and c is not None and c == v for v, c in zip(vc, nanc)]
