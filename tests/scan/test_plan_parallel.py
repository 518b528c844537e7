"""Cold planning in worker processes, and the column-wise rendering of plans.

A plan whose manifests are decoded in forked workers is the same plan as one decoded in the
planning process; the column-wise ``--json`` text is byte for byte ``json.dumps`` of the plan
document, and the JSON lines are its ``files`` objects.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from icectl.cli.output import json_default
from icectl.errors import CorruptMetadata
from icectl.io.manifest import cache as manifest_cache
from icectl.io.manifest import columns as manifest_columns
from icectl.io.manifest.columns import clear_cache
from icectl.ops.metadata.create import create_table
from icectl.ops.read.plan import PlanReport, plan_table
from icectl.scan import parallel
from icectl.spec.manifests import MANIFEST_DATA
from icectl.table.table import Table

from tests.scan.plan_support import FILTERS, id_range_file, table_fixture  # noqa: F401 - the `table` fixture
from support.files import commit

@pytest.fixture
def no_disk_cache():
    manifest_cache.set_enabled(False)
    yield
    manifest_cache.set_enabled(True)


def _doc(report: PlanReport) -> str:
    return "".join(report.json_chunks(json_default))


def _plan(t: Table, text: str | None = None, **kw: Any) -> PlanReport:
    clear_cache()
    return plan_table(Table.load(t.location), text, **kw)


@pytest.mark.parametrize("text", FILTERS)
def test_parallel_plan_equals_serial(table, no_disk_cache, monkeypatch, text) -> None:
    calls = []
    real = parallel._parallel
    monkeypatch.setattr(parallel, "_parallel", lambda *a: calls.append(1) or real(*a))
    # earlier tests of the same run may leave idle threads behind, and icectl then (rightly)
    # decodes in-process; the test process forks anyway, as a fresh icectl process would
    import multiprocessing
    monkeypatch.setattr(parallel.command_files, "can_fork",
                        lambda: "fork" in multiprocessing.get_all_start_methods())
    serial = _plan(table, text, workers=1)
    assert not calls
    par = _plan(table, text, workers=2)
    assert calls, "more than a few misses with 2 workers decode in worker processes"
    assert _doc(par) == _doc(serial)
    assert [f.path for f in par.result.files] == [f.path for f in serial.result.files]
    assert par.result.manifests == serial.result.manifests
    assert (par.result.data_files_total, par.result.delete_files_total) == \
        (serial.result.data_files_total, serial.result.delete_files_total)


def test_few_misses_decode_in_process(table, no_disk_cache, monkeypatch) -> None:
    monkeypatch.setattr(parallel, "_parallel", lambda *a: pytest.fail("no pool for few misses"))
    # one day: the manifest list is pruned first, so one data manifest is opened
    r = _plan(table, "ts >= '2024-01-05T00:00:00+00:00' and ts < '2024-01-06T00:00:00+00:00'",
              workers=4)
    assert r.result.manifests_scanned == 1
    assert [f.path.rsplit("/", 1)[1] for f in r.result.files][0].startswith("d4-")


def test_parallel_decoding_fills_the_persistent_cache(table, monkeypatch) -> None:
    manifest_cache.clear()
    par = _plan(table, "id > 3", workers=2)
    assert manifest_cache.info().entries >= 9  # every data manifest (and the delete manifest)

    def no_decode(*a, **k):
        raise AssertionError("a warm plan must not decode")

    monkeypatch.setattr(manifest_columns, "decode_manifest", no_decode)
    warm = _plan(table, "id > 3", workers=2)
    assert _doc(warm) == _doc(par)


def test_worker_errors_reach_the_planner(table, no_disk_cache) -> None:
    t = Table.load(table.location)
    from icectl.io.manifest import records as avro

    ml = avro.load_manifest_list(t.io, t.metadata.current_snapshot().manifest_list, 2)
    data = [m for m in ml if m.content == MANIFEST_DATA]
    victim = data[3].manifest_path
    raw = open(victim, "rb").read()
    with open(victim, "r+b") as f:  # same length, garbage inside the first block
        f.seek(len(raw) // 2)
        f.write(b"\xff" * 64)
    with pytest.raises(CorruptMetadata):
        _plan(table, None, workers=2)
    with pytest.raises(CorruptMetadata):
        _plan(table, None, workers=1)


def test_workers_must_be_positive(table) -> None:
    from icectl.errors import InvalidInput

    with pytest.raises(InvalidInput, match="at least 1"):
        _plan(table, None, workers=0)


@pytest.mark.parametrize("text", FILTERS)
@pytest.mark.parametrize("explain", [False, True])
def test_columnwise_document_is_json_dumps(table, text, explain) -> None:
    r = _plan(table, text, explain=explain)
    expected = json.dumps(r.to_json(), indent=2, ensure_ascii=False, default=json_default)
    assert _doc(r) == expected
    lines = "".join(r.jsonl_chunks(default=json_default)).splitlines()
    files = r.to_json()["files"]
    assert [json.loads(x) for x in lines] == files
    assert lines == [json.dumps(f, ensure_ascii=False) for f in files]


def test_rendering_of_float_and_odd_partitions(tmp_path) -> None:
    loc = str(tmp_path / "f")
    create_table(loc, schema_text="id long, x double, s string", partition_text="x, s",
                 format_version=2)
    t = Table.load(loc)
    parts = [(0.0, "a"), (-0.0, "a"), (float("nan"), "b\n\"q\""), (None, None), (1.5e300, "ü")]
    commit(t, [id_range_file(f"{loc}/data/f{i}.parquet", p, i, i) for i, p in enumerate(parts)])
    r = _plan(t, None)
    expected = json.dumps(r.to_json(), indent=2, ensure_ascii=False, default=json_default)
    assert _doc(r) == expected
    # -0.0 and 0.0 are different partitions, each rendered as itself
    assert '"x": -0.0' in expected and '"x": 0.0' in expected and "NaN" in expected
    assert "".join(r.jsonl_chunks(default=json_default)).count("\n") == 5


def test_empty_plan_and_tasks_document(table) -> None:
    r = _plan(table, "id < 0")
    assert json.loads(_doc(r))["files"] == []
    r = _plan(table, None, tasks=True)
    assert _doc(r) == json.dumps(r.to_json(), indent=2, ensure_ascii=False, default=json_default)
    s = _plan(table, None).summary_json()
    assert s["summary"]["tasks"] == len(r.to_json()["tasks"])
    assert "files" not in s and "tasks" not in s


def test_default_workers_are_the_usable_cores() -> None:
    n = parallel.default_workers()
    assert 1 <= n <= (os.cpu_count() or 1)


def test_cached_entries_unpickle_columns_on_first_use(table) -> None:
    import pickle

    from icectl.io.manifest.columns import load_manifest_columns, pack, unpack

    t = Table.load(table.location)
    from icectl.io.manifest import records as avro

    m = avro.load_manifest_list(t.io, t.metadata.current_snapshot().manifest_list, 2)[0]
    clear_cache()
    cols = load_manifest_columns(t.io, m.manifest_path, m.manifest_length, wanted_stats={1},
                                 added_snapshot_id=m.added_snapshot_id,
                                 sequence_number=m.sequence_number)
    back = unpack(pickle.loads(pickle.dumps(pack(cols), protocol=5)))
    assert back is not None
    assert "file_path" not in back.__dict__ and "status" in back.__dict__
    assert back.status == cols.status and back.stats == cols.stats
    assert back.file_path == cols.file_path and "file_path" in back.__dict__
    assert back == cols  # every lazy column loads and equals the decoded one
    assert unpack(("something else", {}, {})) is None and unpack(cols) is None
    with pytest.raises(AttributeError):
        back.no_such_column


@pytest.mark.parametrize("text", [None, "id >= 3"])
def test_rendering_of_percent_signs_and_plain_runs(tmp_path, text) -> None:
    """Files rendered through one format string per manifest: '%' in paths and partition values
    stays literal, paths that need no escaping are written as they are, and runs of files with
    equal and differing counts render as json.dumps does."""
    loc = str(tmp_path / "p")
    create_table(loc, schema_text="id long, s string", partition_text="s", format_version=2)
    t = Table.load(loc)
    commit(t, [id_range_file(f"{loc}/data/%d-%s-{i}%%.parquet", ("100%s",), i, i + 1, rc=10 + i % 2)
               for i in range(7)])
    commit(t, [id_range_file(f"{loc}/data/plain-{i}.parquet", (f"v{i % 2}",), i, i) for i in range(5)])
    commit(t, [id_range_file(f"{loc}/data/q\"{i}\\.parquet", ("%",), i, i) for i in range(3)])
    r = _plan(t, text)
    expected = json.dumps(r.to_json(), indent=2, ensure_ascii=False, default=json_default)
    assert _doc(r) == expected
    assert '/data/%d-%s-6%%.parquet' in expected and '"100%s"' in expected
    lines = "".join(r.jsonl_chunks(default=json_default)).splitlines()
    assert lines == [json.dumps(f, ensure_ascii=False) for f in r.to_json()["files"]]
    assert len(lines) == (15 if text is None else 7)


@pytest.mark.parametrize("split_size,cost,lookback", [(None, None, None), (700, 300, 2),
                                                      (1500, 1, 1), (64, 4096, 3)])
def test_task_count_is_the_number_of_tasks(table, split_size, cost, lookback) -> None:
    """--summary counts tasks from the split weights alone; the count is len(tasks())."""
    for text in FILTERS:
        r = _plan(table, text, split_size=split_size, open_file_cost=cost, lookback=lookback)
        assert r.result.task_count() == len(r.result.tasks())
    assert len(_plan(table, None, split_size=64).result.tasks()) > 8  # several splits a file


def _data_requests(t: Table, wanted=frozenset()) -> list:
    from icectl.io.manifest import records as avro
    from icectl.io.manifest.columns import manifest_request

    ml = avro.load_manifest_list(t.io, t.metadata.current_snapshot().manifest_list, 2)
    return [manifest_request(m.manifest_path, m.manifest_length, wanted_stats=wanted,
                             nan_stats=frozenset(),  # as a plan asks: no NaN counts of longs
                             added_snapshot_id=m.added_snapshot_id,
                             sequence_number=m.sequence_number)
            for m in ml if m.content == MANIFEST_DATA]


def test_memory_cache_is_bounded_and_keeps_what_it_holds(table, no_disk_cache, monkeypatch) -> None:
    """The in-memory cache keeps a manifest from its second use in a process on (a command that
    plans once holds only what its plan keeps), stops admitting when full (memory does not grow
    with the table), and what it holds stays: a repeated plan finds the same manifests again."""
    monkeypatch.setattr(manifest_columns, "_CACHE_MAX_ENTRIES", 7)  # two manifests of three files
    first = _plan(table, None, workers=1)
    order = [m.path for m in first.result.manifests if m.kept and m.content == "data"]
    assert not {k for k, _ in manifest_columns._CACHE} & set(order), \
        "a process that plans once keeps none of the data manifests in memory"
    plan_table(Table.load(table.location), None, workers=1)  # met again: kept, up to the bound
    assert manifest_columns.cache_info()["entries"] <= 7
    held = [p for p in order if any(p == k for k, _ in manifest_columns._CACHE)]
    assert held and held == order[:len(held)] and len(held) < len(order), \
        "the first manifests a plan meets are the ones kept"
    decoded = []
    real = manifest_columns.decode_manifest
    monkeypatch.setattr(manifest_columns, "decode_manifest",
                        lambda data, **kw: decoded.append(kw["path"]) or real(data, **kw))
    again = plan_table(Table.load(table.location), None, workers=1)  # memory cache as it is
    assert _doc(again) == _doc(first)
    assert set(decoded) == set(order) - set(held)


def test_warm_plan_reads_disk_entries_in_turn(table, monkeypatch) -> None:
    """With the persistent cache warm, a plan reads each entry when it reaches its manifest,
    so it never holds every manifest of the table at once."""
    t = Table.load(table.location)
    manifest_cache.clear()
    cold = _plan(table, "id > 3", workers=1)
    clear_cache()
    reads = []
    real = manifest_cache.get
    monkeypatch.setattr(manifest_cache, "get", lambda key: reads.append(key) or real(key))
    reqs = _data_requests(t, frozenset({1}))
    it = parallel.load_in_order(t.io, reqs, workers=2)
    seen = []
    for cols in it:
        seen.append(cols.path)
        assert len(reads) <= len(seen) + 1, "entries are read in turn, not all first"
    assert seen == [r.path for r in reqs] and len(reads) == len(reqs)
    clear_cache()
    assert _doc(plan_table(Table.load(table.location), "id > 3", workers=2)) == _doc(cold)


def test_entries_lacking_statistics_are_decoded_in_parallel(table, monkeypatch) -> None:
    """After a plan without a filter filled the persistent cache, a plan filtering on a column
    needs statistics the entries lack: they are decoded again, in worker processes, and the
    plan equals a plan without any cache."""
    import multiprocessing
    monkeypatch.setattr(parallel.command_files, "can_fork",
                        lambda: "fork" in multiprocessing.get_all_start_methods())
    manifest_cache.clear()
    _plan(table, None, workers=1)
    calls = []
    real = parallel.command_files.forked_imap
    monkeypatch.setattr(parallel.command_files, "forked_imap",
                        lambda fn, items, n: calls.append(len(items)) or real(fn, items, n))
    widened = _plan(table, "cat >= 'a' or id = 5", workers=2)
    assert calls and calls[0] >= parallel.PARALLEL_MIN_MISSES
    manifest_cache.set_enabled(False)
    try:
        assert _doc(_plan(table, "cat >= 'a' or id = 5", workers=1)) == _doc(widened)
    finally:
        manifest_cache.set_enabled(True)
