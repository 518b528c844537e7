"""Cherry-picking a snapshot onto main: the reference's ``CherryPickOperation``.

What happens depends on the picked snapshot, checked in this order (as the reference does):

* an ``append``: its WAP id, if it was staged with one, must not be published yet
  (:func:`icectl.spec.wap.validate_wap_publish`, :class:`~icectl.errors.DuplicateWapCommit`);
* an ``overwrite`` whose summary has ``replace-partitions=true`` (a dynamic partition
  overwrite, Spark's ``INSERT OVERWRITE`` in dynamic mode): its parent must be main's head or an
  ancestor of it (or none), and its WAP id not published;
* anything else (a ``delete``, another ``overwrite``, a ``replace``): only a fast-forward.

Then, when the picked snapshot's parent is main's head (or both are empty), main simply moves to
it (no new snapshot). Otherwise a new snapshot is committed on main with the picked snapshot's
operation: an append re-adds the data files it added; a dynamic overwrite re-adds them and
removes the data files it removed. Its summary has ``source-snapshot-id`` and, for a staged
snapshot, ``published-wap-id``. On every attempt the reference's checks run again: the picked
snapshot is not main's head or an ancestor, and no ancestor was picked from it
(``source-snapshot-id``); for a dynamic overwrite, no snapshot committed on main since its
parent added a data file to a partition it replaces, and every file it removes is still live;
and the WAP id is not published.
"""

from __future__ import annotations

from dataclasses import replace

from icectl.errors import CommitConflict, NotFound, ValidationError
from icectl.io.manifest import records as avro
from icectl.spec.manifests import ADDED, DATA, DELETED, MANIFEST_DATA, DataFile
from icectl.spec.metadata import TableMetadata, set_ref
from icectl.spec.partition_identity import partition_key
from icectl.spec.properties import MANIFEST_MERGE_ENABLED
from icectl.spec.snapshots import BRANCH, MAIN_BRANCH, Snapshot, SnapshotRef, ancestor_ids, ancestors_of
from icectl.spec.wap import PUBLISHED_WAP_ID, REPLACE_PARTITIONS, SOURCE_SNAPSHOT_ID, validate_wap_publish
from icectl.table.table import Table

__all__ = ["cherry_pick", "APPEND", "DYNAMIC_OVERWRITE", "FAST_FORWARD_ONLY"]

APPEND = "append"
DYNAMIC_OVERWRITE = "dynamic-overwrite"
FAST_FORWARD_ONLY = "fast-forward"


def is_fast_forward(md: TableMetadata, picked: Snapshot) -> bool:
    """Whether the picked snapshot's parent is main's head (or both are none)."""
    if md.current_snapshot_id is not None:
        return picked.parent_snapshot_id is not None and picked.parent_snapshot_id == md.current_snapshot_id
    return picked.parent_snapshot_id is None


def _is_current_ancestor(md: TableMetadata, snapshot_id: int) -> bool:
    return snapshot_id in ancestor_ids(md.current_snapshot_id, md.snapshot_by_id)


def pick_kind(md: TableMetadata, picked: Snapshot) -> tuple[str, str | None]:
    """How the picked snapshot can be applied and the WAP id it publishes; the reference's
    checks made before anything is written."""
    sid = picked.snapshot_id
    if picked.operation == "append":
        return APPEND, validate_wap_publish(md, sid)
    if picked.operation == "overwrite" and \
            (picked.summary_value(REPLACE_PARTITIONS) or "").strip().lower() == "true":
        parent = picked.parent_snapshot_id
        if parent is not None and not _is_current_ancestor(md, parent):
            raise ValidationError(
                f"cannot cherry-pick overwrite snapshot {sid}: it is not based on an ancestor of the "
                f"current snapshot (its parent {parent} is not)")
        return DYNAMIC_OVERWRITE, validate_wap_publish(md, sid)
    if not is_fast_forward(md, picked):
        raise ValidationError(
            f"cannot cherry-pick snapshot {sid}: not an append, a dynamic partition overwrite or a "
            f"fast-forward (operation {picked.operation!r}, parent {picked.parent_snapshot_id} is not "
            "the current snapshot)")
    return FAST_FORWARD_ONLY, None


def validate_not_picked(md: TableMetadata, snapshot_id: int) -> None:
    """The reference's CherrypickAncestorCommitException: already main's history, or an ancestor
    was cherry-picked from it."""
    for s in ancestors_of(md.current_snapshot_id, md.snapshot_by_id):
        if s.snapshot_id == snapshot_id:
            raise ValidationError(f"cannot cherry-pick snapshot {snapshot_id}: it is already an ancestor "
                                  "of the current snapshot")
        if s.summary_value(SOURCE_SNAPSHOT_ID) == str(snapshot_id):
            raise ValidationError(f"cannot cherry-pick snapshot {snapshot_id}: already picked as "
                                  f"snapshot {s.snapshot_id}")


def snapshot_changes(table: Table, md: TableMetadata, picked: Snapshot) -> tuple[list[DataFile], list[DataFile]]:
    """The data files the picked snapshot added and removed (its own manifests' entries)."""
    from icectl.table.commit.snapshot_manifests import read_manifests

    sid = picked.snapshot_id
    added: list[DataFile] = []
    removed: list[DataFile] = []
    for m in read_manifests(table.io, md, picked):
        if m.content != MANIFEST_DATA or m.added_snapshot_id != sid:
            continue
        for e in avro.load_manifest(table.io, m):
            if e.snapshot_id != sid or e.data_file.content != DATA:
                continue
            if e.status == ADDED:
                added.append(replace(e.data_file, first_row_id=None))
            elif e.status == DELETED:
                removed.append(e.data_file)
    return added, removed


