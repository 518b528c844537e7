"""Equality delete files: ``icectl delete --equality KEYS --from FILE`` and the deletes of
``icectl upsert``.

An equality delete file holds values of the key columns (``equality_ids``: their field ids,
also the Parquet field ids of its columns); a row of a data file with a strictly smaller data
sequence number whose key columns equal one of its rows (nulls equal nulls) is deleted.

**Partition scoping.** An equality delete stored under a partitioned spec applies only to data
files of the same spec and partition; one stored under an unpartitioned spec applies to every
data file. So each key row must be written in the partition its values determine, for every
spec that may hold matching rows: the table's default spec and the spec of every live data file
of the branch head. When one of those specs is unpartitioned a single global delete file under
it is written. Otherwise the keys determine the partition only when every (non-void) partition
field of those specs is computed from a key column (Iceberg's Flink writer requires it for
upserts). When they do not (``id`` on a ``days(ts)`` table), a key-only delete cannot know the
partition of the rows it must reach, so :func:`delete_equality` finds the rows instead and
deletes their positions (:mod:`icectl.ops.delete.keyed`, as Spark's merge-on-read DELETE and
MERGE do): nulls still match nulls there, as in an equality delete.

Key columns must be top-level primitive columns of the table (as the reference's identifier
fields); the key file may hold other columns, which are ignored.
"""

from __future__ import annotations

import math
import uuid as _uuid
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from icectl.errors import InvalidInput, NotFound, UnsupportedFeature
from icectl.expr.expressions import Expression, Operation, and_, make_bound, or_
from icectl import command_files
from icectl.io.manifest import records as avro
from icectl.io.storage.files import join
from icectl.io.formats.parquet import footer_metrics
from icectl.io.formats.parquet_write import ParquetWriteOptions, write_rolling
from icectl.ops.compute import conform_to_schema, partition_groups
from icectl.ops.compute.arrow_values import internal_values
from icectl.ops.compute.conform import match_column
from icectl.table.branches import branch_to_commit
from icectl.table.locations import data_location
from icectl.spec.manifests import EQUALITY_DELETES, MANIFEST_DATA, DataFile
from icectl.spec.metrics import metrics_config
from icectl.spec.partition_identity import partition_key
from icectl.spec.partition_path import partition_path
from icectl.spec.partitioning import PartitionSpec
from icectl.spec.schema import Schema
from icectl.spec.metadata import TableMetadata
from icectl.spec.result_json import JsonResult, committed_operation
from icectl.spec.snapshots import MAIN_BRANCH, Snapshot
from icectl.spec.types import PrimitiveType
from icectl.table.table import Table

__all__ = ["KeyedChange", "EqualityDeleteResult", "delete_equality", "resolve_keys", "key_rows",
           "target_specs", "live_specs", "uncovered_partition_field", "write_equality_deletes", "keys_filter", "keys_may_match", "branch_head"]


@dataclass(frozen=True)
class KeyedChange(JsonResult):
    """What a change by key columns (``delete --equality``, ``upsert``) reports first; each
    result adds its fields after these."""

    committed: bool
    dry_run: bool
    location: str
    branch: str
    snapshot_id: int | None
    parent_snapshot_id: int | None
    operation: str | None = committed_operation()
    key_columns: tuple[str, ...]


@dataclass(frozen=True)
class EqualityDeleteResult(KeyedChange):
    """What ``delete --equality`` did (or, with ``dry_run``, would do); its JSON view is its
    fields'."""

    key_rows: int
    partitions: int
    equality_delete_files: tuple[str, ...]
    method: str = "equality-deletes"
    position_delete_files: tuple[str, ...] = ()
    deleted_rows: int | None = None  # known when the rows were found (not for equality deletes)
    summary: dict[str, str] = field(default_factory=dict, hash=False)


