"""expire_snapshots: the reference's retention rules, the reachable-file rule, dry runs, and
finishing an interrupted cleanup."""

from __future__ import annotations

import json
import os

import pytest
from expire_history import DAY, History

from icectl.errors import InvalidInput, NotFound, ValidationError
from icectl.ops.maintain.expire import PENDING_PREFIX, expire_snapshots, plan_retention
from icectl.ops.maintain.orphans import referenced_files
from icectl.spec.timetext import parse_cutoff, parse_duration_ms, parse_timestamp_ms
from icectl.table.table import Table

T0 = 1_700_000_000_000


def ids(md) -> list[int]:
    return sorted(s.snapshot_id for s in md.snapshots)


def history(tmp_path, name="t", **kw) -> History:
    return History(str(tmp_path / name), start_ms=T0, step_ms=DAY, **kw)


def check_reachable_exist(table: Table) -> None:
    """Every file the table references is on disk."""
    refs = referenced_files(table.io, table.metadata, table.metadata_location, table.location)
    missing = [p for p in refs if not os.path.exists(p) and not p.endswith("version-hint.text")]
    assert not missing, missing


# -- time arguments ------------------------------------------------------------------------------

@pytest.mark.parametrize("text, ms", [("90m", 5_400_000), ("36h", 129_600_000), ("7d", 604_800_000),
                                      ("1d12h", 129_600_000), ("1.5h", 5_400_000), ("250ms", 250), ("2w", 1_209_600_000)])
def test_durations(text, ms):
    assert parse_duration_ms(text) == ms


@pytest.mark.parametrize("text, ms", [
    ("1700000000000", 1_700_000_000_000),
    ("2023-11-14T22:13:20Z", 1_700_000_000_000),
    ("2023-11-14T22:13:20", 1_700_000_000_000),  # no zone: UTC
    ("2023-11-14 23:13:20+01:00", 1_700_000_000_000),
    ("2023-11-14T22:13:20.5", 1_700_000_000_500),
    ("2023-11-14", 1_699_920_000_000),
])
def test_timestamps(text, ms):
    assert parse_timestamp_ms(text) == ms
    assert parse_cutoff(text) == ms


def test_cutoff_duration_counts_back_from_now():
    assert parse_cutoff("1h", now=10_000_000) == 10_000_000 - 3_600_000


@pytest.mark.parametrize("bad", ["", "7", "7x", "d7", "yesterday", "2023-13-01"])
def test_bad_time_text(bad):
    from icectl.errors import InvalidInput

    with pytest.raises(InvalidInput):
        parse_duration_ms(bad) if bad in ("7", "7x", "d7") else parse_timestamp_ms(bad)


# -- retention rules -----------------------------------------------------------------------------

@pytest.fixture
def chain(tmp_path):
    """main: s1..s6, one day apart; a tag on s2; branch b at s3 with its own s7; s5 rolled back
    away from (s5' branch off s4): unreferenced."""
    h = history(tmp_path)
    s = [h.append() for _ in range(4)]  # s1..s4
    h.tag("t", s[1])
    h.branch("b", s[2])
    b1 = h.append(branch="b")
    s5 = h.append()
    h.rollback(s[3])
    s6 = h.append()
    return h, s, b1, s5, s6


def test_retain_last_keeps_that_many_per_branch(chain):
    h, s, b1, s5, s6 = chain
    now = h.clock + DAY
    plan = plan_retention(h.md, older_than_ms=now, retain_last=2, now=now)
    # main: s6, s4; b: b1, s3; tag t: s2; s5 unreferenced and old
    assert sorted(plan.expired_ids) == sorted([s[0], s5])
    assert set(plan.metadata.refs) == {"main", "t", "b"}


def test_cutoff_keeps_newer_snapshots_and_unreferenced_young_ones(chain):
    h, s, b1, s5, s6 = chain
    now = h.clock + DAY
    cutoff = h.md.snapshot_by_id(s[3]).timestamp_ms  # s4 and newer stay
    plan = plan_retention(h.md, older_than_ms=cutoff, now=now)
    assert s5 not in plan.expired_ids  # unreferenced but not older than the cut-off
    # main keeps s6 (min 1) and s4 (not older); b keeps b1; the tag keeps s2; s3 (b's parent and
    # main's ancestor, older than the cut-off) and s1 go
    assert sorted(plan.expired_ids) == sorted([s[0], s[2]])


def test_ref_overrides_and_max_ref_age(tmp_path):
    h = history(tmp_path)
    s = [h.append() for _ in range(5)]
    h.branch("keep3", s[4], min_snapshots_to_keep=3)
    h.tag("old", s[0], max_ref_age_ms=DAY)
    h.tag("forever", s[1])
    now = h.clock + 10 * DAY
    plan = plan_retention(h.md, older_than_ms=now, now=now)
    assert plan.removed_refs == ("old",)
    # keep3 keeps s5, s4, s3; forever keeps s2; s1 goes with its tag
    assert sorted(plan.expired_ids) == [s[0]]
    assert "old" not in plan.metadata.refs


