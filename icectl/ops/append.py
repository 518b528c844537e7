"""Append existing data files to a table without reading their rows.

``append_files(table, paths, ...)`` registers Parquet, ORC and Avro files as a new ``append``
snapshot. For each file it reads only the footer (Parquet: metrics and column statistics; ORC:
the row count; Avro: block headers), places the file in its partition, and then commits one fast
append (manifests merged when the table asks for it). Footers are read in parallel by a bounded
thread pool.

Partition values, per partition field of the table's default spec, come from:

1. the file's column statistics, when the transform maps the column's min and max to one value
   (for identity and bucket the min must equal the max);
2. a Hive-style directory in the file's path (``ts_day=2024-01-02/``), in the reference's
   partition-path text (the field name, ``=``, the transform's human string, URL-escaped);
3. ``partition_values`` given by the caller (``field=value`` text), for every file.

A value from the path or the caller must agree with the statistics when those decide it.

Refused - with nothing committed and nothing left behind - are: a missing file; a path given
twice or already in the table (checked again on every commit retry); a file whose columns do not
fit the table's schema; a file whose rows span several partitions, or whose partition cannot be
told.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Mapping, Sequence

from icectl.errors import InvalidInput, NotFound, ValidationError
from icectl.io import avro
from icectl.io.files import is_local, local_path
from icectl.io.formats import avro_record_count, detect_format, orc_record_count
from icectl.io.parquet import (
    ColumnStats,
    column_stats,
    footer_metrics,
    parquet_schema_fields,
    read_footer,
)
from icectl.io.parquet_schema import check_file_schema, footer_null_proof
from icectl.spec.metrics import metrics_config
from icectl.spec.name_mapping import mapping_from_schema, name_mapping_to_json, table_name_mapping
from icectl.spec.manifests import DATA, DataFile
from icectl.spec.metadata import TableMetadata
from icectl.spec.partitioning import PartitionField, PartitionSpec
from icectl.spec.schema import Schema
from icectl.spec.snapshots import MAIN_BRANCH, Snapshot
from icectl.spec.partition_path import hive_values, parse_partition_value, partition_path
from icectl.spec.transforms import (
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    TruncateTransform,
    YearTransform,
)
from icectl.spec.types import (
    BINARY,
    STRING,
    IcebergType,
    NestedField,
)
from icectl.table.producer import FastAppendProducer, ProducedSnapshot
from icectl.table.table import CommitAttempt, Table

__all__ = ["AppendResult", "append_files", "append_data_files", "NAME_MAPPING_PROPERTY", "DEFAULT_WORKERS"]

NAME_MAPPING_PROPERTY = "schema.name-mapping.default"
DEFAULT_WORKERS = min(32, 4 * (os.cpu_count() or 1))
# Bounds of strings and binaries may have been truncated by a writer at 16 characters/bytes
# (Iceberg's default metrics mode); such bounds are only trusted for short prefixes.
_TRUNCATED_BOUND_LENGTH = 16


# -- result -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AppendResult:
    """What an append committed."""

    location: str
    branch: str
    snapshot_id: int | None  # None when nothing was committed
    parent_snapshot_id: int | None
    sequence_number: int | None
    metadata_location: str
    version: int
    manifest_list: str
    manifests_written: tuple[str, ...]
    added_files: int
    added_records: int
    added_files_size: int
    summary: dict[str, str] = field(hash=False)
    first_row_id: int | None = None
    added_rows: int | None = None
    attempts: int = 1
    name_mapping_created: bool = False
    files: tuple[dict[str, Any], ...] = field(default=(), hash=False)
    committed: bool = True
    skipped_files: tuple[str, ...] = ()  # given, but already in the table (skip_existing)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "committed": self.committed,
            "location": self.location,
            "branch": self.branch,
            "snapshot-id": self.snapshot_id,
            "parent-snapshot-id": self.parent_snapshot_id,
            "sequence-number": self.sequence_number,
            "operation": self.summary.get("operation", "append") if self.committed else None,
            "added-files": self.added_files,
            "added-records": self.added_records,
            "added-files-size": self.added_files_size,
            "manifest-list": self.manifest_list,
            "manifests-written": list(self.manifests_written),
            "metadata-file": self.metadata_location,
            "version": self.version,
            "first-row-id": self.first_row_id,
            "added-rows": self.added_rows,
            "attempts": self.attempts,
            "name-mapping-created": self.name_mapping_created,
            "summary": dict(self.summary),
            "files": list(self.files),
            "skipped-files": list(self.skipped_files),
        }
        return out


# -- scanning files ------------------------------------------------------------------------------


@dataclass
class _Scanned:
    path: str
    file_format: str
    size: int
    record_count: int
    stats: dict[int, ColumnStats] = field(default_factory=dict)  # by table field id
    metrics: DataFile | None = None  # column metrics in the table's terms (Parquet)
    uses_names: bool = False  # columns matched by name (the file has no field ids)


def _normalise(path: str) -> str:
    p = path.strip()
    if not p:
        raise InvalidInput("empty data file path")
    if is_local(p) and "://" not in p and not p.startswith("file:"):
        return os.path.abspath(p)
    return p


def _identity_key(path: str) -> str:
    """The same file however it is spelled (``file:/x``, ``file:///x``, ``/x``)."""
    if is_local(path):
        try:
            return os.path.normpath(local_path(path))
        except Exception:  # noqa: BLE001
            return path
    return path.rstrip("/")


def _scan_parquet(file_io: Any, path: str, schema: Schema, size: int, ctx: "_Context") -> _Scanned:
    footer = read_footer(file_io, path)
    fields = parquet_schema_fields(file_io, path, ctx.mapping, footer=footer)
    problems = check_file_schema(fields, schema, footer_null_proof(footer, ctx.mapping))
    if problems:
        raise ValidationError(f"{path} does not fit the table: {'; '.join(problems)}")
    fm = footer_metrics(footer, ctx.config, ctx.mapping, size, path=path)
    # untruncated statistics of the partition sources place the file in its partition
    stats = column_stats(footer, ctx.mapping, ctx.partition_source_ids) if ctx.partition_source_ids else {}
    return _Scanned(path, "PARQUET", size, fm.record_count, stats, _data_file_metrics(path, size, fm),
                    any(not f.file_has_id for f in fields))


def _data_file_metrics(path: str, size: int, fm: Any) -> DataFile:
    return DataFile(
        content=DATA, file_path=path, file_format="PARQUET", record_count=fm.record_count,
        file_size_in_bytes=size, column_sizes=fm.column_sizes or None,
        value_counts=fm.value_counts or None, null_value_counts=fm.null_value_counts or None,
        nan_value_counts=fm.nan_value_counts or None, lower_bounds=fm.lower_bounds or None,
        upper_bounds=fm.upper_bounds or None, split_offsets=fm.split_offsets or None,
    )


@dataclass(frozen=True)
class _Context:
    mapping: Any
    config: Any
    partition_source_ids: frozenset[int] = frozenset()  # columns whose statistics place files


def _scan(file_io: Any, path: str, fmt: str | None, schema: Schema, ctx: _Context) -> _Scanned:
    try:
        info = file_io.info(path)
    except NotFound:
        raise NotFound(f"data file not found: {path}") from None
    if info.is_dir:
        raise InvalidInput(f"{path} is a directory, not a data file")
    file_format = detect_format(path, fmt)
    if file_format == "PARQUET":
        return _scan_parquet(file_io, path, schema, info.size, ctx)
    if file_format == "ORC":
        return _Scanned(path, "ORC", info.size, orc_record_count(file_io, path))
    return _Scanned(path, "AVRO", info.size, avro_record_count(file_io, path))


# -- partitions ----------------------------------------------------------------------------------


class _Undetermined:
    pass


UNDETERMINED = _Undetermined()


class _Spans(Exception):
    def __init__(self, low: Any, high: Any):
        super().__init__()
        self.low, self.high = low, high


def _bound_exact(t: IcebergType, v: Any) -> bool:
    if t == STRING:
        return len(v) < _TRUNCATED_BOUND_LENGTH
    if t == BINARY:
        return len(v) < _TRUNCATED_BOUND_LENGTH
    return True


def _from_stats(pf: PartitionField, src: NestedField | None, st: ColumnStats | None) -> Any:
    """The partition value the statistics prove, UNDETERMINED, or raise _Spans."""
    t = pf.transform
    if t.is_void:
        return None
    if src is None or st is None:
        return UNDETERMINED
    stype = src.type
    nulls = st.null_count
    if nulls is not None and st.value_count > 0 and nulls == st.value_count:
        return None  # every value is null
    if not st.has_bounds or st.min is None or st.max is None:
        return UNDETERMINED
    lo, hi = st.min, st.max
    if stype == STRING:
        lo = lo.decode("utf-8") if isinstance(lo, bytes) else lo
        hi = hi.decode("utf-8") if isinstance(hi, bytes) else hi
    if isinstance(lo, float) and (math.isnan(lo) or math.isnan(hi)):
        return UNDETERMINED
    try:
        tlo, thi = t.apply(lo, stype), t.apply(hi, stype)
    except Exception:  # noqa: BLE001 - a value the transform cannot take: say nothing
        return UNDETERMINED
    exact = _bound_exact(stype, lo) and _bound_exact(stype, hi)
    order_preserving = isinstance(t, (YearTransform, MonthTransform, DayTransform, HourTransform,
                                      TruncateTransform, IdentityTransform))
    if isinstance(t, TruncateTransform) and stype in (STRING, BINARY) and not exact:
        # a truncated bound still starts with the real min/max: enough for shorter prefixes
        exact = t.width < min(len(lo), len(hi))
    if exact and (lo == hi or (tlo == thi and order_preserving)):
        if nulls is None:
            return UNDETERMINED
        if nulls > 0:
            raise _Spans(None, tlo)
        return tlo
    if exact and tlo != thi:
        raise _Spans(tlo, thi)
    return UNDETERMINED


def _place(scanned: _Scanned, spec: PartitionSpec, schema: Schema,
           declared: Mapping[str, str]) -> tuple:
    """The partition tuple of one file (see the module docs), or ValidationError."""
    from_path = hive_values(scanned.path)
    values = []
    for pf in spec.fields:
        src = schema.find_field_or_none(pf.source_id)
        stype = src.type if src is not None else None
        st = scanned.stats.get(pf.source_id)
        try:
            proven = _from_stats(pf, src, st)
        except _Spans as s:
            raise ValidationError(
                f"{scanned.path}: its rows span several partitions of {pf.name} "
                f"({pf.transform.to_human_string(s.low, stype)} .. "
                f"{pf.transform.to_human_string(s.high, stype)}); one file must hold one partition") from None
        claims = []
        if pf.name in from_path:
            claims.append(("its path", parse_partition_value(pf, stype, from_path[pf.name])))
        if pf.name in declared:
            claims.append(("the given partition value", parse_partition_value(pf, stype, declared[pf.name])))
        if proven is not UNDETERMINED:
            for where, v in claims:
                if v != proven:
                    raise ValidationError(
                        f"{scanned.path}: {where} says {pf.name}="
                        f"{pf.transform.to_human_string(v, stype)} but its rows have "
                        f"{pf.name}={pf.transform.to_human_string(proven, stype)}")
            values.append(proven)
            continue
        if claims:
            first = claims[0][1]
            for where, v in claims[1:]:
                if v != first:
                    raise ValidationError(
                        f"{scanned.path}: {claims[0][0]} says {pf.name}="
                        f"{pf.transform.to_human_string(first, stype)} but {where} says "
                        f"{pf.transform.to_human_string(v, stype)}")
            values.append(first)
            continue
        raise ValidationError(
            f"{scanned.path}: cannot tell its value of partition field {pf.name} "
            f"({pf.transform} of {src.name if src else '?'}) from its column statistics; "
            f"put it in the path ({pf.name}=...) or give the partition value {pf.name}=VALUE",
            argument="partition_values")
    return tuple(values)


# -- the producer --------------------------------------------------------------------------------


class _AlreadyInTable(ValidationError):
    """Given files that are live in the branch head (``keys``: their identity keys)."""

    def __init__(self, paths: Sequence[str], keys: frozenset[str]):
        super().__init__(f"{paths[0]} is already in the table; nothing was appended")
        self.paths, self.keys = list(paths), keys


class _AppendProducer(FastAppendProducer):
    def __init__(self, table: Table, files, *, add_name_mapping: bool = False,
                 known: dict[str, frozenset[str]] | None = None, **kwargs):
        super().__init__(table, files, **kwargs)
        self.add_name_mapping = add_name_mapping
        # manifest path -> identity keys of its live files (manifests are immutable)
        self._known: dict[str, frozenset[str]] = {} if known is None else known
        self.name_mapping_created = False

    def live_among(self, base: TableMetadata, parent: Snapshot | None,
                   keys: Mapping[str, str]) -> list[str]:
        """The paths (values of ``keys``, by identity key) live in ``parent``'s data manifests,
        in the order of ``keys``."""
        if parent is None:
            return []
        found: set[str] = set()
        for m in self.parent_manifests(base, parent):
            if m.is_delete_manifest:
                continue
            live = self._known.get(m.manifest_path)
            if live is None:
                entries = avro.read_manifest(self.io.read(m.manifest_path), include_stats=False)
                live = frozenset(_identity_key(e.data_file.file_path) for e in entries if e.is_live)
                self._known[m.manifest_path] = live
            found.update(live & keys.keys())
        return [path for key, path in keys.items() if key in found]

    def validate(self, base: TableMetadata, parent: Snapshot | None) -> None:
        for f in self.files:
            if base.spec_by_id(f.spec_id) is None:  # pragma: no cover - specs are never removed here
                raise ValidationError(f"partition spec {f.spec_id} is gone from the table")
        keys = {_identity_key(f.file_path): f.file_path for f in self.files}
        dups = self.live_among(base, parent, keys)  # checked again on every retry
        if dups:
            raise _AlreadyInTable(dups, frozenset(_identity_key(p) for p in dups))

    def _update(self, base: TableMetadata, attempt: CommitAttempt) -> TableMetadata:
        if self.add_name_mapping and NAME_MAPPING_PROPERTY not in base.properties:
            from icectl.spec.metadata import with_properties

            mapping = name_mapping_to_json(mapping_from_schema(base.schema), pretty=False)
            base = with_properties(base, {NAME_MAPPING_PROPERTY: mapping})
            self.name_mapping_created = True
        else:
            self.name_mapping_created = False
        return super()._update(base, attempt)


# -- the operation --------------------------------------------------------------------------------


def append_files(
    table: Table,
    paths: Iterable[str],
    *,
    partition_values: Mapping[str, str] | None = None,
    file_format: str | None = None,
    summary_properties: Mapping[str, str] | None = None,
    branch: str = MAIN_BRANCH,
    max_workers: int | None = None,
    merge: bool | None = None,
    progress: Callable[[int, int], None] | None = None,
    skip_existing: bool = False,
    allow_empty: bool = False,
) -> AppendResult:
    """Append existing data files as one new snapshot of ``branch`` (see the module docs).

    ``partition_values`` maps partition field names to values in partition-path text, applied to
    every file. ``merge`` forces manifest merging on or off (default: the table's
    ``commit.manifest-merge.enabled``, false when unset). ``progress(done, total)`` is called as
    footers are read. With ``skip_existing``, files already live in the branch head (also when a
    concurrent commit added them) are left out and named in ``skipped_files``; nothing left to
    append then commits nothing (``committed`` false). With ``allow_empty``, no paths at all is
    such a no-op too, instead of an error.
    """
    declared = dict(partition_values or {})
    normalised = _unique_paths(paths)
    if not normalised and not allow_empty:
        raise InvalidInput("no data files to append")
    md = table.metadata
    _check_declared(declared, md.spec)
    kwargs = dict(branch=branch, summary_properties=summary_properties, merge=merge)
    known: dict[str, frozenset[str]] = {}
    skipped: list[str] = []
    if skip_existing and normalised:
        probe = _AppendProducer(table, (), known=known, **kwargs)
        keys = {_identity_key(p): p for p in normalised}
        skipped = probe.live_among(md, _branch_head(md, branch), keys)
        gone = set(skipped)
        normalised = [p for p in normalised if p not in gone]
    if not normalised:
        return _nothing_appended(table, branch, skipped)

    ctx = _Context(table_name_mapping(dict(md.properties), md.schema),
                   metrics_config(md.properties, md.schema, md.sort_order),
                   frozenset(f.source_id for f in md.spec.fields if not f.transform.is_void))
    scanned = _scan_all(table.io, normalised, file_format, md.schema, ctx, max_workers, progress)
    files = [_describe(s, md.spec, md.schema, declared) for s in scanned]
    uses_names = any(s.uses_names for s in scanned)
    while True:
        producer = _AppendProducer(table, files, add_name_mapping=uses_names, known=known, **kwargs)
        try:
            produced = producer.commit()
        except _AlreadyInTable as e:
            if not skip_existing:
                raise
            skipped += e.paths  # added by a concurrent commit: leave them out and try again
            files = [(f, p) for f, p in files if _identity_key(f.file_path) not in e.keys]
            if not files:
                return _nothing_appended(table, branch, skipped)
            continue
        return _result(table, branch, files, produced, producer.name_mapping_created, skipped)


def _unique_paths(paths: Iterable[str]) -> list[str]:
    normalised = [_normalise(p) for p in paths]
    seen: dict[str, str] = {}
    for p in normalised:
        key = _identity_key(p)
        if key in seen:
            raise ValidationError(f"{p} is given twice; nothing was appended")
        seen[key] = p
    return normalised


def _check_declared(declared: Mapping[str, str], spec: PartitionSpec) -> None:
    unknown = [k for k in declared if k not in {f.name for f in spec.fields}]
    if unknown:
        names = ", ".join(f.name for f in spec.fields) or "none: the table is unpartitioned"
        raise NotFound(f"unknown partition field(s) {', '.join(unknown)} in the given partition values "
                       f"(partition fields: {names})", argument="partition_values")


def _branch_head(md: TableMetadata, branch: str) -> Snapshot | None:
    """The snapshot an append to ``branch`` builds on (a new branch starts at main's head)."""
    ref = md.refs.get(branch)
    sid = ref.snapshot_id if ref is not None else md.current_snapshot_id
    return md.snapshot_by_id(sid) if sid is not None else None


def _scan_all(file_io: Any, paths: Sequence[str], fmt: str | None, schema: Schema, ctx: _Context,
              max_workers: int | None, progress: Callable[[int, int], None] | None) -> list[_Scanned]:
    """Every file's footer facts, read by a bounded thread pool, in the order given."""
    total = len(paths)
    workers = max(1, min(max_workers or DEFAULT_WORKERS, total))
    scanned: list[_Scanned] = []
    if workers == 1:
        for p in paths:
            scanned.append(_scan(file_io, p, fmt, schema, ctx))
            if progress:
                progress(len(scanned), total)
        return scanned
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="icectl-footer") as pool:
        futures = [pool.submit(_scan, file_io, p, fmt, schema, ctx) for p in paths]
        try:
            for fut in futures:
                scanned.append(fut.result())
                if progress:
                    progress(len(scanned), total)
        except BaseException:
            for fut in futures:
                fut.cancel()
            raise
    return scanned


