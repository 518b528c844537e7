"""Reading rows: the planned data files through their deletes and the residual filter.

:func:`open_scan` plans the scan (the only use of the planner, in :func:`_plan`) and returns a
:class:`Scan`, whose :meth:`Scan.batches` streams Arrow record batches:

1. each data file (Parquet) is read batch by batch, only the columns needed: the projected ones,
   the residual filter's, the equality deletes' key columns (read by field id even when later
   dropped from the schema) and, on v3 with metadata columns, the row-lineage columns;
2. columns are found by Parquet field id (else through the table's name mapping); renamed
   columns follow their id, columns the file lacks read as the file's identity partition value
   (a table adopted from Hive-style directories), else their v3 initial default or null,
   promoted types are widened (:func:`icectl.scan.arrow_values.conform`);
3. rows deleted by position delete files, deletion vectors and equality deletes are dropped (the
   planner has already attached to each file the deletes whose sequence numbers apply);
4. the residual filter is evaluated on whole columns (:mod:`icectl.scan.arrow_filter`, the
   expression module's row evaluator vectorized); row groups whose statistics prove that no row
   matches it are not read at all (:mod:`icectl.scan.row_groups`), and the row groups read keep
   their positions in the file.

Memory stays bounded by a batch (and a row group inside pyarrow), plus the delete sets.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from icectl.errors import (
    IcectlError,
    InvalidInput,
    StorageError,
    UnsupportedFeature,
    ValidationError,
)
from icectl.expr.expressions import TRUE, AlwaysFalse, AlwaysTrue, Expression, referenced_field_ids
from icectl.expr.ordering import value_key
from icectl.io.formats.parquet import parquet_schema_fields
from icectl.io.formats.parquet_write import arrow_field, arrow_type
from icectl.io.formats.puffin import read_deletion_vector
from icectl.scan.arrow_filter import comparable, constant_mask, row_mask
from icectl.scan.missing_columns import identity_constants, initial_default
from icectl.scan.arrow_values import (
    conform,
    field_chain,
    internal_to_arrow,
    struct_field_column,
    to_internal,
)
from icectl.scan.row_groups import row_group_starts, row_groups_to_read
from icectl.spec.manifests import EQUALITY_DELETES, POSITION_DELETES
from icectl.spec.name_mapping import table_name_mapping
from icectl.spec.partitioning import unified_partition_type
from icectl.spec.reserved import DELETE_FILE_PATH_ID as POS_DELETE_PATH_ID
from icectl.spec.reserved import DELETE_FILE_POS_ID as POS_DELETE_POS_ID
from icectl.spec.reserved import LAST_UPDATED_SEQUENCE_NUMBER_ID as LAST_UPDATED_SEQ_FIELD_ID
from icectl.spec.reserved import ROW_ID_ID as ROW_ID_FIELD_ID
from icectl.spec.schema import Schema, select_fields
from icectl.spec.types import DOUBLE, FLOAT, INT, LONG, STRING, NestedField, StructType

if TYPE_CHECKING:
    from icectl.scan.plan_result import PlannedFile, PlanResult
    from icectl.io.storage.files import FileIO
    from icectl.table.table import Table

__all__ = ["open_scan", "scan_of_plan", "scan_files", "Scan", "ScanFile", "METADATA_COLUMNS", "ROW_ID_FIELD_ID",
           "LAST_UPDATED_SEQ_FIELD_ID", "RecordBatches"]

# the rows a scan yields, by this name for the modules that type them without importing pyarrow
RecordBatches = Iterator[pa.RecordBatch]

METADATA_COLUMNS = ("_file", "_pos", "_spec_id", "_partition", "_row_id",
                    "_last_updated_sequence_number")
DEFAULT_BATCH_ROWS = 65_536


@dataclass(frozen=True)
class ScanFile:
    """What the reader needs to know of a planned data file."""

    path: str
    file_format: str
    spec_id: int
    partition: tuple
    record_count: int
    data_sequence_number: int | None
    first_row_id: int | None
    residual: Expression
    deletes: tuple
    file_size_in_bytes: int = 0


@dataclass
class Scan:
    """A planned scan, ready to read."""

    table: Table
    schema: Schema
    projected: list[NestedField]
    snapshot_id: int | None
    files: list[ScanFile]
    with_metadata: bool = False
    batch_rows: int = DEFAULT_BATCH_ROWS
    partition_type: StructType = field(default_factory=StructType)
    skip_row_groups: bool = True  # by the residual and each row group's statistics
    _pos_cache: dict = field(default_factory=dict, repr=False)
    _eq_cache: dict = field(default_factory=dict, repr=False)

    @property
    def format_version(self) -> int:
        return self.table.metadata.format_version

    def arrow_schema(self) -> pa.Schema:
        fields = [arrow_field(f) for f in self.projected]
        if self.with_metadata:
            fields += [pa.field("_file", pa.string()), pa.field("_pos", pa.int64()),
                       pa.field("_spec_id", pa.int32())]
            if len(self.partition_type):
                fields.append(pa.field("_partition", arrow_type(self.partition_type)))
            if self.format_version >= 3:
                fields += [pa.field("_row_id", pa.int64()),
                           pa.field("_last_updated_sequence_number", pa.int64())]
        return pa.schema(fields)

    def write_parquet(self, path: str, batches: Iterator[pa.RecordBatch]) -> int:
        """Write ``batches`` (of this scan) to a local Parquet file; the number of rows."""
        return write_parquet_batches(path, self.arrow_schema(), batches)

    def iceberg_types(self) -> list[Any]:
        """The Iceberg type of every output column (metadata columns included)."""
        types = [f.type for f in self.projected]
        if self.with_metadata:
            types += [STRING, LONG, INT]
            if len(self.partition_type):
                types.append(self.partition_type)
            if self.format_version >= 3:
                types += [LONG, LONG]
        return types

    @property
    def needs_reading_to_count(self) -> bool:
        return any(f.deletes or not isinstance(f.residual, AlwaysTrue) for f in self.files)

    def count(self) -> int:
        """Rows the scan returns: from the files' record counts when no delete file or
        residual filter needs reading, else by reading them."""
        if not self.needs_reading_to_count:
            return sum(f.record_count for f in self.files)
        return sum(b.num_rows for b in self.batches(count_only=True))

    def batches(self, limit: int | None = None, count_only: bool = False,
                progress: Callable[[int, int], None] | None = None) -> Iterator[pa.RecordBatch]:
        """The rows, as record batches of :meth:`arrow_schema` (no columns if ``count_only``);
        ``progress(files read, files)`` is called as each data file is finished."""
        left, tell = limit, progress or (lambda done, total: None)
        for n, f in enumerate(self.files):
            tell(n, len(self.files))
            if left is not None and left <= 0:
                return
            gen = self.file_batches(f, count_only)
            try:
                for b in gen:
                    if left is not None:
                        if b.num_rows > left:
                            b = b.slice(0, left)
                        left -= b.num_rows
                    if b.num_rows:
                        yield b
                    if left is not None and left <= 0:
                        return
            finally:
                gen.close()
        tell(len(self.files), len(self.files))

    def file_batches(self, f: ScanFile, count_only: bool = False) -> Iterator[pa.RecordBatch]:
        """The rows of one of :attr:`files` (a task reading its files one at a time)."""
        if not isinstance(f.residual, AlwaysFalse):  # else proven: no row of the file matches
            yield from _FileReader(self, f, count_only).batches()


def write_parquet_batches(path: str, schema: pa.Schema, batches: Iterator[pa.RecordBatch]) -> int:
    """Write ``batches`` of ``schema`` to a local Parquet file; the number of rows."""
    n = 0
    with pq.ParquetWriter(path, schema) as w:
        for b in batches:
            w.write_batch(b)
            n += b.num_rows
    return n


def open_scan(table: Table, filter_text: str | None = None, *, columns: str | Sequence[str] | None = None,
              snapshot_id: int | None = None, ref: str | None = None, as_of: str | None = None,
              case_sensitive: bool = False, with_metadata: bool = False,
              batch_rows: int = DEFAULT_BATCH_ROWS, filter_expr: Expression | None = None,
              from_snapshot: int | None = None, to_snapshot: int | None = None) -> Scan:
    """Plan a scan of ``table`` and return it ready to read. ``from_snapshot``/``to_snapshot``:
    an incremental scan (the planner's: rows appended after one snapshot up to another),
    refused over a snapshot that is not an append (its deleted rows would still be read)."""
    from icectl.scan.plan_setup import check_append_range, is_incremental

    if is_incremental(from_snapshot, to_snapshot, snapshot_id, ref, as_of):
        check_append_range(table.metadata, from_snapshot, to_snapshot)
    plan = _plan(table, filter_text, columns, snapshot_id, ref, as_of, case_sensitive,
                 dict(filter_expr=filter_expr, from_snapshot=from_snapshot, to_snapshot=to_snapshot))
    return scan_of_plan(table, plan, with_metadata=with_metadata, batch_rows=batch_rows)


def scan_of_plan(table: Table, plan: PlanResult, files: Sequence[PlannedFile] | None = None, *,
                 with_metadata: bool = False, batch_rows: int = DEFAULT_BATCH_ROWS) -> Scan:
    """A scan reading ``files`` (default: all) of an existing plan (a
    :class:`~icectl.scan.plan_result.PlanResult`) with its schema, columns and residuals: an
    operation that plans once reads and commits the same files."""
    schema = plan.schema
    projected = list(schema.fields) if plan.columns is None else _projection(schema, plan.columns)
    scan = Scan(table=table, schema=schema, projected=projected, snapshot_id=plan.snapshot_id,
                files=scan_files(plan.files if files is None else files),
                with_metadata=with_metadata, batch_rows=batch_rows)
    if with_metadata:
        scan.partition_type = unified_partition_type(table.metadata.specs, schema)
    return scan


def _projection(schema: Schema, column_names: Sequence[str]) -> list[NestedField]:
    """The top-level columns to read, in the order first named; a nested name (``info.a``)
    reads its top-level column pruned to the named fields (a struct with only them)."""
    order: list[int] = []
    ids: set[int] = set()
    for name in column_names:
        fid = schema.find_field(name, True).field_id
        ids.add(fid)
        top = schema.root_id(fid)
        if top not in order:
            order.append(top)
    by_id = {f.field_id: f for f in select_fields(schema.fields, ids)}
    return [by_id[fid] for fid in order]


def _plan(table: Table, filter_text: str | None, columns: str | Sequence[str] | None,
          snapshot_id: int | None, ref: str | None, as_of: str | None,
          case_sensitive: bool, extra: dict | None = None) -> PlanResult:
    """The planner's answer (the one place it is used)."""
    from icectl.scan.planner import plan_scan

    # only rows matching the filter are returned: delete files that cannot hold such rows
    # are not needed (the reference's planFiles leaves them out too)
    return plan_scan(table, filter_text, snapshot_id=snapshot_id, ref=ref, as_of=as_of,
                     columns=columns, case_sensitive=case_sensitive, filter_deletes=True,
                     **(extra or {}))


def scan_files(planned: Sequence[PlannedFile], whole: bool = False) -> list[ScanFile]:
    """What the reader needs of planned files; ``whole``: every row, the residual ignored
    (a rewrite reads its files whole, through their delete files)."""
    return [ScanFile(path=f.path, file_format=f.file_format, spec_id=f.spec_id,
                     partition=tuple(f.partition), record_count=f.record_count,
                     data_sequence_number=f.data_sequence_number,
                     first_row_id=f.first_row_id, residual=TRUE if whole else f.residual,
                     deletes=tuple(f.deletes), file_size_in_bytes=f.file_size_in_bytes)
            for f in planned]


# -- one data file --------------------------------------------------------------------------------


class _FileReader:
    def __init__(self, scan: Scan, f: ScanFile, count_only: bool):
        self.scan = scan
        self.f = f
        self.count_only = count_only
        self.io = scan.table.io
        md = scan.table.metadata
        self.mapping = table_name_mapping(md.properties, scan.schema)
        self.residual = f.residual
        self.residual_ids = (set() if isinstance(f.residual, AlwaysTrue)
                             else referenced_field_ids(f.residual))
        self.deleted = self._deleted_positions()
        self.eq_deletes = [d for d in f.deletes if d.content == EQUALITY_DELETES]
        self.lineage = scan.with_metadata and scan.format_version >= 3 and not count_only
        self._types: dict[tuple, dict[int, Any]] = {}
        self.constants = identity_constants(md, f.spec_id, f.partition)

    # deletes ---------------------------------------------------------------------------------

    def _deleted_positions(self) -> list[int]:
        sources = []
        for d in self.f.deletes:
            if d.content != POSITION_DELETES:
                continue
            if d.is_dv:
                sources.append(read_deletion_vector(self.io, d.path, d.content_offset,
                                                    d.content_size_in_bytes))
            else:
                sources.append(self._position_file(d).get(self.f.path, ()))
        if len(sources) == 1:
            return sorted(sources[0])
        out: set[int] = set()
        for positions in sources:
            out.update(positions)
        return sorted(out)

    def _position_file(self, d: Any) -> dict[str, Any]:
        """Positions by data file path. A file-scoped delete file (Spark's default) is read for
        its one data file and not kept; a partition-scoped one is kept for the other data files
        of its partition, its positions packed 8 bytes each."""
        cache = self.scan._pos_cache
        got = cache.get(d.path)
        if got is None:
            table = self._read_by_ids(d.path, [POS_DELETE_PATH_ID, POS_DELETE_POS_ID],
                                      ["file_path", "pos"])
            if d.referenced_data_file is not None:
                mask = pc.equal(table.column(0), pa.scalar(self.f.path, table.column(0).type))
                return {self.f.path: table.column(1).filter(mask).to_pylist()}
            got = {}
            grouped = table.group_by(table.column_names[0]).aggregate(
                [(table.column_names[1], "list")])
            for path, positions in zip(grouped.column(0).to_pylist(),
                                       grouped.column(1).to_pylist()):
                got[path] = array("q", positions)
            cache[d.path] = got
        return got

    def _equality_set(self, d: Any) -> tuple[tuple[int, ...], set[tuple]]:
        cache = self.scan._eq_cache
        got = cache.get(d.path)
        if got is None:
            ids = tuple(d.equality_ids or ())
            if not ids:
                raise UnsupportedFeature(f"equality delete file {d.path} has no equality ids")
            table = self._read_by_ids(d.path, list(ids), None)
            types = self._file_types(d.path, ids)
            cols = [_key_values(table.column(i), types[fid]) for i, fid in enumerate(ids)]
            got = (ids, set(zip(*cols)))
            cache[d.path] = got
        return got

    def _file_types(self, path: str, ids: Sequence[int]) -> dict[int, Any]:
        key = (path, tuple(ids))
        if key not in self._types:
            self._types[key] = self._lookup_types(path, ids)
        return self._types[key]

    def _lookup_types(self, path: str, ids: Sequence[int]) -> dict[int, Any]:
        fields = parquet_schema_fields(self.io, path, self.mapping)
        by_id = {pf.field_id: pf for pf in fields}
        out = {}
        for fid in ids:
            pf = by_id.get(fid)
            sf = self.scan.schema.find_field_or_none(fid)
            out[fid] = sf.type if sf is not None else (pf.iceberg_type if pf else None)
        return out

    def _read_by_ids(self, path: str, ids: list[int], names: list[str] | None) -> pa.Table:
        """Whole (small) delete file, the columns with these field ids (or names)."""
        try:
            with _open_parquet(self.io, path) as pf:
                fields = parquet_schema_fields(self.io, path, self.mapping, footer=pf.metadata)
                by_id = {x.field_id: x.name for x in fields}
                cols = []
                for i, fid in enumerate(ids):
                    name = by_id.get(fid) or (names[i] if names else None)
                    if name is None:
                        raise InvalidInput(f"delete file {path} has no column with field id {fid}")
                    cols.append(name)
                t = pf.read(columns=cols, use_threads=False)
                return t.rename_columns([str(i) for i in ids])
        except IcectlError:
            raise
        except OSError as e:
            raise StorageError(f"cannot read delete file {path}: {e}") from e

    # rows ----------------------------------------------------------------------------------

    def batches(self) -> Iterator[pa.RecordBatch]:
        f = self.f
        if f.file_format.upper() != "PARQUET":
            raise UnsupportedFeature(f"{f.path}: icectl scan reads Parquet data files only, "
                                     f"not {f.file_format}")
        try:
            with _open_parquet(self.io, f.path) as pf:
                yield from self._read(pf)
        except IcectlError:
            raise
        except (FileNotFoundError, PermissionError) as e:
            raise StorageError(f"cannot read data file {f.path}: {e}") from e
        except pa.ArrowException as e:
            raise ValidationError(f"{f.path} is not a readable Parquet file: {e}") from e
        except OSError as e:
            raise StorageError(f"cannot read data file {f.path}: {e}") from e

    def _read(self, pf: Any) -> Iterator[pa.RecordBatch]:
        fields = parquet_schema_fields(self.io, self.f.path, self.mapping, footer=pf.metadata)
        file_ids = {x.field_id: x.name for x in fields if x.field_id is not None}
        # nested fields (struct fields the filter or an equality delete names) are read through
        # their top-level column
        wanted: set[int] = {self.scan.schema.root_id(i) for i in self.residual_ids}
        for d in self.eq_deletes:
            wanted.update(d.equality_ids or ())
        if not self.count_only:
            wanted.update(x.field_id for x in self.scan.projected)
        if self.lineage:
            wanted.update((ROW_ID_FIELD_ID, LAST_UPDATED_SEQ_FIELD_ID))
        names = [file_ids[i] for i in sorted(wanted) if i in file_ids]
        # the file's fields (ids from the file or the name mapping, nested ones too), by name
        arrow_fields = {x.name: x for x in fields if x.name in names}
        for offset, groups in self._row_group_runs(pf.metadata):
            if names:
                source = pf.iter_batches(batch_size=self.scan.batch_rows, row_groups=groups,
                                         columns=names, use_threads=False)
            else:
                source = _empty_batches(pf, groups)
            try:
                for raw in source:
                    n = raw.num_rows
                    cols = {fid: raw.column(file_ids[fid]) for fid in wanted if fid in file_ids}
                    keep = self._keep_mask(offset, n, cols, arrow_fields, file_ids)
                    out = self._output(offset, n, cols, arrow_fields, file_ids)
                    offset += n
                    if keep is not None:
                        out = out.filter(keep)
                    yield out
            finally:
                close = getattr(source, "close", None)
                if close is not None:
                    close()

    def _row_group_runs(self, footer: Any) -> list[tuple[int, list[int]]]:
        """The row groups to read as runs of adjacent ones, each with the file position of its
        first row (skipped groups keep positions right for ``_pos`` and position deletes)."""
        every = list(range(footer.num_row_groups))
        chosen = (row_groups_to_read(footer, self.residual, self.scan.schema, self.mapping)
                  if self.scan.skip_row_groups else every)
        if not chosen:
            return []
        if len(chosen) == len(every):
            return [(0, every)]
        starts = row_group_starts(footer)
        runs: list[tuple[int, list[int]]] = []
        for i in chosen:
            if runs and runs[-1][1][-1] == i - 1:
                runs[-1][1].append(i)
            else:
                runs.append((starts[i], [i]))
        return runs

    def _column(self, fid: int, f: NestedField, n: int, cols: dict, arrow_fields: dict,
                file_ids: dict) -> Any:
        if fid in cols:
            return conform(cols[fid], f.type, arrow_fields[file_ids[fid]])
        if fid in self.constants:  # a column the file lacks, of an identity partition
            return internal_to_arrow([self.constants[fid]] * n, f.type)
        return internal_to_arrow([initial_default(f)] * n, f.type)

    def _field_values(self, fid: int, n: int, cols: dict, arrow_fields: dict,
                      file_ids: dict) -> Any:
        """The values of a top-level column or of a field of (nested) structs, conformed."""
        schema = self.scan.schema
        chain = field_chain(schema, fid)
        top = self._column(chain[0], schema.find_field(chain[0]), n, cols, arrow_fields, file_ids)
        return struct_field_column(top, schema, chain)

    def _output(self, offset: int, n: int, cols: dict, arrow_fields: dict,
                file_ids: dict) -> pa.RecordBatch:
        if self.count_only:
            return pa.RecordBatch.from_arrays([pa.nulls(n)], names=["_"]).select([])
        arrays = [self._column(f.field_id, f, n, cols, arrow_fields, file_ids)
                  for f in self.scan.projected]
        if self.scan.with_metadata:
            arrays += self._metadata_columns(offset, n, cols)
        return pa.RecordBatch.from_arrays(arrays, schema=self.scan.arrow_schema())

    def _metadata_columns(self, offset: int, n: int, cols: dict) -> list[Any]:
        f = self.f
        pos = pa.array(range(offset, offset + n), pa.int64())
        ptype = self.scan.partition_type
        spec = self.scan.table.metadata.specs_by_id().get(f.spec_id)
        value = {}
        if spec is not None:
            for pf, v in zip(spec.fields, f.partition):
                if ptype.field_by_id(pf.field_id) is not None:
                    value[pf.field_id] = v
        out = [pa.array([f.path] * n, pa.string()), pos, pa.array([f.spec_id] * n, pa.int32())]
        if len(ptype):
            part = internal_to_arrow([value], ptype)
            out.append(pc.take(part, pa.array([0] * n, pa.int32())))
        if self.lineage:
            row_id = cols.get(ROW_ID_FIELD_ID)
            inherited = (pa.nulls(n, pa.int64()) if f.first_row_id is None
                         else pc.add(pos, pa.scalar(f.first_row_id, pa.int64())))
            out.append(inherited if row_id is None
                       else pc.coalesce(row_id.cast(pa.int64()), inherited))
            seq = pa.scalar(f.data_sequence_number, pa.int64())
            lusn = cols.get(LAST_UPDATED_SEQ_FIELD_ID)
            out.append(pa.array([f.data_sequence_number] * n, pa.int64()) if lusn is None
                       else pc.coalesce(lusn.cast(pa.int64()), seq))
        return out

    def _keep_mask(self, offset: int, n: int, cols: dict, arrow_fields: dict,
                   file_ids: dict) -> Any:
        masks = []
        lo, hi = bisect_left(self.deleted, offset), bisect_left(self.deleted, offset + n)
        if hi > lo:
            keep = bytearray(b"\x01") * n
            for p in self.deleted[lo:hi]:
                keep[p - offset] = 0
            masks.append(pa.array(keep, pa.uint8()).cast(pa.bool_()))
        for d in self.eq_deletes:
            masks.append(self._equality_mask(d, n, cols, arrow_fields, file_ids))
        if not isinstance(self.residual, AlwaysTrue):  # a constant false filters too
            values = {fid: self._field_values(fid, n, cols, arrow_fields, file_ids)
                      for fid in self.residual_ids}
            masks.append(row_mask(self.residual, lambda p: values.get(p.field_id), n))
        if not masks:
            return None
        mask = masks[0]
        for m in masks[1:]:
            mask = pc.and_(mask, m)
        return mask

    def _equality_mask(self, d: Any, n: int, cols: dict, arrow_fields: dict,
                       file_ids: dict) -> Any:
        """Rows an equality delete file leaves (nulls match nulls). A one-column key of a type
        Arrow compares as Python does is looked up by Arrow; other keys row by row."""
        ids, keys = self._equality_set(d)
        types = self._file_types(self.f.path, ids)
        if len(ids) == 1:
            fid = ids[0]
            values = self._equality_values(d, keys, types[fid])
            col = cols.get(fid)
            if col is None:  # the file lacks the key column: all null
                return constant_mask((None,) not in keys, n)
            if values is not None:
                data = comparable(conform(col, types[fid], arrow_fields[file_ids[fid]]),
                                  floats=False)
                if data is not None and data[1] == values.type:
                    return pc.invert(pc.is_in(data[0], value_set=values, skip_nulls=False))
        key_cols = [_key_values(cols[i], types[i]) if i in cols else [None] * n for i in ids]
        keep = bytearray(b"\x01") * n
        for i, k in enumerate(zip(*key_cols)):
            if k in keys:
                keep[i] = 0
        return pa.array(keep, pa.uint8()).cast(pa.bool_())

    def _equality_values(self, d: Any, keys: set, t: Any) -> Any:
        """The delete file's one-column keys as an Arrow array, or None when Arrow's equality
        may differ from Python's for the type (floats, uuids, binary)."""
        cache = self.scan._eq_cache
        ck = (d.path, "arrow")
        if ck not in cache:
            got = None if t in (FLOAT, DOUBLE) else comparable(
                internal_to_arrow([k[0] for k in keys], t), floats=False)
            if got is not None:
                try:  # the kernel exists for the type (one-element probe)
                    pc.is_in(got[0][:1], value_set=got[0], skip_nulls=False)
                except (pa.ArrowNotImplementedError, pa.ArrowTypeError, pa.ArrowInvalid):
                    got = None
            cache[ck] = None if got is None else got[0]
        return cache[ck]


def _key_values(arr: Any, t: Any) -> list[Any]:
    """Equality-delete key values as the reference compares them: floats by
    :func:`~icectl.expr.ordering.value_key` (NaN equals NaN, ``-0.0`` differs from ``0.0``, as
    Java's ``Double.compare``), other types as their internal values."""
    values = to_internal(arr, t)
    if t in (FLOAT, DOUBLE):
        return [None if v is None else value_key(v) for v in values]
    return values


@contextmanager
def _open_parquet(file_io: FileIO, path: str) -> Iterator[Any]:
    """A ``ParquetFile``; local files are opened by pyarrow itself (no Python file object
    called back from pyarrow's threads)."""
    local = file_io.os_path(path)
    if local is not None:
        pf = pq.ParquetFile(local)
        try:
            yield pf
        finally:
            pf.close()
        return
    with file_io.open(path, "rb") as fh:
        yield pq.ParquetFile(fh)


def _empty_batches(pf: Any, groups: Sequence[int]) -> Iterator[pa.RecordBatch]:
    """Batches without columns, one per row group (a count needs only the row counts)."""
    for i in groups:
        n = pf.metadata.row_group(i).num_rows
        yield pa.RecordBatch.from_arrays([pa.nulls(n)], names=["_"]).select([])

