"""Write-audit-publish: staging writes under a WAP id, and publishing them (Spark's
``spark.wap.id`` and ``publish_changes``). The rules are :mod:`icectl.spec.wap`.

* :func:`stage_writes` - the data snapshots committed through a table handle from now on are
  staged under a WAP id: added with ``wap.id`` in their summary, parented on the branch head,
  with no branch moved (refused unless the table property ``write.wap.enabled`` is true);
* :func:`publish_changes` - the first snapshot of the table (in metadata order, as the
  reference searches) staged with the WAP id is cherry-picked onto main
  (:mod:`icectl.ops.metadata.cherry_pick`): main fast-forwards to it when its parent is still
  main's head, else a new snapshot with ``published-wap-id`` and ``source-snapshot-id`` is
  committed. A WAP id main's history already has is refused
  (:class:`~icectl.errors.DuplicateWapCommit`); an unknown one is :class:`~icectl.errors.NotFound`.
"""

from __future__ import annotations

from dataclasses import dataclass

from icectl.errors import NotFound
from icectl.spec.result_json import JsonResult, json_field
from icectl.spec.wap import check_can_stage, staged_wap_id
from icectl.table.table import Table

__all__ = ["stage_writes", "publish_changes", "PublishResult"]


def stage_writes(table: Table, wap_id: str) -> Table:
    """Stage the data writes made through ``table`` under ``wap_id`` (checked now, before
    anything is written, and again at every commit attempt)."""
    check_can_stage(table.metadata, wap_id)
    table.wap_id = wap_id
    return table


@dataclass(frozen=True, kw_only=True)
class PublishResult(JsonResult):
    """What publishing a WAP id did (Spark's publish_changes returns the first two ids)."""

    location: str
    wap_id: str
    source_snapshot_id: int  # the staged snapshot
    snapshot_id: int  # main's head after the publish (the staged one itself after a fast-forward)
    previous_snapshot_id: int | None  # main's head before
    created_snapshot: bool  # a cherry-pick committed a new snapshot (False: fast-forward)
    metadata_location: str = json_field(key="metadata-file")


def publish_changes(table: Table, wap_id: str) -> PublishResult:
    """Publish the snapshot staged with ``wap_id`` to main (module docs)."""
    from icectl.ops.metadata.cherry_pick import cherry_pick

    md = table.metadata
    staged = next((s for s in md.snapshots if wap_id and staged_wap_id(s) == wap_id), None)
    if staged is None:
        raise NotFound(f"no snapshot of table {md.location} is staged with WAP id {wap_id!r}",
                       argument="wap_id")
    before, created = cherry_pick(table, staged.snapshot_id)
    head = table.metadata.current_snapshot_id
    return PublishResult(location=table.location, wap_id=wap_id, source_snapshot_id=staged.snapshot_id,
                         snapshot_id=head if head is not None else staged.snapshot_id,
                         previous_snapshot_id=before.snapshot_id if before is not None else None,
                         created_snapshot=created is not None,
                         metadata_location=table.metadata_location)
