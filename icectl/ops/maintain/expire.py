"""Expire snapshots and delete the files only they needed (``icectl expire``).

Which snapshots go follows the reference's ``RemoveSnapshots``:

* refs: ``main`` always stays; another ref stays while its snapshot is younger than its
  ``max-ref-age-ms`` (table default ``history.expire.max-ref-age-ms``, forever); refs to missing
  snapshots are dropped;
* each retained branch keeps its ancestors while fewer than ``min-snapshots-to-keep`` are kept
  or they are not older than the branch's cut-off (``max-snapshot-age-ms``, table defaults
  ``history.expire.min-snapshots-to-keep`` = 1 and ``history.expire.max-snapshot-age-ms`` =
  5 days; ``--retain-last`` / ``--older-than`` replace the table defaults, per-ref settings win);
* snapshots no ref reaches stay while not older than the cut-off; tagged snapshots stay;
* ``--snapshot-id`` expires a snapshot in addition (refused while a retained ref points at it);
* ``gc.enabled=false`` refuses the whole operation.

Which files go follows the reference's Spark action (the "reachable" rule): every manifest
list, manifest, live data/delete file and statistics file of an expired snapshot, minus
everything the retained snapshots still reach. metadata.json files are never deleted here; the
ones that fell off the metadata log are only reported.

The run is a pipeline of named steps: select what expires (``_select``) -> read what the
retained snapshots reach, strictly (``read_reachable``) -> commit (``_commit``) -> work out the
files to delete (``_deletion_set``) -> delete them (``_delete``) -> finish (``_finish``). The
strict read happens inside every commit attempt, before it commits: a table whose current (or
any retained) snapshot has a missing manifest list or manifest is left exactly as it was, with
CorruptMetadata, since expiring its older snapshots would remove the only readable ones.

Safety (``ops/maintain/file_removal.py``): a table whose metadata records another location than the one it
was loaded from (a ``cp -r`` copy) is refused, unless ``allow_location_mismatch``, which
expires its metadata only and deletes nothing. Before each deletion the file's real path must
lie inside the table location's real path: a file that a symbolic link leads out of the table
is left and reported (``refused``). Files recorded outside the location (registered in place by
``append``) are kept and listed (``kept_outside_location``): the table does not own the
directory they sit in. Asked to (``delete_outside_location``), expire deletes them once no
retained snapshot needs them, as the reference does, and counts them
(``deleted_outside_location``). A file inside another table's directory (a table nested in
this one's location, or the table a file registered in place came from) is never deleted:
it is kept and reported in ``skipped_other_tables``. Directories under the data location that
the deletions emptied are removed (local disks).

Crash safety. The metadata without the expired snapshots is committed first, then files are
deleted: data and delete files, then manifests, then manifest lists and statistics files. Before
the commit a small *pending cleanup* record ``metadata/.icectl-expire-<uuid>.json`` is written
naming the expired snapshots and their manifest lists; it is removed when every deletion is done.
A later ``icectl expire`` finishes every pending record first, recomputing the deletion set
against the then-current metadata, so a run killed at any point is completed by a rerun. The
deletion order keeps a rerun able to find what is left: a manifest list is deleted only after all
files found through it, so a missing list or manifest means its contents are already gone. The
record's name starts with ``.``, which Spark's and icectl's orphan cleanup both skip.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Sequence

from icectl import command_files
from icectl.errors import InvalidInput, NotFound, ValidationError
from icectl.io.storage.files import FileIO, join
from icectl.ops.maintain.file_removal import (
    GC_ENABLED, Deletion, NeedsOverride, Progress, TableBoundary, classify, delete_files,
    default_workers, location_mismatch, outside_location, remove_emptied_dirs, require_gc_enabled,
)
from icectl.ops.maintain.file_removal import normalize_path as _norm
from icectl.ops.maintain.expire_records import PENDING_PREFIX, PENDING_SUFFIX, Pending as _Pending, metadata_entries
from icectl.ops.maintain.expire_records import pending_records as _pending_records, write_record as _write_record
from icectl.ops.maintain.reachable import ManifestReader, Reachable, read_reachable, statistics_files
from icectl.spec.manifests import DATA, EQUALITY_DELETES, POSITION_DELETES
from icectl.spec.metadata import TableMetadata, remove_ref, remove_snapshots
from icectl.spec.properties import (
    MAX_REF_AGE_MS,
    MAX_REF_AGE_MS_DEFAULT,
    MAX_SNAPSHOT_AGE_MS,
    MAX_SNAPSHOT_AGE_MS_DEFAULT,
    MIN_SNAPSHOTS_TO_KEEP,
    MIN_SNAPSHOTS_TO_KEEP_DEFAULT,
)
from icectl.spec.snapshots import MAIN_BRANCH, Snapshot, SnapshotRef, ancestors_of
from icectl.spec.result_json import (
    JsonResult, derived, failed_deletes, json_field, refused_deletes, skipped_in_other_tables)
from icectl.table.store import metadata_dir
from icectl.table.table import Table
from icectl.table.locations import data_location

__all__ = [
    "ExpireResult", "RetentionPlan", "plan_retention", "expire_snapshots", "Progress",
    "GC_ENABLED", "MAX_SNAPSHOT_AGE_MS", "MIN_SNAPSHOTS_TO_KEEP", "MAX_REF_AGE_MS",
    "PENDING_PREFIX",
]


# kinds of deleted files, keyed as the reference's Spark procedure reports them
KINDS = ("data_files", "position_delete_files", "equality_delete_files", "manifest_files",
         "manifest_lists", "statistics_files")
_CONTENT_KINDS = KINDS[:3]
_CONTENT_KIND = {DATA: "data_files", POSITION_DELETES: "position_delete_files",
                 EQUALITY_DELETES: "equality_delete_files"}
_INCOMPLETE = "nothing is expired or deleted while the table's metadata is incomplete"


# ------------------------------------------------------------------------------------------------
# Which snapshots go (pure)


@dataclass(frozen=True)
class RetentionPlan:
    """The outcome of the retention rules on one metadata version."""

    metadata: TableMetadata  # the metadata to commit (unchanged when nothing expires)
    expired_ids: tuple[int, ...]
    removed_refs: tuple[str, ...]
    removed_spec_ids: tuple[int, ...] = ()
    removed_schema_ids: tuple[int, ...] = ()


def _retained_refs(md: TableMetadata, now: int, default_max_ref_age: int) -> dict[str, SnapshotRef]:
    out: dict[str, SnapshotRef] = {}
    for name, ref in md.refs.items():
        if name == MAIN_BRANCH:
            out[name] = ref
            continue
        snap = md.snapshot_by_id(ref.snapshot_id)
        if snap is None:
            continue  # a ref to a missing snapshot is dropped, as the reference does
        max_age = ref.max_ref_age_ms if ref.max_ref_age_ms is not None else default_max_ref_age
        if now - snap.timestamp_ms <= max_age:
            out[name] = ref
    return out


def plan_retention(
    md: TableMetadata,
    *,
    older_than_ms: int | None = None,
    retain_last: int | None = None,
    snapshot_ids: Iterable[int] = (),
    now: int,
) -> RetentionPlan:
    """Apply the retention rules (see the module docs) to ``md``; no I/O."""
    require_gc_enabled(md.properties, "expire snapshots")
    if retain_last is not None and retain_last < 1:
        raise InvalidInput(f"the number of snapshots to retain must be at least 1, not {retain_last}",
                           argument="retain_last")
    explicit = list(dict.fromkeys(snapshot_ids))
    for sid in explicit:
        if md.snapshot_by_id(sid) is None:
            raise NotFound(f"snapshot {sid} does not exist in table {md.location}")
    if not md.snapshots:
        return RetentionPlan(md, (), ())

    default_cutoff = older_than_ms if older_than_ms is not None else \
        now - md.property_as_int(MAX_SNAPSHOT_AGE_MS, MAX_SNAPSHOT_AGE_MS_DEFAULT)
    default_min_keep = retain_last if retain_last is not None else \
        md.property_as_int(MIN_SNAPSHOTS_TO_KEEP, MIN_SNAPSHOTS_TO_KEEP_DEFAULT)
    default_max_ref_age = md.property_as_int(MAX_REF_AGE_MS, MAX_REF_AGE_MS_DEFAULT)

    refs = _retained_refs(md, now, default_max_ref_age)
    retain: set[int] = set()
    by_snapshot: dict[int, list[str]] = {}
    for name, ref in refs.items():
        by_snapshot.setdefault(ref.snapshot_id, []).append(name)
        retain.add(ref.snapshot_id)
    for sid in explicit:
        if sid in by_snapshot:
            raise ValidationError(
                f"cannot expire snapshot {sid}: still referenced by {', '.join(sorted(by_snapshot[sid]))}")

    lookup = md.snapshot_by_id
    reached: set[int] = set()
    for ref in refs.values():
        if not ref.is_branch:
            reached.add(ref.snapshot_id)
            continue
        cutoff = now - ref.max_snapshot_age_ms if ref.max_snapshot_age_ms is not None else default_cutoff
        min_keep = ref.min_snapshots_to_keep if ref.min_snapshots_to_keep is not None else default_min_keep
        kept = 0
        keeping = True
        for s in ancestors_of(ref.snapshot_id, lookup):
            reached.add(s.snapshot_id)
            if keeping and (kept < min_keep or s.timestamp_ms >= cutoff):
                retain.add(s.snapshot_id)
                kept += 1
            else:
                keeping = False
    for s in md.snapshots:
        if s.snapshot_id not in reached and s.timestamp_ms >= default_cutoff:
            retain.add(s.snapshot_id)

    removed_refs = tuple(name for name in md.refs if name not in refs)
    expired = [s.snapshot_id for s in md.snapshots if s.snapshot_id not in retain]
    for sid in explicit:
        if sid not in expired:
            expired.append(sid)
    out = md
    for name in removed_refs:
        out = remove_ref(out, name, timestamp_ms=now)
    out = remove_snapshots(out, expired, timestamp_ms=now)
    return RetentionPlan(out, tuple(expired), removed_refs)


def drop_unused_specs_and_schemas(md: TableMetadata, used_spec_ids: set[int]) -> tuple[TableMetadata, tuple[int, ...], tuple[int, ...]]:
    """``--clean-expired-metadata``: drop partition specs no retained manifest uses (never the
    default) and schemas no retained snapshot uses (never the current one)."""
    keep_specs = set(used_spec_ids) | {md.default_spec_id}
    removed_specs = tuple(s.spec_id for s in md.specs if s.spec_id not in keep_specs)
    keep_schemas = {md.current_schema_id}
    keep_schemas.update(s.schema_id for s in md.snapshots if s.schema_id is not None)
    removed_schemas = tuple(s.schema_id for s in md.schemas if s.schema_id not in keep_schemas)
    if not removed_specs and not removed_schemas:
        return md, (), ()
    out = replace(md,
                  specs=tuple(s for s in md.specs if s.spec_id not in removed_specs),
                  schemas=tuple(s for s in md.schemas if s.schema_id not in removed_schemas))
    return out, removed_specs, removed_schemas


# ------------------------------------------------------------------------------------------------
# Pending cleanup records


# ------------------------------------------------------------------------------------------------
# The result


@dataclass(frozen=True, kw_only=True)
class ExpireResult(JsonResult):
    """What an expiration did (or, with ``dry_run``, would do). Its JSON view has kebab-case
    keys as elsewhere in icectl, except the six counts, which carry the names of the
    reference's Spark procedure output (``deleted_data_files_count`` ...)."""

    location: str
    dry_run: bool
    metadata_only: bool = False  # the table's metadata names another location: nothing deleted
    expired_snapshots_count: int = derived(lambda r: len(r.expired_snapshot_ids))
    expired_snapshot_ids: tuple[int, ...]
    removed_refs: tuple[str, ...]
    deleted_counts: dict[str, int] = derived(
        lambda r: {f"deleted_{kind}_count": r.count(kind) for kind in KINDS}, flatten=True)
    # deleted (dry_run: to delete) files recorded outside the location
    deleted_outside_location: int = json_field(default=0, key="deleted-outside-location-count")
    kept_outside_location: tuple[str, ...] = ()  # no longer needed, but outside the location: kept
    # directories under the data location left empty
    removed_directories: tuple[str, ...] = json_field(default=(), key="removed-empty-directories")
    removed_spec_ids: tuple[int, ...]
    removed_schema_ids: tuple[int, ...]
    # the committed metadata file (None when nothing committed)
    metadata_location: str | None = json_field(key="metadata-file")
    resumed_cleanups: int  # pending records of earlier runs finished by this one
    manifest_lists_read: int
    manifests_read: int
    metadata_files_eligible: tuple[str, ...] = json_field(key="metadata-files-eligible-for-cleanup")
    failed: tuple[tuple[str, str], ...] = failed_deletes()  # (path, reason) of deletions that failed
    # (path, reason): left because a link leads outside
    refused: tuple[tuple[str, str], ...] = refused_deletes(default=())
    # (path, table): in another table's directory
    skipped_other_tables: tuple[tuple[str, str], ...] = skipped_in_other_tables(default=())
    # kind -> files deleted (or to delete, with dry_run); in the view with include_files
    files: dict[str, tuple[str, ...]] = json_field(omit=True)

    def count(self, kind: str) -> int:
        return len(self.files.get(kind, ()))

    @property
    def deleted_total(self) -> int:
        return sum(self.count(k) for k in KINDS)

    def to_json(self, include_files: bool | None = None) -> dict[str, Any]:
        """The fields' view, with the files by kind when ``include_files`` (default: on a dry
        run)."""
        out = super().to_json()
        if include_files if include_files is not None else self.dry_run:
            out["files"] = {kind.replace("_", "-"): list(self.files.get(kind, ())) for kind in KINDS}
        return out


