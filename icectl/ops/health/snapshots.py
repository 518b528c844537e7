"""The snapshots-and-metadata dimension: history kept, refs, the metadata file, and what the
expiry policy would free.

The snapshots the expiry policy would expire are those ``icectl expire`` with its defaults
expires (:func:`icectl.ops.maintain.expire.plan_retention`: ``history.expire.*`` and each ref's
own retention). The bytes they alone hold are those of the data and delete files live in a
manifest reachable from an expired snapshot and in none reachable from a kept one, plus the
manifests only expired snapshots list (manifest lists are not counted: their sizes are not
recorded anywhere). ``all-files`` and ``all-files-bytes`` count as Spark's ``all_files`` table
does: the live entries of every manifest reachable from any snapshot, each manifest once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from icectl.errors import ValidationError
from icectl.io.manifest.manifest_list import load_manifest_list
from icectl.ops.health.collect import Progress, TableFacts, decode_manifests
from icectl.ops.health import fixes
from icectl.ops.health.model import DUE, WARN, Dimension, Effect, Verdict
from icectl.ops.health.policy import Policy
from icectl.ops.health.timeline import snapshot_timeline
from icectl.spec.manifests import DELETED, ManifestFile

if TYPE_CHECKING:
    from icectl.io.storage.files import FileIO

__all__ = ["snapshots_dimension"]


def _manifests_by_snapshot(io: FileIO, facts: TableFacts) -> dict[int, list[ManifestFile]]:
    from icectl.table.commit.snapshot_manifests import read_manifests

    md = facts.md
    out: dict[int, list[ManifestFile]] = {}
    lists: dict[str, list[ManifestFile]] = {}
    for s in md.snapshots:
        if s.manifest_list:
            got = lists.get(s.manifest_list)
            if got is None:
                got = lists[s.manifest_list] = load_manifest_list(io, s.manifest_list, md.format_version,
                                                                 cached=True)
            out[s.snapshot_id] = got
        else:
            out[s.snapshot_id] = read_manifests(io, md, s)
    return out


def _live_files(io: FileIO, manifests: dict[str, ManifestFile], workers: int | None,
                progress: Progress | None) -> tuple[dict[str, list[tuple[str, int]]], int, int]:
    """Per manifest path its live (file path, size); and all_files' count and bytes."""
    ms = list(manifests.values())
    decoded = decode_manifests(io, ms, frozenset(), workers, None, [0], len(ms))
    out: dict[str, list[tuple[str, int]]] = {}
    count = total = 0
    for done, (m, mc) in enumerate(decoded, 1):
        files = [(path, size) for path, size, status in zip(mc.file_path, mc.file_size_in_bytes, mc.status)
                 if status != DELETED]
        out[m.manifest_path] = files
        count += len(files)
        total += sum(size for _, size in files)
        if progress is not None:
            progress("reading all snapshots' manifests", done, len(ms))
    return out, count, total


def _held_by(expired: set[int], by_snapshot: dict[int, list[ManifestFile]],
             live: dict[str, list[tuple[str, int]]]) -> tuple[dict[str, int], set[str]]:
    """(files with their sizes, manifests) that only the ``expired`` snapshots reach."""
    kept_manifests = {m.manifest_path for sid, ms in by_snapshot.items() if sid not in expired for m in ms}
    gone = {m.manifest_path for sid in expired for m in by_snapshot.get(sid, ())
            if m.manifest_path not in kept_manifests}
    kept_files = {p for mp in kept_manifests for p, _ in live.get(mp, ())}
    freed = {p: size for mp in gone for p, size in live.get(mp, ()) if p not in kept_files}
    return freed, gone


def _expirable(facts: TableFacts, now: int) -> tuple[tuple[int, ...], tuple[str, ...]] | None:
    from icectl.ops.maintain.expire import plan_retention

    try:
        plan = plan_retention(facts.md, now=now)
    except ValidationError:  # gc.enabled=false: nothing may be expired
        return None
    return plan.expired_ids, plan.removed_refs


