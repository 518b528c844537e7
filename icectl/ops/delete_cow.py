"""Copy-on-write row deletes (``icectl delete --mode copy-on-write``).

As the reference's copy-on-write DELETE:

1. the scan planner lists the data files the filter may match;
2. files whose partition proves every row matches (residual ``true``: sound for null and NaN
   partition values, see :mod:`icectl.expr.eval_residual`) are dropped whole, unread; files whose
   partition proves no row matches (residual ``false``) are left alone;
3. the other candidates are read through their deletes by the rewrite task
   (:func:`icectl.ops.rewrite_task.run_rewrite_task`, one task per partition, on an engine):
   the rows the files holding matching rows keep are written again, together, into files of the
   current spec; a file in which no row matches is left as it is;
4. one snapshot commits it (:class:`icectl.table.rewrite.OverwriteFilesProducer`): ``overwrite``
   when files are replaced, ``delete`` when files are only dropped. Delete files that only the
   replaced files needed are removed in the same commit, so the table is left without delete
   files for them.

On a lost race the commit re-validates from the planned snapshot (files still live, no new
deletes for them, and at the ``serializable`` isolation level - the default of
``write.delete.isolation-level`` - no new data file that may hold matching rows); a conflict
fails with :class:`~icectl.errors.CommitConflict` and the rewritten files are removed.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from icectl.errors import InvalidInput
from icectl import command_files
from icectl.expr.expressions import AlwaysFalse, AlwaysTrue
from icectl.ops.delete_rows import COPY_ON_WRITE, DeleteResult, _matching_positions
from icectl.ops.rewrite_task import (
    RewriteTask,
    results_or_raise,
    run_rewrite_task,
    run_rewrite_task_guarded,
    task_input,
)
from icectl.ops.write import data_location
from icectl.spec.properties import TARGET_FILE_SIZE, TARGET_FILE_SIZE_DEFAULT, property_int
from icectl.spec.snapshots import MAIN_BRANCH

__all__ = ["CopyOnWriteResult", "delete_copy_on_write"]



@dataclass(frozen=True)
class CopyOnWriteResult(DeleteResult):
    """A copy-on-write delete: the delete's result plus the files written in place of others."""

    added_data_files: tuple[str, ...] = ()
    rewritten_data_files: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        out["added-data-files"] = list(self.added_data_files)
        out["rewritten-data-files"] = list(self.rewritten_data_files)
        return out


def delete_copy_on_write(table: Any, filter_text: str, *, branch: str | None = None,
                         dry_run: bool = False, case_sensitive: bool = False,
                         engine: Any = None, workers: int | None = None) -> CopyOnWriteResult:
    """Delete the rows of ``table`` matching ``filter_text`` by rewriting the files that hold
    them (see the module docs). ``engine``: an engine object or name (default local)."""
    from icectl.scan.planner import plan_scan

    md = table.metadata
    branch = branch or MAIN_BRANCH
    ref = branch if branch in md.refs else None
    if ref is None and branch != MAIN_BRANCH:
        raise InvalidInput(f"no branch named {branch!r}", argument="branch")
    plan = plan_scan(table, filter_text, ref=ref, case_sensitive=case_sensitive)
    # a residual is true only when every row of the file matches (nulls and NaN counted), and
    # false only when none does (:mod:`icectl.expr.eval_residual`); the rest are read
    dropped = [p for p in plan.files if isinstance(p.residual, AlwaysTrue)]
    candidates = [p for p in plan.files if not isinstance(p.residual, (AlwaysTrue, AlwaysFalse))]
    tasks = _tasks(table, md, candidates, filter_text, case_sensitive)
    base = dict(location=table.location, branch=branch, mode=COPY_ON_WRITE, dry_run=dry_run,
                parent_snapshot_id=plan.snapshot_id, position_delete_files=())
    if dry_run:  # the matching rows of the candidates are counted, as the real run drops them
        hits = _matching_positions(table, filter_text, branch, {p.path for p in candidates}) \
            if candidates else {}
        hits = {k: v for k, v in hits.items() if v}
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
    results: list = []
    try:
        results = _run(engine, workers, tasks, table.io)
        rewritten = sorted(p for r in results for p in r.rewritten)
        removed = sorted({p.path for p in dropped} | set(rewritten))
        added = [fp for r in results for fp in r.files]
        result = dict(removed_data_files=tuple(sorted(p.path for p in dropped)),
                      removed_records=sum(p.record_count for p in dropped),
                      deleted_positions=sum(r.rows_dropped for r in results),
                      files_with_row_deletes=tuple(rewritten),
                      added_data_files=tuple(f.file_path for f, _ in added),
                      rewritten_data_files=tuple(rewritten))
        if not removed:
            return CopyOnWriteResult(committed=False, snapshot_id=None, **base, **result)
        produced = _commit(table, md, plan, removed, added, filter_text, case_sensitive, branch)
    except BaseException:
        for r in results:
            _remove(table, r)
        if tasks:
            command_files.discard_operation(table.io, base_dir, tasks[0].operation_id)
        raise
    return CopyOnWriteResult(committed=True, snapshot_id=produced.snapshot.snapshot_id,
                             summary=dict(produced.snapshot.summary), **base, **result)


