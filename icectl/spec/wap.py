"""Write-audit-publish (WAP): the summary keys and the rules, as the reference has them.

A write made with a WAP id is *staged*: its snapshot is added to the table with ``wap.id`` in
its summary, but no branch is moved to it (the reference's ``stageOnly``; Spark does this when
the session sets ``spark.wap.id`` and the table property ``write.wap.enabled`` is true). The
snapshot can be read by its id and audited; publishing it cherry-picks it onto ``main``
(Spark's ``publish_changes``). A snapshot made by cherry-picking another records
``source-snapshot-id`` and, when the picked one was staged, ``published-wap-id``.

A WAP id counts as published once ``main``'s head or one of its ancestors carries it, staged
(``wap.id``: a staged snapshot fast-forwarded to) or published (``published-wap-id``); the
reference refuses to publish it again (its ``DuplicateWAPCommitException``, icectl's
:class:`~icectl.errors.DuplicateWapCommit`).

Pure: no I/O.
"""

from __future__ import annotations

from icectl.errors import DuplicateWapCommit, InvalidInput, ValidationError
from icectl.spec.metadata import TableMetadata
from icectl.spec.snapshots import Snapshot, ancestor_ids, ancestors_of

__all__ = [
    "STAGED_WAP_ID", "PUBLISHED_WAP_ID", "SOURCE_SNAPSHOT_ID", "REPLACE_PARTITIONS", "WAP_ENABLED",
    "staged_wap_id", "published_wap_id", "is_wap_id_published", "validate_wap_publish",
    "check_can_stage", "is_staged", "wap_summary",
]

STAGED_WAP_ID = "wap.id"
PUBLISHED_WAP_ID = "published-wap-id"
SOURCE_SNAPSHOT_ID = "source-snapshot-id"
REPLACE_PARTITIONS = "replace-partitions"  # a dynamic partition overwrite's summary flag
WAP_ENABLED = "write.wap.enabled"


def staged_wap_id(s: Snapshot | None) -> str | None:
    return None if s is None else s.summary_value(STAGED_WAP_ID)


def published_wap_id(s: Snapshot | None) -> str | None:
    return None if s is None else s.summary_value(PUBLISHED_WAP_ID)


def wap_summary(wap_id: str | None) -> dict[str, str]:
    """The summary entry of a snapshot staged under ``wap_id`` (none for None)."""
    return {} if wap_id is None else {STAGED_WAP_ID: wap_id}


def is_wap_id_published(md: TableMetadata, wap_id: str) -> bool:
    """Whether main's head or an ancestor carries ``wap_id``, staged or published."""
    return any(wap_id in (staged_wap_id(s), published_wap_id(s))
               for s in ancestors_of(md.current_snapshot_id, md.snapshot_by_id))


def validate_wap_publish(md: TableMetadata, snapshot_id: int) -> str | None:
    """The WAP id cherry-picking ``snapshot_id`` publishes (None when it was not staged);
    :class:`DuplicateWapCommit` when that id is already published."""
    wap_id = staged_wap_id(md.snapshot_by_id(snapshot_id))
    if wap_id and is_wap_id_published(md, wap_id):
        raise DuplicateWapCommit(f"WAP id {wap_id!r} was already published to main; "
                                 f"refusing to publish it again (snapshot {snapshot_id})")
    return wap_id


def is_staged(md: TableMetadata, s: Snapshot) -> bool:
    """A snapshot with a WAP id that main has not reached (not main's head nor an ancestor)."""
    return bool(staged_wap_id(s)) and s.snapshot_id not in ancestor_ids(md.current_snapshot_id, md.snapshot_by_id)


def check_can_stage(md: TableMetadata, wap_id: str) -> None:
    """Refuse a WAP id that is empty, or a table that does not enable WAP (``write.wap.enabled``
    not true: Spark would then write to the branch as if no WAP id were set)."""
    if not wap_id or not wap_id.strip():
        raise InvalidInput("a WAP id must not be empty", argument="wap_id")
    if not md.property_as_bool(WAP_ENABLED, False):
        raise ValidationError(
            f"cannot stage a write with WAP id {wap_id!r}: the table property {WAP_ENABLED} is not "
            f"true (set it to true to stage writes)")
