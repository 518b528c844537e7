"""Copy-on-write row deletes (``icectl delete --mode copy-on-write``).

As the reference's copy-on-write DELETE, from one plan (the filter parsed and bound once,
:mod:`icectl.ops.delete.shared_plan`):

1. the scan planner lists the data files the filter may match;
2. files that provably hold only matching rows are dropped whole, unread, by the proof
   merge-on-read deletes use (:func:`icectl.ops.delete.shared_plan.whole_file_matches`: the partition
   proves it - residual ``true``, sound for null and NaN partition values, see
   :mod:`icectl.expr.eval_residual` - or the file's column metrics prove the residual for every
   row); files whose partition proves no row matches (residual ``false``) are left alone;
3. the other candidates are read through their deletes by the rewrite task
   (:func:`icectl.ops.maintain.rewrite_task.run_rewrite_task`, one task per partition, on an engine,
   the plan's bound filter as the task's drop filter):
   the rows the files holding matching rows keep are written again, together, into files of the
   current spec; a file in which no row matches is left as it is;
4. one snapshot commits it (:class:`icectl.table.commit.rewrite.OverwriteFilesProducer`): ``overwrite``
   when files are replaced, ``delete`` when files are only dropped. Delete files that only the
   replaced files needed are removed in the same commit, so the table is left without delete
   files for them.

On a lost race the commit re-validates from the planned snapshot (files still live, no new
deletes for them, and at the ``serializable`` isolation level - the default of
``write.delete.isolation-level`` - no new data file that may hold matching rows, decided by the
check merge-on-read deletes use too, :func:`icectl.table.commit.validation.conflict_filter`); a conflict
fails with :class:`~icectl.errors.CommitConflict` and the rewritten files are removed.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from icectl import command_files
from icectl.spec.partition_identity import partition_key
from icectl.expr.expressions import AlwaysFalse, Expression
from icectl.ops.delete.positions import matching_positions
from icectl.ops.maintain.rewrite_task import (
    RewriteTask,
    RewriteTaskResult,
    results_or_raise,
    run_rewrite_task,
    run_rewrite_task_guarded,
    task_inputs,
)
from icectl.ops.delete.shared_plan import (
    COPY_ON_WRITE,
    DeleteResult,
    branch_ref,
    delete_filter,
    plan_delete,
    whole_file_matches,
)
from icectl.table.locations import data_location
from icectl.scan.plan_result import PlannedFile, PlanResult
from icectl.spec.manifests import DataFile
from icectl.spec.metadata import TableMetadata
from icectl.spec.properties import TARGET_FILE_SIZE, TARGET_FILE_SIZE_DEFAULT, property_int
from icectl.table.table import Table

if TYPE_CHECKING:
    from icectl.engines import Engine
    from icectl.table.commit.producer import ProducedSnapshot

__all__ = ["CopyOnWriteResult", "delete_copy_on_write"]


@dataclass(frozen=True)
class CopyOnWriteResult(DeleteResult):
    """A copy-on-write delete: the delete's result plus the files written in place of others."""

    added_data_files: tuple[str, ...] = ()
    rewritten_data_files: tuple[str, ...] = ()


