"""Table: load/create, identifiers, and commits that retry when another writer wins."""

from __future__ import annotations

import multiprocessing as mp
import os

import pytest

from icectl.errors import AlreadyExists, CommitConflict, InvalidInput, NotFound, ValidationError
from icectl.io.storage.files import FileIO
from icectl.spec.metadata import with_properties
from icectl.table import store
from icectl.table.table import RetryPolicy, Table, resolve_table_location


def set_props(**props):
    return lambda md: with_properties(md, props)


def test_resolve_table_location():
    assert resolve_table_location("db.t", "/wh") == "/wh/db/t"
    assert resolve_table_location("a.b.t", "file:/wh/") == "file:/wh/a/b/t"
    assert resolve_table_location("/data/t/", "/wh") == "/data/t"
    assert resolve_table_location("file:/data/t", None) == "file:/data/t"
    with pytest.raises(InvalidInput):
        resolve_table_location("t", "/wh")
    with pytest.raises(InvalidInput):
        resolve_table_location("db..t", "/wh")


def test_create_then_load_by_identifier(tmp_path, make_md):
    wh = str(tmp_path / "wh")
    loc = resolve_table_location("db.t", wh)
    t = Table.create(loc, make_md(loc))
    assert t.version == 1 and t.metadata_location.endswith("metadata/v1.metadata.json")
    loaded = Table.load("db.t", warehouse=wh)
    assert loaded.metadata == t.metadata and loaded.version == 1


def test_create_refuses_existing_table_but_accepts_empty_dir(location, make_md):
    os.makedirs(os.path.join(location, "metadata"))
    os.makedirs(os.path.join(location, "data"))
    Table.create(location, make_md(location))
    with pytest.raises(AlreadyExists, match="already exists"):
        Table.create(location, make_md(location))


def test_load_missing_table_names_location(location):
    with pytest.raises(NotFound, match=location):
        Table.load(location)


def test_load_adopts_metadata_spelling_of_local_location(tmp_path, make_md):
    path = str(tmp_path / "t")
    Table.create("file:" + path, make_md("file:" + path))
    t = Table.load(path)
    assert t.location == "file:" + path
    t.commit(set_props(a="1"))
    assert t.metadata.metadata_log[0].metadata_file == f"file:{path}/metadata/v1.metadata.json"


def test_commit_updates_table(location, make_md):
    t = Table.create(location, make_md(location))
    t.commit(set_props(a="1"))
    assert t.version == 2 and t.metadata.properties["a"] == "1"
    same = t.commit(lambda md: md)  # nothing to commit
    assert same.version == 2
    assert sorted(os.listdir(os.path.join(location, "metadata"))) == \
        ["v1.metadata.json", "v2.metadata.json", "version-hint.text"]


def test_lost_race_is_retried_on_top_of_the_winner(location, make_md):
    t = Table.create(location, make_md(location))
    other = Table.load(location)
    calls = []

    def update(md):
        calls.append(md.properties.get("winner"))
        if len(calls) == 1:
            other.commit(set_props(winner="yes"))  # lands between our load and our commit
        return with_properties(md, {"mine": "yes"})

    t.commit(update)
    assert calls == [None, "yes"]  # re-applied on the winner's metadata
    final = Table.load(location)
    assert final.version == 3
    assert final.metadata.properties["winner"] == "yes" and final.metadata.properties["mine"] == "yes"
    assert [os.path.basename(e.metadata_file) for e in final.metadata.metadata_log] == \
        ["v1.metadata.json", "v2.metadata.json"]


def test_validation_error_stops_without_retry(location, make_md):
    t = Table.create(location, make_md(location))
    calls = []

    def update(md):
        calls.append(1)
        raise ValidationError("no")

    with pytest.raises(ValidationError):
        t.commit(update)
    assert calls == [1] and Table.load(location).version == 1