def resolve_keys(schema: Schema, keys: str | Sequence[str]) -> Schema:
    """The key columns (top-level primitive columns of ``schema``, matched as ``icectl write``
    matches names) as a schema of their own, in the order given."""
    given = [keys] if isinstance(keys, str) else list(keys)  # each may list several: "id,ts"
    names = [k.strip() for g in given for k in g.split(",")]
    if not names:
        raise InvalidInput("give the key columns to match rows on", argument="keys")
    if any(not n for n in names):
        raise InvalidInput(f"key columns {','.join(names)!r}: a column name is empty")
    out = []
    for n in names:
        f = match_column(schema.struct, n)
        if f is None:
            if schema.find_field_or_none(n, False) is not None:
                raise InvalidInput(f"key column {n!r} is nested; equality keys must be "
                                   "top-level primitive columns")
            raise NotFound(f"key column {n!r} not found in the table schema")
        if not isinstance(f.type, PrimitiveType):
            kind = type(f.type).__name__.replace("Type", "").lower()
            raise InvalidInput(f"key column {f.name!r} is a {kind}; equality keys must be "
                               "primitive columns")
        if any(f.field_id == o.field_id for o in out):
            raise InvalidInput(f"key column {f.name!r} is given twice")
        out.append(f)
    return Schema(tuple(out))


def key_rows(raw: pa.Table, keys: Schema, source: str, *, rounding: str | None = None) -> pa.Table:
    """The key columns of ``raw`` (rows read from ``source``) conformed to the key schema
    (numbers rounded only with ``rounding``); other columns are ignored."""
    picked = {}
    for f in keys.fields:
        name = next((c for c in raw.column_names if c == f.name), None)
        if name is None:
            matches = [c for c in raw.column_names if c.lower() == f.name.lower()]
            if len(matches) > 1:
                raise InvalidInput(f"{source}: columns {matches} all match key column {f.name!r}")
            name = matches[0] if matches else None
        if name is None:
            raise InvalidInput(f"{source} has no column {f.name!r} (a key column); it has "
                               f"{', '.join(raw.column_names) or 'no columns'}")
        col = raw.column(name)
        if f.required and len(col) and col.null_count == len(col):
            # a JSON reader fills a field no row has with nulls: say what is missing
            raise InvalidInput(f"{source} has no values for key column {f.name!r} (a required "
                               "column): the column is missing or every row's value is null")
        picked[f.name] = col
    return conform_to_schema(pa.table(picked), keys, rounding=rounding, source=source).combine_chunks()


def branch_head(table: Table, branch: str) -> Snapshot | None:
    """The branch's head snapshot (None for a branch without snapshots)."""
    md = table.metadata
    _, ref = branch_to_commit(md, branch)
    return None if ref is None else md.snapshot_by_id(ref.snapshot_id)


def live_specs(table: Table, head: Snapshot | None) -> list[PartitionSpec]:
    """The table's default spec and the spec of every live data file of ``head``."""
    md = table.metadata
    ids = {md.default_spec_id}
    if head is not None:
        for m in avro.load_manifest_list(table.io, head.manifest_list, md.format_version):
            if m.content == MANIFEST_DATA and ((m.added_files_count or 0) + (m.existing_files_count or 0)) > 0:
                ids.add(m.partition_spec_id)
    return [md.spec_by_id(i) for i in sorted(ids)]


def uncovered_partition_field(table: Table, specs: Sequence[PartitionSpec], keys: Schema
                              ) -> str | None:
    """None when the keys determine the partition of every spec in ``specs`` (or one of them is
    unpartitioned); else a description of a partition field no key column determines."""
    if any(s.is_unpartitioned() for s in specs):
        return None
    key_ids = {f.field_id for f in keys.fields}
    for s in specs:
        for pf in s.fields:
            if not pf.transform.is_void and pf.source_id not in key_ids:
                col = table.metadata.schema.find_field_or_none(pf.source_id)
                return (f"partition field {pf.name!r} (spec {s.spec_id}) comes from column "
                        f"{col.name if col else pf.source_id!r}, which is not a key column")
    return None