def _describe(s: _Scanned, spec: PartitionSpec, schema: Schema,
              declared: Mapping[str, str]) -> tuple[DataFile, str]:
    """A scanned file as a data file of ``spec`` and its partition path."""
    part = _place(s, spec, schema, declared)
    base_metrics = s.metrics or DataFile(DATA, "", s.file_format)
    df = replace(base_metrics, content=DATA, file_path=s.path, file_format=s.file_format,
                 partition=part, record_count=s.record_count, file_size_in_bytes=s.size,
                 spec_id=spec.spec_id)
    return df, (partition_path(spec, schema, part) if spec.fields else "")


def append_data_files(
    table: Table,
    files: Sequence[tuple[DataFile, str]],
    *,
    summary_properties: Mapping[str, str] | None = None,
    branch: str = MAIN_BRANCH,
    merge: bool | None = None,
) -> AppendResult:
    """Commit data files the caller has already described - ``(DataFile, partition path)``
    pairs with spec id, partition tuple and metrics set, e.g. files icectl just wrote - as one
    append snapshot of ``branch``, through the same producer as :func:`append_files`.

    No footer is read and no duplicate check is made: the caller guarantees the paths are new.
    """
    if not files:
        raise InvalidInput("no data files to append")
    producer = FastAppendProducer(table, files, branch=branch,
                                  summary_properties=summary_properties, merge=merge)
    return _result(table, branch, files, producer.commit())


