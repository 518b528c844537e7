"""Upsert rows by key (``icectl upsert TABLE DATA --key id``): the CDC pattern of Iceberg's
Flink writer in upsert mode.

The rows of DATA are read and cast as ``icectl write`` does and written as data files the same
way (:func:`icectl.ops.write.write_data_files`); their key columns are written as equality
delete files (:mod:`icectl.ops.equality_deletes`, partition scoping and key rules included).
Both are committed in ONE row delta (operation ``overwrite``): the deletes and the new rows get
the same data sequence number, and an equality delete applies only to rows with a strictly
smaller one, so the older rows with those keys disappear while the new rows survive.

Two input rows with the same key are refused (nothing written): Flink's upsert writer keeps the
last of them, an ordering a file does not reliably carry. Format v1 is refused (no row-level
deletes). If anything fails, every file written is removed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from icectl.errors import InvalidInput
from icectl import command_files
from icectl.ops.compute import conform_to_schema
from icectl.ops.equality_deletes import (
    _check_version,
    branch_head,
    key_rows,
    keys_may_match,
    resolve_keys,
    target_specs,
    write_equality_deletes,
)
from icectl.ops.write import read_rows, write_data_files
from icectl.spec.snapshots import MAIN_BRANCH

__all__ = ["UpsertResult", "upsert_rows"]


@dataclass(frozen=True)
class UpsertResult:
    """What an upsert committed (or, with ``dry_run``, would commit)."""

    location: str
    branch: str
    dry_run: bool
    committed: bool
    snapshot_id: int | None
    parent_snapshot_id: int | None
    key_columns: tuple[str, ...]
    rows: int
    input_format: str
    data_files: tuple[str, ...] = ()
    equality_delete_files: tuple[str, ...] = ()
    summary: dict[str, str] = field(default_factory=dict, hash=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "committed": self.committed,
            "dry-run": self.dry_run,
            "location": self.location,
            "branch": self.branch,
            "snapshot-id": self.snapshot_id,
            "parent-snapshot-id": self.parent_snapshot_id,
            "operation": self.summary.get("operation") if self.committed else None,
            "key-columns": list(self.key_columns),
            "rows": self.rows,
            "input-format": self.input_format,
            "data-files": list(self.data_files),
            "equality-delete-files": list(self.equality_delete_files),
            "summary": dict(self.summary),
        }


def _refuse_duplicates(keys: pa.Table) -> None:
    names = keys.column_names
    counted = keys.group_by(names, use_threads=False).aggregate([([], "count_all")])
    dup = counted.filter(pc.greater(counted.column("count_all"), 1))
    if dup.num_rows:
        first = dup.slice(0, 1).to_pylist()[0]
        shown = ", ".join(f"{n}={first[n]!r}" for n in names)
        raise InvalidInput(f"the input has {dup.num_rows} key(s) on more than one row (e.g. "
                           f"{shown}, {first['count_all']} rows); an upsert takes one row per key")


def upsert_rows(table: Any, source: str | pa.Table, keys: str | Sequence[str], *,
                file_format: str | None = None, branch: str | None = None,
                dry_run: bool = False, stdin: Any = None) -> UpsertResult:
    """Upsert the rows of ``source`` into ``table`` by the key columns (see the module docs)."""
    from icectl.table.row_delta import RowDeltaProducer

    md = table.metadata
    _check_version(md)
    branch = branch or MAIN_BRANCH
    schema = md.schema
    key_schema = resolve_keys(schema, keys)
    if isinstance(source, pa.Table):
        raw, fmt, label = source, "arrow", "the input"
    else:
        raw, fmt = read_rows(table.io, source, file_format, schema, stdin)
        label = "stdin" if source == "-" else source
    if raw.num_rows == 0:
        raise InvalidInput("the input has no rows: nothing to upsert")
    key_data = key_rows(raw, key_schema, label)  # refuses input without a key column
    data = conform_to_schema(raw, schema).combine_chunks()
    _refuse_duplicates(key_data)
    head = branch_head(table, branch)
    specs = target_specs(table, head, key_schema)
    result = dict(location=table.location, branch=branch, dry_run=dry_run,
                  parent_snapshot_id=head.snapshot_id if head is not None else None,
                  key_columns=tuple(f.name for f in key_schema.fields), rows=data.num_rows,
                  input_format=fmt)
    if dry_run:
        return UpsertResult(committed=False, snapshot_id=None, **result)
    written: list[str] = []
    try:
        added_data = write_data_files(table, data, written)
        added_deletes = write_equality_deletes(table, key_data, key_schema, specs, written)
        produced = RowDeltaProducer(
            table, result["parent_snapshot_id"], added_data=added_data,
            added_deletes=added_deletes, may_match=keys_may_match(table, key_data, key_schema),
            branch=branch).commit()
    except BaseException:
        command_files.discard(table.io, written)  # (kept when the commit may have landed)
        raise
    return UpsertResult(committed=True, snapshot_id=produced.snapshot.snapshot_id,
                        data_files=tuple(f.file_path for f, _ in added_data),
                        equality_delete_files=tuple(f.file_path for f, _ in added_deletes),
                        summary=dict(produced.snapshot.summary), **result)