def target_specs(table: Table, head: Snapshot | None, keys: Schema) -> list[PartitionSpec]:
    """The specs to write the deletes under (see the module docs); InvalidInput when the keys do
    not determine the partition of one of them."""
    specs = live_specs(table, head)
    for s in specs:
        if s.is_unpartitioned():
            return [s]  # a global delete reaches every spec's files
    why = uncovered_partition_field(table, specs, keys)
    if why is not None:
        raise InvalidInput(f"{why}: equality deletes apply only within their partition, so the "
                           "key columns must include every partition source column")
    return specs


def write_equality_deletes(table: Table, rows: pa.Table, keys: Schema, specs: Sequence[PartitionSpec],
                           written: list[str]) -> list[tuple[DataFile, str]]:
    """Write ``rows`` (key columns) as equality delete files: one per partition of each spec.
    Paths written are appended to ``written``."""
    md = table.metadata
    options = ParquetWriteOptions.from_properties(md.properties)
    options = replace(options, target_file_size_bytes=1 << 62)
    config = metrics_config(md.properties, md.schema, None)
    base_dir = data_location(table.location, md.properties)
    operation_id = str(_uuid.uuid4())
    counter = [0]
    ids = tuple(f.field_id for f in keys.fields)
    out: list[tuple[DataFile, str]] = []
    for spec in specs:
        for part, idx in partition_groups(rows, spec, keys):
            ppath = partition_path(spec, md.schema, part) if spec.fields else ""
            directory = join(base_dir, ppath) if ppath else base_dir

            def next_path(directory: str = directory) -> str:
                counter[0] += 1
                p = join(directory, f"00000-0-{operation_id}-{counter[0]:05d}-deletes.parquet")
                written.append(p)
                return command_files.register(table.io, p)

            for w in write_rolling(table.io, rows.take(idx), keys, options, next_path):
                m = footer_metrics(w.footer, config, None, w.file_size_in_bytes, path=w.path)
                out.append((DataFile(
                    content=EQUALITY_DELETES, file_path=w.path, file_format="PARQUET",
                    partition=part, record_count=w.record_count,
                    file_size_in_bytes=w.file_size_in_bytes,
                    column_sizes=m.column_sizes or None, value_counts=m.value_counts or None,
                    null_value_counts=m.null_value_counts or None,
                    nan_value_counts=m.nan_value_counts or None,
                    lower_bounds=m.lower_bounds or None, upper_bounds=m.upper_bounds or None,
                    split_offsets=m.split_offsets or None, equality_ids=ids,
                    spec_id=spec.spec_id), ppath))
    return out


def keys_filter(rows: pa.Table, keys: Schema) -> Expression:
    """A filter every row with one of these keys matches (per column: ``in`` its values, or
    null, or NaN): the conflict filter of serializable isolation. ``in`` never selects null or
    NaN, and an equality delete's null or NaN key removes the rows holding null or NaN, so
    those are asked for with ``is null`` / ``is nan``."""
    parts = []
    for i, f in enumerate(keys.fields):
        col = rows.column(i)
        col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        distinct = pc.unique(col.drop_null())
        vals = [v for v in internal_values(distinct, f.type)]
        nan = any(isinstance(v, float) and math.isnan(v) for v in vals)
        if nan:
            vals = [v for v in vals if not (isinstance(v, float) and math.isnan(v))]
        name = f.name
        term = make_bound(Operation.IN, f.field_id, name, f.type, vals)
        if col.null_count:
            term = or_(term, make_bound(Operation.IS_NULL, f.field_id, name, f.type))
        if nan:
            term = or_(term, make_bound(Operation.IS_NAN, f.field_id, name, f.type))
        parts.append(term)
    return and_(*parts)


def keys_may_match(table: Table, rows: pa.Table, keys: Schema) -> Callable[[DataFile], bool]:
    """Whether a data file may hold a row with one of these keys (partition and metrics)."""
    from icectl.table.commit.validation import filter_may_match

    return filter_may_match(table.metadata, keys_filter(rows, keys))