def _nothing_appended(table: Table, branch: str, skipped: Sequence[str]) -> AppendResult:
    """The result of an append that committed nothing (no files, or all already in the table)."""
    return AppendResult(
        location=table.location, branch=branch, snapshot_id=None, parent_snapshot_id=None,
        sequence_number=None, metadata_location=table.metadata_location, version=table.version,
        manifest_list="", manifests_written=(), added_files=0, added_records=0, added_files_size=0,
        summary={}, attempts=0, committed=False, skipped_files=tuple(skipped))


def _result(table: Table, branch: str, files: Sequence[tuple[DataFile, str]],
            produced: ProducedSnapshot, name_mapping_created: bool = False,
            skipped: Sequence[str] = ()) -> AppendResult:
    snap = produced.snapshot
    return AppendResult(
        location=table.location,
        branch=branch,
        snapshot_id=snap.snapshot_id,
        parent_snapshot_id=snap.parent_snapshot_id,
        sequence_number=snap.sequence_number,
        metadata_location=produced.metadata_location,
        version=produced.version,
        manifest_list=snap.manifest_list or "",
        manifests_written=produced.new_manifests,
        added_files=len(files),
        added_records=sum(f.record_count for f, _ in files),
        added_files_size=sum(f.file_size_in_bytes for f, _ in files),
        summary=dict(snap.summary or {}),
        first_row_id=snap.first_row_id,
        added_rows=snap.added_rows,
        attempts=produced.attempts,
        name_mapping_created=name_mapping_created,
        files=tuple({"file-path": f.file_path, "file-format": f.file_format, "partition": p,
                     "record-count": f.record_count, "file-size-in-bytes": f.file_size_in_bytes}
                    for f, p in files),
        skipped_files=tuple(skipped),
    )
