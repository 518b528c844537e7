"""`icectl delete`."""

from __future__ import annotations

from typing import Annotated, List, Optional

import typer

from icectl.cli.common import values, JsonOpt, TableArg, WapIdOpt, WarehouseOpt, handle_errors, load_table, note_staged, stage_wap_id
from icectl.cli.output import emit_json, emit_pairs
from icectl.errors import InvalidInput

DELETE_HELP = """Delete rows of TABLE, as one snapshot: those matching --filter, or those whose --equality key columns equal a row of --from FILE.

With --filter:

Data files whose partition or column metrics prove that every row matches are dropped whole
without being read; files proven not to match are not read. The mode is --mode, else the table
property write.delete.mode, else copy-on-write (Iceberg's default). In copy-on-write mode the
other files holding matching rows are rewritten without them (one `overwrite` snapshot, no
delete files; `delete` when files are only dropped). In merge-on-read mode the matching rows of
the other files are recorded in position delete files (format v2), one per data file, or in
deletion vectors (format v3, one Puffin file), merged with each data file's previous one (one
`delete` snapshot).

Not supported yet in merge-on-read mode (refused with exit 9, nothing written): row-level
deletes on format v1 tables and, on v3, of data files that still have Parquet position deletes.

With --equality (format v2 or v3; nulls match nulls, as in Iceberg's equality deletes): when the
key columns include every partition source column (or the table is unpartitioned) the keys are
written as equality delete files, in the partition their values determine; otherwise the rows
holding the keys are found and their positions deleted (position delete files on v2, deletion
vectors on v3). One `delete` snapshot. FILE is Parquet, CSV or JSON lines (- for stdin); other
columns in it are ignored. Repeat --equality or list several columns (id,region).

Examples:

\b
  icectl delete ./wh/db/events --filter "day < '2024-01-01'"
  icectl delete ./wh/db/events --filter "id in (3, 7)" --dry-run --json
  icectl delete ./wh/db/events --equality id,region --from gone.csv
"""


def register(app: typer.Typer) -> None:
    app.command("delete", help=DELETE_HELP, no_args_is_help=True)(delete)


@handle_errors(returns=(
    "icectl.ops.delete.shared_plan:DeleteResult",
    "icectl.ops.delete.copy_on_write:CopyOnWriteResult",
    "icectl.ops.delete.equality:EqualityDeleteResult",
))
def delete(
    table: TableArg,
    filter_text: Annotated[Optional[str], typer.Option("--filter", "-f", help="Rows to delete, e.g. \"id > 5 and day = '2024-01-02'\" (the scan filter grammar).")] = None,
    equality: Annotated[Optional[List[str]], typer.Option("--equality", help="Key columns (comma-separated; repeat to add more): delete the rows whose keys equal a row of --from.")] = None,
    from_file: Annotated[Optional[str], typer.Option("--from", help="With --equality: Parquet, CSV or JSON-lines file holding the keys to delete; - reads stdin.")] = None,
    mode: Annotated[Optional[str], typer.Option("--mode", metavar="copy-on-write|merge-on-read", autocompletion=values("copy-on-write", "merge-on-read"), help="copy-on-write or merge-on-read (default: the table property write.delete.mode, else copy-on-write).")] = None,
    branch: Annotated[Optional[str], typer.Option("--branch", help="Delete on this branch (default: main).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Report what would be deleted; write nothing.")] = False,
    wap_id: WapIdOpt = None,
    json_out: JsonOpt = False,
    warehouse: WarehouseOpt = None,
) -> None:
    from icectl.ops.delete.merge_on_read import delete_rows

    if equality or from_file is not None:
        _equality(table, filter_text, equality, from_file, mode, branch, dry_run, json_out, warehouse, wap_id)
        return
    if filter_text is None:
        raise InvalidInput("give --filter EXPR, or --equality KEYS with --from FILE")
    tbl = load_table(table, warehouse)
    stage_wap_id(tbl, wap_id)
    r = delete_rows(tbl, filter_text, mode=mode, branch=branch, dry_run=dry_run)
    note_staged(tbl, r.snapshot_id if r.committed else None)
    if json_out:
        emit_json(r.to_json())
        return
    pairs: list[tuple[str, object]] = [
        ("committed", r.committed),
        ("snapshot-id", r.snapshot_id),
        ("branch", r.branch),
        ("mode", r.mode),
        ("removed data files", len(r.removed_data_files)),  # every row matched: dropped whole
        ("removed records", r.removed_records),
    ]
    if hasattr(r, "rewritten_data_files"):  # copy-on-write: files rewritten without the rows
        pairs += [("rewritten data files", len(r.rewritten_data_files)),
                  ("added data files", len(r.added_data_files))]
    else:
        pairs.append(("position delete files", len(r.position_delete_files)))
    pairs.append(("deleted positions", r.deleted_positions))
    emit_pairs(pairs, title="dry run: nothing written" if r.dry_run else None)


def _equality(table: str, filter_text: Optional[str], equality: Optional[List[str]], from_file: Optional[str],
              mode: Optional[str], branch: Optional[str], dry_run: bool, json_out: bool,
              warehouse: Optional[str], wap_id: Optional[str] = None) -> None:
    import sys

    from icectl.ops.delete.equality import delete_equality

    if filter_text is not None:
        raise InvalidInput("--filter and --equality cannot be combined")
    if not equality or from_file is None:
        raise InvalidInput("--equality KEYS and --from FILE go together")
    if mode is not None and mode != "merge-on-read":
        raise InvalidInput(f"--mode {mode}: equality deletes are merge-on-read only")
    tbl = load_table(table, warehouse)
    stage_wap_id(tbl, wap_id)
    r = delete_equality(tbl, equality, from_file, branch=branch,
                        dry_run=dry_run, stdin=sys.stdin.buffer if from_file == "-" else None)
    note_staged(tbl, r.snapshot_id if r.committed else None)
    if json_out:
        emit_json(r.to_json())
        return
    emit_pairs([
        ("committed", r.committed),
        ("snapshot-id", r.snapshot_id),
        ("branch", r.branch),
        ("key columns", ",".join(r.key_columns)),
        ("key rows", r.key_rows),
        ("partitions", r.partitions),
        ("method", r.method),
        ("equality delete files", len(r.equality_delete_files)),
        ("position delete files", len(r.position_delete_files)),
        ("deleted rows", r.deleted_rows),
    ], title="dry run: nothing written" if r.dry_run else None)