def _tasks(table: Any, md: Any, candidates: list, filter_text: str, case_sensitive: bool
           ) -> list[RewriteTask]:
    """One task per partition of the candidate files (each reads its files one by one and
    rewrites those holding matching rows into files of the current spec)."""
    order = md.sort_order
    operation_id = str(uuid.uuid4())
    target = property_int(md.properties, TARGET_FILE_SIZE, TARGET_FILE_SIZE_DEFAULT)
    by_part: dict[tuple, list] = {}
    for p in candidates:
        by_part.setdefault((p.spec_id, tuple(p.partition)), []).append(p)
    return [RewriteTask(inputs=tuple(task_input(p) for p in files), schema=md.schema.to_json(),
                        spec=md.spec.to_json(),
                        sort_order=order.to_json() if order is not None and order.fields else None,
                        properties=dict(md.properties), format_version=md.format_version,
                        target_file_size=target, table_location=table.location,
                        operation_id=operation_id, task_index=i, drop_filter=filter_text,
                        case_sensitive=case_sensitive,
                        storage_options=table.io.storage_options)
            for i, files in enumerate(by_part.values())]


def _run(engine: Any, workers: int | None, tasks: list[RewriteTask], table_io: Any) -> list:
    if not tasks:
        return []
    if len(tasks) == 1 and engine is None:
        return [run_rewrite_task(tasks[0])]  # one file: no worker processes to start
    from icectl.engines import get_engine

    if engine is None or isinstance(engine, str):
        engine = get_engine(engine or "local", **({"workers": workers} if workers else {}))
    return results_or_raise(table_io, engine.map(run_rewrite_task_guarded, tasks))


def _remove(table: Any, r: Any) -> None:
    command_files.discard(table.io, [f.file_path for f, _ in r.files])


def _commit(table: Any, md: Any, plan: Any, removed: list[str], added: list, filter_text: str,
            case_sensitive: bool, branch: str) -> Any:
    from icectl.expr.evaluators import MetricsEvaluator
    from icectl.scan.plan_setup import bind_filter
    from icectl.table.rewrite import OverwriteFilesProducer
    from icectl.table.validation import SERIALIZABLE, isolation_level

    conflict = None
    if isolation_level(md) == SERIALIZABLE:
        evaluator = MetricsEvaluator(bind_filter(filter_text, None, md.schema, case_sensitive))

        def conflict(f: Any) -> bool:
            ok, _ = evaluator.eval(f)
            return ok

    return OverwriteFilesProducer(table, starting_snapshot_id=plan.snapshot_id, removed=removed,
                                  added=added, conflict_filter=conflict, branch=branch).commit()
