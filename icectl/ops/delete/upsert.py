"""Upsert rows by key (``icectl upsert TABLE DATA --key id``): rows with the same key are
replaced, new keys added, as SQL ``MERGE ... WHEN MATCHED THEN UPDATE WHEN NOT MATCHED THEN
INSERT`` with every column.

The rows of DATA are read and cast as ``icectl write`` does and written as data files the same
way (:func:`icectl.ops.write.data_sink.write_data_files`). The older rows with those keys are deleted in
the same row delta (operation ``overwrite``), one of two ways:

* when the key columns determine the partition (every partition source column is a key column,
  or the table is unpartitioned): the keys are written as equality delete files
  (:mod:`icectl.ops.delete.equality`) - the CDC pattern of Iceberg's Flink writer in upsert
  mode. The deletes and the new rows get the same data sequence number, and an equality delete
  applies only to rows with a strictly smaller one, so the new rows survive;
* otherwise (``--key event_id`` on a ``days(ts)`` table): the rows holding the keys are found
  and their positions deleted (position delete files on v2, deletion vectors on v3), as Spark's
  merge-on-read MERGE does (:mod:`icectl.ops.delete.keyed`).

Keys follow SQL MERGE rules: an input row with a null in a key column matches no row (it is
only inserted), and no existing row with a null key is replaced. Two input rows with the same
(non-null) key are refused, nothing written (Spark's MERGE fails when a row matches more than
one source row; Flink's upsert writer would keep the last, an ordering a file does not reliably
carry). Format v1 is refused (no row-level deletes). If anything fails, every file written is
removed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence, Mapping

import pyarrow as pa
import pyarrow.compute as pc

from icectl.errors import InvalidInput
from icectl import command_files
from icectl.ops.compute import conform_to_schema
from icectl.ops.delete.equality import (
    KeyedChange,
    _check_version,
    branch_head,
    key_rows,
    keys_may_match,
    live_specs,
    resolve_keys,
    target_specs,
    uncovered_partition_field,
    write_equality_deletes,
)
from icectl.ops.delete.keyed import drop_null_keys, find_key_positions, write_key_deletes
from icectl.ops.write.data_sink import write_data_files
from icectl.ops.write.row_sources import read_rows
from icectl.spec.snapshots import MAIN_BRANCH
from icectl.table.table import Table

__all__ = ["UpsertResult", "upsert_rows"]


@dataclass(frozen=True)
class UpsertResult(KeyedChange):
    """What an upsert committed (or, with ``dry_run``, would commit); its JSON view is its
    fields'."""

    rows: int
    input_format: str
    data_files: tuple[str, ...] = ()
    equality_delete_files: tuple[str, ...] = ()
    method: str = "equality-deletes"
    position_delete_files: tuple[str, ...] = ()
    replaced_rows: int | None = None  # known when the rows were found (not for equality deletes)
    summary: dict[str, str] = field(default_factory=dict, hash=False)


def _refuse_duplicates(keys: pa.Table) -> None:
    keys = drop_null_keys(keys)  # a null key matches nothing, so it is no duplicate either
    names = keys.column_names
    counted = keys.group_by(names, use_threads=False).aggregate([([], "count_all")])
    dup = counted.filter(pc.greater(counted.column("count_all"), 1))
    if dup.num_rows:
        first = dup.slice(0, 1).to_pylist()[0]
        shown = ", ".join(f"{n}={first[n]!r}" for n in names)
        raise InvalidInput(f"the input has {dup.num_rows} key(s) on more than one row (e.g. "
                           f"{shown}, {first['count_all']} rows); an upsert takes one row per key")


def upsert_rows(table: Table, source: str | pa.Table, keys: str | Sequence[str], *,
                file_format: str | None = None, branch: str | None = None,
                dry_run: bool = False, stdin: Any = None, rounding: str | None = None,
                summary_properties: Mapping[str, str] | None = None) -> UpsertResult:
    """Upsert the rows of ``source`` into ``table`` by the key columns (see the module docs);
    ``rounding`` as :func:`icectl.ops.write.rows.write_rows` takes it."""
    from icectl.table.commit.row_delta import RowDeltaProducer
    from icectl.table.commit.validation import filter_may_match

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
    key_data = key_rows(raw, key_schema, label, rounding=rounding)  # refuses input without a key column
    data = conform_to_schema(raw, schema, rounding=rounding, source=label).combine_chunks()
    _refuse_duplicates(key_data)
    head = branch_head(table, branch)
    specs = live_specs(table, head)
    by_equality = uncovered_partition_field(table, specs, key_schema) is None
    matches = None
    if not by_equality:  # find the rows and delete their positions
        matches = find_key_positions(table, key_data, key_schema, branch, nulls_match=False)
    result = dict(location=table.location, branch=branch, dry_run=dry_run,
                  parent_snapshot_id=head.snapshot_id if head is not None else None,
                  key_columns=tuple(f.name for f in key_schema.fields), rows=data.num_rows,
                  input_format=fmt,
                  method="equality-deletes" if by_equality else (
                      "deletion-vectors" if md.format_version >= 3 else "position-deletes"),
                  replaced_rows=matches.rows if matches is not None else None)
    if dry_run:
        return UpsertResult(committed=False, snapshot_id=None, **result)
    written: list[str] = []
    try:
        added_data = write_data_files(table, data, written)
        replaced: list = []
        if matches is None:
            key_data = drop_null_keys(key_data)  # SQL rules: a null key matches no row
            added_deletes = write_equality_deletes(
                table, key_data, key_schema, target_specs(table, head, key_schema), written)
            may_match = keys_may_match(table, key_data, key_schema)
            start = result["parent_snapshot_id"]
        else:
            added_deletes, replaced = write_key_deletes(table, matches, written)
            may_match = filter_may_match(md, matches.filter, True)  # the plan's own filter
            start = matches.snapshot_id
        produced = RowDeltaProducer(
            table, start, added_data=added_data, added_deletes=added_deletes,
            removed_deletes=replaced,
            referenced_data_files=list(matches.files.values()) if matches is not None else (),
            may_match=may_match, branch=branch, summary_properties=summary_properties).commit()
    except BaseException:
        command_files.discard(table.io, written)  # (kept when the commit may have landed)
        raise
    deletes = tuple(dict.fromkeys(f.file_path for f, _ in added_deletes))
    return UpsertResult(committed=True, snapshot_id=produced.snapshot.snapshot_id,
                        data_files=tuple(f.file_path for f, _ in added_data),
                        equality_delete_files=deletes if matches is None else (),
                        position_delete_files=deletes if matches is not None else (),
                        summary=dict(produced.snapshot.summary), **result)