def test_exhausted_retries_raise_conflict_and_leave_no_stray_files(location, make_md):
    t = Table.create(location, make_md(location))
    other = Table.load(location)
    extra_dir = os.path.join(location, "metadata")
    tracked = []

    def update(md, attempt):
        other.commit(set_props(**{f"w{attempt.number}": "x"}))  # always beaten
        path = os.path.join(extra_dir, f"manifest-attempt-{attempt.number}.avro")
        attempt.io.write(path, b"pretend manifest")
        tracked.append(attempt.track(path))
        return with_properties(md, {"never": "lands"})

    with pytest.raises(CommitConflict, match="after 5 attempt"):
        t.commit_transaction(update)
    assert len(tracked) == 5
    winner = Table.load(location)
    assert winner.version == 6 and "never" not in winner.metadata.properties
    assert sorted(os.listdir(extra_dir)) == [f"v{i}.metadata.json" for i in range(1, 7)] + ["version-hint.text"]
    assert t.version == 6  # the handle shows the winner's state


def test_success_deletes_files_of_lost_attempts_only(location, make_md):
    t = Table.create(location, make_md(location))
    other = Table.load(location)
    mdir = os.path.join(location, "metadata")

    def update(md, attempt):
        if attempt.number == 1:
            other.commit(set_props(w="1"))
        path = os.path.join(mdir, f"m{attempt.number}.avro")
        attempt.io.write(path, b"m")
        attempt.track(path)
        return with_properties(md, {"mine": "1"})

    t.commit_transaction(update)
    assert not os.path.exists(os.path.join(mdir, "m1.avro"))
    assert os.path.exists(os.path.join(mdir, "m2.avro"))


def test_retry_policy_from_properties_and_backoff(location, make_md):
    md = make_md(location, **{"commit.retry.num-retries": "2", "commit.retry.min-wait-ms": "100",
                              "commit.retry.max-wait-ms": "300"})
    p = RetryPolicy.from_metadata(md)
    assert (p.num_retries, p.min_wait_ms, p.max_wait_ms, p.total_timeout_ms) == (2, 100, 300, 1_800_000)
    for attempt, base in [(1, 100), (2, 200), (3, 300), (4, 300)]:
        assert base <= p.delay_ms(attempt) <= base * 1.1
    defaults = RetryPolicy()
    assert (defaults.num_retries, defaults.min_wait_ms, defaults.max_wait_ms) == (4, 100, 60_000)


# -- two writer processes ----------------------------------------------------------------------

COMMITS_PER_WRITER = 25


def _writer(location: str, name: str) -> int:
    t = Table.load(location)
    for i in range(COMMITS_PER_WRITER):
        t.commit(set_props(**{f"{name}-{i}": str(i)}))
    return t.version


def test_two_processes_never_overwrite_each_other(location, make_md):
    Table.create(location, make_md(location, **{"commit.retry.num-retries": "1000",
                                                "commit.retry.min-wait-ms": "0",
                                                "commit.retry.max-wait-ms": "2",
                                                "write.metadata.previous-versions-max": "1000"}))
    ctx = mp.get_context("fork")
    with ctx.Pool(2) as pool:
        results = [pool.apply_async(_writer, (location, n)) for n in ("a", "b")]
        [r.get(timeout=120) for r in results]
    final = Table.load(location)
    expected = {f"{n}-{i}" for n in ("a", "b") for i in range(COMMITS_PER_WRITER)}
    assert expected <= set(final.metadata.properties)
    total = 1 + 2 * COMMITS_PER_WRITER
    assert final.version == total
    names = sorted(os.listdir(os.path.join(location, "metadata")))
    assert names == sorted([f"v{i}.metadata.json" for i in range(1, total + 1)] + ["version-hint.text"])
    # each version builds on the one before: its log ends with its predecessor
    io = FileIO()
    for v in range(2, total + 1):
        md = store.read_metadata(io, os.path.join(location, "metadata", f"v{v}.metadata.json"))
        assert md.metadata_log[-1].metadata_file.endswith(f"/v{v - 1}.metadata.json")
        assert len(md.metadata_log) == v - 1
