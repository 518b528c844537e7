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

import errno
import hashlib
import math
import os
import shutil
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Mapping, Sequence

from icectl.errors import IcectlError, InvalidInput, NotFound, StorageError, ValidationError
from icectl.io import avro
from icectl.io.files import is_local, join, local_path
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
from icectl.spec.snapshots import MAIN_BRANCH, Snapshot, ancestors_of
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
from icectl.table.producer import (
    IDEMPOTENCY_KEY,
    AlreadyCommitted,
    FastAppendProducer,
    ProducedSnapshot,
    snapshot_with_key,
)
from icectl.table.table import CommitAttempt, Table

__all__ = ["AppendResult", "append_files", "append_data_files", "NAME_MAPPING_PROPERTY", "DEFAULT_WORKERS",
           "PLACEMENTS", "SKIP_MODES", "SpansPartitions", "content_digest", "key_committed_by",
           "CONTENT_DIGESTS"]

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
    # given files left out because they could not be appended (on_error="skip"): (path, reason)
    quarantined: tuple[tuple[str, str], ...] = ()
    placed: tuple[tuple[str, str], ...] = ()  # (source, the table's copy) with copy/move
    rewritten: tuple[str, ...] = ()  # sources whose rows were rewritten into partitioned files
    idempotency_key: str | None = None
    committed_by: int | None = None  # the snapshot that already committed idempotency_key
    source_cleanup_failed: tuple[tuple[str, str], ...] = ()  # move: sources left, with the error

    @property
    def partial(self) -> bool:
        """Some given files were quarantined: the rest was committed (or nothing was left)."""
        return bool(self.quarantined)

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
            "partial": self.partial,
            "quarantined-files": [{"path": p, "reason": r} for p, r in self.quarantined],
            "placed-files": [{"source": src, "file-path": dst} for src, dst in self.placed],
            "rewritten-files": list(self.rewritten),
            "idempotency-key": self.idempotency_key,
            "already-committed-by": self.committed_by,
            "source-cleanup-failed": [{"path": p, "error": e} for p, e in self.source_cleanup_failed],
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


