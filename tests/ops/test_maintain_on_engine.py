"""expire, orphans and rewrite-manifests with ``engine=`` (their reads, listing and deletions
run as engine tasks: the same task functions Spark runs) give the same result as the
in-process path: the same files deleted, the same metadata after. Each table is built once,
kept aside, and put back at the same location before the second run, so both runs see the same
files and the same paths. The engine here records the task functions it ran and pickles every
task and result, as a process boundary does; one test runs the local engine's worker processes."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import time
from pathlib import Path

import pytest
from expire_history import DAY, History

from icectl.engines import LocalEngine
from icectl.io.manifest import records as avro
from icectl.ops.maintain.expire import expire_snapshots
from icectl.ops.maintain.orphans import delete_orphan_files, find_orphan_files
from icectl.ops.maintain.rewrite_manifests import rewrite_manifests
from icectl.table.table import Table
from support.tables import small_files

T0 = 1_600_000_000_000
OLD = time.time() - 5 * 86400


class Recording:
    """An engine running tasks here, each task and result through pickle; ``ran`` counts the
    task functions by name."""

    name = "recording"
    workers = 3

    def __init__(self) -> None:
        self.ran: dict[str, int] = {}

    def map(self, fn, tasks, *, sizes=None):
        tasks = list(tasks)
        self.ran[fn.__name__] = self.ran.get(fn.__name__, 0) + len(tasks)
        return [pickle.loads(pickle.dumps(fn(pickle.loads(pickle.dumps(t))))) for t in tasks]


@pytest.fixture
def engine():
    return Recording()


def files_under(loc: str) -> list[str]:
    out = []
    for root, _, names in os.walk(loc):
        out += [os.path.relpath(os.path.join(root, n), loc) for n in names]
    return sorted(out)


def metadata_view(loc: str) -> dict:
    t = Table.load(loc)
    with open(t.metadata_location.removeprefix("file:"), encoding="utf-8") as f:
        md = json.load(f)
    md.pop("metadata-log", None)
    return md


def twice(loc: str, run_local, run_engine):
    """Run ``run_local`` on the table, put the table back, run ``run_engine``: both results and
    what each left (files, metadata)."""
    aside = loc + ".aside"
    shutil.copytree(loc, aside, symlinks=True)
    a = run_local()
    left_a, md_a = files_under(loc), metadata_view(loc)
    shutil.rmtree(loc)
    shutil.copytree(aside, loc, symlinks=True)
    b = run_engine()
    return (a, left_a, md_a), (b, files_under(loc), metadata_view(loc))


def rich_history(tmp_path: Path) -> History:
    h = History(str(tmp_path / "t"), start_ms=T0, step_ms=DAY)
    h.append(3)
    first = h.live()
    h.append(2)
    h.delete_rows(first[:1])
    h.overwrite(first[1:2], add=2)
    h.branch("dev")
    h.append(2, branch="dev")
    h.overwrite(first[:1], add=1)
    h.tag("keep", h.md.current_snapshot_id)
    for _ in range(4):
        h.overwrite(h.live()[-1:], add=2)
    h.save()
    return h


def expire_view(r) -> dict:
    out = r.to_json(include_files=True)
    for k in ("manifest-lists-read", "manifests-read", "metadata-files-eligible-for-cleanup"):
        out.pop(k, None)
    return out


@pytest.mark.parametrize("dry_run", [False, True])
def test_expire_on_an_engine_deletes_the_same_files_and_commits_the_same_metadata(tmp_path, engine, dry_run):
    loc = rich_history(tmp_path).location
    now = T0 + 40 * DAY
    kw = dict(older_than_ms=T0 + 9 * DAY, retain_last=1, now=now, dry_run=dry_run)
    (a, left_a, md_a), (b, left_b, md_b) = twice(
        loc, lambda: expire_snapshots(Table.load(loc), **kw),
        lambda: expire_snapshots(Table.load(loc), engine=engine, **kw))
    assert expire_view(a) == expire_view(b)
    assert a.expired_snapshot_ids and (dry_run or a.deleted_total > 5)
    assert left_a == left_b
    assert md_a == md_b
    # the engine read every manifest list and manifest the local path read, and deleted
    assert (a.manifest_lists_read, a.manifests_read) == (b.manifest_lists_read, b.manifests_read)
    assert engine.ran["read_lists_task"] >= 1 and engine.ran["read_live_task"] >= 2
    assert ("delete_task" in engine.ran) == (not dry_run)


def test_expire_on_the_local_engines_processes(tmp_path):
    loc = rich_history(tmp_path).location
    kw = dict(older_than_ms=T0 + 9 * DAY, retain_last=1, now=T0 + 40 * DAY)
    (a, left_a, md_a), (b, left_b, md_b) = twice(
        loc, lambda: expire_snapshots(Table.load(loc), **kw),
        lambda: expire_snapshots(Table.load(loc), engine=LocalEngine(workers=2), **kw))
    assert expire_view(a) == expire_view(b) and left_a == left_b and md_a == md_b


def test_expire_on_an_engine_refuses_a_table_with_a_missing_manifest(tmp_path, engine):
    from icectl.errors import CorruptMetadata

    h = rich_history(tmp_path)
    t = Table.load(h.location)
    m = avro.load_manifest_list(t.io, t.metadata.current_snapshot().manifest_list, 2)[0]
    os.remove(m.manifest_path.removeprefix("file:"))
    before = files_under(h.location)
    with pytest.raises(CorruptMetadata, match="is missing"):
        expire_snapshots(t, older_than_ms=T0 + 9 * DAY, retain_last=1, now=T0 + 40 * DAY, engine=engine)
    assert files_under(h.location) == before


def plant(loc: str) -> None:
    strays = ["data/stray.parquet", "metadata/stray-m0.avro", "data/.hidden.parquet",
              "data/a=1/b=2/c=3/d=4/e=5/deep.parquet", "data/a=1/b=2/c=3/d=4/f.parquet"]
    strays += [f"data/wide/p={i}/s.parquet" for i in range(12)]  # more subdirs than the driver lists
    for rel in strays:
        p = os.path.join(loc, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        Path(p).write_bytes(b"x")
    os.symlink("/tmp", os.path.join(loc, "data", "a=1", "b=2", "c=3", "d=4", "link"))
    for root, _, names in os.walk(loc):
        for n in names:
            p = os.path.join(root, n)
            if not os.path.islink(p):
                os.utime(p, (OLD, OLD))
    young = os.path.join(loc, "data", "wide", "p=3", "young.parquet")
    Path(young).write_bytes(b"y")


@pytest.mark.parametrize("delete", [False, True])
def test_orphans_on_an_engine_find_and_delete_the_same_files(tmp_path, engine, delete):
    loc = rich_history(tmp_path).location
    plant(loc)
    cut = int((time.time() - 2 * 86400) * 1000)

    def run(eng):
        t = Table.load(loc)
        if delete:
            return delete_orphan_files(t, older_than_ms=cut, engine=eng)
        return find_orphan_files(t, older_than_ms=cut, engine=eng)

    (a, left_a, md_a), (b, left_b, md_b) = twice(loc, lambda: run(None), lambda: run(engine))
    assert a.to_json() == b.to_json()
    rel = sorted(os.path.relpath(p.removeprefix("file:"), loc) for p in b.orphan_files)
    assert "data/a=1/b=2/c=3/d=4/e=5/deep.parquet" in rel and "data/wide/p=11/s.parquet" in rel
    assert "data/wide/p=3/young.parquet" not in rel and "data/.hidden.parquet" not in rel
    assert len(b.skipped_links) == 1
    assert left_a == left_b and md_a == md_b
    assert engine.ran["list_task"] >= 2 and engine.ran["read_live_task"] >= 1
    assert ("delete_task" in engine.ran) == delete
    if delete:
        assert b.deleted_count == len(b.orphan_files) > 15
        assert not any(p.endswith("deep.parquet") for p in left_b)


def layout(loc: str) -> list:
    t = Table.load(loc)
    out = []
    for m in avro.load_manifest_list(t.io, t.metadata.current_snapshot().manifest_list, 2):
        out.append((m.content, sorted((e.status, e.data_file.file_path, e.sequence_number,
                                       e.file_sequence_number, e.snapshot_id)
                                      for e in avro.load_manifest(t.io, m))))
    return sorted(out)


def test_rewrite_manifests_on_an_engine_writes_the_same_manifests(tmp_path, engine):
    loc = small_files(tmp_path / "t", 6).location
    (a, _, md_a), (b, _, md_b) = twice(
        loc, lambda: (rewrite_manifests(Table.load(loc), target_size=1 << 20), layout(loc)),
        lambda: (rewrite_manifests(Table.load(loc), target_size=1 << 20, engine=engine), layout(loc)))
    (ra, la), (rb, lb) = a, b
    assert ra.committed and rb.committed
    assert la == lb and len(la) == 1  # six manifests into one
    assert ra.entries_processed == rb.entries_processed == 12
    assert len(ra.rewritten_manifests) == len(rb.rewritten_manifests) == 6
    assert {k: v for k, v in ra.summary.items()} == {k: v for k, v in rb.summary.items()}
    assert engine.ran == {"read_entries_task": 6}  # one task per manifest here (3 slots x 4)
