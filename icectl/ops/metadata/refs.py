"""Branches, tags and moving ``main``: the reference's ``ManageSnapshots`` as operations.

* ``rollback_to_snapshot`` - main goes back to one of its own ancestors;
* ``rollback_to_time`` - main goes back to its newest ancestor strictly older than a time;
* ``set_current_snapshot`` - main goes to any snapshot of the table;
* ``cherry_pick`` - as ``CherryPickOperation`` (:mod:`icectl.ops.metadata.cherry_pick`): a
  snapshot whose parent is main's head is fast-forwarded to; an ``append`` or a dynamic
  partition overwrite from elsewhere is re-applied as a new snapshot on main, with
  ``source-snapshot-id`` (and ``published-wap-id`` for a staged one) in its summary; refused for
  a snapshot already in main's history or already picked, or whose WAP id is published; any
  other operation (overwrite, delete, replace) only by fast-forward.
* branches: create, drop (never ``main``), replace (point at a snapshot, or at another ref's
  head), fast-forward (only when the branch head is an ancestor of the target; creates the
  branch when missing, as the reference does); tags: create, drop, replace.
* retention fields: ``min-snapshots-to-keep`` and ``max-snapshot-age-ms`` on branches only,
  ``max-ref-age-ms`` on both (the reference refuses the first two on tags).

Every change is one commit through :meth:`Table.commit`; the checks run again on each retry.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from icectl.spec.timetext import format_ms
from icectl.errors import AlreadyExists, InvalidInput, NotFound, ValidationError
from icectl.spec.metadata import TableMetadata, remove_ref, set_ref
from icectl.spec.result_json import JsonResult, json_field
from icectl.spec.snapshots import BRANCH, MAIN_BRANCH, TAG, Snapshot, SnapshotRef, ancestor_ids, ancestors_of
from icectl.spec.wap import SOURCE_SNAPSHOT_ID  # re-exported (its older home)
from icectl.table.table import Table

__all__ = [
    "RefResult", "Retention", "rollback_to_snapshot", "rollback_to_time", "set_current_snapshot",
    "cherry_pick", "create_branch", "create_tag", "drop_branch", "drop_tag", "replace_branch",
    "replace_tag", "fast_forward_branch", "SOURCE_SNAPSHOT_ID",
]


@dataclass(frozen=True)
class Retention:
    """Optional retention settings of a ref (None: leave as is / use the table default)."""

    min_snapshots_to_keep: int | None = None
    max_snapshot_age_ms: int | None = None
    max_ref_age_ms: int | None = None

    def is_empty(self) -> bool:
        return self.min_snapshots_to_keep is None and self.max_snapshot_age_ms is None \
            and self.max_ref_age_ms is None

    def check(self, ref_type: str) -> None:
        if ref_type == TAG and (self.min_snapshots_to_keep is not None or self.max_snapshot_age_ms is not None):
            raise ValidationError("tags do not support min-snapshots-to-keep or max-snapshot-age")
        if self.min_snapshots_to_keep is not None and self.min_snapshots_to_keep <= 0:
            raise ValidationError(f"min-snapshots-to-keep must be greater than 0, not {self.min_snapshots_to_keep}")
        for name, v in (("max-snapshot-age", self.max_snapshot_age_ms), ("max-ref-age", self.max_ref_age_ms)):
            if v is not None and v <= 0:
                raise ValidationError(f"{name} must be greater than 0 ms, not {v}")

    def apply(self, ref: SnapshotRef) -> SnapshotRef:
        changes: dict[str, Any] = {}
        if self.min_snapshots_to_keep is not None:
            changes["min_snapshots_to_keep"] = self.min_snapshots_to_keep
        if self.max_snapshot_age_ms is not None:
            changes["max_snapshot_age_ms"] = self.max_snapshot_age_ms
        if self.max_ref_age_ms is not None:
            changes["max_ref_age_ms"] = self.max_ref_age_ms
        return replace(ref, **changes) if changes else ref


def _retention(ref_json: dict[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (ref_json or {}).items() if k not in ("snapshot-id", "type")}


@dataclass(frozen=True, kw_only=True)
class RefResult(JsonResult):
    """What a ref operation did."""

    location: str
    action: str
    ref: str
    ref_type: str | None = json_field(key="type")
    previous_snapshot_id: int | None
    snapshot_id: int | None
    created_snapshot: bool = False  # cherry-pick wrote a new snapshot
    ref_json: dict[str, Any] | None = json_field(default=None, key="retention", value=_retention)
    metadata_location: str = json_field(key="metadata-file")


def _snapshot(md: TableMetadata, snapshot_id: int) -> Snapshot:
    s = md.snapshot_by_id(snapshot_id)
    if s is None:
        raise NotFound(f"snapshot {snapshot_id} does not exist in table {md.location}")
    return s


def _ref(md: TableMetadata, name: str, kind: str | None = None) -> SnapshotRef:
    ref = md.refs.get(name)
    if ref is None:
        what = kind or "branch or tag"
        raise NotFound(f"{what} {name!r} does not exist in table {md.location}")
    if kind is not None and ref.type != kind:
        raise ValidationError(f"{name!r} is a {ref.type}, not a {kind}")
    return ref


def _check_name(name: str) -> None:
    if not name or not name.strip():
        raise InvalidInput("a branch or tag name must not be empty")


def _result(table: Table, action: str, name: str, before: SnapshotRef | None, created: bool = False) -> RefResult:
    md = table.metadata
    ref = md.refs.get(name)
    return RefResult(location=table.location, action=action, ref=name,
                     ref_type=ref.type if ref else (before.type if before else None),
                     previous_snapshot_id=before.snapshot_id if before else None,
                     snapshot_id=ref.snapshot_id if ref else None,
                     metadata_location=table.metadata_location, created_snapshot=created,
                     ref_json=ref.to_json() if ref else None)


def _move_main(table: Table, action: str, pick) -> RefResult:
    before: dict[str, SnapshotRef | None] = {}

    def update(base: TableMetadata) -> TableMetadata:
        before["ref"] = base.refs.get(MAIN_BRANCH)
        target = pick(base)
        existing = base.refs.get(MAIN_BRANCH)
        ref = existing.with_snapshot(target) if existing is not None else SnapshotRef(target, BRANCH)
        return set_ref(base, MAIN_BRANCH, ref)

    table.commit(update)
    return _result(table, action, MAIN_BRANCH, before.get("ref"))


def rollback_to_snapshot(table: Table, snapshot_id: int) -> RefResult:
    """Move main back to ``snapshot_id``, which must be one of main's ancestors."""
    def pick(md: TableMetadata) -> int:
        _snapshot(md, snapshot_id)
        if snapshot_id not in ancestor_ids(md.current_snapshot_id, md.snapshot_by_id):
            raise ValidationError(
                f"cannot roll back to snapshot {snapshot_id}: it is not an ancestor of the current "
                "snapshot (use set-current to move to any snapshot)")
        return snapshot_id
    return _move_main(table, "rollback", pick)


