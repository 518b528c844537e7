"""The commit primitive on each object store (S3, GCS, Azure; their emulators, see conftest.py):
a conditional create that a second writer loses (also eight writers racing for one name:
exactly one wins), unknown outcomes settled by reading back (never by deleting), version
discovery that treats version-hint.text as a hint, and the probe that proves the store honours
the condition."""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor

import pytest

from icectl.errors import CommitStateUnknown, StorageError, UnsafeStorage
from icectl.io.storage import objectstore
from icectl.io.storage.files import DestinationExists, FileIO
from icectl.io.storage.fsspec_store import FsspecStorage
from icectl.table import store as table_store
from icectl.table.store import VersionConflict


def _io(store, **extra) -> FileIO:
    return FileIO(store.options(**extra))


class _RecordingStore(FsspecStorage):
    """The fsspec store whose conditional PUT fails as scripted, recording every delete."""

    def __init__(self, scheme, options, script, deleted):
        super().__init__(scheme, options)
        self.script = script  # per attempt: "ok", "put-then-reset", "reset", "exists"
        self.deleted = deleted

    def put_if_absent(self, path, data):
        step = self.script.pop(0) if self.script else "ok"
        if step == "reset":
            raise ConnectionResetError("connection reset by peer")
        if step == "timeout-after-put":
            super().put_if_absent(path, data)
            raise TimeoutError("read timed out")
        if step == "client-retry":  # the first PUT landed, the client's retry is refused
            super().put_if_absent(path, data)
            super().put_if_absent(path, data)
        super().put_if_absent(path, data)

    def delete(self, path, missing_ok=True):
        self.deleted.append(path)
        super().delete(path, missing_ok)


class _Recording(FileIO):
    """A FileIO whose store's conditional PUT fails as scripted, recording every delete
    (the FileIO's and the store's own)."""

    def __init__(self, options, script):
        super().__init__(options)
        self.script = list(script)
        self.deleted: list[str] = []
        self._recording: dict[str, _RecordingStore] = {}

    def storage(self, path):
        scheme = path.split("://", 1)[0]
        if scheme not in self._recording:
            self._recording[scheme] = _RecordingStore(scheme, self.storage_options, self.script, self.deleted)
        return self._recording[scheme]


def test_the_second_create_loses_and_leaves_the_first(store) -> None:
    b = store.new_bucket()
    io = _io(store)
    io.create_if_absent(f"{store.scheme}://{b}/t/metadata/v1.metadata.json", b"one")
    with pytest.raises(DestinationExists):
        io.create_if_absent(f"{store.scheme}://{b}/t/metadata/v1.metadata.json", b"two")
    assert io.read(f"{store.scheme}://{b}/t/metadata/v1.metadata.json") == b"one"
    # the probe ran once for the bucket, left nothing behind, and was remembered on disk
    assert store.keys(b) == ["t/metadata/v1.metadata.json"]
    with open(objectstore.answers_file(), encoding="utf-8") as f:
        assert json.load(f)[objectstore.store_key(io.storage_options, f"{store.scheme}://{b}/x")] is True


def test_eight_creates_of_one_name_exactly_one_wins(store) -> None:
    """The proof that the emulator honours the condition the commit relies on: eight writers
    (threads, each its own filesystem client) create one name at once, ten times over."""
    b = store.new_bucket()
    FileIO(store.options()).require_safe_commits(f"{store.scheme}://{b}/t/x")
    ios = [FileIO(store.options(skip_instance_cache=True)) for _ in range(8)]
    for round_ in range(10):
        path = f"{store.scheme}://{b}/t/metadata/v{round_}.metadata.json"

        def create(w: int) -> bytes | None:
            io = ios[w]
            try:
                io.create_if_absent(path, b"writer %d" % w)
                return b"writer %d" % w
            except DestinationExists:
                return None

        with ThreadPoolExecutor(8) as pool:
            won = [x for x in pool.map(create, range(8)) if x is not None]
        assert len(won) == 1, (round_, won)
        assert _io(store).read(path) == won[0]


@pytest.mark.parametrize("script", [["timeout-after-put"], ["client-retry"], ["reset", "ok"]])
def test_an_unknown_outcome_that_landed_is_ours(store, script) -> None:
    b = store.new_bucket()
    FileIO(store.options()).require_safe_commits(f"{store.scheme}://{b}/t/x")
    io = _Recording(store.options(), script)
    io.create_if_absent(f"{store.scheme}://{b}/t/metadata/v1.metadata.json", b"ours")
    assert io.read(f"{store.scheme}://{b}/t/metadata/v1.metadata.json") == b"ours"
    assert io.deleted == []


def test_an_unknown_outcome_over_someone_elses_version_is_a_lost_race(store) -> None:
    b = store.new_bucket()
    path = f"{store.scheme}://{b}/t/metadata/v1.metadata.json"
    _io(store).create_if_absent(path, b"theirs")
    io = _Recording(store.options(), ["reset"])
    with pytest.raises(DestinationExists):
        io.create_if_absent(path, b"ours")
    assert io.read(path) == b"theirs" and io.deleted == []


