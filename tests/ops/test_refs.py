"""Rollback, set-current, cherry-pick, branches and tags: the reference's ManageSnapshots rules."""

from __future__ import annotations

import pytest
from expire_history import DAY, History

from icectl.errors import AlreadyExists, InvalidInput, NotFound, ValidationError
from icectl.io.manifest import records as avro
from icectl.ops.metadata import refs
from icectl.table.table import Table


@pytest.fixture
def table(tmp_path):
    """main: s1 -> s2 -> s3 (overwrite) ; branch dev off s2 with d1 (append) and d2 (overwrite)."""
    h = History(str(tmp_path / "t"), start_ms=1_700_000_000_000, step_ms=DAY)
    s1 = h.append(1)
    s2 = h.append(1)
    h.branch("dev", s2)
    d1 = h.append(2, branch="dev")
    d2 = h.overwrite([h.live("dev")[0]], add=1, branch="dev")
    s3 = h.overwrite([h.live()[0]], add=1)
    t = h.save()
    t.ids = dict(s1=s1, s2=s2, s3=s3, d1=d1, d2=d2)
    t.h = h
    return t


def main_id(t):
    return Table.load(t.location).metadata.current_snapshot_id


def test_rollback_to_ancestor_and_refusal(table):
    i = table.ids
    with pytest.raises(ValidationError, match="not an ancestor"):
        refs.rollback_to_snapshot(table, i["d1"])
    r = refs.rollback_to_snapshot(table, i["s1"])
    assert (r.previous_snapshot_id, r.snapshot_id) == (i["s3"], i["s1"]) and main_id(table) == i["s1"]
    with pytest.raises(NotFound):
        refs.rollback_to_snapshot(table, 42)


def test_rollback_to_time_takes_newest_ancestor_strictly_older(table):
    i = table.ids
    md = table.metadata
    ts2 = md.snapshot_by_id(i["s2"]).timestamp_ms
    refs.rollback_to_time(table, ts2)  # strictly older: s1
    assert main_id(table) == i["s1"]
    with pytest.raises(ValidationError, match="no ancestor"):
        refs.rollback_to_time(table, md.snapshot_by_id(i["s1"]).timestamp_ms)


def test_set_current_any_snapshot(table):
    refs.set_current_snapshot(table, table.ids["d2"])
    assert main_id(table) == table.ids["d2"]
    assert Table.load(table.location).metadata.snapshot_log[-1].snapshot_id == table.ids["d2"]


def test_cherry_pick_fast_forward(table):
    i = table.ids
    refs.rollback_to_snapshot(table, i["s2"])
    r = refs.cherry_pick(table, i["d1"])  # d1's parent is s2 = main's head
    assert not r.created_snapshot and main_id(table) == i["d1"]


def test_cherry_pick_append_adds_its_files_as_a_new_snapshot(table):
    i = table.ids
    r = refs.cherry_pick(table, i["d1"])
    md = Table.load(table.location).metadata
    new = md.current_snapshot()
    assert r.created_snapshot and new.snapshot_id not in i.values()
    assert new.parent_snapshot_id == i["s3"] and new.operation == "append"
    assert new.summary["source-snapshot-id"] == str(i["d1"])
    assert new.summary["added-data-files"] == "2"
    picked = {e.data_file.file_path for m in avro.load_manifest_list(table.io, md.snapshot_by_id(i["d1"]).manifest_list)
              if m.added_snapshot_id == i["d1"] for e in avro.load_manifest(table.io, m)}
    now = {e.data_file.file_path for m in avro.load_manifest_list(table.io, new.manifest_list)
           if m.added_snapshot_id == new.snapshot_id for e in avro.load_manifest(table.io, m)}
    assert now == picked
    with pytest.raises(ValidationError, match="already picked"):
        refs.cherry_pick(Table.load(table.location), i["d1"])


def test_cherry_pick_refusals(table):
    i = table.ids
    with pytest.raises(ValidationError, match="not an append, a dynamic partition overwrite or a fast-forward"):
        refs.cherry_pick(table, i["d2"])  # overwrite, parent d1 is not main's head
    refs.rollback_to_snapshot(table, i["s2"])
    with pytest.raises(ValidationError, match="already an ancestor"):
        refs.cherry_pick(table, i["s1"])


def test_branches(table):
    i = table.ids
    r = refs.create_branch(table, "audit", i["s1"], refs.Retention(min_snapshots_to_keep=3, max_ref_age_ms=DAY))
    ref = Table.load(table.location).metadata.refs["audit"]
    assert (ref.snapshot_id, ref.min_snapshots_to_keep, ref.max_ref_age_ms) == (i["s1"], 3, DAY)
    assert r.to_json()["retention"] == {"min-snapshots-to-keep": 3, "max-ref-age-ms": DAY}
    with pytest.raises(AlreadyExists):
        refs.create_branch(table, "audit")
    refs.fast_forward_branch(table, "audit", "main")  # s1 is an ancestor of s3
    assert table.metadata.refs["audit"].snapshot_id == i["s3"]
    assert table.metadata.refs["audit"].min_snapshots_to_keep == 3  # retention kept
    with pytest.raises(ValidationError, match="not an ancestor"):
        refs.fast_forward_branch(table, "audit", "dev")
    refs.fast_forward_branch(table, "fresh", "dev")  # created when missing
    assert table.metadata.refs["fresh"].snapshot_id == i["d2"]
    refs.replace_branch(table, "audit", source_ref="dev")
    assert table.metadata.refs["audit"].snapshot_id == i["d2"]
    refs.replace_branch(table, "audit", i["s1"], retention=refs.Retention(max_snapshot_age_ms=DAY))
    assert table.metadata.refs["audit"].max_snapshot_age_ms == DAY
    with pytest.raises(InvalidInput):
        refs.replace_branch(table, "audit")
    with pytest.raises(ValidationError, match="main"):
        refs.drop_branch(table, "main")
    refs.drop_branch(table, "audit")
    assert "audit" not in Table.load(table.location).metadata.refs
    with pytest.raises(NotFound):
        refs.drop_branch(table, "audit")


def test_tags(table):
    i = table.ids
    refs.create_tag(table, "v1", i["s1"], refs.Retention(max_ref_age_ms=7 * DAY))
    with pytest.raises(ValidationError, match="tags do not support"):
        refs.create_tag(table, "v2", retention=refs.Retention(min_snapshots_to_keep=2))
    with pytest.raises(ValidationError, match="is a tag, not a branch"):
        refs.drop_branch(table, "v1")
    with pytest.raises(ValidationError, match="is a branch, not a tag"):
        refs.replace_tag(table, "dev", i["s1"])
    refs.replace_tag(table, "v1", i["s2"])
    assert table.metadata.refs["v1"].snapshot_id == i["s2"]
    assert table.metadata.refs["v1"].max_ref_age_ms == 7 * DAY
    refs.drop_tag(table, "v1")
    assert "v1" not in table.metadata.refs


def test_create_on_empty_table_refused(tmp_path):
    h = History(str(tmp_path / "e"))
    t = h.save()
    with pytest.raises(ValidationError, match="no snapshot"):
        refs.create_branch(t, "b")