def rollback_to_time(table: Table, timestamp_ms: int) -> RefResult:
    """Move main to its newest ancestor committed strictly before ``timestamp_ms``."""
    def pick(md: TableMetadata) -> int:
        best: Snapshot | None = None
        for s in ancestors_of(md.current_snapshot_id, md.snapshot_by_id):
            if s.timestamp_ms < timestamp_ms and (best is None or s.timestamp_ms > best.timestamp_ms):
                best = s
        if best is None:
            raise ValidationError(f"cannot roll back: no ancestor of the current snapshot is older than "
                                  f"{format_ms(timestamp_ms)}")
        return best.snapshot_id
    return _move_main(table, "rollback", pick)


def set_current_snapshot(table: Table, snapshot_id: int) -> RefResult:
    """Point main at any snapshot of the table."""
    def pick(md: TableMetadata) -> int:
        return _snapshot(md, snapshot_id).snapshot_id
    return _move_main(table, "set-current", pick)


# -- cherry-pick ---------------------------------------------------------------------------------

def cherry_pick(table: Table, snapshot_id: int) -> RefResult:
    """Apply snapshot ``snapshot_id`` to main (:mod:`icectl.ops.metadata.cherry_pick`)."""
    from icectl.ops.metadata.cherry_pick import cherry_pick as pick

    before, created = pick(table, snapshot_id)
    res = _result(table, "cherry-pick", MAIN_BRANCH, before, created=created is not None)
    return res if created is None else replace(res, snapshot_id=created)


# -- branches and tags ---------------------------------------------------------------------------