def _eligible_metadata_files(io: FileIO, location: str, current: str, md: TableMetadata) -> tuple[str, ...]:
    """metadata.json files that are neither current nor in the metadata log (what
    ``write.metadata.delete-after-commit.enabled`` would have removed)."""
    from icectl.table.store import VERSION_NAME  # the one definition of version file names

    keep = {_norm(current)} | {_norm(e.metadata_file) for e in md.metadata_log}
    out = []
    for info in metadata_entries(io, location, "v"):
        if not info.is_dir and VERSION_NAME.match(info.name) and _norm(info.path) not in keep:
            out.append(info.path)
    return tuple(out)


# ------------------------------------------------------------------------------------------------
# The operation: select -> read reachability strictly -> commit -> delete files -> finish


@dataclass(frozen=True)
class _Request:
    older_than_ms: int | None
    retain_last: int | None
    snapshot_ids: tuple[int, ...]
    clean_expired_metadata: bool
    now: int


@dataclass
class _Expiry:
    """What a run expires (committed, or only planned with dry_run)."""

    plan: RetentionPlan
    expired: list[Snapshot]
    expired_stats: set[str]
    retained: TableMetadata  # the table's metadata after the run
    reach: Reachable | None  # what ``retained`` reaches, when already read
    metadata_location: str | None = None  # the committed version
    record_path: str | None = None  # this run's pending cleanup record


