"""Commits on a local disk racing a Hadoop-table writer whose rename replaces (Iceberg Java on
``file:``): the writer checked that ``v<N>`` was free before icectl's rename and renames over it
after. The writer here does exactly what Java 1.10.2's HadoopTableOperations does (whole temporary
``<uuid>.metadata.json``, ``exists`` check, then a replacing rename, then the hint), at the moments
the test chooses."""

from __future__ import annotations

import os
import threading
import time
import uuid

import pytest

from icectl.io.storage.files import FileIO
from icectl.spec.metadata import with_previous_metadata, with_properties
from icectl.spec.metadata_json import metadata_to_bytes
from icectl.table import java_renames, store
from icectl.table.table import Table

from conftest import make_metadata


class JavaWriter:
    """A Hadoop-table commit of one property, split at the moment that matters: ``check`` writes
    the temporary file and finds ``v<N>`` free; ``rename`` moves it there, replacing."""

    def __init__(self, location: str, base: Table, key: str = "java"):
        self.location = location
        md = with_properties(base.metadata, {key: "x"})
        md = with_previous_metadata(md, base.metadata_location, base.metadata.last_updated_ms)
        self.data = metadata_to_bytes(md)
        self.version = base.version + 1
        meta = os.path.join(location, "metadata")
        self.temp = os.path.join(meta, f"{uuid.uuid4()}.metadata.json")
        self.final = os.path.join(meta, f"v{self.version}.metadata.json")

    def check(self) -> None:
        with open(self.temp, "wb") as f:
            f.write(self.data)
        assert not os.path.exists(self.final)

    def rename(self) -> None:
        os.rename(self.temp, self.final)  # replaces, as Hadoop's local filesystem does
        with open(os.path.join(self.location, "metadata", "version-hint.text"), "w") as f:
            f.write(str(self.version))


def _race(location: str, monkeypatch: pytest.MonkeyPatch, between=None, delay: float = 0.05) -> JavaWriter:
    """Arrange for a Java writer (built on v1) to check, right before icectl's next rename into
    v2 and after icectl's own checks, that v2 is free, and to rename over it ``delay`` seconds
    after; ``between`` runs right after icectl's rename (the Java rename may come while it runs)."""
    java = JavaWriter(location, Table.load(location))
    real = FileIO.rename_no_replace

    def rename(self: FileIO, src: str, dst: str, **kw: object) -> None:
        first = dst == java.final and not getattr(rename, "done", False)
        if first:
            rename.done = True  # type: ignore[attr-defined]
            java.check()
        real(self, src, dst, **kw)
        if first:
            threading.Timer(delay, java.rename).start()
            if between is not None:
                between()

    monkeypatch.setattr(FileIO, "rename_no_replace", rename)
    return java


def _wait_gone(path: str) -> None:
    deadline = time.monotonic() + 30
    while os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not os.path.exists(path)


def test_commit_replaced_by_a_java_rename_is_retried(location, monkeypatch):
    Table.create(location, make_metadata(location, 2))
    ours = Table.load(location)
    java = _race(location, monkeypatch)
    ours.commit(lambda md: with_properties(md, {"ice": "x"}))
    assert ours.version == 3  # v2 was taken over by the Java writer: retried on top of it
    final = Table.load(location)
    assert final.version == 3 and {"ice", "java"} <= set(final.metadata.properties)
    with open(java.final, "rb") as f:
        assert f.read() == java.data  # the Java writer's version is whole and in the chain
    assert [e.metadata_file.rsplit("/", 1)[-1] for e in final.metadata.metadata_log][-1] == "v2.metadata.json"


def test_without_waiting_the_replaced_commit_is_reported_done_and_lost(location, monkeypatch):
    """The hazard itself, with the wait switched off: the commit returns at v2, then the Java
    rename drops it. (What the wait prevents; not icectl's behaviour.)"""
    Table.create(location, make_metadata(location, 2))
    ours = Table.load(location)
    java = _race(location, monkeypatch)
    monkeypatch.setattr(store, "settle", lambda io, d: None)
    ours.commit(lambda md: with_properties(md, {"ice": "x"}))
    assert ours.version == 2
    _wait_gone(java.temp)
    assert "ice" not in Table.load(location).metadata.properties


