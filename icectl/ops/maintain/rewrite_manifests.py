"""``rewrite_manifests(table, ...)``: cluster the branch head's manifest entries by partition
into manifests of the target size, committed as one ``replace`` snapshot (Spark's
``rewrite_manifests`` procedure). No data or delete file changes; only manifests are replaced.
See :mod:`icectl.table.commit.manifest_rewrite` for the rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from icectl.spec.manifests import content_name
from icectl.spec.result_json import JsonResult, derived, json_field
from icectl.spec.snapshots import MAIN_BRANCH
from icectl.table.branches import branch_to_commit
from icectl.table.commit.manifest_rewrite import RewriteManifestsProducer, manifest_target_size

if TYPE_CHECKING:
    from icectl.table.table import Table
    from icectl.spec.manifests import ManifestFile

__all__ = ["RewriteManifestsResult", "rewrite_manifests"]


@dataclass(frozen=True, kw_only=True)
class RewriteManifestsResult(JsonResult):
    """What a manifest rewrite did (or, with ``dry_run``, would do)."""

    committed: bool
    dry_run: bool
    location: str
    branch: str
    spec_id: int
    target_size: int = json_field(key="target-size-bytes")
    snapshot_id: int | None = None
    parent_snapshot_id: int | None = None
    sequence_number: int | None = None
    rewritten_manifests_count: int = derived(lambda r: len(r.rewritten_manifests))
    added_manifests_count: int = derived(lambda r: len(r.added_manifests))
    kept_manifests: int = json_field(key="kept-manifests-count")
    entries_processed: int = json_field(default=0, key="entries-rewritten")
    rewritten_manifests: tuple[dict[str, Any], ...]
    added_manifests: tuple[dict[str, Any], ...] = ()
    metadata_location: str | None = json_field(default=None, key="metadata-file")
    summary: Mapping[str, str] = field(default_factory=dict)


def _manifest_view(m: ManifestFile) -> dict[str, Any]:
    return {
        "path": m.manifest_path,
        "length": m.manifest_length,
        "content": content_name(m.content),
        "partition-spec-id": m.partition_spec_id,
        "files": (m.added_files_count or 0) + (m.existing_files_count or 0),
    }


def rewrite_manifests(table: Table, *, spec_id: int | None = None, target_size: int | None = None,
                      branch: str = MAIN_BRANCH, dry_run: bool = False,
                      summary_properties: Mapping[str, str] | None = None,
                      engine: Any = None) -> RewriteManifestsResult:
    """Rewrite the manifests of ``branch``'s head written for ``spec_id`` (default: the table's
    default spec) into manifests of ``target_size`` bytes (default
    ``commit.manifest.target-size-bytes``), clustered by partition. Nothing to rewrite (no
    snapshot, no manifest of that spec, or one manifest that already fits) commits nothing.

    ``engine`` (an engine object or ``"spark"``; default: this process): the entries of the
    manifests to rewrite are read in its tasks; clustering them and writing the new manifests
    stay with the commit, here (``ops/maintain/distributed.py``)."""
    from icectl.ops.maintain import distributed

    engine = distributed.resolve_engine(engine)
    loader = None if engine is None else distributed.engine_entry_loader(engine, table.io)
    producer = RewriteManifestsProducer(table, spec_id=spec_id, target_size=target_size, branch=branch,
                                        summary_properties=summary_properties, entry_loader=loader)
    md = table.metadata
    target = target_size or manifest_target_size(md)
    _, ref = branch_to_commit(md, branch, may_start=True)
    parent = md.snapshot_by_id(ref.snapshot_id) if ref is not None else None
    plan = producer.make_plan(md, parent)
    common = dict(location=table.location, branch=branch, spec_id=producer.spec_id, target_size=target,
                  rewritten_manifests=tuple(_manifest_view(m) for m in plan.rewritten),
                  kept_manifests=len(plan.kept))
    if plan.is_noop or dry_run:
        return RewriteManifestsResult(committed=False, dry_run=dry_run, **common)
    produced = producer.commit()
    final = producer.plan or plan
    snap = produced.snapshot
    return RewriteManifestsResult(
        location=table.location, branch=branch, spec_id=producer.spec_id, target_size=target,
        committed=True, dry_run=False,
        rewritten_manifests=tuple(_manifest_view(m) for m in final.rewritten),
        kept_manifests=len(final.kept),
        added_manifests=tuple(_manifest_view(m) for m in producer.created),
        entries_processed=producer.entries_processed,
        snapshot_id=snap.snapshot_id, parent_snapshot_id=snap.parent_snapshot_id,
        sequence_number=snap.sequence_number, metadata_location=produced.metadata_location,
        summary=dict(snap.summary),
    )