def _select(base: TableMetadata, req: _Request, reader: ManifestReader) -> tuple[RetentionPlan, Reachable | None]:
    """Which snapshots go; then what the retained snapshots reach, read strictly - also when
    nothing expires - so a table with a missing manifest list or manifest stops the run
    (CorruptMetadata) before any commit or deletion, as every run that finds it."""
    plan = plan_retention(base, older_than_ms=req.older_than_ms, retain_last=req.retain_last,
                          snapshot_ids=req.snapshot_ids, now=req.now)
    reach = read_reachable(reader, plan.metadata, "reading retained manifests")
    if req.clean_expired_metadata:
        md, specs, schemas = drop_unused_specs_and_schemas(plan.metadata, set(reach.spec_ids))
        plan = replace(plan, metadata=md, removed_spec_ids=specs, removed_schema_ids=schemas)
    return plan, reach


def _preview(table: Table, req: _Request, reader: ManifestReader) -> _Expiry:
    base = table.metadata
    plan, reach = _select(base, req, reader)
    expired = [s for s in (base.snapshot_by_id(i) for i in plan.expired_ids) if s is not None]
    return _Expiry(plan, expired, statistics_files(base, set(plan.expired_ids)), plan.metadata, reach)


@dataclass
class _ExpireUpdate:
    """The metadata update ``_commit`` hands to ``Table.commit``: called once per attempt on the
    then-current metadata, it selects afresh, reads what stays (strictly) and, when something
    expires and files are to be deleted, writes the pending cleanup record, all before that
    attempt commits. ``chosen`` is what the last (the committed) attempt decided."""

    table: Table
    req: _Request
    reader: ManifestReader
    record_path: str | None  # None: write no record (nothing will be deleted)
    chosen: tuple[TableMetadata, RetentionPlan, Reachable | None] | None = None

    def __call__(self, base: TableMetadata) -> TableMetadata:
        plan, reach = _select(base, self.req, self.reader)
        self.chosen = (base, plan, reach)
        if self.record_path is not None and plan.expired_ids:
            _write_record(self.table.io, self.record_path, self.table.metadata_location, base, plan.expired_ids)
        return plan.metadata


