"""The commit primitive on S3 (moto's server): a conditional create that a second writer loses,
unknown outcomes settled by reading back (never by deleting), version discovery that treats
version-hint.text as a hint, and the probe that proves the store honours the condition."""

from __future__ import annotations

import json
import os

import pytest

from icectl.errors import CommitStateUnknown, StorageError, UnsafeStorage
from icectl.io import objectstore
from icectl.io.files import DestinationExists, FileIO
from icectl.table import store
from icectl.table.store import VersionConflict


def _io(s3, **extra) -> FileIO:
    return FileIO(s3.options(**extra))


class _Recording(FileIO):
    """A FileIO whose conditional PUT fails as scripted, recording every delete."""

    def __init__(self, options, script):
        super().__init__(options)
        self.script = list(script)  # per attempt: "ok", "put-then-reset", "reset", "exists"
        self.deleted: list[str] = []

    def _put_if_absent(self, fs, p, path, data):
        step = self.script.pop(0) if self.script else "ok"
        if step == "reset":
            raise ConnectionResetError("connection reset by peer")
        if step == "timeout-after-put":
            super()._put_if_absent(fs, p, path, data)
            raise TimeoutError("read timed out")
        if step == "client-retry":  # the first PUT landed, the client's retry is refused
            super()._put_if_absent(fs, p, path, data)
            super()._put_if_absent(fs, p, path, data)
        super()._put_if_absent(fs, p, path, data)

    def delete(self, path, missing_ok=True):
        self.deleted.append(path)
        super().delete(path, missing_ok)


def test_the_second_create_loses_and_leaves_the_first(s3) -> None:
    b = s3.new_bucket()
    io = _io(s3)
    io.create_if_absent(f"s3://{b}/t/metadata/v1.metadata.json", b"one")
    with pytest.raises(DestinationExists):
        io.create_if_absent(f"s3://{b}/t/metadata/v1.metadata.json", b"two")
    assert io.read(f"s3://{b}/t/metadata/v1.metadata.json") == b"one"
    # the probe ran once for the bucket, left nothing behind, and was remembered on disk
    assert s3.keys(b) == ["t/metadata/v1.metadata.json"]
    with open(objectstore.answers_file(), encoding="utf-8") as f:
        assert json.load(f)[objectstore.store_key(io.storage_options, f"s3://{b}/x")] is True


@pytest.mark.parametrize("script", [["timeout-after-put"], ["client-retry"], ["reset", "ok"]])
def test_an_unknown_outcome_that_landed_is_ours(s3, script) -> None:
    b = s3.new_bucket()
    FileIO(s3.options()).require_safe_commits(f"s3://{b}/t/x")
    io = _Recording(s3.options(), script)
    io.create_if_absent(f"s3://{b}/t/metadata/v1.metadata.json", b"ours")
    assert io.read(f"s3://{b}/t/metadata/v1.metadata.json") == b"ours"
    assert io.deleted == []


def test_an_unknown_outcome_over_someone_elses_version_is_a_lost_race(s3) -> None:
    b = s3.new_bucket()
    path = f"s3://{b}/t/metadata/v1.metadata.json"
    _io(s3).create_if_absent(path, b"theirs")
    io = _Recording(s3.options(), ["reset"])
    with pytest.raises(DestinationExists):
        io.create_if_absent(path, b"ours")
    assert io.read(path) == b"theirs" and io.deleted == []


def test_an_outcome_nobody_can_tell_is_reported_not_cleaned_up(s3, monkeypatch) -> None:
    b = s3.new_bucket()
    path = f"s3://{b}/t/metadata/v1.metadata.json"
    FileIO(s3.options()).require_safe_commits(path)
    io = _Recording(s3.options(), ["reset"] * 10)
    def unreadable(p):
        raise StorageError(f"cannot read {p}: connection reset")

    monkeypatch.setattr(io, "read", unreadable)
    with pytest.raises(CommitStateUnknown) as e:
        io.create_if_absent(path, b"ours", attempts=2)
    assert "cannot tell whether" in str(e.value) and e.value.exit_code == 12
    assert io.deleted == []


def _create(s3, location: str):
    r = s3.run("create", location, "--schema", "id long, v string")
    return r


def test_two_commits_on_one_base_one_wins(s3) -> None:
    b = s3.new_bucket()
    loc = f"s3://{b}/db/t"
    _create(s3, loc)
    io = _io(s3)
    base = store.load_current(io, loc)
    first = store.commit(io, loc, base, _with_prop(base.metadata, "a", "1"))
    assert first.version == 2
    with pytest.raises(VersionConflict):
        store.commit(io, loc, base, _with_prop(base.metadata, "a", "2"))
    now = store.load_current(io, loc)
    assert now.version == 2 and now.metadata.properties.get("a") == "1"
    assert not [k for k in s3.keys(b) if "probe" in k or k.endswith(".tmp")]


def _with_prop(md, key, value):
    import dataclasses

    return dataclasses.replace(md, properties={**md.properties, key: value})


def test_the_hint_is_only_a_hint(s3) -> None:
    b = s3.new_bucket()
    loc = f"s3://{b}/db/t"
    _create(s3, loc)
    io = _io(s3)
    for i in range(3):
        base = store.load_current(io, loc)
        store.commit(io, loc, base, _with_prop(base.metadata, "n", str(i)))
    assert store.find_current_version(io, loc)[0] == 4
    hint = store.version_hint_path(loc)
    assert io.read(hint) == b"4"
    io.write(hint, b"2")  # stale
    assert store.find_current_version(io, loc)[0] == 4
    io.delete(hint)  # missing
    assert store.find_current_version(io, loc)[0] == 4
    io.write(hint, b"garbage")
    assert store.load_current(io, loc).metadata.properties["n"] == "2"
    # a commit puts the hint back, never lower than the newest version
    base = store.load_current(io, loc)
    store.commit(io, loc, base, _with_prop(base.metadata, "n", "x"))
    assert io.read(hint) == b"5"


def test_a_store_that_ignores_the_condition_is_refused(unsafe_s3) -> None:
    b = unsafe_s3.new_bucket()
    io = FileIO(unsafe_s3.options())
    with pytest.raises(UnsafeStorage) as e:
        io.write(f"s3://{b}/t/data/x.parquet", b"data")
    assert e.value.exit_code == 11 and "If-None-Match" in str(e.value)
    assert unsafe_s3.keys(b) == []  # nothing written, the probe object removed
    # and the answer is not remembered across processes (the store may be fixed)
    with open(objectstore.answers_file(), encoding="utf-8") if os.path.exists(objectstore.answers_file()) \
            else open(os.devnull) as f:
        text = f.read()
    assert unsafe_s3.endpoint not in text
    # opting in by name writes anyway
    FileIO(unsafe_s3.options(**{"icectl.unsafe-commits": "true"})).write(f"s3://{b}/t/x", b"1")
    assert unsafe_s3.keys(b) == ["t/x"]
