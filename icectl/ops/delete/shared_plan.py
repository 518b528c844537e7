"""What the two delete modes share (``icectl delete``: :mod:`icectl.ops.delete.merge_on_read`, merge-on-read,
and :mod:`icectl.ops.delete.copy_on_write`, copy-on-write): the result, the mode, the filter taken once at
the edge, the branch, the one plan both read and commit from, and the proof that a planned file
is deleted whole.

The filter text is parsed here once (:func:`delete_filter`); the planner binds it once and the
bound filter (``PlanResult.filter``) is what everything after uses: the reader's residuals, the
copy-on-write rewrite tasks' drop filter and the commit's conflict check
(:func:`icectl.table.commit.validation.filter_may_match`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from icectl.errors import InvalidInput
from icectl.expr.evaluators import StrictMetricsEvaluator
from icectl.expr.expressions import AlwaysFalse, AlwaysTrue, Expression
from icectl.scan.plan_result import PlannedFile, PlanResult
from icectl.spec.metadata import TableMetadata
from icectl.spec.schema import Schema
from icectl.spec.result_json import JsonResult, committed_operation
from icectl.spec.properties import COPY_ON_WRITE, DELETE_MODE, DELETE_MODE_DEFAULT, MERGE_ON_READ
from icectl.table.branches import branch_to_commit
from icectl.table.table import Table

__all__ = ["DeleteResult", "MERGE_ON_READ", "COPY_ON_WRITE", "DELETE_MODE", "resolve_mode",
           "delete_filter", "branch_ref", "plan_delete", "whole_file_matches"]



@dataclass(frozen=True)
class DeleteResult(JsonResult):
    """What a delete did (or, with ``dry_run``, would do); its JSON view is its fields'."""

    committed: bool
    dry_run: bool
    location: str
    branch: str
    mode: str
    snapshot_id: int | None
    parent_snapshot_id: int | None
    operation: str | None = committed_operation()
    removed_data_files: tuple[str, ...]
    removed_records: int
    position_delete_files: tuple[str, ...]
    files_with_row_deletes: tuple[str, ...]
    deleted_positions: int
    summary: dict[str, str] = field(default_factory=dict, hash=False)


def resolve_mode(md: TableMetadata, mode: str | None) -> str:
    """The mode asked for, else the table's ``write.delete.mode`` (the reference's default:
    copy-on-write)."""
    if mode is not None and mode not in (MERGE_ON_READ, COPY_ON_WRITE):
        raise InvalidInput(f"{mode!r} is not merge-on-read or copy-on-write", argument="mode")
    chosen = mode or md.properties.get(DELETE_MODE, DELETE_MODE_DEFAULT)
    if chosen not in (MERGE_ON_READ, COPY_ON_WRITE):
        raise InvalidInput(f"{DELETE_MODE}={chosen!r} is not merge-on-read or copy-on-write")
    return chosen


def delete_filter(filter_text: str | None, filter_expr: Expression | None) -> Expression:
    """The rows to delete as an expression: ``filter_text`` parsed (the one parse of a
    delete), or ``filter_expr`` as given. An empty filter is refused (``true`` deletes all)."""
    from icectl.expr.parser import parse_filter

    if filter_text is not None and filter_expr is not None:
        raise InvalidInput("give the rows to delete as filter text or as an expression, not both")
    if filter_expr is not None:
        return filter_expr
    if filter_text is None or (isinstance(filter_text, str) and not filter_text.strip()):
        raise InvalidInput("the filter is empty; to delete every row the filter is: true",
                           argument="filter")
    return parse_filter(filter_text)  # (refuses what is not text)


def branch_ref(md: TableMetadata, branch: str | None) -> tuple[str, str | None]:
    """The branch deleted on (default main) and the ref to plan it with (None: main without a
    ref yet, an empty table)."""
    branch, ref = branch_to_commit(md, branch)
    return branch, None if ref is None else branch


def plan_delete(table: Table, expr: Expression, ref: str | None, case_sensitive: bool, *,
                filter_deletes: bool) -> PlanResult:
    """The one plan of a delete: the files ``expr`` may match, with residuals and deletes;
    its ``filter`` is ``expr`` bound (once). ``filter_deletes`` as the planner takes it: on
    when only matching rows are read (merge-on-read), off when files are rewritten whole."""
    from icectl.scan.planner import plan_scan

    return plan_scan(table, filter_expr=expr, ref=ref, case_sensitive=case_sensitive,
                     filter_deletes=filter_deletes)


def whole_file_matches(planned: PlannedFile, schema: Schema) -> bool:
    """Whether every row of a planned file provably matches: its residual is true (sound for
    null and NaN partition values) or the strict metrics evaluator proves the residual for
    every row (a null or NaN value proves nothing but ``is null`` / ``is nan``)."""
    residual = planned.residual
    if isinstance(residual, AlwaysTrue):
        return True
    if isinstance(residual, AlwaysFalse):
        return False
    return StrictMetricsEvaluator(residual, schema).eval(planned.data_file())