def _validate_replaced_partitions(table: Table, base: TableMetadata, picked: Snapshot,
                                  replaced: set[tuple[int, tuple]]) -> None:
    """No snapshot committed on main since the picked one's parent added a data file to a
    partition the dynamic overwrite replaces."""
    from icectl.table.commit.validation import new_entries, snapshots_since

    if base.current_snapshot_id is None:
        return
    parent = picked.parent_snapshot_id
    if parent is not None and not _is_current_ancestor(base, parent):
        raise ValidationError(f"cannot cherry-pick overwrite snapshot {picked.snapshot_id}: its parent "
                              f"{parent} is no longer an ancestor of the current snapshot")
    since = snapshots_since(base, parent, base.current_snapshot_id)
    for snap, e in new_entries(table.io, base, since, MANIFEST_DATA):
        f = e.data_file
        if (f.spec_id, partition_key(tuple(f.partition))) in replaced:
            raise ValidationError(
                f"cannot cherry-pick dynamic overwrite snapshot {picked.snapshot_id}: snapshot "
                f"{snap.snapshot_id} changed a partition it replaces (it added {f.file_path})")


def _fast_forward(table: Table, picked: Snapshot) -> None:
    sid = picked.snapshot_id

    def update(base: TableMetadata) -> TableMetadata:
        if not is_fast_forward(base, picked):
            raise ValidationError(f"cannot cherry-pick snapshot {sid}: main moved while fast-forwarding")
        existing = base.refs.get(MAIN_BRANCH)
        ref = existing.with_snapshot(sid) if existing else SnapshotRef(sid, BRANCH)
        return set_ref(base, MAIN_BRANCH, ref)

    table.commit(update)


def cherry_pick(table: Table, snapshot_id: int) -> tuple[SnapshotRef | None, int | None]:
    """Apply snapshot ``snapshot_id`` to main (module docs): main's ref before, and the id of
    the snapshot the pick created (None for a fast-forward)."""
    md = table.metadata
    picked = md.snapshot_by_id(snapshot_id)
    if picked is None:
        raise NotFound(f"snapshot {snapshot_id} does not exist in table {md.location}")
    kind, wap_id = pick_kind(md, picked)
    before = md.refs.get(MAIN_BRANCH)
    if is_fast_forward(md, picked):
        _fast_forward(table, picked)
        return before, None
    added, removed = snapshot_changes(table, md, picked)
    props = {PUBLISHED_WAP_ID: wap_id} if wap_id else {}
    props[SOURCE_SNAPSHOT_ID] = str(snapshot_id)
    producer = (_append_producer if kind == APPEND else _overwrite_producer)(
        table, picked, added, removed, props)
    return before, producer.commit().snapshot.snapshot_id


def _with_paths(md: TableMetadata, files: list[DataFile]) -> list[tuple[DataFile, str]]:
    """Files with their partition paths (the summary counts changed partitions by them)."""
    from icectl.spec.partition_path import partition_path

    out = []
    for f in files:
        spec = md.specs_by_id().get(f.spec_id)
        try:
            path = partition_path(spec, md.schema, f.partition) if spec is not None and spec.fields else ""
        except Exception:  # noqa: BLE001 - a spec whose source column is gone: no partition path
            path = ""
        out.append((f, path))
    return out


def _check_attempt(base: TableMetadata, picked: Snapshot) -> None:
    sid = picked.snapshot_id
    if base.snapshot_by_id(sid) is None:
        raise ValidationError(f"cannot cherry-pick snapshot {sid}: it was expired")
    validate_not_picked(base, sid)


def _append_producer(table: Table, picked: Snapshot, added: list[DataFile], removed: list[DataFile],
                     props: dict[str, str]):
    from icectl.table.commit.producer import FastAppendProducer

    class _PickAppend(FastAppendProducer):
        stages_with_wap_id = False  # a publish is never staged itself

        def validate(self, base: TableMetadata, parent: Snapshot | None) -> None:
            _check_attempt(base, picked)
            validate_wap_publish(base, picked.snapshot_id)

    # a merging producer in the reference: manifests merge unless the table turns it off
    merge = table.metadata.property_as_bool(MANIFEST_MERGE_ENABLED, True)
    return _PickAppend(table, _with_paths(table.metadata, added), summary_properties=props, merge=merge)


def _overwrite_producer(table: Table, picked: Snapshot, added: list[DataFile], removed: list[DataFile],
                        props: dict[str, str]):
    from icectl.table.commit.rewrite import OverwriteFilesProducer

    replaced = {(f.spec_id, partition_key(tuple(f.partition))) for f in added}
    sid = picked.snapshot_id

    class _PickOverwrite(OverwriteFilesProducer):
        stages_with_wap_id = False
        operation = "overwrite"  # the picked snapshot's

        def validate(self, base: TableMetadata, parent: Snapshot | None) -> None:
            _check_attempt(base, picked)
            _validate_replaced_partitions(table, base, picked, replaced)
            validate_wap_publish(base, sid)
            try:  # every file it removes is still live (the reference's failMissingDeletePaths)
                super().validate(base, parent)
            except CommitConflict as e:
                raise ValidationError(f"cannot cherry-pick snapshot {sid}: a data file it removes is "
                                      f"no longer in the table ({e})") from None

        def _check_deletes(self, base: TableMetadata, parent: Snapshot | None) -> None:
            """Delete files added since do not stop it: the reference's pick does not look."""

    return _PickOverwrite(table, starting_snapshot_id=picked.parent_snapshot_id, removed=removed,
                          added=_with_paths(table.metadata, added), remove_dangling_deletes=False,
                          summary_properties=props)