def _create(table: Table, name: str, kind: str, snapshot_id: int | None, retention: Retention) -> RefResult:
    _check_name(name)
    retention.check(kind)

    def update(base: TableMetadata) -> TableMetadata:
        if name in base.refs:
            raise AlreadyExists(f"ref {name!r} already exists in table {base.location}")
        sid = snapshot_id if snapshot_id is not None else base.current_snapshot_id
        if sid is None:
            raise ValidationError(f"cannot create {kind} {name!r}: the table has no snapshot yet")
        _snapshot(base, sid)
        return set_ref(base, name, retention.apply(SnapshotRef(sid, kind)))

    table.commit(update)
    return _result(table, "create", name, None)


def create_branch(table: Table, name: str, snapshot_id: int | None = None,
                  retention: Retention = Retention()) -> RefResult:
    """A new branch at ``snapshot_id`` (default: the current snapshot)."""
    return _create(table, name, BRANCH, snapshot_id, retention)


def create_tag(table: Table, name: str, snapshot_id: int | None = None,
               retention: Retention = Retention()) -> RefResult:
    """A new tag at ``snapshot_id`` (default: the current snapshot)."""
    return _create(table, name, TAG, snapshot_id, retention)


def _drop(table: Table, name: str, kind: str) -> RefResult:
    if kind == BRANCH and name == MAIN_BRANCH:
        raise ValidationError("cannot drop the main branch")
    before: dict[str, SnapshotRef] = {}

    def update(base: TableMetadata) -> TableMetadata:
        before["ref"] = _ref(base, name, kind)
        return remove_ref(base, name)

    table.commit(update)
    return _result(table, "drop", name, before.get("ref"))


def drop_branch(table: Table, name: str) -> RefResult:
    return _drop(table, name, BRANCH)


def drop_tag(table: Table, name: str) -> RefResult:
    return _drop(table, name, TAG)


def _replace(table: Table, name: str, kind: str, snapshot_id: int | None, source_ref: str | None,
             retention: Retention, action: str = "replace", fast_forward: bool = False) -> RefResult:
    _check_name(name)
    retention.check(kind)
    if (snapshot_id is None) == (source_ref is None):
        raise InvalidInput("give exactly one target: a snapshot id or a ref")
    before: dict[str, SnapshotRef | None] = {}

    def update(base: TableMetadata) -> TableMetadata:
        if source_ref is not None:
            target = _ref(base, source_ref).snapshot_id
        else:
            target = _snapshot(base, snapshot_id).snapshot_id  # type: ignore[arg-type]
        existing = base.refs.get(name)
        before["ref"] = existing
        if existing is None:
            if fast_forward:  # the reference creates a missing branch on fast-forward
                return set_ref(base, name, retention.apply(SnapshotRef(target, BRANCH)))
            raise NotFound(f"{kind} {name!r} does not exist in table {base.location}")
        if existing.type != kind:
            raise ValidationError(f"{name!r} is a {existing.type}, not a {kind}")
        if fast_forward and existing.snapshot_id != target and \
                existing.snapshot_id not in ancestor_ids(target, base.snapshot_by_id):
            raise ValidationError(
                f"cannot fast-forward {name!r}: its head {existing.snapshot_id} is not an ancestor of "
                f"{source_ref or target}")
        return set_ref(base, name, retention.apply(existing.with_snapshot(target)))

    table.commit(update)
    return _result(table, action, name, before.get("ref"))


def replace_branch(table: Table, name: str, snapshot_id: int | None = None, *, source_ref: str | None = None,
                   retention: Retention = Retention()) -> RefResult:
    """Point an existing branch at a snapshot or at another ref's head (history may be lost)."""
    return _replace(table, name, BRANCH, snapshot_id, source_ref, retention)


def fast_forward_branch(table: Table, name: str, target_ref: str, retention: Retention = Retention()) -> RefResult:
    """Move branch ``name`` forward to ``target_ref``'s head; its head must be an ancestor."""
    return _replace(table, name, BRANCH, None, target_ref, retention, "fast-forward", fast_forward=True)


def replace_tag(table: Table, name: str, snapshot_id: int | None = None, *, source_ref: str | None = None,
                retention: Retention = Retention()) -> RefResult:
    """Point an existing tag at another snapshot."""
    return _replace(table, name, TAG, snapshot_id, source_ref, retention)
