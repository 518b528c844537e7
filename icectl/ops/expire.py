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

import json
import os
import posixpath
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Sequence

from icectl.errors import CorruptMetadata, IcectlError, NotFound, ValidationError
from icectl.io import avro
from icectl.io.files import FileIO, is_local, join, local_path
from icectl.spec.manifests import DATA, DELETED, EQUALITY_DELETES, POSITION_DELETES, ManifestFile
from icectl.spec.metadata import TableMetadata, remove_ref, remove_snapshots
from icectl.spec.snapshots import MAIN_BRANCH, Snapshot, SnapshotRef, ancestors_of, statistics_path
from icectl.table.store import metadata_dir
from icectl.table.table import Table

__all__ = [
    "ExpireResult", "RetentionPlan", "plan_retention", "expire_snapshots", "Progress",
    "GC_ENABLED", "MAX_SNAPSHOT_AGE_MS", "MIN_SNAPSHOTS_TO_KEEP", "MAX_REF_AGE_MS",
    "PENDING_PREFIX", "default_workers",
]

GC_ENABLED = "gc.enabled"
MAX_SNAPSHOT_AGE_MS = "history.expire.max-snapshot-age-ms"
MAX_SNAPSHOT_AGE_MS_DEFAULT = 5 * 24 * 3600 * 1000
MIN_SNAPSHOTS_TO_KEEP = "history.expire.min-snapshots-to-keep"
MIN_SNAPSHOTS_TO_KEEP_DEFAULT = 1
MAX_REF_AGE_MS = "history.expire.max-ref-age-ms"
MAX_REF_AGE_MS_DEFAULT = 2**63 - 1

PENDING_PREFIX = ".icectl-expire-"
PENDING_SUFFIX = ".json"

# progress(phase, done, total); phases: "reading manifests", "deleting files"
Progress = Callable[[str, int, int], None]

# kinds of deleted files, keyed as the reference's Spark procedure reports them
KINDS = ("data_files", "position_delete_files", "equality_delete_files", "manifest_files",
         "manifest_lists", "statistics_files")
_CONTENT_KIND = {DATA: "data_files", POSITION_DELETES: "position_delete_files",
                 EQUALITY_DELETES: "equality_delete_files"}


def default_workers() -> int:
    return min(32, 4 * (os.cpu_count() or 1))


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
    if not md.property_as_bool(GC_ENABLED, True):
        raise ValidationError("cannot expire snapshots: GC is disabled (gc.enabled=false); "
                              "deleting files may corrupt other tables")
    if retain_last is not None and retain_last < 1:
        raise ValidationError(f"number of snapshots to retain must be at least 1, not {retain_last}")
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
# Which files go