def delete_copy_on_write(table: Table, filter_text: str | None = None, *,
                         filter_expr: Expression | None = None, branch: str | None = None,
                         dry_run: bool = False, case_sensitive: bool = False,
                         engine: Engine | str | None = None, workers: int | None = None) -> CopyOnWriteResult:
    """Delete the rows of ``table`` matching ``filter_text`` (or the expression
    ``filter_expr``) by rewriting the files that hold them (see the module docs).
    ``engine``: an engine object or name (default local)."""
    expr = delete_filter(filter_text, filter_expr)
    md = table.metadata
    branch, ref = branch_ref(md, branch)
    # rewritten files are read whole: every delete file that applies to them is needed
    plan = plan_delete(table, expr, ref, case_sensitive, filter_deletes=False)
    # files whose every row provably matches are dropped whole, as merge-on-read drops them
    # (the same proof: residual true, or the strict metrics prove it); a false residual means
    # no row matches; the rest are read
    dropped = [p for p in plan.files if whole_file_matches(p, plan.schema)]
    dropped_paths = {p.path for p in dropped}
    candidates = [p for p in plan.files
                  if p.path not in dropped_paths and not isinstance(p.residual, AlwaysFalse)]
    tasks = _tasks(table, md, candidates, plan.filter, case_sensitive)
    base = dict(location=table.location, branch=branch, mode=COPY_ON_WRITE, dry_run=dry_run,
                parent_snapshot_id=plan.snapshot_id, position_delete_files=())
    if dry_run:  # the matching rows of the candidates are counted, as the real run drops them
        hits = matching_positions(table, plan, candidates)
        return CopyOnWriteResult(committed=False, snapshot_id=None,
                                 removed_data_files=tuple(sorted(p.path for p in dropped)),
                                 removed_records=sum(p.record_count for p in dropped),
                                 deleted_positions=sum(len(v) for v in hits.values()),
                                 files_with_row_deletes=tuple(sorted(hits)),
                                 rewritten_data_files=tuple(sorted(hits)), **base)
    base_dir = data_location(table.location, md.properties)
    if tasks:  # registered before they start: see icectl.command_files
        command_files.register_operation(table.io, base_dir, tasks[0].operation_id,
                                         (t.task_index for t in tasks))
    results: list[RewriteTaskResult] = []
    try:
        results = _run(engine, workers, tasks, table)
        rewritten = sorted(p for r in results for p in r.rewritten)
        by_path = {p.path: p for p in dropped + candidates}
        removed = [by_path[path].data_file()
                   for path in sorted({p.path for p in dropped} | set(rewritten))]
        added = [fp for r in results for fp in r.files]
        result = dict(removed_data_files=tuple(sorted(p.path for p in dropped)),
                      removed_records=sum(p.record_count for p in dropped),
                      deleted_positions=sum(r.rows_dropped for r in results),
                      files_with_row_deletes=tuple(rewritten),
                      added_data_files=tuple(f.file_path for f, _ in added),
                      rewritten_data_files=tuple(rewritten))
        if not removed:
            return CopyOnWriteResult(committed=False, snapshot_id=None, **base, **result)
        produced = _commit(table, plan, removed, added, case_sensitive, branch)
    except BaseException:
        for r in results:
            _remove(table, r)
        if tasks:
            command_files.discard_operation(table.io, base_dir, tasks[0].operation_id)
        raise
    return CopyOnWriteResult(committed=True, snapshot_id=produced.snapshot.snapshot_id,
                             summary=dict(produced.snapshot.summary), **base, **result)


def _tasks(table: Table, md: TableMetadata, candidates: list[PlannedFile], drop: Expression,
           case_sensitive: bool) -> list[RewriteTask]:
    """One task per partition of the candidate files (each reads its files one by one and
    rewrites those holding matching rows into files of the current spec); ``drop`` is the
    plan's bound filter."""
    order = md.sort_order
    operation_id = str(uuid.uuid4())
    target = property_int(md.properties, TARGET_FILE_SIZE, TARGET_FILE_SIZE_DEFAULT)
    by_part: dict[tuple, list[PlannedFile]] = {}
    for p in candidates:
        by_part.setdefault((p.spec_id, partition_key(tuple(p.partition))), []).append(p)
    return [RewriteTask(inputs=task_inputs(files), schema=md.schema.to_json(),
                        spec=md.spec.to_json(),
                        sort_order=order.to_json() if order is not None and order.fields else None,
                        properties=dict(md.properties), format_version=md.format_version,
                        target_file_size=target, table_location=table.location,
                        operation_id=operation_id, task_index=i, drop_filter=drop,
                        case_sensitive=case_sensitive,
                        storage_options=table.io.storage_options)
            for i, files in enumerate(by_part.values())]


def _run(engine: Engine | str | None, workers: int | None, tasks: Sequence[RewriteTask], table: Table
         ) -> list[RewriteTaskResult]:
    if not tasks:
        return []
    if len(tasks) == 1 and engine is None:
        return [run_rewrite_task(tasks[0])]  # one file: no worker processes to start
    from icectl.engines import get_engine

    if engine is None or isinstance(engine, str):
        engine = get_engine(engine or "local", **({"workers": workers} if workers else {}))
    return results_or_raise(table.io, engine.map(run_rewrite_task_guarded, tasks))


def _remove(table: Table, r: RewriteTaskResult) -> None:
    command_files.discard(table.io, [f.file_path for f, _ in r.files])


def _commit(table: Table, plan: PlanResult, removed: list[DataFile], added: list,
            case_sensitive: bool, branch: str) -> ProducedSnapshot:
    from icectl.table.commit.rewrite import OverwriteFilesProducer
    from icectl.table.commit.validation import conflict_filter

    return OverwriteFilesProducer(
        table, starting_snapshot_id=plan.snapshot_id, removed=removed, added=added,
        conflict_filter=conflict_filter(table.metadata, plan.filter, case_sensitive),
        branch=branch).commit()
