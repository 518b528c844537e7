"""Append existing data files to a table without reading their rows.

``append_files(table, paths, ...)`` registers Parquet, ORC and Avro files as a new ``append``
snapshot. For each file it reads only the footer (Parquet: metrics and column statistics; ORC:
the row count; Avro: block headers), places the file in its partition
(:mod:`icectl.ops.write.data_files`), and then commits one fast append (manifests merged when the table
asks for it). Footers are read in parallel by a bounded thread pool.

Refused - with nothing committed and nothing left behind - are: a missing file; a path given
twice or already in the table (checked again on every commit retry); a file whose columns do not
fit the table's schema; a file whose rows span several partitions, or whose partition cannot be
told. Safe ingestion (:mod:`icectl.ops.write.ingest`) changes that on request: files compared by
content, copies placed under the table, bad files set aside (quarantined), spanning files
rewritten, and an idempotency key that makes a second run commit nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Mapping, Sequence

from icectl import command_files
from icectl.errors import IcectlError, InvalidInput, NotFound, ValidationError
from icectl.io.manifest import records as avro
from icectl.io.storage.files import has_scheme, os_path
from icectl.ops.write.data_files import DEFAULT_WORKERS, ScanContext, SpansPartitions, describe, scan_all
from icectl.ops.write.ingest import (
    CONTENT_DIGESTS,
    ON_ERROR,
    PLACEMENTS,
    SKIP_MODES,
    content_digest,
    place_files,
    recorded_digests,
    refuse_moving_other_tables,
    remove_sources,
    rewrite_all,
    rewrite_into_partitions,
    same_content,
    skip_mode,
)
from icectl.spec.metrics import metrics_config
from icectl.spec.name_mapping import NAME_MAPPING_PROPERTY, mapping_from_schema, name_mapping_to_json, table_name_mapping
from icectl.spec.manifests import DataFile
from icectl.spec.metadata import TableMetadata
from icectl.spec.partitioning import PartitionSpec
from icectl.spec.result_json import JsonResult, committed_operation, derived, json_field, pairs
from icectl.spec.snapshots import MAIN_BRANCH, Snapshot
from icectl.table.commit.idempotency import IDEMPOTENCY_KEY, AlreadyCommitted, snapshot_with_key
from icectl.table.commit.producer import FastAppendProducer, ProducedSnapshot
from icectl.table.table import CommitAttempt, Table

__all__ = ["AppendResult", "append_files", "append_data_files", "NAME_MAPPING_PROPERTY", "DEFAULT_WORKERS",
           "PLACEMENTS", "SKIP_MODES", "ON_ERROR", "SpansPartitions", "content_digest", "key_committed_by",
           "CONTENT_DIGESTS"]



# -- result -------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class AppendResult(JsonResult):
    """What an append committed."""

    committed: bool = True
    location: str
    branch: str
    snapshot_id: int | None  # None when nothing was committed
    parent_snapshot_id: int | None
    sequence_number: int | None
    operation: str | None = committed_operation("append")
    added_files: int
    added_records: int
    added_files_size: int
    manifest_list: str
    manifests_written: tuple[str, ...]
    metadata_location: str = json_field(key="metadata-file")
    version: int
    first_row_id: int | None = None
    added_rows: int | None = None
    attempts: int = 1
    name_mapping_created: bool = False
    summary: dict[str, str] = field(hash=False)
    files: tuple[dict[str, Any], ...] = field(default=(), hash=False)
    skipped_files: tuple[str, ...] = ()  # given, but already in the table (skip_existing)
    # some given files were quarantined: the rest was committed (or nothing was left)
    partial: bool = derived(lambda r: bool(r.quarantined))
    # given files left out because they could not be appended (on_error="skip"): (path, reason)
    quarantined: tuple[tuple[str, str], ...] = json_field(
        default=(), key="quarantined-files", value=pairs("path", "reason"))
    # (source, the table's copy) with copy/move
    placed: tuple[tuple[str, str], ...] = json_field(
        default=(), key="placed-files", value=pairs("source", "file-path"))
    # sources whose rows were rewritten into partitioned files
    rewritten: tuple[str, ...] = json_field(default=(), key="rewritten-files")
    idempotency_key: str | None = None
    # the snapshot that already committed idempotency_key
    committed_by: int | None = json_field(default=None, key="already-committed-by")
    # move: sources left, with the error
    source_cleanup_failed: tuple[tuple[str, str], ...] = json_field(
        default=(), value=pairs("path", "error"))


# -- scanning files ------------------------------------------------------------------------------


def _normalise(path: str) -> str:
    p = path.strip()
    if not p:
        raise InvalidInput("empty data file path")
    if not has_scheme(p):
        return os.path.abspath(p)
    return p


def _identity_key(path: str) -> str:
    """The same file however it is spelled (``file:/x``, ``file:///x``, ``/x``)."""
    try:
        local = os_path(path)
    except Exception:  # noqa: BLE001
        return path
    return os.path.normpath(local) if local is not None else path.rstrip("/")


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
    idempotency_key: str | None = None, path_values: Mapping[str, Mapping[str, str]] | None = None,
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
    ``path_values``: partition texts by path, of files in an adopted directory (ops.write.adopt)."""
    mode = skip_mode(skip_existing)
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
    run = _Run(table, branch, idempotency_key, dict(summary_properties or {}), merge, path_values=dict(path_values or {}))
    head = _branch_head(md, branch)
    if idempotency_key is not None:
        if not idempotency_key.strip():
            raise InvalidInput("the idempotency key is empty", argument="idempotency_key")
        run.summary[IDEMPOTENCY_KEY] = idempotency_key
        done = snapshot_with_key(md, head, idempotency_key)
        if done is not None:
            return run.nothing(done.snapshot_id)
    normalised = _leave_out_known(run, md, head, normalised, mode)
    if not normalised:
        return run.nothing()
    files, spanning, uses_names = _read_files(run, md, normalised, declared, file_format, max_workers,
                                              progress, on_error == "skip", rewrite_spanning)
    try:
        files, placed, rewritten = _place_and_rewrite(run, files, spanning, placement, on_error == "skip")
        if not files:
            return run.nothing()
        outcome = _commit(run, files, uses_names, mode is not None)
    except BaseException:
        command_files.discard(table.io, run.written)  # (kept when the commit may have landed)
        raise
    if isinstance(outcome, AppendResult):
        return outcome
    files, produced, producer = outcome
    cleanup_failed = remove_sources(table.io, placed) if placement == "move" else []
    result = _result(table, branch, files, produced, producer.name_mapping_created, run.skipped)
    return replace(result, quarantined=tuple(run.quarantined), placed=tuple(placed), rewritten=tuple(rewritten),
                   idempotency_key=idempotency_key, source_cleanup_failed=tuple(cleanup_failed))


def _place_and_rewrite(run: _Run, files: list[tuple[DataFile, str]], spanning: list[str], placement: str,
                       skip_bad: bool) -> tuple[list[tuple[DataFile, str]], list[tuple[str, str]], list[str]]:
    """Rewrite the spanning files and copy or move the others under the table (see
    :mod:`icectl.ops.write.ingest`); the content digests of the files taken go into the summary."""
    if placement == "move":  # (before anything is written)
        refuse_moving_other_tables(run.table, [f.file_path for f, _ in files])
    rewrite = rewrite_into_partitions(run.table) if spanning else None
    errors = run.quarantined if skip_bad else None
    rewritten, rewritten_files = rewrite_all(rewrite, spanning, run.written, errors, run.table.io)
    placed: list[tuple[str, str]] = []
    if placement != "in-place" and files:
        files, placed = place_files(run.table, files, placement == "move", run.written)
    files = files + rewritten_files
    taken = {p for p, _ in placed} | set(rewritten) | {f.file_path for f, _ in files}
    recorded = sorted({d for p, d in run.digests.items() if p in taken})
    if recorded:
        run.summary[CONTENT_DIGESTS] = ",".join(recorded)
    return files, placed, rewritten


@dataclass
class _Run:
    """One append's state across its phases."""

    table: Table
    branch: str
    key: str | None
    summary: dict[str, str]
    merge: bool | None
    known: dict[str, frozenset[str]] = field(default_factory=dict)  # manifest -> live identity keys
    skipped: list[str] = field(default_factory=list)
    quarantined: list[tuple[str, str]] = field(default_factory=list)
    digests: dict[str, str] = field(default_factory=dict)  # source -> content digest (by content)
    written: list[str] = field(default_factory=list)  # removed if the append commits nothing
    path_values: dict[str, Mapping[str, str]] = field(default_factory=dict)  # by path (adopted directories)

    def producer(self, files: Sequence[tuple[DataFile, str]], uses_names: bool = False) -> "_AppendProducer":
        return _AppendProducer(self.table, files, add_name_mapping=uses_names, known=self.known,
                               branch=self.branch, summary_properties=self.summary, merge=self.merge)

    def nothing(self, committed_by: int | None = None) -> AppendResult:
        command_files.discard(self.table.io, self.written)
        return _nothing_appended(self.table, self.branch, self.skipped, key=self.key,
                                 committed_by=committed_by, quarantined=self.quarantined)


def _leave_out_known(run: _Run, md: TableMetadata, head: Snapshot | None, paths: list[str],
                     mode: str | None) -> list[str]:
    """The paths left once those the branch already has (by path, or by content) are skipped."""
    if mode is None or not paths:
        return paths
    probe = run.producer(())
    run.skipped = probe.live_among(md, head, {_identity_key(p): p for p in paths})
    paths = [p for p in paths if p not in set(run.skipped)]
    if mode == "content" and paths:
        same, run.digests = same_content(run.table.io, probe.live_files(md, head),
                                         recorded_digests(md, head), paths)
        run.skipped += same
        paths = [p for p in paths if p not in set(same)]
    return paths


def _read_files(run: _Run, md: TableMetadata, paths: list[str], declared: Mapping[str, str],
                file_format: str | None, max_workers: int | None, progress: Any, skip_bad: bool,
                rewrite_spanning: bool) -> tuple[list[tuple[DataFile, str]], list[str], bool]:
    """Each file's footer facts and partition; files spanning partitions (to rewrite) apart;
    with ``skip_bad`` the files that fail are quarantined instead of failing the append."""
    ctx = ScanContext(table_name_mapping(dict(md.properties), md.schema),
                      metrics_config(md.properties, md.schema, md.sort_order),
                      frozenset(f.source_id for f in md.spec.fields if not f.transform.is_void))
    errors = run.quarantined if skip_bad else None
    scanned = scan_all(run.table.io, paths, file_format, md.schema, ctx, max_workers, progress, errors)
    files: list[tuple[DataFile, str]] = []
    spanning: list[str] = []
    for sc in scanned:
        try:
            files.append(describe(sc, md.spec, md.schema, declared, run.path_values.get(sc.path)))
        except SpansPartitions as e:
            if rewrite_spanning:
                spanning.append(sc.path)
            elif errors is None:
                raise
            else:
                errors.append((sc.path, str(e)))
        except IcectlError as e:
            if errors is None:
                raise
            errors.append((sc.path, str(e)))
    return files, spanning, any(s.uses_names for s in scanned)


def _commit(run: _Run, files: list[tuple[DataFile, str]], uses_names: bool, skipping: bool) -> Any:
    """Commit ``files``; files a concurrent commit added are left out when ``skipping``. Returns
    ``(files, produced, producer)``, or the no-op AppendResult."""
    while True:
        producer = run.producer(files, uses_names)
        try:
            return files, producer.commit(), producer
        except AlreadyCommitted as e:  # a concurrent writer committed the same key
            return run.nothing(e.snapshot_id)
        except _AlreadyInTable as e:
            if not skipping:
                raise
            run.skipped += e.paths  # added by a concurrent commit: leave them out and try again
            files = [(f, p) for f, p in files if _identity_key(f.file_path) not in e.keys]
            if not files:
                return run.nothing()


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


def check_summary_properties(properties: Mapping[str, str] | None) -> None:
    """Extra snapshot summary entries a caller gives: any key but ``operation``, which the
    operation itself sets (checked before any work starts, by every edge)."""
    if properties and "operation" in properties:
        raise InvalidInput("a snapshot summary entry cannot set 'operation'",
                           argument="summary_properties")


def key_committed_by(md: TableMetadata, branch: str, key: str) -> int | None:
    """The snapshot on ``branch`` (head or retained ancestor) that committed idempotency ``key``."""
    done = snapshot_with_key(md, _branch_head(md, branch), key)
    return done.snapshot_id if done is not None else None


def _branch_head(md: TableMetadata, branch: str) -> Snapshot | None:
    """The snapshot an append to ``branch`` builds on (a new branch starts at main's head)."""
    ref = md.refs.get(branch)
    sid = ref.snapshot_id if ref is not None else md.current_snapshot_id
    return md.snapshot_by_id(sid) if sid is not None else None


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
