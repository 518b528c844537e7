"""A change committed once: the idempotency key a producer's summary may carry (like Delta
Lake's txnAppId/txnVersion), and the snapshot already carrying it."""

from __future__ import annotations

from icectl.errors import ValidationError
from icectl.spec.metadata import TableMetadata
from icectl.spec.snapshots import Snapshot, ancestors_of

__all__ = ["IDEMPOTENCY_KEY", "AlreadyCommitted", "snapshot_with_key"]


IDEMPOTENCY_KEY = "icectl.idempotency-key"
"""Snapshot summary property naming the run that made the snapshot (like Delta Lake's
txnAppId/txnVersion): a producer whose summary sets it commits nothing when the branch head or
one of its retained ancestors already carries the same key."""


class AlreadyCommitted(ValidationError):
    """The idempotency key of this change is already committed on the branch: nothing to do."""

    def __init__(self, key: str, snapshot_id: int, branch: str):
        super().__init__(f"idempotency key {key!r} was already committed on {branch} by snapshot "
                         f"{snapshot_id}; nothing was committed")
        self.key, self.snapshot_id, self.branch = key, snapshot_id, branch


def snapshot_with_key(base: TableMetadata, head: Snapshot | None, key: str) -> Snapshot | None:
    """The snapshot among ``head`` and its retained ancestors whose summary carries ``key``."""
    if head is None:
        return None
    for s in ancestors_of(head.snapshot_id, base.snapshot_by_id):
        if (s.summary or {}).get(IDEMPOTENCY_KEY) == key:
            return s
    return None