def _commit(table: Table, req: _Request, reader: ManifestReader, record: bool,
            after_commit: Callable[[], None] | None) -> _Expiry:
    """Commit the metadata without the expired snapshots (see :class:`_ExpireUpdate`)."""
    io = table.io
    record_path = join(metadata_dir(table.location), f"{PENDING_PREFIX}{uuid.uuid4()}{PENDING_SUFFIX}")
    update = _ExpireUpdate(table, req, reader, record_path if record else None)
    before = table.metadata_location
    try:
        table.commit(update)
    except BaseException:
        command_files.discard(io, [record_path])  # (kept when the commit may have landed)
        raise
    assert update.chosen is not None
    base, plan, reach = update.chosen
    committed = table.metadata_location if table.metadata_location != before else None
    recorded = record and bool(plan.expired_ids)
    if not recorded:
        command_files.discard(io, [record_path])  # an earlier attempt may have written one
    if after_commit is not None:
        after_commit()
    expected = table.metadata_location
    table.refresh()
    if table.metadata_location != expected:
        reach = None  # another writer committed since: what it retains is read afresh
    expired = [s for s in (base.snapshot_by_id(i) for i in plan.expired_ids) if s is not None]
    return _Expiry(plan, expired, statistics_files(base, set(plan.expired_ids)), table.metadata, reach,
                   committed, record_path if recorded else None)