def test_table_properties_are_the_defaults(tmp_path):
    h = history(tmp_path, properties={"history.expire.min-snapshots-to-keep": "2",
                                      "history.expire.max-snapshot-age-ms": str(2 * DAY)})
    s = [h.append() for _ in range(6)]
    now = h.clock
    plan = plan_retention(h.md, now=now)
    # younger than 2 days: s6, s5, s4 (exactly 2 days old counts as young)
    assert sorted(plan.expired_ids) == sorted(s[:3])
    plan = plan_retention(h.md, retain_last=5, now=now)
    assert plan.expired_ids == (s[0],)


def test_explicit_ids(chain):
    h, s, b1, s5, s6 = chain
    now = T0  # nothing is old: only explicit ids go
    assert plan_retention(h.md, snapshot_ids=[s5], now=now).expired_ids == (s5,)
    with pytest.raises(ValidationError, match="still referenced"):
        plan_retention(h.md, snapshot_ids=[s[1]], now=now)
    with pytest.raises(NotFound):
        plan_retention(h.md, snapshot_ids=[12345], now=now)


def test_refusals(tmp_path):
    h = history(tmp_path, properties={"gc.enabled": "false"})
    h.append()
    with pytest.raises(ValidationError, match="GC is disabled"):
        plan_retention(h.md, now=h.clock)
    h2 = history(tmp_path, name="u")
    h2.append()
    with pytest.raises(InvalidInput, match="at least 1") as e:
        plan_retention(h2.md, retain_last=0, now=h2.clock)
    assert e.value.argument == "retain_last"  # bad input (exit 2), as the command line refuses --retain-last 0


# -- files ---------------------------------------------------------------------------------------

def build_mixed(tmp_path, name="t"):
    h = history(tmp_path, name)
    s1 = h.append(3)
    f = h.live()
    s2 = h.overwrite([f[0]], add=1)  # f0 leaves the table
    s3 = h.delete_rows([f[1]])  # a position delete on f1
    s4 = h.overwrite([f[1]], add=0)  # f1 leaves; its delete file stays live (dangling)
    s5 = h.append(1)
    return h, f, [s1, s2, s3, s4, s5]


def test_deletes_exactly_what_only_expired_snapshots_reach(tmp_path):
    h, f, s = build_mixed(tmp_path)
    table = h.save()
    before = h.all_files()
    now = h.clock + DAY
    dry = expire_snapshots(table, older_than_ms=now, retain_last=1, dry_run=True, now=now)
    assert table.version == 1 and h.all_files() == before  # nothing written
    result = expire_snapshots(table, older_than_ms=now, retain_last=1, now=now)
    gone = before - h.all_files()
    assert gone == {p for ps in dry.files.values() for p in ps}
    assert sorted(result.files["data_files"]) == sorted([f[0], f[1]])
    assert result.count("position_delete_files") == 0  # still live in the retained snapshot
    assert result.count("manifest_lists") == 4
    assert ids(Table.load(h.location).metadata) == [s[4]]
    check_reachable_exist(Table.load(h.location))
    assert not [n for n in os.listdir(os.path.join(h.location, "metadata")) if n.startswith(PENDING_PREFIX)]
    # a rerun has nothing to do
    again = expire_snapshots(Table.load(h.location), older_than_ms=now, retain_last=1, now=now)
    assert again.deleted_total == 0 and again.expired_snapshot_ids == ()


def test_files_a_tag_still_needs_stay(tmp_path):
    h, f, s = build_mixed(tmp_path)
    h.tag("keep", s[0])
    table = h.save()
    now = h.clock + DAY
    result = expire_snapshots(table, older_than_ms=now, retain_last=1, now=now)
    assert result.files["data_files"] == ()  # s1 (tagged) still has f0 and f1
    check_reachable_exist(Table.load(h.location))


def test_clean_expired_metadata_drops_unused_schemas(tmp_path):
    from dataclasses import replace as dc_replace

    from icectl.spec.metadata import add_schema
    from icectl.spec.schema import Schema

    h = history(tmp_path)
    h.append()
    wider = Schema.from_json({"type": "struct", "fields": [
        {"id": 1, "name": "id", "required": True, "type": "long"},
        {"id": 2, "name": "data", "required": False, "type": "string"},
        {"id": 3, "name": "x", "required": False, "type": "int"}]})
    h.md = add_schema(h.md, wider)
    h.append()
    h.md = dc_replace(h.md, snapshots=tuple(dc_replace(x, schema_id=1) if x.snapshot_id == h.md.current_snapshot_id else x
                                            for x in h.md.snapshots))
    table = h.save()
    now = h.clock + DAY
    result = expire_snapshots(table, older_than_ms=now, retain_last=1, clean_expired_metadata=True, now=now)
    assert result.removed_schema_ids == (0,)
    assert [x.schema_id for x in Table.load(h.location).metadata.schemas] == [1]