class SpansPartitions(ValidationError):
    """A file whose rows belong to several partitions of the table's spec."""


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
            raise SpansPartitions(
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

    def live_files(self, base: TableMetadata, parent: Snapshot | None) -> list[tuple[str, int]]:
        """``(path, size)`` of every live data file of ``parent``."""
        out: list[tuple[str, int]] = []
        if parent is None:
            return out
        for m in self.parent_manifests(base, parent):
            if m.is_delete_manifest:
                continue
            entries = avro.read_manifest(self.io.read(m.manifest_path), include_stats=False)
            out.extend((e.data_file.file_path, e.data_file.file_size_in_bytes) for e in entries if e.is_live)
        return out

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


PLACEMENTS = ("in-place", "copy", "move")
SKIP_MODES = ("path", "content")
ON_ERROR = ("fail", "skip")
# rewrite(path, written) -> the data files it wrote (every path written is appended to
# ``written`` first, so that a failure can remove them)
Rewriter = Callable[[str, list], Sequence[tuple[DataFile, str]]]


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
    skip_existing: bool | str = False,
    allow_empty: bool = False,
    placement: str = "in-place",
    on_error: str = "fail",
    rewrite_spanning: bool = False,
    idempotency_key: str | None = None,
) -> AppendResult:
    """Append existing data files as one new snapshot of ``branch`` (see the module docs).

    ``partition_values`` maps partition field names to values in partition-path text, applied to
    every file. ``merge`` forces manifest merging on or off (default: the table's
    ``commit.manifest-merge.enabled``, false when unset). ``progress(done, total)`` is called as
    footers are read. With ``skip_existing`` (True or ``"path"``), files already live in the
    branch head (also when a concurrent commit added them) are left out and named in
    ``skipped_files``; with ``"content"`` also files whose bytes equal a live file's (same size,
    same SHA-256) or an earlier given file's. Nothing left to append then commits nothing
    (``committed`` false). With ``allow_empty``, no paths at all is such a no-op too.

    ``placement``: ``"in-place"`` registers the files where they are; ``"copy"`` copies each
    under the table's data location (``write.data.path``, else ``<location>/data``, in its
    partition's directory) and registers the copy; ``"move"`` does the same and removes the
    source after the commit. ``on_error="skip"`` sets aside (``quarantined``, with the reason)
    every file that cannot be appended - unreadable, not fitting the table, spanning partitions -
    and commits the others. ``rewrite_spanning`` reads a file whose rows span several partitions
    and writes its rows as new partitioned files under the data location (instead of refusing it). ``idempotency_key`` is recorded in the snapshot summary; when the
    branch head or a retained ancestor already carries it - also one a concurrent writer
    committed while this one retried - nothing is committed (``committed_by`` names it).
    """
    skip_mode = _skip_mode(skip_existing)
    rewrite = _rewrite_into_partitions(table) if rewrite_spanning else None
    if placement not in PLACEMENTS:
        raise InvalidInput(f"unknown placement {placement!r} (expected one of {', '.join(PLACEMENTS)})",
                           argument="placement")
    if on_error not in ON_ERROR:
        raise InvalidInput(f"unknown error handling {on_error!r} (expected fail or skip)", argument="on_error")
    declared = dict(partition_values or {})
    normalised = _unique_paths(paths)
    if not normalised and not allow_empty:
        raise InvalidInput("no data files to append")
    md = table.metadata
    _check_declared(declared, md.spec)
    summary = dict(summary_properties or {})
    head = _branch_head(md, branch)
    if idempotency_key is not None:
        if not idempotency_key.strip():
            raise InvalidInput("the idempotency key is empty", argument="idempotency_key")
        summary[IDEMPOTENCY_KEY] = idempotency_key
        done = snapshot_with_key(md, head, idempotency_key)
        if done is not None:
            return _nothing_appended(table, branch, (), key=idempotency_key, committed_by=done.snapshot_id)
    kwargs = dict(branch=branch, summary_properties=summary, merge=merge)
    known: dict[str, frozenset[str]] = {}
    skipped: list[str] = []
    digests: dict[str, str] = {}  # source path -> content digest (skip_existing="content")
    if skip_mode is not None and normalised:
        probe = _AppendProducer(table, (), known=known, **kwargs)
        keys = {_identity_key(p): p for p in normalised}
        skipped = probe.live_among(md, head, keys)
        gone = set(skipped)
        normalised = [p for p in normalised if p not in gone]
        if skip_mode == "content" and normalised:
            same, digests = _same_content(table.io, probe.live_files(md, head),
                                          _recorded_digests(md, head), normalised)
            skipped += same
            gone = set(same)
            normalised = [p for p in normalised if p not in gone]
    if not normalised:
        return _nothing_appended(table, branch, skipped, key=idempotency_key)

    ctx = _Context(table_name_mapping(dict(md.properties), md.schema),
                   metrics_config(md.properties, md.schema, md.sort_order),
                   frozenset(f.source_id for f in md.spec.fields if not f.transform.is_void))
    quarantined: list[tuple[str, str]] = []
    errors = quarantined if on_error == "skip" else None
    scanned = _scan_all(table.io, normalised, file_format, md.schema, ctx, max_workers, progress, errors)
    files: list[tuple[DataFile, str]] = []
    spanning: list[str] = []
    for sc in scanned:
        try:
            files.append(_describe(sc, md.spec, md.schema, declared))
        except SpansPartitions as e:
            if rewrite is not None:
                spanning.append(sc.path)
            elif errors is not None:
                errors.append((sc.path, str(e)))
            else:
                raise
        except IcectlError as e:
            if errors is None:
                raise
            errors.append((sc.path, str(e)))
    uses_names = any(s.uses_names for s in scanned)
    written: list[str] = []  # files this append wrote: removed if it commits nothing
    try:
        rewritten, rewritten_files = _rewrite_all(rewrite, spanning, written, errors, table.io)
        placed: list[tuple[str, str]] = []
        if placement != "in-place" and files:
            files, placed = _place_files(table, files, placement == "move", written)
        files = files + rewritten_files
        taken = {p for p, _ in placed} | set(rewritten) | {f.file_path for f, _ in files}
        recorded = sorted({d for p, d in digests.items() if p in taken})
        if recorded:
            summary[CONTENT_DIGESTS] = ",".join(recorded)
        if not files:
            _remove(table.io, written)
            return _nothing_appended(table, branch, skipped, key=idempotency_key, quarantined=quarantined)
        while True:
            producer = _AppendProducer(table, files, add_name_mapping=uses_names, known=known, **kwargs)
            try:
                produced = producer.commit()
            except AlreadyCommitted as e:  # a concurrent writer committed the same key
                _remove(table.io, written)
                return _nothing_appended(table, branch, skipped, key=idempotency_key,
                                         committed_by=e.snapshot_id, quarantined=quarantined)
            except _AlreadyInTable as e:
                if skip_mode is None:
                    raise
                skipped += e.paths  # added by a concurrent commit: leave them out and try again
                files = [(f, p) for f, p in files if _identity_key(f.file_path) not in e.keys]
                if not files:
                    _remove(table.io, written)
                    return _nothing_appended(table, branch, skipped, key=idempotency_key,
                                             quarantined=quarantined)
                continue
            break
    except BaseException:
        _remove(table.io, written)
        raise
    cleanup_failed = _remove_sources(table.io, placed) if placement == "move" else []
    result = _result(table, branch, files, produced, producer.name_mapping_created, skipped)
    return replace(result, quarantined=tuple(quarantined), placed=tuple(placed), rewritten=tuple(rewritten),
                   idempotency_key=idempotency_key, source_cleanup_failed=tuple(cleanup_failed))