def _deletion_set(reader: ManifestReader, expiry: _Expiry, pending: Sequence[_Pending]) -> dict[str, list[str]]:
    """Files of the expired snapshots (this run's and those of unfinished earlier runs) that the
    retained snapshots do not reach, by kind."""
    expired = list(expiry.expired)
    stats = set(expiry.expired_stats)
    seen = {s.snapshot_id for s in expired}
    for rec in pending:
        for s in rec.snapshots:
            if s.snapshot_id not in seen and expiry.retained.snapshot_by_id(s.snapshot_id) is None:
                expired.append(s)
                seen.add(s.snapshot_id)
        stats.update(rec.statistics_files)
    files: dict[str, list[str]] = {k: [] for k in KINDS}
    if not expired and not stats:
        return files
    reach = expiry.reach or read_reachable(reader, expiry.retained, "reading retained manifests")
    norm = reader.identities
    doomed = [m for p, m in reader.manifests_of(expired).items() if norm(p) not in reach.manifests]
    for path, content in reader.live_files(doomed, "reading expired manifests").items():
        if norm(path) not in reach.files:
            files[_CONTENT_KIND.get(content, "data_files")].append(path)
    for kind in _CONTENT_KINDS:
        files[kind].sort()
    files["manifest_files"] = [m.manifest_path for m in doomed]
    files["manifest_lists"] = list(dict.fromkeys(
        s.manifest_list for s in expired if s.manifest_list and _norm(s.manifest_list) not in reach.manifest_lists))
    files["statistics_files"] = sorted(p for p in stats if _norm(p) not in reach.statistics)
    return files


# Deletion order (module docs): content files, then manifests, then manifest lists.
_ORDER = (_CONTENT_KINDS, ("manifest_files",), ("manifest_lists", "statistics_files"))


def _delete(io: FileIO, files: dict[str, list[str]], boundary: TableBoundary, workers: int,
            progress: Progress | None, dry_run: bool,
            remove: Callable[..., Deletion] = delete_files) -> tuple[dict[str, tuple[str, ...]], Deletion]:
    """Delete (or with ``dry_run`` only check) the files group by group, stopping after a group
    with failures so a rerun still finds what is left. A file a link leads out of the table is
    refused and reported; a file recorded outside the location is an external one and goes
    (the caller leaves such files out unless asked to delete them)."""
    total = sum(len(v) for v in files.values())
    done: dict[str, list[str]] = {k: [] for k in KINDS}
    outcome = Deletion()
    count = 0
    for group in _ORDER:
        paths = [p for k in group for p in files[k]]
        kind_of = {p: k for k in group for p in files[k]}
        if dry_run:
            step = classify(io, paths, boundary, allow_external=True, workers=workers)
        else:
            step = remove(io, paths, boundary, allow_external=True, workers=workers,
                          progress=progress, done_before=count, total=total)
        count += len(paths)
        for p in step.deleted:
            done[kind_of[p]].append(p)
        outcome.extend(step)
        if step.failed:
            break
    return {k: tuple(v) for k, v in done.items()}, outcome