def test_gc_disabled_changes_nothing(tmp_path):
    h = history(tmp_path, properties={"gc.enabled": "false"})
    h.append()
    h.append()
    table = h.save()
    with pytest.raises(ValidationError):
        expire_snapshots(table, retain_last=1, older_than_ms=h.clock + 1)
    assert Table.load(h.location).version == 1


class Crash(BaseException):
    pass


def test_interrupted_after_commit_is_finished_by_a_rerun(tmp_path):
    h, f, s = build_mixed(tmp_path)
    table = h.save()
    now = h.clock + DAY

    def crash():
        raise Crash()

    with pytest.raises(Crash):
        expire_snapshots(table, older_than_ms=now, retain_last=1, now=now, _after_commit=crash)
    reloaded = Table.load(h.location)
    assert ids(reloaded.metadata) == [s[4]]  # committed
    records = [n for n in os.listdir(os.path.join(h.location, "metadata")) if n.startswith(PENDING_PREFIX)]
    assert len(records) == 1
    rec = json.loads(open(os.path.join(h.location, "metadata", records[0])).read())
    assert sorted(x["snapshot-id"] for x in rec["expired-snapshots"]) == sorted(s[:4])
    assert os.path.exists(f[0])  # nothing deleted yet

    result = expire_snapshots(reloaded, older_than_ms=now, retain_last=1, now=now)
    assert result.resumed_cleanups == 1 and result.expired_snapshot_ids == ()
    assert sorted(result.files["data_files"]) == sorted([f[0], f[1]])
    assert not os.path.exists(f[0])
    assert not [n for n in os.listdir(os.path.join(h.location, "metadata")) if n.startswith(PENDING_PREFIX)]
    check_reachable_exist(Table.load(h.location))


def test_interrupted_mid_deletion_is_finished_by_a_rerun(tmp_path, monkeypatch):
    """Deletion stops after some files (in every phase); the rerun deletes the rest and the
    final state is the one an uninterrupted run leaves."""
    h2, _, _ = build_mixed(tmp_path, "twin")
    twin = h2.save()
    now = h2.clock + DAY
    expire_snapshots(twin, older_than_ms=now, retain_last=1, now=now)
    expected = {os.path.relpath(p, h2.location) for p in h2.all_files()}

    from icectl.io.storage.files import FileIO

    for stop_after in (1, 3, 5, 7):
        h, f, s = build_mixed(tmp_path, f"t{stop_after}")
        table = h.save()
        real_delete = FileIO.delete
        calls = {"n": 0}

        def flaky(self, path, missing_ok=True):
            if PENDING_PREFIX not in path:
                calls["n"] += 1
                if calls["n"] > stop_after:
                    raise Crash()
            return real_delete(self, path, missing_ok)

        monkeypatch.setattr(FileIO, "delete", flaky)
        with pytest.raises(Crash):
            expire_snapshots(table, older_than_ms=now, retain_last=1, now=now, max_workers=1)
        monkeypatch.setattr(FileIO, "delete", real_delete)
        check_reachable_exist(Table.load(h.location))
        result = expire_snapshots(Table.load(h.location), older_than_ms=now, retain_last=1, now=now)
        assert result.resumed_cleanups == 1
        left = {os.path.relpath(p, h.location) for p in h.all_files()}
        assert left == expected, stop_after


def test_a_missing_retained_manifest_list_stops_expiry_before_anything_is_deleted(tmp_path) -> None:
    """The files retained snapshots reach must be known whole: with one of their manifest lists
    gone, expiring would take live files for unreachable ones. icectl refuses instead."""
    import os

    import pyarrow as pa

    from icectl.errors import CorruptMetadata
    from icectl.ops.metadata.create import create_table
    from icectl.ops.maintain.expire import expire_snapshots
    from icectl.ops.write.rows import write_rows

    loc = str(tmp_path / "t")
    create_table(loc, schema_text="id long")
    for i in range(2):
        write_rows(Table.load(loc), pa.table({"id": pa.array([i], pa.int64())}))
    t = Table.load(loc)
    data = sorted(os.path.join(d, f) for d, _, fs in os.walk(os.path.join(loc, "data")) for f in fs)
    assert len(data) == 2
    os.remove(t.metadata.current_snapshot().manifest_list)
    with pytest.raises(CorruptMetadata, match="missing"):
        expire_snapshots(t, older_than_ms=2**62, retain_last=1)
    assert all(os.path.exists(p) for p in data)
