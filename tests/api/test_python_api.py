"""The public Python API (``import icectl``): the same operations and result objects as the
command line, a cheap import, errors of icectl.errors, filters parsed at the edge."""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from typer.testing import CliRunner

import icectl
from icectl.errors import InvalidInput, NotFound, UnsupportedFeature
from support.tables import empty_table

ROOT = Path(__file__).resolve().parents[2]
MOR = {"write.delete.mode": "merge-on-read"}


def cli(*args: Any) -> Any:
    """``icectl ARGS --json`` run in this process; its JSON output."""
    from icectl.cli.app import app

    r = CliRunner().invoke(app, [str(a) for a in args] + ["--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


ROWS = pa.table({
    "id": pa.array([1, 2, 3, None, 5, 6, -7, 8], pa.int64()),
    "x": pa.array([0.5, float("nan"), -0.0, 1.5, None, 2.5, -3.0, 4.0], pa.float64()),
    "cat": ["a", "a", "b", "b", None, "c", "c", "a"],
    "day": pa.array([dt.date(2024, 1, 1), dt.date(2024, 1, 1), dt.date(1969, 12, 31),
                     dt.date(1969, 12, 31), None, dt.date(2024, 1, 2), dt.date(2024, 1, 2),
                     dt.date(2024, 1, 1)], pa.date32()),
})


@pytest.fixture()
def wh(tmp_path: Path) -> Path:
    empty_table(tmp_path / "wh" / "db" / "t", "id long, x double, cat string, day date", partition="day",
                properties=MOR)
    return tmp_path / "wh"


@pytest.fixture()
def table(wh: Path) -> icectl.Table:
    t = icectl.load_table("db.t", warehouse=str(wh))
    t.write(ROWS)
    return t


def files_under(path: Path) -> set[str]:
    return {str(p) for p in path.rglob("*") if p.is_file()}


# -- the import -----------------------------------------------------------------------------------


def test_import_icectl_loads_nothing_heavy() -> None:
    code = ("import sys, icectl\n"
            "heavy = [m for m in ('pyarrow', 'typer', 'rich', 'fastavro', 'fsspec', 'icectl.api',\n"
            "         'icectl.table', 'icectl.cli') if m in sys.modules]\n"
            "print(heavy)\n"
            "assert icectl.load_table.__module__ == 'icectl.api'\n"
            "import icectl.errors as e\n"
            "assert icectl.InvalidInput is e.InvalidInput and icectl.IcectlError is e.IcectlError\n"
            "assert {'load_table', 'Table', 'NotFound', '__version__'} <= set(dir(icectl))\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       cwd=str(ROOT))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        icectl.nope  # noqa: B018


# -- loading --------------------------------------------------------------------------------------


def test_load_by_location_identifier_and_metadata_file(table: icectl.Table, wh: Path) -> None:
    by_location = icectl.load_table(str(wh / "db" / "t"))
    assert icectl.load_table(wh / "db" / "t").location == by_location.location  # a Path too
    assert icectl.load_table("db.t", warehouse=wh).location == by_location.location
    assert by_location.location == table.location
    assert by_location.current_snapshot_id == table.current_snapshot_id
    current = icectl.load_table(table.metadata_location)  # the current version: the table
    assert current.current_snapshot_id == table.current_snapshot_id
    assert current.scan().count() == ROWS.num_rows
    first = sorted((wh / "db" / "t" / "metadata").glob("v1.metadata.json"))[0]
    pinned = icectl.load_table(str(first))  # an older version: read only
    assert pinned.current_snapshot_id is None and pinned.scan().count() == 0
    before = files_under(wh)
    with pytest.raises(UnsupportedFeature):
        pinned.write(ROWS)  # refused at the commit: the data files it wrote are removed
    assert files_under(wh) == before


def test_load_errors(wh: Path) -> None:
    with pytest.raises(NotFound):
        icectl.load_table("db.missing", warehouse=str(wh))
    with pytest.raises(InvalidInput):
        icectl.load_table("  ")
    with pytest.raises(InvalidInput):
        icectl.load_table("nodots", warehouse=str(wh))


def test_storage_options_reach_the_tables_file_io(wh: Path) -> None:
    t = icectl.load_table("db.t", warehouse=str(wh), storage_options={"anon": True})
    assert t.table.io.storage_options["anon"] is True


# -- plan -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("flt", [None, "day >= '2024-01-01'", "id > 5 or x < 0", "cat is null"])
def test_plan_json_is_the_clis(table: icectl.Table, flt: str | None) -> None:
    args = ["plan", table.location] + (["--filter", flt] if flt else [])
    assert table.plan(flt).to_json() == cli(*args)
    assert table.plan(flt, explain=True, tasks=True).to_json() == cli(*args, "--explain", "--tasks")
    # explaining takes the per-manifest, per-file path; the plain plan the columnar one
    plain, explained = table.plan(flt).to_json(), table.plan(flt, explain=True).to_json()
    assert plain["files"] == explained["files"] and plain["summary"] == explained["summary"]


def test_one_residual_per_partition_value_and_spec(tmp_path: Path) -> None:
    """Files of one manifest sharing a partition value share a residual; the float partition
    values -0.0 and 0.0 (and NaN) keep their own."""
    empty_table(tmp_path / "f", "id long, x double", partition="x")
    t = icectl.load_table(str(tmp_path / "f"))
    t.write(pa.table({"id": pa.array([1, 2, 3, 4], pa.int64()),
                      "x": pa.array([-0.0, 0.0, float("nan"), 1.0], pa.float64())}))
    t.write(pa.table({"id": pa.array([5, 6], pa.int64()), "x": [1.0, 1.0]}))
    for flt in ("x >= 0 and id > 1", "x > -1 or id = 5", "id > 1"):
        plain, explained = t.plan(flt).to_json(), t.plan(flt, explain=True).to_json()
        assert plain["files"] == explained["files"], flt
        assert plain == cli("plan", t.location, "--filter", flt)
    # a manifest of two files of one day (appended together): one residual for the run
    import pyarrow.parquet as pq

    empty_table(tmp_path / "d", "id long, day date", partition="day")
    d = icectl.load_table(str(tmp_path / "d"))
    paths = []
    for i in range(2):
        paths.append(str(tmp_path / "d" / "data" / f"f{i}.parquet"))
        (tmp_path / "d" / "data").mkdir(exist_ok=True)
        pq.write_table(pa.table({"id": pa.array([i, i + 10], pa.int64()),
                                 "day": pa.array([dt.date(1969, 12, 31)] * 2)}), paths[-1])
    d.append(paths, partition={"day": "1969-12-31"})
    for flt in ("id > 5", "day = '1969-12-31' and id < 11", "day < '1970-01-01' or id = 3"):
        plain = d.plan(flt)
        assert any(r.uniform for r in plain.result.file_runs), flt  # (the path under test)
        assert plain.to_json()["files"] == d.plan(flt, explain=True).to_json()["files"], flt
        assert {f.path for f in plain.files} == set(paths)


def test_plan_gives_real_files_and_counts(table: icectl.Table) -> None:
    p = table.plan("day < '1970-01-01'")
    assert p.file_count == len(p.files) == 1
    assert p.record_count == 2
    assert p.files[0].partition == (-1,)  # 1969-12-31: a day before the epoch
    assert p.files[0].path in {f["path"] for f in table.plan().to_json()["files"]}


def test_plan_time_travel(table: icectl.Table) -> None:
    first = table.current_snapshot_id
    first_ms = table.metadata.current_snapshot().timestamp_ms
    table.write(ROWS.slice(0, 2))
    assert table.plan().file_count == 5  # one file per day (a null day too), then one more
    assert table.plan(snapshot_id=first).file_count == 4
    assert table.plan(branch="main").file_count == 5
    assert table.plan(as_of=first_ms).file_count == 4
    as_dt = dt.datetime.fromtimestamp(first_ms / 1000, dt.timezone.utc)
    assert table.plan(as_of=as_dt).to_json()["snapshot-id"] == first
    with pytest.raises(InvalidInput):
        table.plan(ref="main", branch="other")


def test_filter_errors_are_invalid_input_without_flags(table: icectl.Table) -> None:
    for bad in ("id >", "", "   "):
        with pytest.raises(InvalidInput) as e:
            table.plan(bad)
        assert "--" not in str(e.value)
    with pytest.raises(InvalidInput):
        table.scan(42)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        table.delete("")


def test_filter_text_is_parsed_once_at_the_edge(table: icectl.Table, monkeypatch: pytest.MonkeyPatch) -> None:
    import icectl.expr.parser as parser
    import icectl.scan.plan_setup as plan_setup

    calls: list[str] = []
    real = parser.parse_filter

    def counting(text: str) -> Any:
        calls.append(text)
        return real(text)

    monkeypatch.setattr(parser, "parse_filter", counting)
    monkeypatch.setattr(plan_setup, "parse_filter", counting)
    table.plan("id > 5")
    table.scan("id > 5").to_arrow()
    assert calls == ["id > 5", "id > 5"]


# -- scan -----------------------------------------------------------------------------------------


def test_scan_to_arrow_and_batches(table: icectl.Table) -> None:
    got = table.scan().to_arrow()
    assert got.num_rows == ROWS.num_rows
    assert got.schema.names == ["id", "x", "cat", "day"]
    reader = table.scan("id > 1", columns=["id", "cat"]).to_batches()
    assert isinstance(reader, pa.RecordBatchReader)
    rows = reader.read_all()
    assert rows.schema.names == ["id", "cat"]
    assert sorted(rows.column("id").to_pylist()) == [2, 3, 5, 6, 8]  # a null id is never > 1
    assert table.scan().count() == 8
    assert table.scan().to_arrow(limit=3).num_rows == 3


def test_scan_edges_nan_negative_zero_nulls(table: icectl.Table) -> None:
    def ids(flt: str) -> list:
        return sorted(table.scan(flt, columns=["id"]).to_arrow().column("id").to_pylist(),
                      key=lambda v: (v is None, v))

    assert ids("x < 1") == [-7, 1, 3]  # NaN and null never compare; -0.0 < 1
    assert ids("x is nan") == [2]
    assert ids("x is null") == [5]
    assert ids("cat != 'a'") == [-7, 3, 6, None]  # a null cat is not selected (id null is b)
    assert ids("day < '1970-01-01'") == [3, None]


@pytest.mark.parametrize("flt", ["x < 0", "x = 0", "x >= -0.0", "id != 3", "day < '1970-01-01'"])
def test_scan_rows_are_the_clis(table: icectl.Table, flt: str) -> None:
    from icectl.cli.app import app

    r = CliRunner().invoke(app, ["scan", table.location, "--filter", flt, "--columns", "id",
                                 "--format", "jsonl"])
    assert r.exit_code == 0, r.output
    want = sorted((json.loads(line)["id"] for line in r.stdout.splitlines()),
                  key=lambda v: (v is None, v))
    got = sorted(table.scan(flt, columns=["id"]).to_arrow().column("id").to_pylist(),
                 key=lambda v: (v is None, v))
    assert got == want


def test_scan_with_metadata_and_incremental(table: icectl.Table) -> None:
    first = table.current_snapshot_id
    table.write(ROWS.slice(0, 2))
    s = table.scan(with_metadata=True, columns=["id"])
    assert "_file" in s.schema.names and s.to_arrow().num_rows == 10
    assert table.scan(from_snapshot=first).to_arrow().column("id").to_pylist() == [1, 2]
    with pytest.raises(InvalidInput):
        table.scan(to_snapshot=first)
    with pytest.raises(InvalidInput):
        table.plan(to_snapshot=first)
    assert table.plan(from_snapshot=first).file_count == 1
    with pytest.raises(InvalidInput):  # incremental and time travel do not mix
        table.plan(from_snapshot=first, snapshot_id=first)


# -- changes ---------------------------------------------------------------------------------------


def test_delete_json_is_the_clis_and_deletes(table: icectl.Table) -> None:
    dry = table.delete("id in (1, 6)", dry_run=True)
    assert dry.to_json() == cli("delete", table.location, "--filter", "id in (1, 6)", "--dry-run")
    r = table.delete("id in (1, 6)")
    assert r.committed and r.mode == "merge-on-read" and r.deleted_positions == 2
    assert table.current_snapshot_id == r.snapshot_id  # the table object follows its commits
    assert sorted(v for v in table.scan(columns=["id"]).to_arrow().column("id").to_pylist()
                  if v is not None) == [-7, 2, 3, 5, 8]
    cow = table.delete("cat = 'c'", mode="copy-on-write")
    assert cow.mode == "copy-on-write"
    assert table.scan("cat = 'c'").count() == 0


def test_upsert_arrow_rows(table: icectl.Table) -> None:
    r = table.upsert(pa.table({"id": pa.array([2, 100], pa.int64()), "x": [9.0, 1.0],
                               "cat": ["z", "z"], "day": pa.array([dt.date(2024, 1, 1)] * 2)}),
                     on="id")
    j = r.to_json()
    assert j["committed"] and j["key-columns"] == ["id"] and j["rows"] == 2
    got = dict(zip(*table.scan(columns=["id", "cat"]).to_arrow().to_pydict().values()))
    assert got[2] == "z" and got[100] == "z" and len(got) == 9  # null id counted once
    with pytest.raises(InvalidInput):
        table.upsert(ROWS, on=[])


def test_write_refusal_writes_nothing(table: icectl.Table, wh: Path) -> None:
    before = files_under(wh)
    with pytest.raises(NotFound):
        table.write(pa.table({"id": pa.array([1]), "nope": ["x"]}))
    with pytest.raises(InvalidInput):  # text that is not a date
        table.write(pa.table({"id": pa.array([1]), "day": ["not a date"]}))
    with pytest.raises(InvalidInput):
        table.write(ROWS, summary={"operation": "delete"})
    assert files_under(wh) == before


class InProcessEngine:
    """An engine object of the caller's: runs every task here."""

    name = "inline"

    def __init__(self) -> None:
        self.tasks = 0

    def map(self, fn: Any, tasks: Any, *, sizes: Any = None) -> list:
        items = list(tasks)
        self.tasks += len(items)
        return [fn(t) for t in items]


def test_compact_with_an_engine_object_and_expire(table: icectl.Table) -> None:
    for i in range(3):
        table.write(ROWS.slice(i, 1))
    rows = sorted(table.scan(columns=["id"]).to_arrow().column("id").to_pylist(),
                  key=lambda v: (v is None, v))
    eng = InProcessEngine()
    dry = table.compact(engine=eng, min_input_files=2, dry_run=True)
    assert dry.to_json() == cli("compact", table.location, "--min-input-files", "2", "--dry-run")
    r = table.compact(engine=eng, min_input_files=2)
    assert r.committed and eng.tasks > 0
    assert sorted(table.scan(columns=["id"]).to_arrow().column("id").to_pylist(),
                  key=lambda v: (v is None, v)) == rows
    with pytest.raises(InvalidInput):
        table.compact(engine="nope")
    with pytest.raises(InvalidInput):
        table.compact(deletes=True, filter="id > 1")
    e = table.expire(older_than=dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=1),
                     retain_last=1)
    assert len(e.expired_snapshot_ids) == 4  # of 5: four writes and the compaction
    assert table.scan().count() == len(rows)
    assert e.to_json()["expired-snapshot-ids"] == list(e.expired_snapshot_ids)


def test_append_existing_files(table: icectl.Table, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    src = tmp_path / "wh" / "db" / "t" / "data" / "extra.parquet"
    pq.write_table(pa.table({"id": pa.array([42], pa.int64()), "x": [1.0], "cat": ["q"],
                             "day": pa.array([dt.date(2024, 1, 3)])}), src)
    r = table.append(str(src))
    assert r.to_json()["added-files"] == 1
    assert table.scan("id = 42", columns=["cat"]).to_arrow().column("cat").to_pylist() == ["q"]


def test_time_arguments() -> None:
    from icectl.api import time_ms

    assert time_ms(dt.datetime(1969, 12, 31, 23, 59, 59), "t") == -1000  # naive means UTC
    assert time_ms(dt.date(1970, 1, 2), "t") == 86_400_000
    assert time_ms("1970-01-01T00:00:01Z", "t") == 1000
    assert time_ms(5, "t") == 5
    with pytest.raises(InvalidInput):
        time_ms(True, "t")
    with pytest.raises(InvalidInput):
        time_ms(1.5, "t")
    assert not math.isnan(time_ms(dt.timedelta(hours=1), "t"))


def test_one_engine_resolution_for_the_cli_and_the_api() -> None:
    from icectl.cli.common import make_engine
    from icectl.engines import LocalEngine, open_engine

    with open_engine(" LOCAL ", workers=3) as eng:
        assert isinstance(eng, LocalEngine) and eng.workers == 3
    with make_engine("local", 2, None) as eng:
        assert isinstance(eng, LocalEngine) and eng.workers == 2
    mine = InProcessEngine()
    mine.stop = lambda: (_ for _ in ()).throw(AssertionError("the caller's engine was stopped"))
    with open_engine(mine) as eng:
        assert eng.map(lambda t: t * 2, [1, 2]) == [2, 4] and mine.tasks == 2
    for bad, kw in (("nope", {}), ("local", {"master": "local[2]"}), (42, {})):
        with pytest.raises(InvalidInput) as e:
            open_engine(bad, **kw)
        assert "--" not in str(e.value)
    with pytest.raises(InvalidInput, match="--spark-master needs --engine spark"):
        make_engine("local", None, "local[2]")


def test_upsert_and_expire_json_are_the_clis(table: icectl.Table, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    rows = pa.table({"id": pa.array([2, 100], pa.int64()), "x": [9.0, 1.0], "cat": ["z", "z"],
                     "day": pa.array([dt.date(2024, 1, 1)] * 2)})
    path = tmp_path / "rows.parquet"
    pq.write_table(rows, path)
    got = table.upsert(str(path), on=["id"], dry_run=True).to_json()
    assert got == cli("upsert", table.location, path, "--key", "id", "--dry-run")
    table.write(ROWS.slice(0, 1))
    cutoff = "2999-01-01T00:00:00Z"
    got = table.expire(cutoff, retain_last=1, dry_run=True).to_json()
    assert got == cli("expire", table.location, "--older-than", cutoff, "--retain-last", "1",
                      "--dry-run")
    assert len(got["expired-snapshot-ids"]) == 1


@pytest.mark.parametrize("flt", [None, "day >= '2024-01-01' and id > 1", "cat = 'b'"])
def test_plan_to_arrow_lists_the_planned_files(table: icectl.Table, flt: str | None) -> None:
    table.delete("id = 8")  # a position delete file: files with deletes take the per-file path
    table.write(ROWS.slice(0, 2))
    plan = table.plan(flt)
    got = plan.to_arrow()
    want = plan.to_json()["files"]
    assert got.num_rows == plan.file_count == len(want)
    assert got.to_pylist() == [{
        "path": f["path"], "file-format": f["file-format"], "spec-id": f["spec-id"],
        "partition-path": f["partition-path"], "record-count": f["record-count"],
        "file-size-in-bytes": f["file-size-in-bytes"], "residual": f["residual"],
        "delete-files": len(f["delete-files"])} for f in want]


def test_one_rule_one_message_for_the_cli_and_the_api(table: icectl.Table, wh: Path) -> None:
    """The rules both the command line and the API apply are stated once, below them: the API
    raises the library's error naming its argument, and the command line prints the same message
    prefixed by the option that sets that argument, with the same exit code."""
    from clirun import icectl as run_cli

    from icectl.errors import IcectlError

    first = table.current_snapshot_id
    table.write(ROWS.slice(0, 2))
    loc, s = table.location, str(first)
    cases = [  # (the API call, the command line, the option named)
        (lambda: table.scan(to_snapshot=first), ["scan", loc, "--to-snapshot", s], "--from-snapshot"),
        (lambda: table.plan(to_snapshot=first), ["plan", loc, "--to-snapshot", s], "--from-snapshot"),
        (lambda: table.scan(from_snapshot=first, snapshot_id=first),
         ["scan", loc, "--from-snapshot", s, "--snapshot", s], "--from-snapshot"),
        (lambda: table.plan(from_snapshot=first, ref="main"),
         ["plan", loc, "--from-snapshot", s, "--ref", "main"], "--from-snapshot"),
        (lambda: table.plan(" "), ["plan", loc, "--filter", " "], "--filter"),
        (lambda: table.scan(""), ["scan", loc, "--filter", ""], "--filter"),
        (lambda: table.plan("id >"), ["plan", loc, "--filter", "id >"], "--filter"),
        (lambda: table.plan(workers=0), ["plan", loc, "--workers", "0"], "--workers"),
        (lambda: table.scan(columns="id,nope"), ["scan", loc, "--columns", "id,nope"], "--columns"),
        (lambda: table.delete(" "), ["delete", loc, "--filter", " "], "--filter"),
        (lambda: table.compact(filter=""), ["compact", loc, "--filter", ""], "--filter"),
        # the data-compaction options that compacting delete files does not take
        (lambda: table.compact(deletes=True, filter="id > 1"),
         ["compact", loc, "--deletes", "--filter", "id > 1"], "--filter"),
        (lambda: table.compact(deletes=True, strategy="sort"),
         ["compact", loc, "--deletes", "--strategy", "sort"], "--strategy"),
        (lambda: table.compact(deletes=True, sort_order="id"),
         ["compact", loc, "--deletes", "--sort-order", "id"], "--sort-order"),
        (lambda: table.compact(deletes=True, delete_file_threshold=2),
         ["compact", loc, "--deletes", "--delete-file-threshold", "2"], "--delete-file-threshold"),
        (lambda: table.compact(deletes=True, partial_progress=1, strategy="sort"),
         ["compact", loc, "--deletes", "--partial-progress", "1", "--strategy", "sort"],
         "--partial-progress"),
    ]
    before = files_under(wh)
    for call, args, option in cases:
        with pytest.raises(IcectlError) as e:
            call()
        assert e.value.argument is not None and "--" not in str(e.value), args
        # the argument is named as the API names it (a keyword of the call, not an internal name)
        assert not e.value.argument.endswith("_text"), (args, e.value.argument)
        r = run_cli(*args)
        assert r.returncode == e.value.exit_code and r.stdout == "", (args, r.stderr)
        assert r.stderr.splitlines() == [f"icectl: error: {option}: {e.value}"], args
    assert files_under(wh) == before  # refused before anything is written
    # an incremental scan over a snapshot that is not an append: refused the same way by both
    table.delete("id = 1")
    with pytest.raises(UnsupportedFeature) as e:
        table.scan(from_snapshot=first)
    r = run_cli("scan", loc, "--from-snapshot", s)
    assert r.returncode == 9 and r.stderr.splitlines() == [f"icectl: error: {e.value}"]
    assert table.plan(from_snapshot=first).file_count == 1  # a plan lists the appended files
