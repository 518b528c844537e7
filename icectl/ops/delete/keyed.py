"""Deleting rows by key when the key does not determine the partition (``icectl upsert`` and
``icectl delete --equality`` on any key), as Spark's merge-on-read MERGE does.

An equality delete applies only within its partition, so a key that does not include every
partition source column cannot be written as one. Instead the rows holding the keys are found
and their positions deleted:

1. a filter is built from the key values: per key column ``in`` its distinct values and, for
   more than 200 values (where ``in`` no longer prunes), between their smallest and largest
   value; the planner prunes manifests and files with it (partitions, column bounds), in the
   one plan the rows are read from and the commit takes its files from;
2. the candidate files are read through their existing deletes (only the key columns and the
   row positions) and a row matches when its key tuple equals one of the keys exactly;
3. the matching positions are written as position delete files (format v2, one per data file)
   or deletion vectors (v3, merged with each file's previous one, whose entry is replaced), as
   ``icectl delete`` in merge-on-read mode writes them (:mod:`icectl.ops.delete.positions`).

The caller commits them in one row delta with whatever else it adds (an upsert's new rows),
validated on a lost race as a delete is: the files read must still be live, no delete may have
been added for them and (``serializable``) no data file that may hold one of the keys (the
plan's filter, :attr:`KeyMatches.filter`, through :func:`icectl.table.commit.validation.filter_may_match`).

Nulls: with ``nulls_match`` a null key value equals a null (equality-delete semantics, used by
``delete --equality``); without it a key holding a null matches nothing (SQL MERGE semantics,
used by ``upsert``). Floating-point key values compare as equality deletes compare them (NaN
equals NaN, ``-0.0`` differs from ``0.0``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icectl.expr.expressions import TRUE, Expression, Operation, and_, make_bound, or_
from icectl.expr.ordering import value_key
from icectl.ops.compute.arrow_values import internal_values
from icectl.ops.delete.positions import FileWithPath, previous_dvs, write_row_deletes
from icectl.scan.plan_result import PlannedFile, PlanResult
from icectl.spec.manifests import DataFile
from icectl.spec.schema import Schema
from icectl.spec.snapshots import MAIN_BRANCH
from icectl.spec.types import DOUBLE, FLOAT
from icectl.table.table import Table

__all__ = ["KeyMatches", "find_key_positions", "write_key_deletes", "match_filter",
           "drop_null_keys"]

IN_PRUNE_LIMIT = 200  # the planner's ``in`` prunes by bounds only up to this many values


@dataclass
class KeyMatches:
    """Where the keys are: positions per data file of the snapshot read, and the plan they were
    read from (its files are what the commit references; its filter is the conflict filter)."""

    snapshot_id: int | None
    positions: dict[str, list[int]] = field(default_factory=dict)
    files: dict[str, DataFile] = field(default_factory=dict)  # the files with positions, from the plan
    planned: list[PlannedFile] = field(default_factory=list)  # the plan's files (with their deletes)
    filter: Expression = TRUE  # the keys' filter (:func:`match_filter`), bound by the plan
    plan: PlanResult | None = None

    @property
    def rows(self) -> int:
        return sum(len(v) for v in self.positions.values())


def drop_null_keys(rows: pa.Table) -> pa.Table:
    """The key rows without a null in any key column (they match nothing under SQL rules)."""
    mask = None
    for col in rows.columns:
        valid = pc.is_valid(col)
        mask = valid if mask is None else pc.and_(mask, valid)
    return rows if mask is None else rows.filter(mask)


def _key_tuples(columns: list[Any], types: list[Any]) -> list[tuple]:
    from icectl.scan.arrow_values import to_internal

    cols = []
    for arr, t in zip(columns, types):
        arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
        values = to_internal(arr, t)
        if t in (FLOAT, DOUBLE):
            values = [None if v is None else value_key(v) for v in values]
        cols.append(values)
    return list(zip(*cols))


def match_filter(rows: pa.Table, keys: Schema, nulls_match: bool) -> Expression:
    """A filter every row holding one of the keys matches (a superset: per column)."""
    parts = []
    for i, f in enumerate(keys.fields):
        if f.type in (FLOAT, DOUBLE):
            continue  # NaN keys cannot be put in an ``in``; matched exactly when read
        col = rows.column(i).combine_chunks()
        vals = list(internal_values(pc.unique(col.drop_null()), f.type))
        term = make_bound(Operation.IN, f.field_id, f.name, f.type, vals)
        if len(vals) > IN_PRUNE_LIMIT:
            lo, hi = min(vals), max(vals)
            term = and_(make_bound(Operation.GT_EQ, f.field_id, f.name, f.type, (lo,)),
                        make_bound(Operation.LT_EQ, f.field_id, f.name, f.type, (hi,)), term)
        if nulls_match and col.null_count:
            term = or_(term, make_bound(Operation.IS_NULL, f.field_id, f.name, f.type))
        parts.append(term)
    return and_(*parts) if parts else TRUE


def find_key_positions(table: Table, rows: pa.Table, keys: Schema, branch: str | None,
                       nulls_match: bool) -> KeyMatches:
    """The positions of the live rows of ``branch`` whose key columns equal a row of ``rows``
    (the key columns, conformed to ``keys``), from one plan of :func:`match_filter`."""
    from icectl.scan.planner import plan_scan
    from icectl.scan.reader import scan_of_plan

    branch = branch or MAIN_BRANCH
    md = table.metadata
    ref = branch if branch in md.refs else None
    if not nulls_match:
        rows = drop_null_keys(rows)
    expr = match_filter(rows, keys, nulls_match)
    if rows.num_rows == 0 or (ref is None and md.current_snapshot_id is None):
        return KeyMatches(snapshot_id=md.refs[ref].snapshot_id if ref else None, filter=expr)
    types = [f.type for f in keys.fields]
    wanted = set(_key_tuples(rows.columns, types))
    names = [f.name for f in keys.fields]
    # only rows holding a key are read: delete files that cannot hold such rows are not needed
    plan = plan_scan(table, filter_expr=expr, ref=ref, case_sensitive=True, columns=names,
                     filter_deletes=True)
    out = KeyMatches(snapshot_id=plan.snapshot_id, planned=plan.files, filter=plan.filter,
                     plan=plan)
    for b in scan_of_plan(table, plan, with_metadata=True).batches():
        tuples = _key_tuples([b.column(n) for n in names], types)
        files = b.column("_file").to_pylist()
        pos = b.column("_pos").to_pylist()
        for k, path, p in zip(tuples, files, pos):
            if k in wanted and (nulls_match or None not in k):
                out.positions.setdefault(path, []).append(p)
    out.files = {p.path: p.data_file() for p in out.planned if p.path in out.positions}
    return out


def write_key_deletes(table: Table, matches: KeyMatches, written: list[str]
                      ) -> tuple[list[FileWithPath], list[FileWithPath]]:
    """Write the matched positions as position delete files (v2) or deletion vectors (v3, each
    merged with its file's previous one); returns (added, replaced) delete files with their
    partition paths. Paths written are appended to ``written``."""
    if not matches.positions or matches.plan is None:
        return [], []
    old = previous_dvs(matches.planned, matches.positions) \
        if table.metadata.format_version >= 3 else {}
    return write_row_deletes(table, matches.plan, matches.positions, matches.files, old, written)
