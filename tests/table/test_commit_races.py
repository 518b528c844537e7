"""Commits racing metadata clean-up: with ``write.metadata.delete-after-commit.enabled`` old
versions are deleted, and a slow writer must never reuse a freed version name and call it a
success. Every acknowledged commit is in the final table."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
from dataclasses import replace

import pytest

from icectl.io.manifest import records as avro
from icectl.io.storage.files import FileIO
from icectl.spec.manifests import DATA, DataFile
from icectl.spec.metadata import add_snapshot, with_properties
from icectl.spec.snapshots import Snapshot
from icectl.table import store
from icectl.table.commit.producer import FastAppendProducer
from icectl.table.table import Table

from conftest import make_metadata

CLEANUP = {
    "write.metadata.delete-after-commit.enabled": "true",
    "write.metadata.previous-versions-max": "1",
}
PATIENT = {
    "commit.retry.num-retries": "200",
    "commit.retry.min-wait-ms": "1",
    "commit.retry.max-wait-ms": "20",
}
WRITERS = 8
APPENDS = 10


def df(name: str) -> DataFile:
    return DataFile(DATA, f"/data/{name}.parquet", "PARQUET", (), 1, 10)


def live_paths(table: Table) -> list[str]:
    snap = table.metadata.current_snapshot()
    if snap is None:
        return []
    out = []
    for m in avro.load_manifest_list(table.io, snap.manifest_list):
        out.extend(e.data_file.file_path for e in avro.load_manifest(table.io, m) if e.status != 2)
    return out


def _appender(location: str, name: str) -> list[str]:
    acknowledged = []
    for i in range(APPENDS):
        path = f"{name}-{i}"
        try:
            FastAppendProducer(Table.load(location), [(df(path), "")]).commit()
        except Exception:  # noqa: BLE001 - not acknowledged; the test checks only acknowledged ones
            continue
        acknowledged.append(f"/data/{path}.parquet")
    return acknowledged


def test_concurrent_appends_with_metadata_cleanup_lose_nothing(location):
    Table.create(location, make_metadata(location, 2, **CLEANUP, **PATIENT))
    ctx = mp.get_context("fork")
    with ctx.Pool(WRITERS) as pool:
        jobs = [pool.apply_async(_appender, (location, f"w{n}")) for n in range(WRITERS)]
        acknowledged = [p for j in jobs for p in j.get(timeout=300)]
    final = Table.load(location)
    live = live_paths(final)
    lost = sorted(set(acknowledged) - set(live))
    print(f"attempted={WRITERS * APPENDS} acknowledged={len(acknowledged)} lost={len(lost)}")
    assert not lost, f"{len(lost)} of {len(acknowledged)} acknowledged appends lost: {lost[:5]}"
    assert len(live) == len(set(live)) == len(acknowledged)  # no append applied twice
    # The chain is intact: every snapshot's parent is the one before it.
    snaps = final.metadata.snapshots
    assert len(snaps) == len(acknowledged)
    # Readers see the newest version, and the hint names it.
    newest = max(int(n[1:].split(".")[0]) for n in os.listdir(os.path.join(location, "metadata"))
                 if n.startswith("v") and n.endswith(".metadata.json"))
    assert final.version == newest
    with open(os.path.join(location, "metadata", "version-hint.text")) as f:
        assert int(f.read()) == newest


def _set(**props):
    return lambda md: with_properties(md, props)


def test_writer_whose_base_was_deleted_does_not_reuse_the_freed_name(location):
    """A slow writer holds v1; three commits later v1 and v2 are gone. Its commit must not land
    in the freed name v2 (invisible behind v4): it is retried on top of v4."""
    Table.create(location, make_metadata(location, 2, **CLEANUP))
    slow = Table.load(location)
    fast = Table.load(location)
    for i in range(3):
        fast.commit(_set(**{f"fast-{i}": "x"}))
    assert fast.version == 4
    names = sorted(os.listdir(os.path.join(location, "metadata")))
    assert "v1.metadata.json" not in names and "v2.metadata.json" not in names
    slow.commit(_set(slow="x"))
    assert slow.version == 5
    final = Table.load(location)
    assert final.version == 5 and {"slow", "fast-0", "fast-2"} <= set(final.metadata.properties)


def _last_updated_ms(path: str) -> int:
    with open(path, "rb") as f:
        return json.load(f)["last-updated-ms"]


@pytest.mark.parametrize("same_ms", [False, True], ids=["own-clock", "same-millisecond"])
def test_name_freed_between_check_and_rename_is_undone_and_retried(location, monkeypatch, same_ms):
    """The race inside the commit: the base is deleted and the next name freed after the writer
    checked it was the newest but before its rename. The rename succeeds into the freed name; the
    commit sees newer versions that do not build on it, removes its file and retries.

    ``same-millisecond`` forces the racer's v2 to carry the slow writer's ``last-updated-ms``, so
    the racer's v3 names ``v2.metadata.json`` with exactly the slow commit's timestamp: the
    metadata log alone cannot tell the two v2s apart, and the commit must still not be taken as
    landed (it was lost before the fix whenever the clocks agreed)."""
    Table.create(location, make_metadata(location, 2, **CLEANUP))
    slow = Table.load(location)
    io = FileIO()
    real_rename = FileIO.rename_no_replace
    raced = []

    def racing_rename(self, src, dst, **kw):
        if dst.endswith("/v2.metadata.json") and not raced:
            raced.append(dst)
            fast = Table.load(location, io=io)
            ts = _last_updated_ms(src)
            if same_ms:
                fast.commit(lambda md: replace(with_properties(md, {"fast-0": "x"}), last_updated_ms=ts))
                assert _last_updated_ms(fast.metadata_location) == ts
            else:
                fast.commit(_set(**{"fast-0": "x"}))
            for i in (1, 2):
                fast.commit(_set(**{f"fast-{i}": "x"}))
            assert not os.path.exists(dst) and fast.version == 4
        return real_rename(self, src, dst, **kw)

    monkeypatch.setattr(FileIO, "rename_no_replace", racing_rename)
    slow.commit(_set(slow="x"))
    assert raced
    assert slow.version == 5
    final = Table.load(location)
    assert final.version == 5 and {"slow", "fast-0", "fast-1", "fast-2"} <= set(final.metadata.properties)
    assert not os.path.exists(os.path.join(location, "metadata", "v2.metadata.json"))
    assert store._read_hint(io, location) == 5


@pytest.mark.parametrize("cleanup", [True, False], ids=["cleanup", "no-cleanup"])
def test_metadata_commit_built_on_and_dropped_before_the_check_is_not_repeated(location, monkeypatch, cleanup):
    """Two commits land on ours between our rename and our check, with a one-entry metadata log:
    the newest version no longer names ours. With clean-up its writer deleted our file; without,
    the file stays. Either way v3 names our file and timestamp and nothing could have freed the
    name, so the commit landed: it must not be undone or applied again (a counter shows it)."""
    props = CLEANUP if cleanup else {"write.metadata.previous-versions-max": "1"}
    Table.create(location, make_metadata(location, 2, **props))
    writer = Table.load(location)
    real_rename = FileIO.rename_no_replace
    done = []

    def rename_then_two_commits(self, src, dst, **kw):
        real_rename(self, src, dst, **kw)
        if dst.endswith("/v2.metadata.json") and not done:
            done.append(dst)
            for i in range(2):
                Table.load(location).commit(_set(**{f"other-{i}": "x"}))

    monkeypatch.setattr(FileIO, "rename_no_replace", rename_then_two_commits)
    writer.commit(lambda md: with_properties(md, {"count": str(int(md.properties.get("count", "0")) + 1)}))
    assert writer.version == 2
    final = Table.load(location)
    assert final.version == 4
    assert final.metadata.properties["count"] == "1"
    assert os.path.exists(os.path.join(location, "metadata", "v2.metadata.json")) is not cleanup


def test_commit_built_on_between_rename_and_check_is_not_repeated(location, monkeypatch):
    """Another writer commits on top of ours between our rename and our check: that is our
    commit extended, not a conflict, so it must not be applied a second time."""
    Table.create(location, make_metadata(location, 2))
    writer = Table.load(location)
    real_rename = FileIO.rename_no_replace
    done = []

    def rename_then_other_commit(self, src, dst, **kw):
        real_rename(self, src, dst, **kw)
        if dst.endswith("/v2.metadata.json") and not done:
            done.append(dst)
            Table.load(location).commit(_set(other="x"))

    monkeypatch.setattr(FileIO, "rename_no_replace", rename_then_other_commit)
    writer.commit(lambda md: with_properties(md, {"count": str(int(md.properties.get("count", "0")) + 1)}))
    final = Table.load(location)
    assert final.version == 3
    assert final.metadata.properties["count"] == "1" and final.metadata.properties["other"] == "x"


def test_snapshot_built_on_twice_before_the_check_is_not_repeated(location, monkeypatch):
    """With a one-entry metadata log and cleanup, three commits land on ours between our rename
    and our check: no remaining log names our file and our version is deleted, but the newest
    version holds our snapshot, so the commit succeeded and must not be applied again."""
    Table.create(location, make_metadata(location, 2, **CLEANUP))
    writer = Table.load(location)
    real_rename = FileIO.rename_no_replace
    done = []

    def rename_then_two_commits(self, src, dst, **kw):
        real_rename(self, src, dst, **kw)
        if dst.endswith("/v2.metadata.json") and not done:
            done.append(dst)
            for i in range(3):
                Table.load(location).commit(_set(**{f"other-{i}": "x"}))

    monkeypatch.setattr(FileIO, "rename_no_replace", rename_then_two_commits)
    snap = Snapshot(snapshot_id=4242, timestamp_ms=1_700_000_000_000, sequence_number=1,
                    manifest_list=os.path.join(location, "metadata", "snap-4242.avro"),
                    summary={"operation": "append"})
    writer.commit(lambda md: add_snapshot(md, snap))
    final = Table.load(location)
    assert not os.path.exists(os.path.join(location, "metadata", "v2.metadata.json"))
    assert final.version == 5
    assert [s.snapshot_id for s in final.metadata.snapshots] == [4242]


def test_late_hint_write_never_lowers_the_hint(location):
    io = FileIO()
    Table.create(location, make_metadata(location, 2, **CLEANUP))
    t = Table.load(location)
    for i in range(4):
        t.commit(_set(n=str(i)))
    assert store._read_hint(io, location) == 5
    store.write_version_hint(io, location, 2)  # a slow writer's late hint
    assert store._read_hint(io, location) == 5
    assert store.load_current(io, location).version == 5


def test_stale_hint_naming_a_deleted_version_falls_back_to_listing(location):
    io = FileIO()
    Table.create(location, make_metadata(location, 2, **CLEANUP))
    t = Table.load(location)
    for i in range(4):
        t.commit(_set(n=str(i)))
    with open(os.path.join(location, "metadata", "version-hint.text"), "w") as f:
        f.write("2")  # written by an old writer that does not guard its hint
    assert store.load_current(io, location).version == 5


@pytest.mark.parametrize("hint", ["1", "3"])
def test_reader_does_not_stop_at_a_gap_below_the_newest(location, hint):
    """With metadata clean-up on, a stray older file followed by a gap must not hide the newest."""
    io = FileIO()
    Table.create(location, make_metadata(location, 2, **CLEANUP))
    t = Table.load(location)
    for i in range(4):
        t.commit(_set(n=str(i)))
    d = os.path.join(location, "metadata")
    with open(os.path.join(d, "v4.metadata.json"), "rb") as f:
        data = f.read()
    with open(os.path.join(d, "v3.metadata.json"), "wb") as f:  # a stray left by a crashed writer
        f.write(data)
    os.unlink(os.path.join(d, "v4.metadata.json"))
    with open(os.path.join(d, "version-hint.text"), "w") as f:
        f.write(hint)
    assert store.load_current(io, location).version == 5


# -- under CPU load: many writers, metadata clean-up on, thousands of commits ---------------------

BURNER = ("import time\n"
          "end = time.monotonic() + {seconds}\n"
          "while time.monotonic() < end:\n"
          "    pass\n")


def start_burners(n: int, seconds: float) -> list:
    """``n`` busy-loop processes that stop by themselves after ``seconds`` (bounded load)."""
    import subprocess
    import sys

    return [subprocess.Popen([sys.executable, "-c", BURNER.format(seconds=seconds)]) for _ in range(n)]


def stop_burners(burners: list) -> None:
    for p in burners:
        p.kill()
        p.wait()


def _real_appender(location: str, name: str, appends: int) -> tuple[list[tuple[str, int]], int, int]:
    """``appends`` appends of one real (empty) data file each: the acknowledged ones as
    (path, snapshot id), and how many ended as commit-state-unknown and as other failures."""
    from icectl.errors import CommitStateUnknown

    acknowledged, unknown, failed = [], 0, 0
    data_dir = os.path.join(location, "data")
    for i in range(appends):
        path = os.path.join(data_dir, f"{name}-{i}.parquet")
        with open(path, "wb"):
            pass
        f = DataFile(DATA, path, "PARQUET", (), 1, 10)
        try:
            produced = FastAppendProducer(Table.load(location), [(f, "")]).commit()
        except CommitStateUnknown:
            unknown += 1
            continue
        except Exception:  # noqa: BLE001 - not acknowledged; only acknowledged ones are checked
            failed += 1
            continue
        acknowledged.append((path, produced.snapshot.snapshot_id))
    return acknowledged, unknown, failed


def unreadable_references(table: Table) -> list[str]:
    """Every manifest list, manifest and data file the table's metadata and snapshots name that
    does not exist."""
    missing = []
    for snap in table.metadata.snapshots:
        if not os.path.exists(snap.manifest_list):
            missing.append(snap.manifest_list)
            continue
        for m in avro.load_manifest_list(table.io, snap.manifest_list):
            if not os.path.exists(m.manifest_path):
                missing.append(m.manifest_path)
                continue
            for e in avro.load_manifest(table.io, m):
                if not os.path.exists(e.data_file.file_path):
                    missing.append(e.data_file.file_path)
    return sorted(set(missing))


def run_loaded_round(location: str, writers: int, appends: int, burners: int) -> dict:
    os.makedirs(os.path.join(location, "data"), exist_ok=True)
    Table.create(location, make_metadata(location, 2, **CLEANUP, **PATIENT))
    load = start_burners(burners, seconds=300)
    try:
        with mp.get_context("fork").Pool(writers) as pool:
            jobs = [pool.apply_async(_real_appender, (location, f"w{n}", appends)) for n in range(writers)]
            outcomes = [j.get(timeout=600) for j in jobs]
    finally:
        stop_burners(load)
    acknowledged = [a for o in outcomes for a in o[0]]
    final = Table.load(location)
    snapshot_ids = {s.snapshot_id for s in final.metadata.snapshots}
    live = live_paths(final)
    return {
        "attempted": writers * appends,
        "acknowledged": len(acknowledged),
        "unknown": sum(o[1] for o in outcomes),
        "failed": sum(o[2] for o in outcomes),
        "lost": sorted({p for p, sid in acknowledged if sid not in snapshot_ids or p not in live}),
        "unreadable": unreadable_references(final),
        "duplicates": len(live) - len(set(live)),
    }


def _check_round(figures: dict) -> None:
    print({k: (len(v) if isinstance(v, list) else v) for k, v in figures.items()})
    assert not figures["lost"], f"acknowledged appends lost: {figures['lost'][:5]}"
    assert not figures["unreadable"], f"the table names missing files: {figures['unreadable'][:5]}"
    assert figures["duplicates"] == 0


def test_loaded_writers_with_metadata_cleanup_lose_nothing_and_stay_readable(tmp_path):
    """8 writer processes under CPU load (bounded busy-loop burners), metadata clean-up keeping
    one previous version: every acknowledged snapshot is in the table, and every manifest list,
    manifest and data file it names exists."""
    _check_round(run_loaded_round(str(tmp_path / "t"), writers=8, appends=5, burners=2))


@pytest.mark.slow
def test_thousands_of_loaded_commits_lose_nothing_and_stay_readable(tmp_path):
    """The same, repeated until thousands of commits were attempted."""
    total = {"attempted": 0, "acknowledged": 0, "unknown": 0, "failed": 0, "rounds": 0}
    while total["attempted"] < int(os.environ.get("ICECTL_STRESS_COMMITS", "3000")):
        figures = run_loaded_round(str(tmp_path / f"t{total['rounds']}"), writers=8, appends=50,
                                   burners=4)
        _check_round(figures)
        for k in ("attempted", "acknowledged", "unknown", "failed"):
            total[k] += figures[k]
        total["rounds"] += 1
    print(f"total: {total}")


# -- unknown means keep ---------------------------------------------------------------------------

def _append_with_files(location: str, name: str):
    os.makedirs(os.path.join(location, "data"), exist_ok=True)
    path = os.path.join(location, "data", f"{name}.parquet")
    with open(path, "wb"):
        pass
    return FastAppendProducer(Table.load(location), [(DataFile(DATA, path, "PARQUET", (), 1, 10), "")])


def test_interrupt_after_the_rename_is_commit_state_unknown_and_keeps_every_file(location, monkeypatch):
    """Ctrl-C lands just after the metadata rename: the version is in the table, so nothing the
    commit wrote may be removed - the commit reports its state as unknown instead."""
    from icectl.errors import CommitStateUnknown

    Table.create(location, make_metadata(location, 2, **CLEANUP))
    producer = _append_with_files(location, "a")
    real_rename = FileIO.rename_no_replace

    def rename_then_interrupt(self, src, dst, **kw):
        real_rename(self, src, dst, **kw)
        if "/v2." in dst:
            raise KeyboardInterrupt

    monkeypatch.setattr(FileIO, "rename_no_replace", rename_then_interrupt)
    with pytest.raises(CommitStateUnknown):
        producer.commit()
    monkeypatch.undo()
    final = Table.load(location)
    assert final.version == 2 and len(final.metadata.snapshots) == 1
    assert not unreadable_references(final)  # its manifest list and manifest were kept


def test_undecidable_check_is_commit_state_unknown_and_keeps_every_file(location, monkeypatch):
    """After the rename, the versions that would show whether ours was built on are deleted
    before they can be read (simulated: every newer version reads as missing). Nothing may be
    undone or deleted: unknown, with the manifest list and manifests kept."""
    from icectl.errors import CommitStateUnknown, NotFound

    Table.create(location, make_metadata(location, 2, **CLEANUP))
    producer = _append_with_files(location, "a")
    real_rename = FileIO.rename_no_replace
    real_read = store.read_metadata
    vanish = []

    def rename_then_others_commit(self, src, dst, **kw):
        real_rename(self, src, dst, **kw)
        if dst.endswith("/v2.metadata.json"):
            for i in range(3):
                Table.load(location).commit(_set(**{f"other-{i}": "x"}))
            vanish.append(True)

    def newer_versions_vanish(io, path):
        name = path.rsplit("/", 1)[-1]
        if vanish and name[:1] == "v" and name[1:].split(".")[0].isdigit() and int(name[1:].split(".")[0]) > 2:
            raise NotFound(path)
        return real_read(io, path)

    monkeypatch.setattr(FileIO, "rename_no_replace", rename_then_others_commit)
    monkeypatch.setattr(store, "read_metadata", newer_versions_vanish)
    with pytest.raises(CommitStateUnknown, match="cannot tell"):
        producer.commit()
    monkeypatch.undo()
    final = Table.load(location)
    assert [s.snapshot_id for s in final.metadata.snapshots] == [producer.snapshot_id]
    assert not unreadable_references(final)