def test_an_outcome_nobody_can_tell_is_reported_not_cleaned_up(store, monkeypatch) -> None:
    b = store.new_bucket()
    path = f"{store.scheme}://{b}/t/metadata/v1.metadata.json"
    FileIO(store.options()).require_safe_commits(path)
    io = _Recording(store.options(), ["reset"] * 10)
    def unreadable(p):
        raise StorageError(f"cannot read {p}: connection reset")

    monkeypatch.setattr(io.storage(path), "read", unreadable)  # (the store reads back)
    with pytest.raises(CommitStateUnknown) as e:
        io.create_if_absent(path, b"ours", attempts=2)
    assert "cannot tell whether" in str(e.value) and e.value.exit_code == 12
    assert io.deleted == []


def _create(store, location: str):
    r = store.run("create", location, "--schema", "id long, v string")
    return r


def test_two_commits_on_one_base_one_wins(store) -> None:
    b = store.new_bucket()
    loc = f"{store.scheme}://{b}/db/t"
    _create(store, loc)
    io = _io(store)
    base = table_store.load_current(io, loc)
    first = table_store.commit(io, loc, base, _with_prop(base.metadata, "a", "1"))
    assert first.version == 2
    with pytest.raises(VersionConflict):
        table_store.commit(io, loc, base, _with_prop(base.metadata, "a", "2"))
    now = table_store.load_current(io, loc)
    assert now.version == 2 and now.metadata.properties.get("a") == "1"
    assert not [k for k in store.keys(b) if "probe" in k or k.endswith(".tmp")]


def _with_prop(md, key, value):
    import dataclasses

    return dataclasses.replace(md, properties={**md.properties, key: value})


def test_the_hint_is_only_a_hint(store) -> None:
    b = store.new_bucket()
    loc = f"{store.scheme}://{b}/db/t"
    _create(store, loc)
    io = _io(store)
    for i in range(3):
        base = table_store.load_current(io, loc)
        table_store.commit(io, loc, base, _with_prop(base.metadata, "n", str(i)))
    assert table_store.find_current_version(io, loc)[0] == 4
    hint = table_store.version_hint_path(loc)
    assert io.read(hint) == b"4"
    io.write(hint, b"2")  # stale
    assert table_store.find_current_version(io, loc)[0] == 4
    io.delete(hint)  # missing
    assert table_store.find_current_version(io, loc)[0] == 4
    io.write(hint, b"garbage")
    assert table_store.load_current(io, loc).metadata.properties["n"] == "2"
    # a commit puts the hint back, never lower than the newest version
    base = table_store.load_current(io, loc)
    table_store.commit(io, loc, base, _with_prop(base.metadata, "n", "x"))
    assert io.read(hint) == b"5"


def test_a_store_that_ignores_the_condition_is_refused(unsafe_store) -> None:
    b = unsafe_store.new_bucket()
    io = FileIO(unsafe_store.options())
    with pytest.raises(UnsafeStorage) as e:
        io.write(f"{unsafe_store.scheme}://{b}/t/data/x.parquet", b"data")
    assert e.value.exit_code == 11 and "conditional creates" in str(e.value)
    assert ("ifGenerationMatch" if unsafe_store.kind == "gcs" else "If-None-Match") in str(e.value)
    assert unsafe_store.keys(b) == []  # nothing written, the probe object removed
    # and the answer is not remembered across processes (the store may be fixed)
    with open(objectstore.answers_file(), encoding="utf-8") if os.path.exists(objectstore.answers_file()) \
            else open(os.devnull) as f:
        text = f.read()
    assert unsafe_store.endpoint not in text
    # opting in by name writes anyway
    FileIO(unsafe_store.options(**{"icectl.unsafe-commits": "true"})).write(f"{unsafe_store.scheme}://{b}/t/x", b"1")
    assert unsafe_store.keys(b) == ["t/x"]


def test_deleting_a_missing_object_is_not_an_error(store) -> None:
    """S3 answers a DELETE of a missing key 204, GCS and Azure 404: icectl's delete treats them
    alike (expire's pending record is deleted before it is created; it failed on GCS and Azure
    with "file not found" before)."""
    b = store.new_bucket()
    io = _io(store)
    missing = f"{store.scheme}://{b}/t/metadata/.icectl-expire-x.json"
    io.delete(missing)
    assert io.delete_quietly(missing)
    from icectl.errors import NotFound

    with pytest.raises(NotFound):
        io.delete(missing, missing_ok=False)
    # in batches: present and missing objects mixed, every present one gone, no failure reported
    present = [f"{store.scheme}://{b}/t/data/f{i}.parquet" for i in range(5)]
    for p in present:
        io.write(p, b"x")
    failed = io.delete_many(present[:3] + [missing] + present[3:])
    assert failed == {} and store.keys(b, "t") == []