@dataclass
class _Reader:
    """Reads manifest lists and manifests at most once each, in parallel."""

    io: FileIO
    format_version: int
    workers: int
    progress: Progress | None = None
    lists_read: int = 0
    manifests_read: int = 0
    _lists: dict[str, list[ManifestFile] | None] = field(default_factory=dict)

    def manifests_of(self, snapshots: Sequence[Snapshot], strict: bool = False) -> dict[str, ManifestFile]:
        """Manifests (by path) the snapshots list. Missing manifest lists are skipped (an earlier,
        interrupted run may have deleted an expired snapshot's), unless ``strict``: what retained
        snapshots reach must be known whole, or live files could be taken for unreachable."""
        todo = [s.manifest_list for s in snapshots if s.manifest_list and s.manifest_list not in self._lists]
        todo = list(dict.fromkeys(todo))

        def load(path: str) -> tuple[str, list[ManifestFile] | None]:
            try:
                return path, avro.load_manifest_list(self.io, path, self.format_version)
            except NotFound:
                return path, None

        for path, got in self._map(load, todo, "reading manifest lists"):
            self._lists[path] = got
            self.lists_read += 1
        out: dict[str, ManifestFile] = {}
        for s in snapshots:
            if strict and s.manifest_list and self._lists.get(s.manifest_list) is None:
                raise CorruptMetadata(
                    f"manifest list {s.manifest_list} of retained snapshot {s.snapshot_id} is missing; "
                    "nothing is deleted while the table's metadata is incomplete")
            if s.manifest_list:
                for m in self._lists.get(s.manifest_list) or ():
                    out.setdefault(m.manifest_path, m)
            elif s.manifests:  # v1 inline manifests: only the path matters here
                for p in s.manifests:
                    out.setdefault(p, ManifestFile(manifest_path=p, manifest_length=0, partition_spec_id=0,
                                                   added_snapshot_id=s.snapshot_id))
        return out

    def live_files(self, manifests: Iterable[ManifestFile], phase: str,
                   strict: bool = False) -> dict[str, int] | None:
        """Live (added or existing) file paths -> content, across the manifests; missing
        manifests are skipped, unless ``strict`` (see :meth:`manifests_of`)."""
        def load(m: ManifestFile) -> list[tuple[str, int]]:
            try:
                data = self.io.read(m.manifest_path)
            except NotFound:
                if strict:
                    raise CorruptMetadata(
                        f"manifest {m.manifest_path} of a retained snapshot is missing; nothing is "
                        "deleted while the table's metadata is incomplete") from None
                return []
            entries = avro.read_manifest(data, include_stats=False)
            return [(e.data_file.file_path, e.data_file.content) for e in entries if e.status != DELETED]

        out: dict[str, int] = {}
        for files in self._map(load, list(manifests), phase):
            self.manifests_read += 1
            for path, content in files:
                out.setdefault(path, content)
        return out

    def _map(self, fn: Callable[[Any], Any], items: list, phase: str) -> Iterable[Any]:
        total = len(items)
        if not total:
            return
        done = 0
        if self.workers <= 1 or total == 1:
            for item in items:
                yield fn(item)
                done += 1
                self._report(phase, done, total)
            return
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            for result in pool.map(fn, items):
                yield result
                done += 1
                self._report(phase, done, total)

    def _report(self, phase: str, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress(phase, done, total)


def _statistics_files(md: TableMetadata, snapshot_ids: set[int] | None = None) -> set[str]:
    out: set[str] = set()
    for entry in tuple(md.statistics) + tuple(md.partition_statistics):
        sid = entry.get("snapshot-id")
        if snapshot_ids is not None and sid not in snapshot_ids:
            continue
        p = statistics_path(entry)
        if p is not None:
            out.add(p)
    return out


@dataclass(frozen=True)
class _Pending:
    """A pending cleanup record (see the module docs)."""

    path: str | None
    snapshots: tuple[Snapshot, ...]
    statistics_files: tuple[str, ...]

    def to_json(self, base_metadata: str) -> dict[str, Any]:
        return {
            "icectl-pending-expire": 1,
            "base-metadata-file": base_metadata,
            "expired-snapshots": [s.to_json() for s in self.snapshots],
            "statistics-files": list(self.statistics_files),
        }

    @classmethod
    def from_json(cls, path: str, obj: Any) -> "_Pending":
        if not isinstance(obj, dict) or obj.get("icectl-pending-expire") != 1:
            raise CorruptMetadata(f"{path} is not an icectl pending-expire record")
        try:
            snaps = tuple(Snapshot.from_json(s) for s in obj.get("expired-snapshots") or [])
            stats = tuple(str(p) for p in obj.get("statistics-files") or [])
        except (CorruptMetadata, TypeError, ValueError) as e:
            raise CorruptMetadata(f"cannot read pending-expire record {path}: {e}") from None
        return cls(path, snaps, stats)


def _pending_records(io: FileIO, location: str) -> list[_Pending]:
    out = []
    for info in io.list_dir(metadata_dir(location)):
        if info.is_dir or not (info.name.startswith(PENDING_PREFIX) and info.name.endswith(PENDING_SUFFIX)):
            continue
        try:
            obj = json.loads(io.read(info.path).decode("utf-8"))
        except NotFound:
            continue
        except (UnicodeDecodeError, json.JSONDecodeError):
            # a record cut short while being written: the commit after it never happened
            io.delete_quietly(info.path)
            continue
        out.append(_Pending.from_json(info.path, obj))
    return out


# ------------------------------------------------------------------------------------------------
# The operation


@dataclass(frozen=True)
class ExpireResult:
    location: str
    dry_run: bool
    expired_snapshot_ids: tuple[int, ...]
    removed_refs: tuple[str, ...]
    removed_spec_ids: tuple[int, ...]
    removed_schema_ids: tuple[int, ...]
    files: dict[str, tuple[str, ...]]  # kind -> files deleted (or to delete, with dry_run)
    failed: tuple[tuple[str, str], ...]  # (path, reason) of deletions that failed
    metadata_location: str | None  # the committed metadata file (None when nothing committed)
    resumed_cleanups: int  # pending records of earlier runs finished by this one
    manifest_lists_read: int
    manifests_read: int
    metadata_files_eligible: tuple[str, ...]

    def count(self, kind: str) -> int:
        return len(self.files.get(kind, ()))

    @property
    def deleted_total(self) -> int:
        return sum(self.count(k) for k in KINDS)

    def to_json(self, include_files: bool | None = None) -> dict[str, Any]:
        """Kebab-case keys as elsewhere in icectl, except the six counts, which carry the names
        of the reference's Spark procedure output (``deleted_data_files_count`` ...)."""
        out: dict[str, Any] = {
            "location": self.location,
            "dry-run": self.dry_run,
            "expired-snapshots-count": len(self.expired_snapshot_ids),
            "expired-snapshot-ids": list(self.expired_snapshot_ids),
            "removed-refs": list(self.removed_refs),
        }
        for kind in KINDS:
            out[f"deleted_{kind}_count"] = self.count(kind)
        out.update({
            "removed-spec-ids": list(self.removed_spec_ids),
            "removed-schema-ids": list(self.removed_schema_ids),
            "metadata-file": self.metadata_location,
            "resumed-cleanups": self.resumed_cleanups,
            "manifest-lists-read": self.manifest_lists_read,
            "manifests-read": self.manifests_read,
            "metadata-files-eligible-for-cleanup": list(self.metadata_files_eligible),
            "failed-deletes": [{"path": p, "error": e} for p, e in self.failed],
        })
        if include_files if include_files is not None else self.dry_run:
            out["files"] = {kind.replace("_", "-"): list(self.files.get(kind, ())) for kind in KINDS}
        return out


def _eligible_metadata_files(io: FileIO, location: str, current: str, md: TableMetadata) -> tuple[str, ...]:
    """metadata.json files that are neither current nor in the metadata log (what
    ``write.metadata.delete-after-commit.enabled`` would have removed)."""
    from icectl.table.store import _VERSION_NAME  # the one definition of version file names

    keep = {_norm(current)} | {_norm(e.metadata_file) for e in md.metadata_log}
    out = []
    for info in io.list_dir(metadata_dir(location)):
        if not info.is_dir and _VERSION_NAME.match(info.name) and _norm(info.path) not in keep:
            out.append(info.path)
    return tuple(out)


def _norm(path: str) -> str:
    from icectl.ops.orphans import normalize_path

    return normalize_path(path)


def _compute_deletions(
    reader: _Reader,
    expired: Sequence[Snapshot],
    expired_stats: set[str],
    retained_md: TableMetadata,
) -> dict[str, list[str]]:
    """Files of the expired snapshots that the retained snapshots do not reach, by kind."""
    expired_manifests = reader.manifests_of(expired)
    retained_manifests = reader.manifests_of(retained_md.snapshots, strict=True)
    retained_paths = {_norm(p) for p in retained_manifests}
    doomed_manifests = [m for p, m in expired_manifests.items() if _norm(p) not in retained_paths]

    candidates = reader.live_files(doomed_manifests, "reading expired manifests") or {}
    files: dict[str, list[str]] = {k: [] for k in KINDS}
    if candidates:
        # Files still live in a manifest that stays need no reading: their manifest does.
        keep = reader.live_files(retained_manifests.values(), "reading retained manifests", strict=True) or {}
        keep_norm = {_norm(p) for p in keep}
        for path, content in candidates.items():
            if _norm(path) not in keep_norm:
                files[_CONTENT_KIND.get(content, "data_files")].append(path)
    files["manifest_files"] = [m.manifest_path for m in doomed_manifests]
    retained_lists = {_norm(s.manifest_list) for s in retained_md.snapshots if s.manifest_list}
    files["manifest_lists"] = list(dict.fromkeys(
        s.manifest_list for s in expired if s.manifest_list and _norm(s.manifest_list) not in retained_lists))
    retained_stats = {_norm(p) for p in _statistics_files(retained_md)}
    files["statistics_files"] = sorted(p for p in expired_stats if _norm(p) not in retained_stats)
    for kind in ("data_files", "position_delete_files", "equality_delete_files"):
        files[kind].sort()
    return files


def delete_file(io: FileIO, path: str) -> None:
    """Delete a table file; on local disks also its Hadoop checksum sidecar ``.<name>.crc``,
    as Hadoop's local filesystem (the reference's FileIO there) does."""
    io.delete(path, missing_ok=True)
    if is_local(path):
        d, name = posixpath.split(path)
        sidecar = posixpath.join(d, f".{name}.crc")
        if os.path.exists(local_path(sidecar)):
            io.delete_quietly(sidecar)


def _delete_all(io: FileIO, paths: Sequence[str], workers: int, progress: Progress | None,
                done_before: int, total: int) -> tuple[list[str], list[tuple[str, str]]]:
    deleted: list[str] = []
    failed: list[tuple[str, str]] = []

    def one(path: str) -> tuple[str, str | None]:
        try:
            delete_file(io, path)
            return path, None
        except IcectlError as e:
            return path, str(e)

    done = done_before
    if not paths:
        return deleted, failed
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for path, error in pool.map(one, paths):
            done += 1
            if error is None:
                deleted.append(path)
            else:
                failed.append((path, error))
            if progress is not None:
                progress("deleting files", done, total)
    return deleted, failed


def expire_snapshots(
    table: Table,
    *,
    older_than_ms: int | None = None,
    retain_last: int | None = None,
    snapshot_ids: Iterable[int] = (),
    clean_expired_metadata: bool = False,
    dry_run: bool = False,
    max_workers: int | None = None,
    progress: Progress | None = None,
    now: int | None = None,
    _after_commit: Callable[[], None] | None = None,
) -> ExpireResult:
    """Expire snapshots of ``table`` and delete the files only they reached (see module docs).

    With ``dry_run`` nothing is written: the result lists exactly the files a real run would
    delete now (including those of unfinished earlier runs).
    """
    from icectl.ops.timeargs import now_ms

    now = now if now is not None else now_ms()
    workers = max(1, max_workers or default_workers())
    io = table.io
    snapshot_ids = list(snapshot_ids)
    pending = _pending_records(io, table.location)
    reader = _Reader(io, table.metadata.format_version, workers, progress)

    plan_holder: dict[str, RetentionPlan] = {}

    def update(base: TableMetadata) -> TableMetadata:
        plan = plan_retention(base, older_than_ms=older_than_ms, retain_last=retain_last,
                              snapshot_ids=snapshot_ids, now=now)
        if clean_expired_metadata:
            used: set[int] = set()
            for m in reader.manifests_of(plan.metadata.snapshots, strict=True).values():
                used.add(m.partition_spec_id)
            new_md, specs, schemas = drop_unused_specs_and_schemas(plan.metadata, used)
            plan = replace(plan, metadata=new_md, removed_spec_ids=specs, removed_schema_ids=schemas)
        plan_holder["plan"] = plan
        return plan.metadata

    base = table.metadata
    committed: str | None = None
    record_path: str | None = None
    if dry_run:
        update(base)
        plan = plan_holder["plan"]
        expired_snaps = [base.snapshot_by_id(i) for i in plan.expired_ids]
        expired_stats = _statistics_files(base, set(plan.expired_ids))
        retained_md = plan.metadata
    else:
        plan = None
        # Record the cleanup before committing, so a crash after the commit leaves a trace.
        preview = plan_retention(base, older_than_ms=older_than_ms, retain_last=retain_last,
                                 snapshot_ids=snapshot_ids, now=now)
        if preview.expired_ids or preview.removed_refs or clean_expired_metadata:
            record_path = join(metadata_dir(table.location), f"{PENDING_PREFIX}{uuid.uuid4()}{PENDING_SUFFIX}")

            def write_record(md: TableMetadata, ids: Sequence[int]) -> None:
                snaps = tuple(md.snapshot_by_id(i) for i in ids if md.snapshot_by_id(i) is not None)
                rec = _Pending(record_path, snaps, tuple(sorted(_statistics_files(md, set(ids)))))
                data = json.dumps(rec.to_json(table.metadata_location), indent=1).encode("utf-8")
                io.delete(record_path)
                io.write_exclusive(record_path, data, durable=True)

            def update_and_record(b: TableMetadata) -> TableMetadata:
                new = update(b)
                p = plan_holder["plan"]
                if p.expired_ids:
                    write_record(b, p.expired_ids)
                return new

            before = table.metadata_location
            try:
                table.commit(update_and_record)
            except BaseException:
                io.delete_quietly(record_path)
                raise
            plan = plan_holder.get("plan")
            if table.metadata_location != before:
                committed = table.metadata_location
            if plan is None or not plan.expired_ids:
                io.delete_quietly(record_path)
                record_path = None
            if _after_commit is not None:
                _after_commit()
        if plan is None:
            plan = RetentionPlan(table.metadata, (), ())
        # The record (written against the winning base) names exactly what was expired.
        expired_snaps = []
        expired_stats = set()
        if record_path is not None:
            rec = _Pending.from_json(record_path, json.loads(io.read(record_path).decode("utf-8")))
            expired_snaps = list(rec.snapshots)
            expired_stats = set(rec.statistics_files)
        table.refresh()
        retained_md = table.metadata

    all_expired = list(expired_snaps)
    seen = {s.snapshot_id for s in all_expired}
    for rec in pending:
        for s in rec.snapshots:
            if s.snapshot_id not in seen and retained_md.snapshot_by_id(s.snapshot_id) is None:
                all_expired.append(s)
                seen.add(s.snapshot_id)
        expired_stats.update(rec.statistics_files)

    files = _compute_deletions(reader, all_expired, expired_stats, retained_md) if all_expired or expired_stats \
        else {k: [] for k in KINDS}
    eligible = _eligible_metadata_files(io, table.location, table.metadata_location, retained_md) \
        if not dry_run else _eligible_metadata_files(io, table.location, table.metadata_location, base)

    failed: list[tuple[str, str]] = []
    if dry_run:
        done = {k: tuple(v) for k, v in files.items()}
    else:
        total = sum(len(v) for v in files.values())
        done_map: dict[str, list[str]] = {k: [] for k in KINDS}
        count = 0
        # Order matters for a rerun after a crash (module docs): content, manifests, lists.
        for group in (("data_files", "position_delete_files", "equality_delete_files"),
                      ("manifest_files",), ("manifest_lists", "statistics_files")):
            paths = [p for k in group for p in files[k]]
            kinds = {p: k for k in group for p in files[k]}
            deleted, errs = _delete_all(io, paths, workers, progress, count, total)
            count += len(paths)
            for p in deleted:
                done_map[kinds[p]].append(p)
            failed.extend(errs)
            if errs:
                break  # keep what the rest needs for a rerun
        done = {k: tuple(v) for k, v in done_map.items()}
        if not failed:
            for rec in pending:
                if rec.path:
                    io.delete_quietly(rec.path)
            if record_path is not None:
                io.delete_quietly(record_path)

    return ExpireResult(
        location=table.location,
        dry_run=dry_run,
        expired_snapshot_ids=tuple(plan.expired_ids),
        removed_refs=tuple(plan.removed_refs),
        removed_spec_ids=tuple(plan.removed_spec_ids),
        removed_schema_ids=tuple(plan.removed_schema_ids),
        files=done,
        failed=tuple(failed),
        metadata_location=committed,
        resumed_cleanups=len(pending),
        manifest_lists_read=reader.lists_read,
        manifests_read=reader.manifests_read,
        metadata_files_eligible=eligible,
    )