def _skip_mode(skip_existing: bool | str) -> str | None:
    if skip_existing is False or skip_existing is None:
        return None
    if skip_existing is True:
        return "path"
    mode = str(skip_existing).strip().lower()
    if mode not in SKIP_MODES:
        raise InvalidInput(f"unknown way to compare files {skip_existing!r} (expected path or content)",
                           argument="skip_existing")
    return mode


def _remove(io: Any, written: Sequence[str]) -> None:
    for p in written:
        io.delete_quietly(p)


# -- content digests ------------------------------------------------------------------------------

_CHUNK = 8 << 20


def content_digest(io: Any, path: str) -> str:
    """SHA-256 of a file's bytes (hex), read in chunks."""
    h = hashlib.sha256()
    with io.open(path, "rb") as f:
        while True:
            chunk = f.read(_CHUNK)
            if not chunk:
                return h.hexdigest()
            h.update(chunk)


CONTENT_DIGESTS = "icectl.content-digests"
"""Snapshot summary property: the content digests (first 32 hex digits of the SHA-256) of the
files an append compared by content added, comma-separated, so that a later run recognises a
source it already took even when the table's copy is gone (rewritten, or its rows deleted)."""
_DIGEST_CHARS = 32


def _recorded_digests(md: TableMetadata, head: Snapshot | None) -> set[str]:
    out: set[str] = set()
    if head is None:
        return out
    for snap in ancestors_of(head.snapshot_id, md.snapshot_by_id):
        text = (snap.summary or {}).get(CONTENT_DIGESTS)
        if text:
            out.update(d for d in text.split(",") if d)
    return out


