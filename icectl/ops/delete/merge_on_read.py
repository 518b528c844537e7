"""Deleting the rows of a table that match a filter (``icectl delete``).

The filter is parsed once, here at the edge (or taken as an expression), and planned once
(:mod:`icectl.ops.delete.shared_plan`); the files read, dropped and referenced by the commit are that
plan's, handed to the commit as ``DataFile``s carrying their manifest (no manifest is read
again, and no second plan is made).

1. The scan planner lists the data files the filter may match (files proven not to match are
   never read).
2. A file whose partition proves every row matches (the planner's residual is ``true``) or
   whose column metrics prove it (the strict metrics evaluator) is dropped whole, unread - the
   reference's metadata delete. Both proofs count nulls and NaN: a row whose value is null
   matches no comparison, ``in``, ``not in`` or ``starts with`` (nor their negations), so a
   null partition never proves ``x != 5`` (the reference's metadata delete says it does and
   drops the null partition: not copied). A file whose residual is ``false`` is not read.
3. In merge-on-read mode (format v2) the other candidates are read through the scan reader
   (existing deletes applied) and the positions of their matching rows are written as position
   delete files, one per data file (``write.delete.granularity=file``), rows sorted by
   position, with the ``file_path`` bounds in the manifest entry
   (:mod:`icectl.ops.delete.positions`).
4. One ``delete`` snapshot commits both (a row delta, :mod:`icectl.table.commit.row_delta`): the
   dropped files marked deleted in rewritten manifests, the new delete files in a new delete
   manifest. If the branch moved meanwhile, the row delta re-validates against the new head
   for the table's isolation level (the files read still live, no new deletes for them, and for
   ``serializable`` no new data the filter may match: the check both modes share,
   :func:`icectl.table.commit.validation.filter_may_match`) and commits on top or fails with
   CommitConflict.

   On format v3 the positions go to deletion vectors instead: one Puffin file, one
   ``deletion-vector-v1`` blob per data file, merged with the file's previous deletion vector,
   whose entry the same commit removes.

The mode is ``mode``, else the table's ``write.delete.mode`` (default copy-on-write, as the
reference); copy-on-write deletes are :mod:`icectl.ops.delete.copy_on_write`'s. Not yet supported in
merge-on-read mode (refused, nothing written): row-level deletes on format v1, and on v3 a data
file that still has Parquet position deletes. Files written before a failed commit are removed.
"""

from __future__ import annotations

from icectl import command_files
from icectl.errors import UnsupportedFeature
from icectl.expr.expressions import AlwaysFalse, Expression
from icectl.ops.delete.positions import (
    POS_DELETE_SCHEMA,
    matching_positions,
    previous_dvs,
    with_partition_paths,
    write_row_deletes,
)
from icectl.ops.delete.shared_plan import (
    COPY_ON_WRITE,
    DELETE_MODE,
    MERGE_ON_READ,
    DeleteResult,
    branch_ref,
    delete_filter,
    plan_delete,
    resolve_mode,
    whole_file_matches,
)
from icectl.table.table import Table

__all__ = ["DeleteResult", "delete_rows", "MERGE_ON_READ", "COPY_ON_WRITE", "DELETE_MODE",
           "POS_DELETE_SCHEMA"]


def delete_rows(table: Table, filter_text: str | None = None, *, filter_expr: Expression | None = None,
                mode: str | None = None, branch: str | None = None, dry_run: bool = False,
                case_sensitive: bool = False) -> DeleteResult:
    """Delete the rows of ``table`` matching ``filter_text`` (or the expression
    ``filter_expr``; see the module docs)."""
    expr = delete_filter(filter_text, filter_expr)  # the one parse
    md = table.metadata
    chosen = resolve_mode(md, mode)
    branch, ref = branch_ref(md, branch)
    if chosen == COPY_ON_WRITE:  # rewrites the files holding matching rows (ops/delete/copy_on_write.py)
        from icectl.ops.delete.copy_on_write import delete_copy_on_write

        return delete_copy_on_write(table, filter_expr=expr, branch=branch, dry_run=dry_run,
                                    case_sensitive=case_sensitive)
    return _merge_on_read(table, expr, branch, ref, dry_run, case_sensitive)


def _merge_on_read(table: Table, expr: Expression, branch: str, ref: str | None, dry_run: bool,
                   case_sensitive: bool) -> DeleteResult:
    from icectl.table.commit.row_delta import RowDeltaProducer
    from icectl.table.commit.validation import filter_may_match

    md = table.metadata
    plan = plan_delete(table, expr, ref, case_sensitive, filter_deletes=True)
    planned = plan.files
    removed = [p for p in planned if whole_file_matches(p, plan.schema)]
    removed_paths = {p.path for p in removed}
    rest = [p for p in planned
            if p.path not in removed_paths and not isinstance(p.residual, AlwaysFalse)]
    positions = matching_positions(table, plan, rest)
    if positions and md.format_version < 2:
        raise UnsupportedFeature(
            "row-level deletes need format v2 or later (icectl upgrade); on this v1 table only "
            "deletes of whole files are possible")
    hit = [p for p in rest if p.path in positions]
    old_dvs = previous_dvs(hit, positions) if md.format_version >= 3 else {}
    result = dict(location=table.location, branch=branch, mode=MERGE_ON_READ, dry_run=dry_run,
                  parent_snapshot_id=plan.snapshot_id,
                  removed_data_files=tuple(sorted(removed_paths)),
                  removed_records=sum(p.record_count for p in removed),
                  deleted_positions=sum(len(v) for v in positions.values()),
                  files_with_row_deletes=tuple(sorted(positions)))
    if dry_run or (not removed and not positions):
        return DeleteResult(committed=False, snapshot_id=None, position_delete_files=(), **result)
    written: list[str] = []
    try:
        files = {p.path: p.data_file() for p in hit}
        added, replaced = write_row_deletes(table, plan, positions, files, old_dvs, written)
        produced = RowDeltaProducer(
            table, plan.snapshot_id, removed=with_partition_paths(md, (p.data_file() for p in removed)),
            added_deletes=added, removed_deletes=replaced, referenced_data_files=list(files.values()),
            may_match=filter_may_match(md, plan.filter, case_sensitive), branch=branch).commit()
    except BaseException:
        command_files.discard(table.io, written)  # (kept when the commit may have landed)
        raise
    return DeleteResult(committed=True, snapshot_id=produced.snapshot.snapshot_id,
                        position_delete_files=tuple(dict.fromkeys(f.file_path for f, _ in added)),
                        summary=dict(produced.snapshot.summary), **result)