def test_no_icectl_writer_builds_on_a_version_about_to_be_replaced(location, monkeypatch):
    """Another icectl writer loads our v2 while a Java writer is about to replace it: before its
    own rename it waits for the Java writer, finds its base replaced and retries on Java's v2; our
    commit finds v2 replaced and nothing built on it, and retries too. All three changes stay."""
    Table.create(location, make_metadata(location, 2))
    ours = Table.load(location)
    other: list[Table] = []

    def other_commit() -> None:
        t = Table.load(location)
        assert t.version == 2  # ours, before the replacement
        threading.Thread(target=lambda: (t.commit(lambda md: with_properties(md, {"other": "x"})),
                                         other.append(t))).start()

    _race(location, monkeypatch, between=other_commit, delay=1.0)
    ours.commit(lambda md: with_properties(md, {"ice": "x"}))
    deadline = time.monotonic() + 30
    while not other and time.monotonic() < deadline:
        time.sleep(0.01)
    assert other and {ours.version, other[0].version} == {3, 4}
    final = Table.load(location)
    assert final.version == 4 and {"ice", "other", "java"} <= set(final.metadata.properties)


def test_commit_a_java_writer_built_on_before_the_replacement_counts_once(location, monkeypatch):
    """A Java writer committed v3 on our v2 before another Java writer replaced v2 (Java's own
    window: no icectl wait is involved): our commit is in the table through v3 and must not be
    applied a second time. The replacing Java commit is the one lost."""
    Table.create(location, make_metadata(location, 2))
    ours = Table.load(location)
    applied = []

    def java_builds_on_ours() -> None:
        y = JavaWriter(location, Table.load(location), key="java-y")
        y.check()
        y.rename()

    _race(location, monkeypatch, between=java_builds_on_ours, delay=1.0)

    def update(md):
        applied.append(1)
        return with_properties(md, {"ice": "x"})

    ours.commit(update)
    assert ours.version == 2 and len(applied) == 1
    final = Table.load(location)
    assert final.version == 3 and {"ice", "java-y"} <= set(final.metadata.properties)
    assert "java" not in final.metadata.properties


def test_leftover_temporary_files_do_not_hold_commits(location, monkeypatch):
    """A crashed Java writer's old temporary file is ignored; a recent one that never changes
    holds a commit only until it counts as abandoned; icectl's own temporary names never match."""
    Table.create(location, make_metadata(location, 2))
    meta = os.path.join(location, "metadata")
    old = os.path.join(meta, f"{uuid.uuid4()}.metadata.json")
    with open(old, "wb") as f:
        f.write(b"{}")
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    assert java_renames.pending_java_renames(FileIO(), meta) == {}
    assert not java_renames._JAVA_TEMP.match(java_renames.temp_metadata_name(".metadata.json"))
    assert not java_renames._JAVA_TEMP.match(java_renames.temp_metadata_name(".gz.metadata.json"))

    recent = os.path.join(meta, f"{uuid.uuid4()}.gz.metadata.json")
    with open(recent, "wb") as f:
        f.write(b"{}")
    monkeypatch.setattr(java_renames, "ABANDONED_AFTER_S", 0.3)
    began = time.monotonic()
    Table.load(location).commit(lambda md: with_properties(md, {"a": "x"}))
    waited = time.monotonic() - began
    assert 0.25 <= waited < 5
    assert Table.load(location).version == 2


def test_a_temporary_file_still_being_written_is_waited_for(location, monkeypatch):
    """A Java writer writing a large metadata file slowly: its file changes, so it is not taken
    for abandoned; the commit waits until the writer removes it (its check failed: v2 exists).
    The commit's waiting runs on a clock of the test's own: each pause of the commit moves the
    clock on and lets the writer write once more (and touch its file at that time), and after
    twice the abandonment threshold the writer removes its file - so what is checked is the
    order of events, whatever the machine's load."""
    Table.create(location, make_metadata(location, 2))
    monkeypatch.setattr(java_renames, "ABANDONED_AFTER_S", 0.5)
    temp = os.path.join(location, "metadata", f"{uuid.uuid4()}.metadata.json")
    began = time.time()
    clock = {"now": began, "pauses": 0}
    events: list[str] = []

    def touch() -> None:
        with open(temp, "ab") as f:
            f.write(b" " * 10)
        os.utime(temp, (clock["now"], clock["now"]))

    def pause(seconds: float) -> None:  # one poll of the commit: the Java writer writes on
        clock["now"] += seconds
        clock["pauses"] += 1
        if not os.path.exists(temp):
            return
        if clock["now"] - began >= 2 * java_renames.ABANDONED_AFTER_S:
            os.unlink(temp)
            events.append("writer done")
        else:
            touch()

    fake_time = type("FakeTime", (), {"time": staticmethod(lambda: clock["now"]),
                                      "sleep": staticmethod(pause),
                                      "monotonic": staticmethod(lambda: clock["now"])})
    monkeypatch.setattr(java_renames, "time", fake_time)
    touch()
    Table.load(location).commit(lambda md: with_properties(md, {"a": "x"}))
    events.append("committed")
    assert events == ["writer done", "committed"]  # it waited for the writer, well past the threshold
    assert clock["now"] - began >= 2 * java_renames.ABANDONED_AFTER_S and clock["pauses"] > 10
    assert Table.load(location).version == 2