def snapshots_dimension(io: FileIO, facts: TableFacts, policy: Policy, location: str, metadata_file: str | None,
                        now: int, workers: int | None = None, progress: Progress | None = None) -> Dimension:
    md = facts.md
    snaps = sorted(md.snapshots, key=lambda s: (s.timestamp_ms, s.sequence_number))
    by_snapshot = _manifests_by_snapshot(io, facts)
    every = {m.manifest_path: m for ms in by_snapshot.values() for m in ms}
    live, all_files, all_bytes = _live_files(io, every, workers, progress)
    expiry = _expirable(facts, now)
    expired_ids, removed_refs = expiry if expiry is not None else ((), ())
    freed_files, gone_manifests = _held_by(set(expired_ids), by_snapshot, live)
    freed_manifest_bytes = sum(every[p].manifest_length for p in gone_manifests)
    distinct_files: dict[str, int] = {}
    for mp in every:
        for p, size in live.get(mp, ()):
            distinct_files[p] = size
    metadata_bytes = None
    if metadata_file is not None:
        try:
            metadata_bytes = io.info(metadata_file).size
        except Exception:  # noqa: BLE001 - a size unknown is shown as unknown, never fatal
            metadata_bytes = None
    branches = [n for n, r in md.refs.items() if r.is_branch]
    figures: dict[str, Any] = {
        "snapshots": len(snaps),
        "oldest-snapshot-ms": snaps[0].timestamp_ms if snaps else None,
        "newest-snapshot-ms": snaps[-1].timestamp_ms if snaps else None,
        "oldest-snapshot-age-ms": now - snaps[0].timestamp_ms if snaps else None,
        "refs": len(md.refs),
        "branches": len(branches),
        "tags": len(md.refs) - len(branches),
        "snapshot-log-entries": len(md.snapshot_log),
        "metadata-log-entries": len(md.metadata_log),
        "metadata-file-bytes": metadata_bytes,
        "schemas": len(md.schemas),
        "partition-specs": len(md.specs),
        "gc-enabled": expiry is not None,
        "expirable-snapshots": len(expired_ids),
        "expirable-refs": len(removed_refs),
        "bytes-held-by-expirable-snapshots": sum(freed_files.values()) + freed_manifest_bytes,
        "files-held-by-expirable-snapshots": len(freed_files),
        "file-bytes-held-by-expirable-snapshots": sum(freed_files.values()),
        "manifest-bytes-held-by-expirable-snapshots": freed_manifest_bytes,
        "manifests-held-by-expirable-snapshots": len(gone_manifests),
        "all-manifests": len(every),
        "all-files": all_files,
        "all-files-bytes": all_bytes,
        "reachable-files": len(distinct_files),
        "reachable-file-bytes": sum(distinct_files.values()),
    }
    verdicts = []
    if len(expired_ids) > policy["max-expirable-snapshots"]:
        freed = figures["bytes-held-by-expirable-snapshots"]
        verdicts.append(Verdict(
            "snapshots", "expirable-snapshots", DUE,
            f"{len(expired_ids)} of {len(snaps)} snapshots are older than the expiry policy "
            f"(history.expire.max-snapshot-age-ms {policy['max-snapshot-age']} ms, keeping at least "
            f"{policy['min-snapshots-to-keep']}); they alone hold {len(freed_files)} file(s) and "
            f"{len(gone_manifests)} manifest(s), {freed} bytes",
            "max-expirable-snapshots", fixes.expire(location),
            (Effect("snapshots", "snapshots", len(snaps), len(snaps) - len(expired_ids)),
             Effect("bytes-held-by-expirable-snapshots", "bytes", freed, 0),
             Effect("reachable-file-bytes", "bytes", figures["reachable-file-bytes"],
                    figures["reachable-file-bytes"] - sum(freed_files.values())))))
    if metadata_bytes is not None and metadata_bytes > policy["max-metadata-file-bytes"]:
        verdicts.append(Verdict(
            "snapshots", "large-metadata-file", WARN,
            f"the metadata file is {metadata_bytes} bytes ({len(snaps)} snapshots, "
            f"{len(md.schemas)} schemas, {len(md.specs)} specs); every commit rewrites it",
            "max-metadata-file-bytes", fixes.expire_with_metadata(location),
            (Effect("snapshots", "snapshots", len(snaps), len(snaps) - len(expired_ids)),)))
    return Dimension("snapshots", {**figures, "timeline": snapshot_timeline(md)}, tuple(verdicts))
