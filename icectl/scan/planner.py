"""Scan planning: which data files (with which delete files and residuals) a filter touches.

A pipeline of named steps after the reference's ``ManifestGroup`` + ``DeleteFileIndex`` +
``TableScanUtil``; each step takes what the previous one returned and the :class:`_Scan` (the
resolved inputs, immutable), and nothing is carried between them in closures:

1. :func:`_prepare` -- pick the snapshot (current, ``snapshot_id``, ``ref``, ``as_of`` through
   the snapshot log, or the appends between two snapshots for an incremental scan), the schema
   it reads with, bind the filter (:mod:`icectl.scan.plan_setup`);
2. :func:`_select_manifests` -- read the manifest list; per partition spec the filter is
   projected inclusively onto the partition struct (:class:`_Specs`), and manifests without
   live files or whose partition summaries cannot match are skipped;
3. :func:`_index_deletes` -- decode the selected delete manifests column-wise, keep live delete
   files whose partition matches (and, with ``filter_deletes``, whose column metrics might hold
   matching rows, as the reference's planFiles), and index them
   (:mod:`icectl.table.delete_index`);
4. :func:`_filter_entries` -- per selected data manifest, decoded column-wise
   (:mod:`icectl.io.manifest.columns`; the cache misses in worker processes when more than a
   few miss, arriving in manifest order, :mod:`icectl.scan.parallel`): live entries whose partition tuple satisfies the
   projection and whose column metrics might match (:mod:`icectl.expr.eval_metrics`);
5. :func:`_attach_deletes` -- each kept file with its residual (strict / inclusive projection
   on its partition, cached per partition) and its delete files;
6. on request, :meth:`PlanResult.tasks` splits files and bin-packs the splits
   (:mod:`icectl.scan.tasks`).

``explain=True`` records, for every manifest and every file, why it was kept or skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import compress
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Sequence

from icectl.errors import NotFound, ValidationError
from icectl.expr.evaluators import (
    ManifestEvaluator,
    MetricsEvaluator,
    ResidualEvaluator,
    manifests_might_match,
    metrics_might_match,
    partition_matches,
)
from icectl.expr.expressions import (
    TRUE,
    AlwaysFalse,
    AlwaysTrue,
    Expression,
    rewrite_not,
)
from icectl.expr.projection import inclusive_projection
from icectl.io.manifest.manifest_list import load_manifest_list
from icectl.io.manifest.columns import (
    ManifestColumns,
    ManifestRequest,
    load_manifest_columns,
    manifest_request,
)
from icectl.table.delete_index import (
    DELETE_FILE_PATH_ID,
    DataStats,
    DeleteIndex,
    DeleteRef,
)
from icectl.scan.plan_result import (
    FileDecision,
    FileRun,
    ManifestDecision,
    PlannedFile,
    PlanResult,
    ScanTask,
    data_file_of,
)
from icectl.scan.parallel import check_workers, load_in_order
from icectl.scan.plan_setup import (
    appended_manifests,
    appended_snapshots,
    bind_filter,
    is_incremental,
    manifest_stat_ids,
    parse_as_of,
    resolve_columns,
    scan_schema,
    split_options,
)
from icectl.spec.partition_path import partition_texts
from icectl.spec.manifests import (
    ADDED,
    DATA,
    DELETED,
    MANIFEST_DELETES,
    ManifestFile,
)
from icectl.spec.metadata import TableMetadata, select_snapshot
from icectl.spec.partition_identity import partition_key
from icectl.spec.partitioning import PartitionSpec
from icectl.spec.schema import Schema
from icectl.spec.snapshots import Snapshot
from icectl.spec.transforms import VoidTransform
from icectl.spec.types import DOUBLE, FLOAT, IcebergType, StructType

if TYPE_CHECKING:
    from icectl.io.storage.files import FileIO
    from icectl.table.table import Table

__all__ = ["plan_scan", "PlanResult", "PlannedFile", "ScanTask", "ManifestDecision",
           "FileDecision", "parse_as_of"]


# -- per partition spec: projections and caches ---------------------------------------------------


class _SpecInfo:
    def __init__(self, spec: PartitionSpec, schema: Schema, expr: Expression,
                 case_sensitive: bool):
        self.spec = spec
        self.schema = schema
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


class _Specs:
    """The :class:`_SpecInfo` of each partition spec a scan meets, built on first use."""

    def __init__(self, md: TableMetadata, schema: Schema, expr: Expression, case_sensitive: bool):
        self._md = md
        self._args = (schema, expr, case_sensitive)
        self._infos: dict[int, _SpecInfo] = {}

    def __getitem__(self, spec_id: int) -> _SpecInfo:
        got = self._infos.get(spec_id)
        if got is None:
            try:
                spec = self._md.spec_by_id(spec_id)
            except Exception:  # noqa: BLE001
                raise ValidationError(f"manifest refers to unknown partition spec {spec_id}") from None
            got = self._infos[spec_id] = _SpecInfo(spec, *self._args)
        return got

    def unpartitioned_ids(self) -> set[int]:
        return {sid for sid in self._md.specs_by_id() if self[sid].unpartitioned}


# -- the pipeline -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Scan:
    """The resolved inputs of one plan, shared read-only by every step."""

    io: FileIO
    md: TableMetadata
    snapshot: Snapshot | None
    schema: Schema
    expr: Expression
    case_sensitive: bool
    append_ids: frozenset[int] | None  # incremental scans: the appended snapshots in range
    explain: bool
    specs: _Specs

    @property
    def incremental(self) -> bool:
        return self.append_ids is not None

    def field_type(self, fid: int) -> IcebergType | None:
        f = self.schema.find_field_or_none(fid)
        return f.type if f is not None else None


@dataclass(frozen=True)
class _Metrics:
    """What the data-file steps need about column metrics, derived once per plan."""

    wanted: frozenset[int]  # field ids whose statistics are decoded
    nan_ids: frozenset[int]  # of those, float/double columns (NaN counts)
    types: dict[int, IcebergType]
    eq_ids: frozenset[int]  # field ids equality deletes compare
    scalar: MetricsEvaluator | None  # for --explain reasons


def plan_scan(
    table: Table,
    filter_text: str | None = None,
    *,
    filter_expr: Expression | None = None,
    snapshot_id: int | None = None,
    ref: str | None = None,
    as_of: str | int | None = None,
    columns: str | Sequence[str] | None = None,
    case_sensitive: bool = False,
    from_snapshot: int | None = None,
    to_snapshot: int | None = None,
    split_size: int | None = None,
    open_file_cost: int | None = None,
    lookback: int | None = None,
    explain: bool = False,
    workers: int | None = None,
    on_files: Callable[[FileRun], None] | None = None,
    filter_deletes: bool = False,
) -> PlanResult:
    """Plan a scan of ``table`` (a :class:`icectl.table.table.Table`).

    ``filter_deletes``: attach only the delete files whose column metrics might hold rows
    matching the filter, as the reference's planFiles does (``icectl plan``, and readers that
    keep only matching rows). Leave it off when the planned files are read whole (compaction,
    copy-on-write rewrites): an equality delete file that cannot match the filter may still
    delete rows of the file that do not match it, which a rewrite must leave out.

    Manifests that miss the decoded-manifest caches are decoded in ``workers`` processes
    (default: this machine's cores) when more than a few miss (:mod:`icectl.scan.parallel`).
    ``on_files`` is called with the run of files planned from each manifest (a
    :class:`FileRun`), in order, as soon as they are planned (they are also in the result)."""
    check_workers(workers)
    scan, result = _prepare(table, filter_text, filter_expr, snapshot_id, ref, as_of, columns,
                            case_sensitive, from_snapshot, to_snapshot, split_size,
                            open_file_cost, lookback, explain)
    if scan.snapshot is None:
        return result
    manifests = _manifests_of(scan)
    deletes = [] if scan.incremental else [m for m in manifests if m.content == MANIFEST_DELETES]
    data = [m for m in manifests if m.content != MANIFEST_DELETES
            and (scan.append_ids is None or m.added_snapshot_id in scan.append_ids)]
    index = _index_deletes(scan, _select_manifests(scan, deletes), result.manifests,
                           filter_deletes, result.delete_rows)
    result.delete_files_total = len(index)
    metrics = _metrics_inputs(scan, index)
    result.data_files_total = sum(_live_count(m) or 0 for m in data)
    selected = list(_select_manifests(scan, data))
    decoded = load_in_order(scan.io, [_request(m, metrics.wanted, metrics.nan_ids)
                                      for m, kept, _ in selected if kept], workers)
    for m, kept, why in selected:
        if not kept:
            result.manifests.append(_decision(m, False, why))
            continue
        mc = next(decoded)
        live = mc.count - mc.status.count(DELETED)
        if _live_count(m) is None:
            result.data_files_total += live
        idx = _filter_entries(scan, mc, m, metrics, result.file_decisions)
        run = _attach_deletes(scan, mc, m, idx, index, metrics, result.file_decisions)
        result.manifests.append(_decision(m, True, why, files=live, matched=len(idx)))
        if idx:
            result.file_runs.append(run)
            if on_files is not None:
                on_files(run)
    return result


def _prepare(table: Table, filter_text: str | None, filter_expr: Expression | None,
             snapshot_id: int | None, ref: str | None, as_of: str | int | None,
             columns: str | Sequence[str] | None, case_sensitive: bool, from_snapshot: int | None,
             to_snapshot: int | None, split_size: int | None, open_file_cost: int | None,
             lookback: int | None, explain: bool) -> tuple[_Scan, PlanResult]:
    """Step 1: the snapshot, schema and bound filter; an empty result to fill."""
    md: TableMetadata = table.metadata
    size, cost, look = split_options(md, split_size, open_file_cost, lookback)
    incremental = is_incremental(from_snapshot, to_snapshot, snapshot_id, ref, as_of)
    append_ids: frozenset[int] | None = None
    if incremental:
        to_id = to_snapshot if to_snapshot is not None else md.current_snapshot_id
        if to_id is None:
            raise NotFound("the table has no snapshots")
        append_ids = frozenset(appended_snapshots(md, from_snapshot, to_id))
        snapshot = md.snapshot_by_id(to_id)
    else:
        as_of_ms = None
        if as_of is not None:
            as_of_ms = as_of if isinstance(as_of, int) else parse_as_of(as_of)
        snapshot = select_snapshot(md, snapshot_id, ref, as_of_ms)
    time_travel = snapshot_id is not None or as_of is not None or \
        (ref is not None and ref in md.refs and not md.refs[ref].is_branch)
    schema = scan_schema(md, snapshot, time_travel)
    expr = bind_filter(filter_text, filter_expr, schema, case_sensitive)
    cols = resolve_columns(columns, schema, case_sensitive)
    result = PlanResult(
        location=table.location, snapshot_id=snapshot.snapshot_id if snapshot else None,
        schema=schema, filter=expr, columns=cols, manifests=[],
        delete_files_total=0, data_files_total=0, split_size=size, open_file_cost=cost,
        lookback=look, specs=dict(md.specs_by_id()),
        incremental=(from_snapshot, snapshot.snapshot_id) if incremental and snapshot else None,
        case_sensitive=case_sensitive)
    scan = _Scan(table.io, md, snapshot, schema, expr, case_sensitive, append_ids, explain,
                 _Specs(md, schema, expr, case_sensitive))
    return scan, result


def _manifests_of(scan: _Scan) -> list[ManifestFile]:
    snapshot = scan.snapshot
    assert snapshot is not None
    if snapshot.manifest_list is None:
        raise ValidationError(f"snapshot {snapshot.snapshot_id} lists manifests inline "
                              "(very old v1 writer); icectl cannot plan it")
    if scan.append_ids is not None:
        # as the reference: the data manifests each appended snapshot wrote, read from that
        # snapshot's own manifest list (later commits may have rewritten them)
        return appended_manifests(scan.io, scan.md, set(scan.append_ids))
    return load_manifest_list(scan.io, snapshot.manifest_list, scan.md.format_version,
                              cached=True)


def _live_count(m: ManifestFile) -> int | None:
    if m.added_files_count is None or m.existing_files_count is None:
        return None
    return m.added_files_count + m.existing_files_count


def _select_manifests(scan: _Scan, manifests: list[ManifestFile],
                      ) -> Iterator[tuple[ManifestFile, bool, str]]:
    """Step 2: each manifest with whether it may hold matching live files, and why."""
    verdicts = None if scan.explain else _verdicts(scan, manifests)
    for m in manifests:
        if m.content == MANIFEST_DELETES:
            scan.specs[m.partition_spec_id]  # an unknown spec is an error even when empty
        if not (m.has_added_files() or m.has_existing_files()):
            yield m, False, "no added or existing files"
            continue
        if verdicts is None:
            ok, why = scan.specs[m.partition_spec_id].manifest_eval.eval(m)
            yield m, ok, why
        else:  # reasons are shown only by explain
            ok = verdicts[id(m)]
            yield m, ok, "partition summaries may match" if ok else "partition summaries cannot match"


def _verdicts(scan: _Scan, manifests: list[ManifestFile]) -> dict[int, bool]:
    """By ``id``: whether each manifest with live files may match (one walk a spec)."""
    by_spec: dict[int, list[ManifestFile]] = {}
    for m in manifests:
        if m.has_added_files() or m.has_existing_files():
            by_spec.setdefault(m.partition_spec_id, []).append(m)
    out: dict[int, bool] = {}
    for spec_id, group in by_spec.items():
        si = scan.specs[spec_id]
        out.update(zip(map(id, group), manifests_might_match(si.part_expr, group, si.partition_type)))
    return out


def _decision(m: ManifestFile, kept: bool, why: str, files: int | None = None,
              matched: int | None = None) -> ManifestDecision:
    return ManifestDecision(m.manifest_path,
                            "deletes" if m.content == MANIFEST_DELETES else "data",
                            m.partition_spec_id, m.added_snapshot_id, kept, why, files, matched)


def _index_deletes(scan: _Scan, selected: Iterable[tuple[ManifestFile, bool, str]],
                   decisions: list[ManifestDecision], by_rows: bool = False,
                   rows: dict[tuple, tuple] | None = None) -> DeleteIndex:
    """Step 3: live delete files of the selected delete manifests whose partition matches and,
    with ``by_rows``, whose column metrics might hold rows matching the filter (the reference
    reads delete manifests with ``filterRows(dataFilter)``: an equality delete file whose
    key-column bounds exclude the filter is attached to no file; position delete files and
    deletion vectors carry no data-column metrics, so they stay), indexed. ``rows`` gets where
    each was decoded (:attr:`PlanResult.delete_rows`)."""
    deletes: list[DeleteRef] = []
    expr = scan.expr
    by_rows = by_rows and not isinstance(expr, (AlwaysTrue, AlwaysFalse))
    filter_ids = frozenset(manifest_stat_ids(expr)) if by_rows else frozenset()
    types = {fid: t for fid in filter_ids if (t := scan.field_type(fid)) is not None}
    nan_ids = frozenset(fid for fid, t in types.items() if t in (FLOAT, DOUBLE))
    for m, kept, why in selected:
        if not kept:
            decisions.append(_decision(m, False, why))
            continue
        si = scan.specs[m.partition_spec_id]
        wanted = {DELETE_FILE_PATH_ID} | filter_ids
        mc = _load(scan.io, m, wanted, set(nan_ids))
        eq_ids = {fid for ids in mc.equality_ids if ids for fid in ids}
        if eq_ids - wanted:
            mc = _load(scan.io, m, wanted | eq_ids, set(nan_ids))
        idx = [i for i in range(mc.count)
               if mc.status[i] != DELETED and mc.content[i] != DATA
               and si.partition_matches(mc.partition_tuple(i))]
        if by_rows and idx:
            idx = list(compress(idx, metrics_might_match(expr, mc, idx, types)))
        deletes.extend(DeleteRef.from_columns(mc, i, m.partition_spec_id, m.manifest_path) for i in idx)
        if rows is not None:
            for i in idx:
                rows[(mc.file_path[i], mc.content_offset[i])] = (mc, i, m.partition_spec_id,
                                                                 m.manifest_path)
        decisions.append(_decision(m, True, why, files=mc.count, matched=len(idx)))
    return DeleteIndex(deletes, scan.specs.unpartitioned_ids(), scan.field_type)


def _metrics_inputs(scan: _Scan, index: DeleteIndex) -> _Metrics:
    eq_ids = frozenset(index.equality_field_ids)
    wanted = frozenset(manifest_stat_ids(scan.expr)) | eq_ids
    types = {fid: t for fid in wanted if (t := scan.field_type(fid)) is not None}
    # NaN counts matter only for float and double columns
    nan_ids = frozenset(fid for fid in wanted if types.get(fid) in (FLOAT, DOUBLE))
    scalar = MetricsEvaluator(scan.expr) \
        if scan.explain and not isinstance(scan.expr, AlwaysTrue) else None
    return _Metrics(wanted, nan_ids, types, eq_ids, scalar)


def _filter_entries(scan: _Scan, mc: ManifestColumns, m: ManifestFile, metrics: _Metrics,
                    decisions: list[FileDecision]) -> list[int]:
    """Step 4: positions of the live entries whose partition and column metrics may match
    (for incremental scans: entries added by the appended snapshots)."""
    status = mc.status
    n = mc.count
    if scan.append_ids is None:
        if DELETED in status:
            idx = [i for i in range(n) if status[i] != DELETED]
        else:
            idx = list(range(n))
    else:
        sids = mc.snapshot_id
        idx = [i for i in range(n) if status[i] == ADDED and sids[i] in scan.append_ids]
    si = scan.specs[m.partition_spec_id]
    if not isinstance(si.part_expr, AlwaysTrue) and mc.partitions:
        idx = _by_partition(scan, si, mc, m, idx, decisions)
    elif isinstance(si.part_expr, AlwaysFalse):
        idx = []
    expr = scan.expr
    if not isinstance(expr, AlwaysTrue) and idx:
        if metrics.scalar is not None:  # --explain: decisions and reasons from the scalar form
            verdicts = [metrics.scalar.eval(data_file_of(mc, i, m.partition_spec_id,
                                                         m.manifest_path))
                        for i in idx]
            might = [ok for ok, _ in verdicts]
            decisions.extend(FileDecision(mc.file_path[i], m.manifest_path, False, why)
                             for i, (ok, why) in zip(idx, verdicts) if not ok)
        else:
            might = metrics_might_match(expr, mc, idx, metrics.types)
        idx = list(compress(idx, might))
    elif isinstance(expr, AlwaysFalse):
        idx = []
    return idx


def _by_partition(scan: _Scan, si: _SpecInfo, mc: ManifestColumns, m: ManifestFile,
                  idx: list[int], decisions: list[FileDecision]) -> list[int]:
    pm = si.partition_matches
    parts = mc.partitions
    if len(parts) == 1:
        col = parts[0]
        keep = [i for i in idx if pm((col[i],))]
    else:
        keep = [i for i in idx if pm(tuple(c[i] for c in parts))]
    if scan.explain:
        kept = set(keep)
        for i in idx:
            if i not in kept:
                decisions.append(FileDecision(
                    mc.file_path[i], m.manifest_path, False,
                    f"partition {_partition_text(mc, i, si)} does not satisfy {si.part_expr}"))
    return keep


def _attach_deletes(scan: _Scan, mc: ManifestColumns, m: ManifestFile, idx: list[int],
                    index: DeleteIndex, metrics: _Metrics,
                    decisions: list[FileDecision]) -> FileRun:
    """Step 5: the planned files, each with its residual and delete files."""
    si = scan.specs[m.partition_spec_id]
    spec_id = m.partition_spec_id
    mpath = m.manifest_path
    if not idx or (index.is_empty and si.residuals is None and not scan.explain):
        return FileRun(mc, idx, spec_id, si.full_expr, mpath)
    if index.is_empty and not scan.explain and len(mc.partitions) == 1:  # one value: one residual
        values = {mc.partitions[0][i] for i in idx}  # (floats: -0.0, 0.0 and NaN differ below)
        if len(values) == 1 and not isinstance(value := next(iter(values)), float):
            return FileRun(mc, idx, spec_id, si.residual((value,)), mpath)
    paths = mc.file_path
    seqs = mc.data_sequence_number
    parts = mc.partitions
    single = len(parts) == 1
    no_residual = si.residuals is None
    residual = si.full_expr if no_residual else TRUE
    eq_ids = metrics.eq_ids
    out = []
    for i in idx:
        part = (parts[0][i],) if single else tuple(c[i] for c in parts)
        if not no_residual:
            residual = si.residual(part)
        dels: tuple = ()
        if not index.is_empty:
            seq = seqs[i]
            stats = DataStats.from_columns(mc, i, eq_ids) if eq_ids else None
            dels = index.for_data_file(paths[i], spec_id, part, seq if seq is not None else 0, stats)
        out.append(PlannedFile(mc, i, spec_id, residual, dels, mpath))
        if scan.explain:
            decisions.append(FileDecision(
                paths[i], mpath, True,
                "no filter" if isinstance(scan.expr, AlwaysTrue) else
                f"partition and column metrics may match; residual: {residual}"))
    return FileRun(mc, idx, spec_id, None, mpath, out)


# -- decoding and views of one row ----------------------------------------------------------------


def _request(m: ManifestFile, wanted: Iterable[int], nan: Iterable[int]) -> ManifestRequest:
    return manifest_request(
        m.manifest_path, m.manifest_length, wanted_stats=frozenset(wanted),
        nan_stats=frozenset(nan), added_snapshot_id=m.added_snapshot_id,
        sequence_number=m.sequence_number, first_row_id=m.first_row_id)


def _load(io: FileIO, m: ManifestFile, wanted: set[int],
          nan: set[int] | None = None) -> ManifestColumns:
    return load_manifest_columns(
        io, m.manifest_path, m.manifest_length, wanted_stats=frozenset(wanted),
        nan_stats=None if nan is None else frozenset(nan),
        added_snapshot_id=m.added_snapshot_id, sequence_number=m.sequence_number,
        first_row_id=m.first_row_id)


def _partition_text(mc: ManifestColumns, i: int, si: _SpecInfo) -> str:
    """A file's partition as partition paths show it (``ts_day=2024-02-27``)."""
    values = tuple(col[i] for col in mc.partitions)
    try:
        parts = [f"{name}={human}" for name, human in partition_texts(si.spec, si.schema, values)]
    except Exception:  # noqa: BLE001 - a dropped source column: the stored values as they are
        parts = [f"{name}={col[i]!r}" for name, col in zip(mc.partition_names, mc.partitions)]
    return "{" + ", ".join(parts) + "}"
