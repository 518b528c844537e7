"""Scan planning: which data files (with which delete files and residuals) a filter touches.

The pipeline follows the reference (``ManifestGroup`` + ``DeleteFileIndex`` +
``TableScanUtil``):

1. pick the snapshot (current, ``snapshot_id``, ``ref``, ``as_of`` through the snapshot log, or
   the appends between two snapshots for an incremental scan);
2. bind the filter to the scan's schema; per partition spec, project it inclusively onto the
   partition struct;
3. delete manifests first: prune them by partition summaries, decode the live delete files and
   index them (:mod:`icectl.scan.delete_index`);
4. data manifests: skip those without added or existing files and those whose partition
   summaries cannot match; decode the others column-wise (:mod:`icectl.io.manifest_columns`),
   keep live entries whose partition tuple satisfies the projection and whose column metrics
   might match (:mod:`icectl.expr.eval_metrics`);
5. for each kept file: its residual (strict / inclusive projection on its partition, cached per
   partition) and its delete files;
6. on request, split files and bin-pack the splits into tasks (:mod:`icectl.scan.tasks`).

``explain=True`` records, for every manifest and every file, why it was kept or skipped.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from icectl.errors import InvalidInput, NotFound, ValidationError
from icectl.expr.evaluators import (
    ManifestEvaluator,
    MetricsEvaluator,
    ResidualEvaluator,
    metrics_might_match,
    partition_key,
    partition_matches,
)
from icectl.expr.expressions import (
    TRUE,
    AlwaysFalse,
    AlwaysTrue,
    Expression,
    bind,
    referenced_field_ids,
    rewrite_not,
)
from icectl.expr.parser import parse_filter
from icectl.expr.projection import inclusive_projection
from icectl.io import avro
from icectl.io.manifest_columns import ManifestColumns, load_manifest_columns
from icectl.scan.delete_index import (
    DELETE_FILE_PATH_ID,
    DataStats,
    DeleteIndex,
    DeleteRef,
    targeted_path,
)
from icectl.scan.tasks import (
    DEFAULT_LOOKBACK,
    DEFAULT_OPEN_FILE_COST,
    DEFAULT_SPLIT_SIZE,
    pack,
    split_ranges,
)
from icectl.spec.manifests import (
    ADDED,
    DATA,
    DELETED,
    EQUALITY_DELETES,
    MANIFEST_DELETES,
    DataFile,
    ManifestFile,
)
from icectl.spec.metadata import TableMetadata, select_snapshot
from icectl.spec.partitioning import PartitionSpec
from icectl.spec.schema import Schema
from icectl.spec.snapshots import Snapshot, ancestors_of
from icectl.spec.transforms import VoidTransform
from icectl.spec.types import DOUBLE, FLOAT, IcebergType, StructType
from icectl.spec.values import parse_timestamp

__all__ = ["plan_scan", "PlanResult", "PlannedFile", "ScanTask", "ManifestDecision",
           "FileDecision", "parse_as_of"]

SPLIT_SIZE = "read.split.target-size"
OPEN_FILE_COST = "read.split.open-file-cost"
LOOKBACK = "read.split.planning-lookback"


# -- results ------------------------------------------------------------------------------------


class PlannedFile:
    """A data file the scan reads, with its residual filter and delete files.

    A light view of one row of the decoded manifest columns: the file's fields are read from
    the columns when accessed, so planning 200,000 files builds 200,000 small objects only.
    """

    __slots__ = ("_cols", "_i", "spec_id", "residual", "deletes", "manifest_path")

    def __init__(self, cols: ManifestColumns, i: int, spec_id: int, residual: Expression,
                 deletes: tuple, manifest_path: str):
        self._cols = cols
        self._i = i
        self.spec_id = spec_id
        self.residual = residual
        self.deletes = deletes
        self.manifest_path = manifest_path

    @property
    def path(self) -> str:
        return self._cols.file_path[self._i]

    @property
    def file_format(self) -> str:
        return self._cols.file_format[self._i]

    @property
    def partition(self) -> tuple:
        return self._cols.partition_tuple(self._i)

    @property
    def record_count(self) -> int:
        return self._cols.record_count[self._i]

    @property
    def file_size_in_bytes(self) -> int:
        return self._cols.file_size_in_bytes[self._i]

    @property
    def data_sequence_number(self) -> int | None:
        return self._cols.data_sequence_number[self._i]

    @property
    def file_sequence_number(self) -> int | None:
        return self._cols.file_sequence_number[self._i]

    @property
    def split_offsets(self) -> Sequence[int] | None:
        return self._cols.split_offsets[self._i]

    @property
    def first_row_id(self) -> int | None:
        return self._cols.first_row_id[self._i]

    @property
    def snapshot_id(self) -> int | None:
        return self._cols.snapshot_id[self._i]

    def __repr__(self) -> str:
        return f"PlannedFile({self.path!r}, deletes={len(self.deletes)}, residual={self.residual})"


@dataclass(frozen=True)
class ScanTask:
    """A combined task: splits of one or more files, read together."""

    splits: tuple  # of (PlannedFile, start, length)

    @property
    def length(self) -> int:
        return sum(n for _, _, n in self.splits)

    @property
    def files(self) -> tuple[PlannedFile, ...]:
        seen: dict[str, PlannedFile] = {}
        for f, _, _ in self.splits:
            seen.setdefault(f.path, f)
        return tuple(seen.values())


@dataclass(frozen=True)
class ManifestDecision:
    path: str
    content: str  # "data" | "deletes"
    spec_id: int
    added_snapshot_id: int | None
    kept: bool
    reason: str
    files: int | None = None  # live entries decoded (None when skipped)
    matched: int | None = None  # files kept from it


@dataclass(frozen=True)
class FileDecision:
    path: str
    manifest_path: str
    kept: bool
    reason: str


@dataclass
class PlanResult:
    location: str
    snapshot_id: int | None
    schema: Schema
    filter: Expression
    columns: tuple[str, ...] | None
    files: list[PlannedFile]
    manifests: list[ManifestDecision]
    delete_files_total: int
    data_files_total: int
    split_size: int
    open_file_cost: int
    lookback: int
    specs: dict[int, PartitionSpec] = field(default_factory=dict)
    file_decisions: list[FileDecision] = field(default_factory=list)
    incremental: tuple[int | None, int] | None = None
    case_sensitive: bool = False

    @property
    def manifests_scanned(self) -> int:
        return sum(1 for m in self.manifests if m.kept)

    @property
    def manifests_skipped(self) -> int:
        return sum(1 for m in self.manifests if not m.kept)

    @property
    def delete_files(self) -> list[DeleteRef]:
        seen: dict[tuple, DeleteRef] = {}
        for f in self.files:
            for d in f.deletes:
                seen.setdefault((d.path, d.content_offset), d)
        return list(seen.values())

    @property
    def total_bytes(self) -> int:
        return sum(f.file_size_in_bytes for f in self.files)

    @property
    def total_records(self) -> int:
        return sum(f.record_count for f in self.files)

    def tasks(self) -> list[ScanTask]:
        """Splits bin-packed into tasks (the reference's ``planTasks``)."""
        size, cost, lookback = self.split_size, self.open_file_cost, self.lookback

        def splits() -> Iterable[tuple[PlannedFile, int, int]]:
            for f in self.files:
                for start, length in split_ranges(f.file_format, f.file_size_in_bytes,
                                                  f.split_offsets, size):
                    yield (f, start, length)

        def weight(s: tuple[PlannedFile, int, int]) -> int:
            f = s[0]
            return max(s[2] + sum(d.scan_size for d in f.deletes), (1 + len(f.deletes)) * cost)

        return [ScanTask(tuple(b)) for b in pack(splits(), weight, size, lookback)]


# -- snapshot selection ------------------------------------------------------------------------


def parse_as_of(text: str) -> int:
    """A point in time as epoch milliseconds: digits are milliseconds; otherwise an ISO date or
    timestamp (without a zone: UTC)."""
    s = text.strip()
    if s.lstrip("-").isdigit():
        return int(s)
    try:
        if len(s) == 10:
            d = _dt.date.fromisoformat(s)
            return int(_dt.datetime(d.year, d.month, d.day, tzinfo=_dt.timezone.utc).timestamp() * 1000)
        micros = parse_timestamp(s, tz=True) if _has_zone(s) else parse_timestamp(s)
        return micros // 1000
    except Exception:  # noqa: BLE001 - many shapes of bad input
        raise InvalidInput(f"--as-of expects epoch milliseconds or an ISO timestamp, not {text!r}") from None


def _has_zone(s: str) -> bool:
    tail = s[10:]
    return tail.endswith("Z") or "+" in tail or "-" in tail


def _scan_schema(md: TableMetadata, snapshot: Snapshot | None, time_travel: bool) -> Schema:
    """Time travel by id or tag reads with the snapshot's schema, as the reference does."""
    if time_travel and snapshot is not None and snapshot.schema_id is not None:
        try:
            return md.schema_by_id(snapshot.schema_id)
        except Exception:  # noqa: BLE001 - unknown schema id: fall back to the current one
            return md.schema
    return md.schema


# -- planning -----------------------------------------------------------------------------------


class _SpecInfo:
    def __init__(self, spec: PartitionSpec, schema: Schema, expr: Expression,
                 case_sensitive: bool):
        self.spec = spec
        try:
            self.partition_type = spec.partition_type(schema)
        except Exception:  # noqa: BLE001 - a source column was dropped: no partition pruning
            self.partition_type = StructType(())
            self.broken = True
        else:
            self.broken = False
        self.unpartitioned = all(isinstance(pf.transform, VoidTransform) for pf in spec.fields)
        if isinstance(expr, AlwaysTrue) or self.broken:
            self.part_expr: Expression = TRUE
        else:
            self.part_expr = rewrite_not(inclusive_projection(expr, spec, schema, case_sensitive))
        self.manifest_eval = ManifestEvaluator(self.part_expr, self.partition_type)
        self.positions = {f.field_id: i for i, f in enumerate(self.partition_type.fields())}
        self.full_expr = expr
        self.residuals = None
        if not isinstance(expr, AlwaysTrue) and not self.broken:
            self.residuals = ResidualEvaluator(spec, expr, schema, case_sensitive)
        self._residual_cache: dict[tuple, Expression] = {}
        self._part_cache: dict[tuple, bool] = {}

    def residual(self, partition: tuple) -> Expression:
        if self.residuals is None:
            return self.full_expr  # no filter, or partition values that cannot be evaluated
        key = partition_key(partition)
        r = self._residual_cache.get(key)
        if r is None:
            try:
                r = self.residuals.residual_for(partition)
            except TypeError:
                r = self.residuals.expr
            self._residual_cache[key] = r
        return r

    def partition_matches(self, partition: tuple) -> bool:
        if isinstance(self.part_expr, AlwaysTrue):
            return True
        key = partition_key(partition)
        got = self._part_cache.get(key)
        if got is None:
            got = partition_matches(self.part_expr, partition, self.positions)
            self._part_cache[key] = got
        return got


def _bind_filter(filter_text: str | None, filter_expr: Expression | None, schema: Schema,
                 case_sensitive: bool) -> Expression:
    if filter_text is not None and filter_expr is not None:
        raise InvalidInput("give a filter as text or as an expression, not both")
    expr: Expression = TRUE
    if filter_text is not None:
        expr = parse_filter(filter_text)  # empty text is an error, not a full scan
    elif filter_expr is not None:
        expr = filter_expr
    if not isinstance(expr, (AlwaysTrue, AlwaysFalse)):
        expr = bind(expr, schema, case_sensitive)
    return rewrite_not(expr)


def _resolve_columns(columns: Sequence[str] | None, schema: Schema,
                     case_sensitive: bool) -> tuple[str, ...] | None:
    if columns is None:
        return None
    out = []
    for c in columns:
        c = c.strip()
        if not c:
            continue
        f = schema.find_field_or_none(c, case_sensitive)
        if f is None:
            raise InvalidInput(f"--columns: no column {c!r} in the schema")
        out.append(schema.column_name(f.field_id))
    return tuple(out)


def _split_options(md: TableMetadata, split_size: int | None, open_file_cost: int | None,
                   lookback: int | None) -> tuple[int, int, int]:
    size = split_size if split_size is not None else md.property_as_int(SPLIT_SIZE, DEFAULT_SPLIT_SIZE)
    cost = open_file_cost if open_file_cost is not None else \
        md.property_as_int(OPEN_FILE_COST, DEFAULT_OPEN_FILE_COST)
    look = lookback if lookback is not None else md.property_as_int(LOOKBACK, DEFAULT_LOOKBACK)
    if size <= 0:
        raise InvalidInput(f"split size must be positive, not {size}")
    if cost < 0:
        raise InvalidInput(f"open file cost must not be negative, not {cost}")
    if look < 1:
        raise InvalidInput(f"planning lookback must be at least 1, not {look}")
    return size, cost, look


def _appended_snapshots(md: TableMetadata, from_id: int | None, to_id: int) -> set[int]:
    """Snapshots after ``from_id`` (exclusive) up to ``to_id`` whose operation is append."""
    if md.snapshot_by_id(to_id) is None:
        raise NotFound(f"snapshot {to_id} does not exist in table {md.location}")
    if from_id is not None and md.snapshot_by_id(from_id) is None:
        raise NotFound(f"snapshot {from_id} does not exist in table {md.location}")
    out: set[int] = set()
    reached = from_id is None
    for s in ancestors_of(to_id, md.snapshot_by_id):
        if s.snapshot_id == from_id:
            reached = True
            break
        if s.operation == "append":
            out.add(s.snapshot_id)
    if not reached:
        raise ValidationError(f"snapshot {from_id} is not an ancestor of snapshot {to_id}")
    return out


def _appended_manifests(io: Any, md: TableMetadata, append_ids: set[int]) -> list[ManifestFile]:
    out: list[ManifestFile] = []
    seen: set[str] = set()
    for sid in sorted(append_ids, key=lambda i: -md.snapshot_by_id(i).sequence_number):
        snap = md.snapshot_by_id(sid)
        if snap.manifest_list is None:
            continue
        for m in avro.load_manifest_list(io, snap.manifest_list, md.format_version):
            if m.content != MANIFEST_DELETES and m.added_snapshot_id in append_ids \
                    and m.manifest_path not in seen:
                seen.add(m.manifest_path)
                out.append(m)
    return out


def _manifest_stat_ids(expr: Expression) -> set[int]:
    if isinstance(expr, (AlwaysTrue, AlwaysFalse)):
        return set()
    return referenced_field_ids(expr)


def plan_scan(
    table: Any,
    filter_text: str | None = None,
    *,
    filter_expr: Expression | None = None,
    snapshot_id: int | None = None,
    ref: str | None = None,
    as_of: str | int | None = None,
    columns: Sequence[str] | None = None,
    case_sensitive: bool = False,
    from_snapshot: int | None = None,
    to_snapshot: int | None = None,
    split_size: int | None = None,
    open_file_cost: int | None = None,
    lookback: int | None = None,
    explain: bool = False,
) -> PlanResult:
    """Plan a scan of ``table`` (a :class:`icectl.table.table.Table`)."""
    md: TableMetadata = table.metadata
    io = table.io
    size, cost, look = _split_options(md, split_size, open_file_cost, lookback)
    incremental = from_snapshot is not None or to_snapshot is not None
    if incremental and any(x is not None for x in (snapshot_id, ref, as_of)):
        raise InvalidInput("--from-snapshot/--to-snapshot cannot be combined with --snapshot, "
                           "--ref or --as-of")
    append_ids: set[int] | None = None
    if incremental:
        to_id = to_snapshot if to_snapshot is not None else md.current_snapshot_id
        if to_id is None:
            raise NotFound("the table has no snapshots")
        append_ids = _appended_snapshots(md, from_snapshot, to_id)
        snapshot = md.snapshot_by_id(to_id)
    else:
        as_of_ms = None
        if as_of is not None:
            as_of_ms = as_of if isinstance(as_of, int) else parse_as_of(as_of)
        snapshot = select_snapshot(md, snapshot_id, ref, as_of_ms)
    time_travel = snapshot_id is not None or as_of is not None or \
        (ref is not None and ref in md.refs and not md.refs[ref].is_branch)
    schema = _scan_schema(md, snapshot, time_travel)
    expr = _bind_filter(filter_text, filter_expr, schema, case_sensitive)
    cols = _resolve_columns(columns, schema, case_sensitive)
    result = PlanResult(
        location=table.location, snapshot_id=snapshot.snapshot_id if snapshot else None,
        schema=schema, filter=expr, columns=cols, files=[], manifests=[],
        delete_files_total=0, data_files_total=0, split_size=size, open_file_cost=cost,
        lookback=look, specs=dict(md.specs_by_id()),
        incremental=(from_snapshot, snapshot.snapshot_id) if incremental and snapshot else None,
        case_sensitive=case_sensitive)
    if snapshot is None:
        return result
    if snapshot.manifest_list is None:
        raise ValidationError(f"snapshot {snapshot.snapshot_id} lists manifests inline "
                              "(very old v1 writer); icectl cannot plan it")
    manifests = avro.load_manifest_list(io, snapshot.manifest_list, md.format_version)
    if append_ids is not None:
        # as the reference: the data manifests each appended snapshot wrote, read from that
        # snapshot's own manifest list (later commits may have rewritten them)
        manifests = _appended_manifests(io, md, append_ids)
    infos: dict[int, _SpecInfo] = {}

    def info(spec_id: int) -> _SpecInfo:
        got = infos.get(spec_id)
        if got is None:
            try:
                spec = md.spec_by_id(spec_id)
            except Exception:  # noqa: BLE001
                raise ValidationError(f"manifest refers to unknown partition spec {spec_id}") from None
            got = infos[spec_id] = _SpecInfo(spec, schema, expr, case_sensitive)
        return got

    def field_type(fid: int) -> IcebergType | None:
        f = schema.find_field_or_none(fid)
        return f.type if f is not None else None

    # 1. delete files (not for incremental append scans, as the reference)
    deletes: list[DeleteRef] = []
    data_manifests: list[ManifestFile] = []
    for m in manifests:
        if m.content != MANIFEST_DELETES:
            data_manifests.append(m)
            continue
        if incremental:
            continue
        si = info(m.partition_spec_id)
        if not (m.has_added_files() or m.has_existing_files()):
            result.manifests.append(ManifestDecision(
                m.manifest_path, "deletes", m.partition_spec_id, m.added_snapshot_id, False,
                "no added or existing files"))
            continue
        ok, why = si.manifest_eval.eval(m)
        if not ok:
            result.manifests.append(ManifestDecision(
                m.manifest_path, "deletes", m.partition_spec_id, m.added_snapshot_id, False, why))
            continue
        mc = _load(io, m, {DELETE_FILE_PATH_ID})
        eq_ids = {fid for ids in mc.equality_ids if ids for fid in ids}
        if eq_ids:
            mc = _load(io, m, {DELETE_FILE_PATH_ID} | eq_ids)
        live = 0
        for i in range(mc.count):
            if mc.status[i] == DELETED or mc.content[i] == DATA:
                continue
            part = mc.partition_tuple(i)
            if not si.partition_matches(part):
                continue
            live += 1
            deletes.append(_delete_ref(mc, i, m))
        result.manifests.append(ManifestDecision(
            m.manifest_path, "deletes", m.partition_spec_id, m.added_snapshot_id, True, why,
            files=mc.count, matched=live))
    index = DeleteIndex(deletes, {sid for sid, s in md.specs_by_id().items()
                                  if info(sid).unpartitioned}, field_type)
    result.delete_files_total = len(index)
    eq_field_ids = index.equality_field_ids

    # 2. data files
    wanted = _manifest_stat_ids(expr) | eq_field_ids
    types = {fid: t for fid in wanted if (t := field_type(fid)) is not None}
    # NaN counts matter only for float and double columns
    nan_ids = {fid for fid in wanted if types.get(fid) in (FLOAT, DOUBLE)}
    metrics_expr = expr
    scalar_metrics = MetricsEvaluator(expr) if explain and not isinstance(expr, AlwaysTrue) else None
    for m in data_manifests:
        if append_ids is not None and m.added_snapshot_id not in append_ids:
            continue
        live_count = None if m.added_files_count is None or m.existing_files_count is None \
            else m.added_files_count + m.existing_files_count
        if live_count is not None:
            result.data_files_total += live_count
        if not (m.has_added_files() or m.has_existing_files()):
            result.manifests.append(ManifestDecision(
                m.manifest_path, "data", m.partition_spec_id, m.added_snapshot_id, False,
                "no added or existing files"))
            continue
        si = info(m.partition_spec_id)
        ok, why = si.manifest_eval.eval(m)
        if not ok:
            result.manifests.append(ManifestDecision(
                m.manifest_path, "data", m.partition_spec_id, m.added_snapshot_id, False, why))
            continue
        mc = _load(io, m, wanted, nan_ids)
        if live_count is None:
            result.data_files_total += sum(1 for s in mc.status if s != DELETED)
        before = len(result.files)
        _plan_manifest(mc, m, si, metrics_expr, types, index, eq_field_ids, result,
                       append_ids, explain, scalar_metrics)
        result.manifests.append(ManifestDecision(
            m.manifest_path, "data", m.partition_spec_id, m.added_snapshot_id, True, why,
            files=sum(1 for s in mc.status if s != DELETED),
            matched=len(result.files) - before))
    return result


def _load(io: Any, m: ManifestFile, wanted: set[int],
          nan: set[int] | None = None) -> ManifestColumns:
    return load_manifest_columns(
        io, m.manifest_path, m.manifest_length, wanted_stats=frozenset(wanted),
        nan_stats=None if nan is None else frozenset(nan),
        added_snapshot_id=m.added_snapshot_id, sequence_number=m.sequence_number,
        first_row_id=m.first_row_id)


def _delete_ref(mc: ManifestColumns, i: int, m: ManifestFile) -> DeleteRef:
    lower: dict = {}
    upper: dict = {}
    nulls: dict = {}
    values: dict = {}
    for fid, st in mc.stats.items():
        lower[fid] = st.lower[i]
        upper[fid] = st.upper[i]
        nulls[fid] = st.null_counts[i]
        values[fid] = st.value_counts[i]
    referenced = mc.referenced_data_file[i]
    content = mc.content[i]
    if content != EQUALITY_DELETES:
        path_stats = mc.stats.get(DELETE_FILE_PATH_ID)
        referenced = targeted_path(referenced, path_stats.lower[i] if path_stats else None,
                                   path_stats.upper[i] if path_stats else None)
    seq = mc.data_sequence_number[i]
    eq = mc.equality_ids[i]
    return DeleteRef(
        path=mc.file_path[i], content=content, file_format=mc.file_format[i],
        record_count=mc.record_count[i], file_size_in_bytes=mc.file_size_in_bytes[i],
        data_sequence_number=seq if seq is not None else 0, spec_id=m.partition_spec_id,
        partition=mc.partition_tuple(i), referenced_data_file=referenced,
        content_offset=mc.content_offset[i], content_size_in_bytes=mc.content_size_in_bytes[i],
        equality_ids=tuple(eq) if eq is not None else None, manifest_path=m.manifest_path,
        lower_bounds=lower, upper_bounds=upper, null_counts=nulls, value_counts=values)


def _data_file_for_explain(mc: ManifestColumns, i: int, spec_id: int) -> DataFile:
    st = mc.stats
    return DataFile(
        content=DATA, file_path=mc.file_path[i], file_format=mc.file_format[i],
        partition=mc.partition_tuple(i), record_count=mc.record_count[i],
        file_size_in_bytes=mc.file_size_in_bytes[i],
        value_counts={f: s.value_counts[i] for f, s in st.items() if s.value_counts[i] is not None},
        null_value_counts={f: s.null_counts[i] for f, s in st.items() if s.null_counts[i] is not None},
        nan_value_counts={f: s.nan_counts[i] for f, s in st.items() if s.nan_counts[i] is not None},
        lower_bounds={f: s.lower[i] for f, s in st.items() if s.lower[i] is not None},
        upper_bounds={f: s.upper[i] for f, s in st.items() if s.upper[i] is not None},
        spec_id=spec_id)


def _plan_manifest(mc: ManifestColumns, m: ManifestFile, si: _SpecInfo, expr: Expression,
                   types: dict[int, IcebergType], index: DeleteIndex, eq_ids: set[int],
                   result: PlanResult, append_ids: set[int] | None, explain: bool,
                   scalar_metrics: MetricsEvaluator | None) -> None:
    status = mc.status
    n = mc.count
    decisions = result.file_decisions
    # live entries (and, for incremental scans, only those appended in range)
    if append_ids is None:
        idx = [i for i in range(n) if status[i] != DELETED]
    else:
        sids = mc.snapshot_id
        idx = [i for i in range(n) if status[i] == ADDED and sids[i] in append_ids]
    # partition tuples
    if not isinstance(si.part_expr, AlwaysTrue) and mc.partitions:
        pm = si.partition_matches
        parts = mc.partitions
        if len(parts) == 1:
            col = parts[0]
            keep = [i for i in idx if pm((col[i],))]
        else:
            keep = [i for i in idx if pm(tuple(c[i] for c in parts))]
        if explain:
            kept = set(keep)
            for i in idx:
                if i not in kept:
                    decisions.append(FileDecision(
                        mc.file_path[i], m.manifest_path, False,
                        f"partition {_partition_text(mc, i)} does not satisfy "
                        f"{si.part_expr}"))
        idx = keep
    elif isinstance(si.part_expr, AlwaysFalse):
        idx = []
    # column metrics
    if not isinstance(expr, AlwaysTrue) and idx:
        if scalar_metrics is not None:  # --explain: decisions and reasons from the scalar form
            verdicts = [scalar_metrics.eval(_data_file_for_explain(mc, i, m.partition_spec_id))
                        for i in idx]
            might = [ok for ok, _ in verdicts]
            decisions.extend(FileDecision(mc.file_path[i], m.manifest_path, False, why)
                             for i, (ok, why) in zip(idx, verdicts) if not ok)
        else:
            might = metrics_might_match(expr, mc, idx, types)
        idx = [i for i, ok in zip(idx, might) if ok]
    elif isinstance(expr, AlwaysFalse):
        idx = []
    # planned files
    files = result.files
    spec_id = m.partition_spec_id
    mpath = m.manifest_path
    if index.is_empty and si.residuals is None and not explain:
        residual = si.full_expr
        files.extend(PlannedFile(mc, i, spec_id, residual, (), mpath) for i in idx)
        return
    paths = mc.file_path
    seqs = mc.data_sequence_number
    parts = mc.partitions
    single = len(parts) == 1
    no_deletes = index.is_empty
    no_residual = si.residuals is None
    residual = si.full_expr if no_residual else TRUE
    append = files.append
    for i in idx:
        part = (parts[0][i],) if single else tuple(c[i] for c in parts)
        if not no_residual:
            residual = si.residual(part)
        if no_deletes:
            dels: tuple = ()
        else:
            seq = seqs[i]
            stats = None
            if eq_ids:
                stats = DataStats(
                    lower={f: mc.stats[f].lower[i] for f in eq_ids if f in mc.stats},
                    upper={f: mc.stats[f].upper[i] for f in eq_ids if f in mc.stats},
                    null_counts={f: mc.stats[f].null_counts[i] for f in eq_ids if f in mc.stats},
                    value_counts={f: mc.stats[f].value_counts[i] for f in eq_ids if f in mc.stats})
            dels = index.for_data_file(paths[i], spec_id, part, seq if seq is not None else 0, stats)
        append(PlannedFile(mc, i, spec_id, residual, dels, mpath))
        if explain:
            decisions.append(FileDecision(
                paths[i], mpath, True,
                "no filter" if isinstance(expr, AlwaysTrue) else
                f"partition and column metrics may match; residual: {residual}"))


def _partition_text(mc: ManifestColumns, i: int) -> str:
    parts = [f"{name}={col[i]!r}" for name, col in zip(mc.partition_names, mc.partitions)]
    return "{" + ", ".join(parts) + "}"
