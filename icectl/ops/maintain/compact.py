"""Compacting data files (``icectl compact``), as Spark's ``rewrite_data_files`` does.

Planning follows the reference's ``BinPackRewriteFilePlanner`` (options and defaults alike):

1. the scan planner lists the live data files the filter may match, each with the delete files
   that apply to it (residuals are ignored: a file is rewritten whole or not at all);
2. files are grouped by partition; files of an older partition spec all go into one group, to be
   rewritten into the current spec;
3. a file is a candidate when its size is outside [``min_file_size``, ``max_file_size``]
   (default 0.75 and 1.8 times the target size), when ``delete_file_threshold`` or more delete
   files apply to it, or when file-scoped deletes remove at least ``delete_ratio_threshold`` of
   its rows;
4. each partition's candidates are packed in order into groups of at most
   ``max_file_group_size`` bytes, and a group is kept when it has enough files (more than one and
   at least ``min_input_files``), more than one file and more bytes than the target, more bytes
   than the maximum file size, or a file with too many deletes;
5. a group is split into tasks of the reference's input split size (the target size, or more to
   avoid a small remainder file); files of an older spec and the ``sort`` strategy read the whole
   group in one task (rows are repartitioned or sorted across all of it).

Tasks run on an engine (:mod:`icectl.engines`, local processes by default) through
:func:`icectl.ops.maintain.rewrite_task.run_rewrite_task`, writing files rolled at the reference's write
maximum (target plus half the distance to the maximum size). A task streams: reader batches go
to the rolling writers a row group at a time; a sort (the ``sort`` strategy, or the table's
order under ``binpack``) is exact across the whole task (its files hold consecutive key ranges,
each sorted, as Spark's range-partitioned, locally sorted sort rewrite guarantees) and spills
sorted runs to temporary files beyond its memory buffer. Compaction plans once: the tasks read the plan's files
through the delete files the planner attached to them (with their data sequence numbers), and
the commit removes those same files as the plan gave them (DataFiles whose manifest is known),
so the commit opens only the manifests it rewrites. The driver commits one ``replace``
snapshot (:class:`icectl.table.commit.rewrite.RewriteFilesProducer`) whose new files keep the starting
snapshot's data sequence number; with ``partial_progress=N`` it commits after every N groups.
A failed commit, an interrupt (SIGINT, SIGTERM, SIGHUP) or a dead worker removes the files the
tasks wrote, also those of tasks whose results never came back (:mod:`icectl.command_files`);
a commit whose outcome is unknown keeps them.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

from icectl.errors import InvalidInput
from icectl import command_files
from icectl.ops.maintain.rewrite_task import (
    RewriteTask,
    RewriteTaskResult,
    results_or_raise,
    run_rewrite_task_guarded,
    task_inputs,
)
from icectl.ops.maintain.compact_rules import (  # compaction's options and rules (re-exported)
    BINPACK,
    DELETE_FILE_THRESHOLD_DEFAULT,
    SORT,
    SPLIT_LOOKBACK,
    ZORDER,
    TARGET_FILE_SIZE,
    TARGET_FILE_SIZE_DEFAULT,
    CompactionRules as _Rules,
    CompactOptions,
    file_scoped_deleted,
    forecast_compaction,
    kept_groups,
)
from icectl.spec.partition_identity import partition_key
from icectl.scan.tasks import pack
from icectl.spec.snapshots import MAIN_BRANCH
from icectl.spec.sorting import build_sort_order
from icectl.spec.result_json import JsonResult, derived, json_field
from icectl.spec.zorder import ZOrder, bind_zorder, parse_zorder_terms
from icectl.table.branches import branch_to_commit
from icectl.table.locations import data_location

if TYPE_CHECKING:
    from icectl.engines import Engine
    from icectl.spec.metadata import TableMetadata
    from icectl.table.table import Table

__all__ = ["CompactOptions", "CompactResult", "GroupPlan", "compact_table", "plan_compaction", "forecast_compaction",
           "BINPACK", "SORT", "ZORDER", "TARGET_FILE_SIZE", "TARGET_FILE_SIZE_DEFAULT",
           "DELETE_FILE_THRESHOLD_DEFAULT"]



@dataclass(frozen=True, kw_only=True)
class GroupPlan(JsonResult):
    """One file group: its partition (None for files of older specs), inputs and tasks."""

    index: int = json_field(key="group")
    spec_id: int | None
    partition: tuple | None = json_field(omit=True)
    partition_values: dict | None = json_field(default=None, key="partition")  # JSON single-value form
    partition_path: str | None = None
    input_file_count: int = derived(lambda g: len(g.input_files), key="input-files")
    input_bytes: int = derived(lambda g: sum(t.input_bytes for t in g.tasks))
    tasks: tuple[RewriteTask, ...] = json_field(value=len)
    expected_output_files: int
    # the plan's files the tasks read (scan planner PlannedFiles, in task order): the commit
    # removes them as the plan gave them (their manifest, spec and partition)
    files: tuple = json_field(default=(), compare=False, repr=False, omit=True)

    @property
    def input_files(self) -> list[str]:
        return [f.path for t in self.tasks for f in t.inputs]


@dataclass(frozen=True, kw_only=True)
class CompactResult(JsonResult):
    """What a compaction did (or, with ``dry_run``, would do); a dry run counts the groups'
    inputs as rewritten."""

    location: str
    branch: str
    strategy: str
    dry_run: bool
    committed: bool = derived(lambda r: bool(r.snapshot_ids))
    starting_snapshot_id: int | None
    snapshot_ids: tuple[int, ...] = ()
    target_file_size: int = json_field(key="target-file-size-bytes")
    file_groups: int = derived(lambda r: len(r.groups))
    rewritten_data_files: int = json_field(default=0, omit=True)
    rewritten_data_files_count: int = derived(lambda r: sum(len(g.input_files) for g in r.groups)
                                              if r.dry_run else r.rewritten_data_files)
    added_data_files: int = json_field(default=0, key="added-data-files-count")
    rewritten_bytes: int = json_field(default=0, omit=True)
    rewritten_bytes_count: int = derived(lambda r: sum(g.input_bytes for g in r.groups)
                                         if r.dry_run else r.rewritten_bytes)
    added_bytes: int = json_field(default=0, key="added-bytes-count")
    removed_delete_files: int = json_field(default=0, key="removed-delete-files-count")
    rows_written: int = 0
    groups: tuple[GroupPlan, ...]
    summaries: tuple[dict, ...] = field(default=(), hash=False)
    warnings: tuple[str, ...] = ()


# -- planning -------------------------------------------------------------------------------------


def plan_compaction(table: Table, filter_text: str | None = None, options: CompactOptions | None = None,
                    *, branch: str | None = None, case_sensitive: bool = False
                    ) -> tuple[int | None, int, list[GroupPlan]]:
    """(starting snapshot id, target file size, file groups) of a compaction; nothing written."""
    from icectl.spec.views import partition_json
    from icectl.scan.planner import plan_scan

    opts = options or CompactOptions()
    opts.check()
    md = table.metadata
    target, lo, hi = opts.sizes(md.properties)
    rules = _Rules(opts, target, lo, hi)
    order, ignored = _sort_order(md, opts, case_sensitive)
    ref = _ref(md, branch)
    plan = plan_scan(table, filter_text, ref=ref, case_sensitive=case_sensitive)
    if plan.snapshot_id is None:
        return None, target, []
    spec = md.spec
    by_part: dict[tuple, list] = {}
    for f in plan.files:
        # -0.0 and 0.0 are one key in Python but two partitions (spec.partition_identity.partition_key)
        key = (f.spec_id, partition_key(tuple(f.partition))) if f.spec_id == spec.spec_id else (None, None)
        by_part.setdefault(key, []).append(f)
    operation_id = str(uuid.uuid4())
    common = dict(schema=md.schema.to_json(), spec=spec.to_json(),
                  sort_order=order.to_json() if order is not None and order.fields else None,
                  properties=dict(md.properties), format_version=md.format_version,
                  target_file_size=rules.write_max,
                  table_location=table.location,
                  operation_id=operation_id,
                  storage_options=table.io.storage_options)
    groups: list[GroupPlan] = []
    counter = [0]
    for (spec_id, part), files in sorted(by_part.items(), key=lambda kv: _part_sort_key(kv[0])):
        for group in kept_groups(rules, files):
            size = sum(f.file_size_in_bytes for f in group)
            whole = spec_id is None or opts.strategy in (SORT, ZORDER)
            chunks = [group] if whole else list(pack(
                group, lambda f: f.file_size_in_bytes + sum(d.file_size_in_bytes for d in f.deletes),
                rules.split_size(size), SPLIT_LOOKBACK, largest_bin_first=True))
            tasks = []
            # z-order: the group's rows in its expected number of files, equal shares, as the
            # reference range-partitions a z-ordered group into that many files
            per_task = dict(common, rows_per_file=_share(group, size, rules),
                            files_per_partition=rules.expected_output_files(size)) \
                if isinstance(order, ZOrder) else common
            for chunk in chunks:
                tasks.append(RewriteTask(inputs=task_inputs(chunk), task_index=counter[0], **per_task))
                counter[0] += 1
            values, path = partition_json(md, spec_id, part) if spec_id is not None else (None, None)
            groups.append(GroupPlan(index=len(groups) + 1, spec_id=spec_id, partition=part,
                                    tasks=tuple(tasks),
                                    expected_output_files=rules.expected_output_files(size),
                                    partition_values=values, partition_path=path,
                                    files=tuple(f for chunk in chunks for f in chunk)))
    return plan.snapshot_id, target, groups


def _share(group: list, size: int, rules: _Rules) -> int:
    """Rows per file of a z-order task: the group's live rows (as far as the plan knows them:
    records less file-scoped position deletes) over its expected output files."""
    live = sum(max(0, f.record_count - file_scoped_deleted(f)) for f in group)
    return max(1, -(-live // rules.expected_output_files(size)))


def _part_sort_key(key: tuple) -> tuple:
    spec_id, part = key
    if spec_id is None:
        return (1, ())
    return (0, tuple((v is not None, str(v)) for v in part))


def _ref(md: TableMetadata, branch: str | None) -> str | None:
    name, ref = branch_to_commit(md, branch, tag_error=InvalidInput)
    return None if ref is None else name


def _zorder(md: TableMetadata, opts: CompactOptions, case_sensitive: bool) -> Any:
    """The z-order of a zorder compaction (or a sort by ``zorder(...)`` terms), with the columns
    left out (identity partition columns); None when the compaction does not z-order."""
    columns: list[str] | None = None
    if opts.strategy == ZORDER:
        columns = list(opts.zorder_columns) if opts.zorder_columns is not None else \
            parse_zorder_terms(opts.sort_order)
        if columns is None:
            raise InvalidInput("cannot z-order without columns", argument="zorder_columns")
    elif opts.sort_order is not None:
        columns = parse_zorder_terms(opts.sort_order)
        if columns is not None and opts.strategy != SORT:
            raise InvalidInput("a z-order sort order is given but the strategy is binpack; use the "
                               "sort or zorder strategy to z-order", argument="strategy")
    if columns is None:
        return None
    return bind_zorder(md.schema, md.spec.identity_source_ids(), columns, case_sensitive=case_sensitive,
                       var_length_contribution=opts.var_length_contribution,
                       max_output_size=opts.max_output_size)


def _sort_order(md: TableMetadata, opts: CompactOptions, case_sensitive: bool = False
                ) -> tuple[Any, list[str]]:
    """(the order tasks sort by, z-order columns left out)."""
    z = _zorder(md, opts, case_sensitive)
    if z is not None:
        return z
    return _plain_sort_order(md, opts), []


def _plain_sort_order(md: TableMetadata, opts: CompactOptions) -> Any:
    if opts.sort_order is not None:
        if opts.strategy != SORT:
            raise InvalidInput("a sort order is given but the strategy is binpack; use the sort "
                               "strategy to sort")
        order = build_sort_order(md.schema, opts.sort_order, order_id=1)
        if not order.fields:
            raise InvalidInput("the sort order is empty")
        existing = [o for o in md.sort_orders if o.fields == order.fields]
        return existing[0] if existing else order.with_order_id(0)
    order = md.sort_order
    if opts.strategy == SORT and (order is None or not order.fields):
        raise InvalidInput("the table has no sort order to sort by; give one")
    return order


# -- running --------------------------------------------------------------------------------------


def compact_table(table: Table, filter_text: str | None = None, options: CompactOptions | None = None,
                  *, engine: Engine | str | None = None, workers: int | None = None, branch: str | None = None,
                  dry_run: bool = False, case_sensitive: bool = False,
                  progress: Callable[[int, int], None] | None = None) -> CompactResult:
    """Compact ``table`` (see the module docs). ``engine`` is an engine object or name
    (default ``local`` with ``workers`` processes); ``progress(done, total)`` is called as file
    groups finish."""
    from icectl.engines import get_engine

    opts = options or CompactOptions()
    start, target, groups = plan_compaction(table, filter_text, opts, branch=branch,
                                            case_sensitive=case_sensitive)
    branch = branch or MAIN_BRANCH
    ignored = _sort_order(table.metadata, opts, case_sensitive)[1]
    warnings = tuple(f"z-order ignores column {c!r}: an identity partition field holds it constant "
                     f"within each partition" for c in ignored)
    base = dict(location=table.location, branch=branch, strategy=opts.strategy,
                starting_snapshot_id=start, target_file_size=target, groups=tuple(groups),
                warnings=warnings)
    if dry_run or not groups:
        return CompactResult(dry_run=dry_run, **base)
    if engine is None or isinstance(engine, str):
        engine = get_engine(engine or "local", **({"workers": workers} if workers else {}))
    step = opts.partial_progress or len(groups)
    totals = _Totals()
    for i in range(0, len(groups), step):
        batch = groups[i:i + step]
        _run_and_commit(table, engine, batch, start, branch, totals)
        if progress is not None:
            progress(min(i + step, len(groups)), len(groups))
    return CompactResult(dry_run=False, snapshot_ids=tuple(totals.snapshots),
                         rewritten_data_files=totals.rewritten, added_data_files=totals.added,
                         rewritten_bytes=totals.rewritten_bytes, added_bytes=totals.added_bytes,
                         removed_delete_files=totals.removed_deletes, rows_written=totals.rows,
                         summaries=tuple(totals.summaries), **base)


class _Totals:
    def __init__(self) -> None:
        self.snapshots: list[int] = []
        self.summaries: list[dict] = []
        self.rewritten = self.added = self.rewritten_bytes = self.added_bytes = 0
        self.removed_deletes = self.rows = 0


def _run_and_commit(table: Table, engine: Engine, groups: Sequence[GroupPlan], start: int | None,
                    branch: str, totals: _Totals) -> None:
    from icectl.table.commit.rewrite import RewriteFilesProducer

    tasks = [t for g in groups for t in g.tasks]
    results: list[RewriteTaskResult] = []
    # the tasks name their files <task index>-0-<operation id>-...: registered before they start,
    # so an interrupt or a dead worker removes also the files of tasks that never reported back
    base_dir = data_location(table.location, table.metadata.properties)
    operation_id = tasks[0].operation_id
    command_files.register_operation(table.io, base_dir, operation_id, (t.task_index for t in tasks))
    try:
        results = results_or_raise(table.io, engine.map(run_rewrite_task_guarded, tasks))
        added = [fp for r in results for fp in r.files]
        # the planned files as DataFiles: their manifest (the hint) is the one the commit
        # opens to remove them (table/commit/manifest_filter.py)
        removed = [f.data_file() for g in groups for f in g.files]
        producer = RewriteFilesProducer(table, starting_snapshot_id=start, removed=removed,
                                        added=added, branch=branch)
        produced = producer.commit()
    except BaseException:
        command_files.discard(table.io, [f.file_path for r in results for f, _ in r.files])
        command_files.discard_operation(table.io, base_dir, operation_id)
        raise
    totals.snapshots.append(produced.snapshot.snapshot_id)
    totals.summaries.append(dict(produced.snapshot.summary))
    totals.rewritten += len(removed)
    totals.added += len(added)
    totals.rewritten_bytes += sum(t.input_bytes for t in tasks)
    totals.added_bytes += sum(f.file_size_in_bytes for f, _ in added)
    totals.removed_deletes += len(producer.removed_deletes)
    totals.rows += sum(r.rows_written for r in results)