def _check_version(md: TableMetadata) -> None:
    if md.format_version < 2:
        raise UnsupportedFeature("equality deletes need format v2 or later (icectl upgrade)")


def delete_equality(table: Table, keys: str | Sequence[str], source: str | pa.Table, *,
                    file_format: str | None = None, branch: str | None = None,
                    dry_run: bool = False, stdin: Any = None) -> EqualityDeleteResult:
    """Delete the rows whose key columns equal a row of ``source`` (see the module docs): as
    equality delete files when the keys determine the partition, else by finding the rows and
    deleting their positions (:mod:`icectl.ops.delete.keyed`)."""
    from icectl.ops.delete.keyed import find_key_positions, write_key_deletes
    from icectl.ops.write.row_sources import read_rows
    from icectl.table.commit.row_delta import RowDeltaProducer
    from icectl.table.commit.validation import filter_may_match

    md = table.metadata
    _check_version(md)
    branch = branch or MAIN_BRANCH
    key_schema = resolve_keys(md.schema, keys)
    if isinstance(source, pa.Table):
        raw, label = source, "the key rows"
    else:
        # read as optional columns: a file lacking a key column is reported as such below
        loose = Schema(tuple(replace(f, required=False) for f in key_schema.fields))
        raw, _ = read_rows(table.io, source, file_format, loose, stdin)
        label = "stdin" if source == "-" else source
    rows = key_rows(raw, key_schema, label)
    if rows.num_rows == 0:
        raise InvalidInput(f"{label} has no rows: no keys to delete")
    head = branch_head(table, branch)
    specs = live_specs(table, head)
    matches = None
    if uncovered_partition_field(table, specs, key_schema) is None:
        specs = target_specs(table, head, key_schema)
        parts = sum(len(partition_groups(rows, s, key_schema)) for s in specs)
    else:  # the keys do not determine the partition: find the rows, delete their positions
        matches = find_key_positions(table, rows, key_schema, branch, nulls_match=True)
        parts = len({(f.spec_id, partition_key(f.partition)) for f in matches.files.values()})
    result = dict(location=table.location, branch=branch, dry_run=dry_run,
                  parent_snapshot_id=head.snapshot_id if head is not None else None,
                  key_columns=tuple(f.name for f in key_schema.fields), key_rows=rows.num_rows,
                  partitions=parts,
                  method="equality-deletes" if matches is None else (
                      "deletion-vectors" if md.format_version >= 3 else "position-deletes"),
                  deleted_rows=matches.rows if matches is not None else None)
    if dry_run or (matches is not None and not matches.positions):
        return EqualityDeleteResult(committed=False, snapshot_id=None, equality_delete_files=(),
                                    **result)
    written: list[str] = []
    try:
        if matches is None:
            added = write_equality_deletes(table, rows, key_schema, specs, written)
            produced = RowDeltaProducer(
                table, result["parent_snapshot_id"], added_deletes=added,
                may_match=keys_may_match(table, rows, key_schema), branch=branch).commit()
        else:
            added, replaced = write_key_deletes(table, matches, written)
            produced = RowDeltaProducer(
                table, matches.snapshot_id, added_deletes=added, removed_deletes=replaced,
                referenced_data_files=list(matches.files.values()),
                may_match=filter_may_match(md, matches.filter, True),  # the plan's own filter
                branch=branch).commit()
    except BaseException:
        command_files.discard(table.io, written)  # (kept when the commit may have landed)
        raise
    paths = tuple(dict.fromkeys(f.file_path for f, _ in added))
    return EqualityDeleteResult(committed=True, snapshot_id=produced.snapshot.snapshot_id,
                                equality_delete_files=paths if matches is None else (),
                                position_delete_files=paths if matches is not None else (),
                                summary=dict(produced.snapshot.summary), **result)