def _same_content(io: Any, live: Sequence[tuple[str, int]], recorded: set[str],
                  paths: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """The given paths whose bytes equal a live file's, a file an earlier append recorded
    (``recorded`` digests of retained snapshots) or an earlier given file's; and the digest of
    every other given file (to record). Live files are hashed only when their size equals a
    given file's. A file that cannot be read is not a duplicate (the append reports it)."""
    by_size: dict[int, list[str]] = {}
    for path, size in live:
        by_size.setdefault(size, []).append(path)
    table_digests: dict[int, set[str]] = {}
    seen: set[str] = set()
    skipped: list[str] = []
    digests: dict[str, str] = {}
    for p in paths:
        try:
            size = io.info(p).size
            digest = content_digest(io, p)[:_DIGEST_CHARS]
        except IcectlError:
            continue
        if size in by_size and size not in table_digests:
            found = set()
            for q in by_size[size]:
                try:
                    found.add(content_digest(io, q)[:_DIGEST_CHARS])
                except IcectlError:
                    continue
            table_digests[size] = found
        if digest in recorded or digest in seen or digest in table_digests.get(size, ()):
            skipped.append(p)
        else:
            digests[p] = digest
        seen.add(digest)
    return skipped, digests


# -- placing files under the table -----------------------------------------------------------------


def _place_files(table: Table, files: Sequence[tuple[DataFile, str]], move: bool,
                 written: list[str]) -> tuple[list[tuple[DataFile, str]], list[tuple[str, str]]]:
    """Copy (or hard-link, for a move on one local disk) each file into its partition's directory
    under the table's data location; the copies are registered instead of the sources."""
    from icectl.ops.write import data_location  # (write builds on this module)

    base_dir = data_location(table.location, table.metadata.properties)
    out: list[tuple[DataFile, str]] = []
    placed: list[tuple[str, str]] = []
    for df, ppath in files:
        directory = join(base_dir, ppath) if ppath else base_dir
        name = df.file_path.replace("\\", "/").rsplit("/", 1)[-1]
        target = join(directory, f"{uuid.uuid4().hex[:12]}-{name}")
        written.append(target)
        _copy(table.io, df.file_path, target, link=move)
        out.append((replace(df, file_path=target), ppath))
        placed.append((df.file_path, target))
    return out, placed


def _copy(io: Any, src: str, dst: str, link: bool) -> None:
    """``dst`` gets ``src``'s bytes; never replaces an existing file. Local copies are flushed to
    disk before the commit names them."""
    if is_local(src) and is_local(dst):
        s, d = local_path(src), local_path(dst)
        try:
            os.makedirs(os.path.dirname(d), exist_ok=True)
            if link:
                try:
                    os.link(s, d)
                    return
                except OSError as e:
                    if e.errno not in (errno.EXDEV, errno.EPERM, errno.ENOTSUP, errno.EMLINK):
                        raise
            with open(s, "rb") as r, open(d, "xb") as w:
                shutil.copyfileobj(r, w, _CHUNK)
                w.flush()
                os.fsync(w.fileno())
        except FileNotFoundError:
            raise NotFound(f"data file not found: {src}") from None
        except OSError as e:
            raise StorageError(f"cannot copy {src} to {dst}: {e.strerror or e}") from None
        return
    with io.open(src, "rb") as r, io.open(dst, "xb") as w:
        while True:
            chunk = r.read(_CHUNK)
            if not chunk:
                break
            w.write(chunk)


def _remove_sources(io: Any, placed: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """After a move committed: delete each source; what could not be deleted is reported."""
    failed = []
    for src, _ in placed:
        try:
            io.delete(src)
        except IcectlError as e:
            failed.append((src, str(e)))
    return failed


def _rewrite_into_partitions(table: Table) -> Rewriter:
    def rewrite(path: str, written: list) -> Sequence[tuple[DataFile, str]]:
        from icectl.ops.compute import conform_to_schema
        from icectl.ops.write import read_rows, write_data_files  # (write builds on this module)

        schema = table.metadata.schema
        raw, _ = read_rows(table.io, path, None, schema)
        data = conform_to_schema(raw, schema).combine_chunks()
        return write_data_files(table, data, written)

    return rewrite


def _rewrite_all(rewrite: Rewriter | None, paths: Sequence[str], written: list[str],
                 errors: list[tuple[str, str]] | None, io: Any) -> tuple[list[str], list[tuple[DataFile, str]]]:
    """Rewrite each partition-spanning file; with ``errors`` a file that fails is set aside."""
    done: list[str] = []
    files: list[tuple[DataFile, str]] = []
    if rewrite is None:
        return done, files
    for path in paths:
        before = len(written)
        try:
            files.extend(rewrite(path, written))
            done.append(path)
        except IcectlError as e:
            if errors is None:
                raise
            _remove(io, written[before:])
            del written[before:]
            errors.append((path, f"cannot rewrite it into partitioned files: {e}"))
    return done, files


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


def key_committed_by(md: TableMetadata, branch: str, key: str) -> int | None:
    """The snapshot on ``branch`` (head or retained ancestor) that committed idempotency ``key``."""
    done = snapshot_with_key(md, _branch_head(md, branch), key)
    return done.snapshot_id if done is not None else None


def _branch_head(md: TableMetadata, branch: str) -> Snapshot | None:
    """The snapshot an append to ``branch`` builds on (a new branch starts at main's head)."""
    ref = md.refs.get(branch)
    sid = ref.snapshot_id if ref is not None else md.current_snapshot_id
    return md.snapshot_by_id(sid) if sid is not None else None


def _scan_all(file_io: Any, paths: Sequence[str], fmt: str | None, schema: Schema, ctx: _Context,
              max_workers: int | None, progress: Callable[[int, int], None] | None,
              errors: list[tuple[str, str]] | None = None) -> list[_Scanned]:
    """Every file's footer facts, read by a bounded thread pool, in the order given. With
    ``errors``, a file that cannot be read or does not fit is left out and listed there."""
    total = len(paths)
    workers = max(1, min(max_workers or DEFAULT_WORKERS, total))
    scanned: list[_Scanned] = []
    count = 0

    def one(path: str, get: Callable[[], _Scanned]) -> None:
        nonlocal count
        try:
            scanned.append(get())
        except Exception as e:  # noqa: BLE001 - set aside only when asked to
            if errors is None:
                raise
            errors.append((path, str(e) if isinstance(e, IcectlError) else f"unreadable: {e}"))
        count += 1
        if progress:
            progress(count, total)

    if workers == 1:
        for p in paths:
            one(p, lambda p=p: _scan(file_io, p, fmt, schema, ctx))
        return scanned
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="icectl-footer") as pool:
        futures = [pool.submit(_scan, file_io, p, fmt, schema, ctx) for p in paths]
        try:
            for p, fut in zip(paths, futures):
                one(p, fut.result)
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


def _nothing_appended(table: Table, branch: str, skipped: Sequence[str], *, key: str | None = None,
                      committed_by: int | None = None,
                      quarantined: Sequence[tuple[str, str]] = ()) -> AppendResult:
    """The result of an append that committed nothing (no files, all already in the table or set
    aside, or its idempotency key already committed)."""
    return AppendResult(
        location=table.location, branch=branch, snapshot_id=None, parent_snapshot_id=None,
        sequence_number=None, metadata_location=table.metadata_location, version=table.version,
        manifest_list="", manifests_written=(), added_files=0, added_records=0, added_files_size=0,
        summary={}, attempts=0, committed=False, skipped_files=tuple(skipped),
        quarantined=tuple(quarantined), idempotency_key=key, committed_by=committed_by)


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