def _finish(io: FileIO, expiry: _Expiry, pending: Sequence[_Pending]) -> None:
    """Every deletion done: the pending records (this run's and the finished ones) go."""
    for rec in pending:
        if rec.path:
            io.delete_quietly(rec.path)
    if expiry.record_path is not None:
        io.delete_quietly(expiry.record_path)


def _metadata_only(table: Table, allow_location_mismatch: bool) -> bool:
    """True when the table's metadata names another location and the caller allowed that:
    only the metadata changes. Without the allowance such a table is refused."""
    problem = location_mismatch(table.location, table.metadata.location)
    if problem is None:
        return False
    if allow_location_mismatch:
        return True
    raise NeedsOverride(f"cannot expire snapshots: {problem}", "allow_location_mismatch",
                        "expire this table's metadata only, deleting no file")


def expire_snapshots(
    table: Table,
    *,
    older_than_ms: int | None = None,
    retain_last: int | None = None,
    snapshot_ids: Iterable[int] = (),
    clean_expired_metadata: bool = False,
    dry_run: bool = False,
    allow_location_mismatch: bool = False,
    delete_outside_location: bool = False,
    max_workers: int | None = None,
    progress: Progress | None = None,
    now: int | None = None,
    engine: Any = None,
    _after_commit: Callable[[], None] | None = None,
) -> ExpireResult:
    """Expire snapshots of ``table`` and delete the files only they reached (see module docs).

    With ``dry_run`` nothing is written: the result lists exactly the files a real run would
    delete now (including those of unfinished earlier runs). ``allow_location_mismatch`` lets a
    table whose metadata names another location (a copy) expire its metadata only. Files outside
    the table location are kept (``kept_outside_location``) unless ``delete_outside_location``.
    ``engine`` (an engine object or ``"spark"``; default: this process's threads): where the
    manifest reads and the deletions run (``ops/maintain/distributed.py``); the commit is made
    here either way.
    """
    from icectl.ops.maintain import distributed
    from icectl.spec.timetext import now_ms

    req = _Request(older_than_ms, retain_last, tuple(snapshot_ids), clean_expired_metadata,
                   now if now is not None else now_ms())
    metadata_only = _metadata_only(table, allow_location_mismatch)
    workers = max(1, max_workers or default_workers(table))
    io = table.io
    engine = distributed.resolve_engine(engine)
    reader = distributed.engine_reader(io, table.metadata.format_version, workers, progress, _INCOMPLETE, engine)
    pending = [] if metadata_only else _pending_records(io, table.location)
    base = table.metadata
    if dry_run:
        expiry = _preview(table, req, reader)
    else:
        expiry = _commit(table, req, reader, not metadata_only, _after_commit)
    files = {k: [] for k in KINDS} if metadata_only else _deletion_set(reader, expiry, pending)
    boundary = TableBoundary(table.location)
    kept = [] if delete_outside_location else outside_location([p for v in files.values() for p in v], boundary)
    keep = set(kept)
    files = {k: [p for p in v if p not in keep] for k, v in files.items()}
    done, outcome = _delete(io, files, boundary, workers, progress, dry_run,
                            delete_files if engine is None else distributed.engine_deleter(engine))
    removed_dirs: list[str] = []
    if not dry_run:
        removed_dirs = remove_emptied_dirs(io, [p for k in _CONTENT_KINDS for p in done.get(k, ())],
                                           data_location(table.location, table.metadata.properties))
    if not dry_run and not outcome.failed and not metadata_only:
        _finish(io, expiry, pending)
    eligible = _eligible_metadata_files(io, table.location, table.metadata_location,
                                        base if dry_run else expiry.retained)
    plan = expiry.plan
    return ExpireResult(
        location=table.location,
        dry_run=dry_run,
        expired_snapshot_ids=tuple(plan.expired_ids),
        removed_refs=tuple(plan.removed_refs),
        removed_spec_ids=tuple(plan.removed_spec_ids),
        removed_schema_ids=tuple(plan.removed_schema_ids),
        files=done,
        failed=tuple(outcome.failed),
        metadata_location=expiry.metadata_location,
        resumed_cleanups=len(pending),
        manifest_lists_read=reader.lists_read,
        manifests_read=reader.manifests_read,
        metadata_files_eligible=eligible,
        refused=tuple(outcome.refused),
        deleted_outside_location=outcome.outside,
        metadata_only=metadata_only,
        kept_outside_location=tuple(kept),
        removed_directories=tuple(removed_dirs),
        skipped_other_tables=tuple(outcome.skipped),
    )
