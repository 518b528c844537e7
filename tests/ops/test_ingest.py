"""Ingestion that cannot hurt the source or the table: append --copy/--move, skipping by content,
idempotency keys (also on commit retry), quarantine of bad files, rewriting spanning files."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icectl.errors import ValidationError
from icectl.ops.write.append import append_files, content_digest
from icectl.ops.write.rows import write_rows
from icectl.scan.reader import open_scan
from icectl.table.commit.idempotency import IDEMPOTENCY_KEY
from icectl.table.table import Table
from support.tables import empty_table
from clirun import icectl as _icectl


SCHEMA = "id long, cat string, ts timestamptz"


def _file(path: Path, ids, cats, days=None) -> str:
    import datetime as dt

    path.parent.mkdir(parents=True, exist_ok=True)
    days = days if days is not None else [0] * len(ids)
    ts = [dt.datetime(2024, 2, 27, tzinfo=dt.timezone.utc) + dt.timedelta(days=d) for d in days]
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "cat": pa.array(cats, pa.string()),
                             "ts": pa.array(ts, pa.timestamp("us", tz="UTC"))}), path)
    return str(path)


def _ids(table: Table) -> list[int]:
    scan = open_scan(Table.load(table.location))
    return sorted(v for b in scan.batches() for v in b.column(b.schema.get_field_index("id")).to_pylist())


# -- copy and move --------------------------------------------------------------------------------


def test_copy_places_files_in_partition_directories_and_leaves_sources(tmp_path: Path) -> None:
    t = empty_table(tmp_path / "t", SCHEMA, partition="cat, day(ts)")
    a = _file(tmp_path / "in" / "a.parquet", [1, 2], ["x", "x"])
    b = _file(tmp_path / "in" / "b.parquet", [3], [None], days=[-400])
    before = {p: Path(p).read_bytes() for p in (a, b)}
    r = append_files(t, [a, b], placement="copy")
    assert r.committed and [s for s, _ in r.placed] == [a, b]
    data = Path(t.location) / "data"
    targets = [Path(d) for _, d in r.placed]
    assert targets[0].parent == data / "cat=x" / "ts_day=2024-02-27"
    assert targets[1].parent == data / "cat=null" / "ts_day=2023-01-23"
    for (src, dst) in r.placed:
        assert Path(src).read_bytes() == before[src] == Path(dst).read_bytes()
    assert {f["file-path"] for f in r.files} == {str(p) for p in targets}
    os.remove(a), os.remove(b)  # the landing files may go: the table keeps its copies
    assert _ids(t) == [1, 2, 3]


def test_copy_respects_write_data_path(tmp_path: Path) -> None:
    elsewhere = tmp_path / "datafiles"
    t = empty_table(tmp_path / "t", SCHEMA, properties={"write.data.path": str(elsewhere)})
    r = append_files(t, [_file(tmp_path / "in" / "a.parquet", [1], ["x"])], placement="copy")
    assert Path(r.placed[0][1]).parent == elsewhere


def test_move_removes_sources_after_the_commit(tmp_path: Path) -> None:
    t = empty_table(tmp_path / "t", SCHEMA)
    a = _file(tmp_path / "in" / "a.parquet", [1, 2], ["x", "y"])
    r = append_files(t, [a], placement="move")
    assert r.committed and not os.path.exists(a) and os.path.exists(r.placed[0][1])
    assert _ids(t) == [1, 2]


def test_a_failed_copy_append_leaves_nothing_behind(tmp_path: Path) -> None:
    t = empty_table(tmp_path / "t", SCHEMA)
    a = _file(tmp_path / "in" / "a.parquet", [1], ["x"])
    write_rows(t, pa.table({"id": pa.array([9], pa.int64()), "cat": ["z"],
                            "ts": pa.array([None], pa.timestamp("us", tz="UTC"))}))
    before = sorted(p.name for p in (Path(t.location) / "data").rglob("*.parquet"))
    with pytest.raises(ValidationError):
        append_files(t, [a, a.replace("a.parquet", "./a.parquet")], placement="copy")  # given twice
    assert sorted(p.name for p in (Path(t.location) / "data").rglob("*.parquet")) == before
    assert os.path.exists(a)


# -- skip by content ---------------------------------------------------------------------------------


def test_skip_by_content_finds_the_same_bytes_under_another_name(tmp_path: Path) -> None:
    t = empty_table(tmp_path / "t", SCHEMA)
    a = _file(tmp_path / "in" / "a.parquet", [1, 2], ["x", "y"])
    append_files(t, [a], placement="copy")
    renamed = tmp_path / "in" / "again" / "a-renamed.parquet"
    renamed.parent.mkdir()
    renamed.write_bytes(Path(a).read_bytes())
    twin = tmp_path / "in" / "twin.parquet"
    b = _file(tmp_path / "in" / "b.parquet", [3], ["z"])
    twin.write_bytes(Path(b).read_bytes())
    # path comparison does not see it
    r = append_files(Table.load(t.location), [str(renamed), b, str(twin)], skip_existing="content")
    assert r.skipped_files == (str(renamed), str(twin)) and r.added_files == 1
    assert _ids(t) == [1, 2, 3]
    assert content_digest(t.io, str(renamed)) == content_digest(t.io, a)


def test_skip_by_content_commits_nothing_when_all_are_known(tmp_path: Path) -> None:
    t = empty_table(tmp_path / "t", SCHEMA)
    a = _file(tmp_path / "in" / "a.parquet", [1], ["x"])
    append_files(t, [a])
    r = append_files(Table.load(t.location), [a], skip_existing="content")
    assert not r.committed and r.skipped_files == (a,)


# -- idempotency keys -----------------------------------------------------------------------------


def test_a_second_run_with_the_key_commits_nothing(tmp_path: Path) -> None:
    t = empty_table(tmp_path / "t", SCHEMA)
    a = _file(tmp_path / "in" / "a.parquet", [1], ["x"])
    b = _file(tmp_path / "in" / "b.parquet", [2], ["y"])
    r1 = append_files(t, [a], idempotency_key="run-1")
    assert r1.committed and r1.summary[IDEMPOTENCY_KEY] == "run-1"
    append_files(Table.load(t.location), [b])  # another commit on top: the key is an ancestor's
    r2 = append_files(Table.load(t.location), [b], idempotency_key="run-1")
    assert not r2.committed and r2.committed_by == r1.snapshot_id
    assert _ids(t) == [1, 2]
    # a new branch starts from main's head: it has main's history, and so the key
    r3 = append_files(Table.load(t.location), [b], idempotency_key="run-1", branch="audit")
    assert not r3.committed and r3.committed_by == r1.snapshot_id
    c = _file(tmp_path / "in" / "c.parquet", [3], ["z"])
    r4 = append_files(Table.load(t.location), [c], idempotency_key="run-2", branch="audit")
    assert r4.committed and r4.summary[IDEMPOTENCY_KEY] == "run-2"


def test_a_concurrent_writer_with_the_same_key_wins_on_retry(tmp_path: Path) -> None:
    t = empty_table(tmp_path / "t", SCHEMA)
    a = _file(tmp_path / "in" / "a.parquet", [1], ["x"])
    b = _file(tmp_path / "in" / "b.parquet", [2], ["y"])
    stale = Table.load(t.location)  # loaded before the other writer commits
    other = append_files(Table.load(t.location), [a], idempotency_key="k", placement="copy")
    data_before = sorted((Path(t.location) / "data").rglob("*.parquet"))
    r = append_files(stale, [b], idempotency_key="k", placement="copy")
    assert not r.committed and r.committed_by == other.snapshot_id
    assert sorted((Path(t.location) / "data").rglob("*.parquet")) == data_before  # copies removed
    assert _ids(t) == [1]


def test_racing_writers_with_one_key_commit_once(tmp_path: Path) -> None:
    t = empty_table(tmp_path / "t", SCHEMA)
    files = [_file(tmp_path / "in" / f"f{i}.parquet", [i], ["x"]) for i in range(4)]
    results = []
    barrier = threading.Barrier(4)

    def run(i: int) -> None:
        tbl = Table.load(t.location)
        barrier.wait()
        results.append(append_files(tbl, [files[i]], idempotency_key="same"))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert sum(r.committed for r in results) == 1
    assert len(_ids(t)) == 1


def test_write_takes_an_idempotency_key(tmp_path: Path) -> None:
    t = empty_table(tmp_path / "t", SCHEMA)
    csv = tmp_path / "rows.csv"
    csv.write_text("id,cat\n1,a\n2,b\n")
    for _ in range(2):
        r = _icectl("write", t.location, str(csv), "--idempotency-key", "load-1", "--json")
        assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["committed"] is False and "already committed" in r.stderr
    assert _ids(t) == [1, 2]
    assert len(list((Path(t.location) / "data").rglob("*.parquet"))) == 1


# -- quarantine and rewrite ------------------------------------------------------------------------


def test_on_error_skip_quarantines_bad_files_and_commits_the_rest(tmp_path: Path) -> None:
    t = empty_table(tmp_path / "t", SCHEMA, partition="cat")
    good = _file(tmp_path / "in" / "good.parquet", [1, 2], ["x", "x"])
    spans = _file(tmp_path / "in" / "spans.parquet", [3, 4], ["x", "y"])
    corrupt = tmp_path / "in" / "corrupt.parquet"
    corrupt.write_bytes(b"not parquet at all")
    missing = str(tmp_path / "in" / "missing.parquet")
    wrong = tmp_path / "in" / "wrong.parquet"
    pq.write_table(pa.table({"other": [1]}), wrong)
    r = append_files(t, [good, spans, str(corrupt), missing, str(wrong)], on_error="skip", placement="copy")
    assert r.committed and r.partial and r.added_files == 1
    reasons = dict(r.quarantined)
    assert set(reasons) == {spans, str(corrupt), missing, str(wrong)}
    assert "span several partitions" in reasons[spans] and "not found" in reasons[missing]
    assert _ids(t) == [1, 2]
    assert corrupt.exists() and os.path.exists(spans)  # nothing is done to quarantined files
    out = r.to_json()
    assert out["partial"] is True and {q["path"] for q in out["quarantined-files"]} == set(reasons)


def test_rewrite_spanning_writes_partitioned_files(tmp_path: Path) -> None:
    t = empty_table(tmp_path / "t", SCHEMA, partition="cat")
    spans = _file(tmp_path / "in" / "spans.parquet", [3, 4, 5], ["x", "y", None])
    r = append_files(t, [spans], rewrite_spanning=True)
    assert r.committed and r.rewritten == (spans,) and r.added_files == 3
    dirs = sorted(Path(f["file-path"]).parent.name for f in r.files)
    assert dirs == ["cat=null", "cat=x", "cat=y"]
    assert _ids(t) == [3, 4, 5]
    assert os.path.exists(spans)


def test_the_cli_exits_15_when_files_were_quarantined(tmp_path: Path) -> None:
    t = empty_table(tmp_path / "t", SCHEMA)
    good = _file(tmp_path / "in" / "good.parquet", [1], ["x"])
    corrupt = tmp_path / "in" / "corrupt.parquet"
    corrupt.write_bytes(b"garbage")
    r = _icectl("append", t.location, good, str(corrupt), "--on-error", "skip", "--json")
    assert r.returncode == 15, r.stderr
    out = json.loads(r.stdout)
    assert out["committed"] and out["quarantined-files"][0]["path"] == str(corrupt)
    assert "quarantined" in r.stderr
    r = _icectl("append", t.location, str(corrupt))
    assert r.returncode not in (0, 15)
    r = _icectl("append", t.location, good, "--copy", "--move")
    assert r.returncode == 2


def test_skip_existing_and_skip_duplicates_in_the_cli(tmp_path: Path) -> None:
    t = empty_table(tmp_path / "t", SCHEMA)
    a = _file(tmp_path / "in" / "a.parquet", [1], ["x"])
    assert _icectl("append", t.location, a).returncode == 0
    r = _icectl("append", t.location, a, "--skip-existing", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["skipped-files"] == [a]
    copy = tmp_path / "in" / "copy.parquet"
    copy.write_bytes(Path(a).read_bytes())
    r = _icectl("append", t.location, str(copy), "--skip-duplicates", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["skipped-files"] == [str(copy)], r.stderr


def test_upsert_takes_an_idempotency_key(tmp_path: Path) -> None:
    t = empty_table(tmp_path / "t", SCHEMA)
    csv = tmp_path / "rows.csv"
    csv.write_text("id,cat\n1,a\n2,b\n")
    first = _icectl("upsert", t.location, str(csv), "--key", "id", "--idempotency-key", "u-1", "--json")
    assert first.returncode == 0 and json.loads(first.stdout)["committed"], first.stderr
    csv.write_text("id,cat\n1,changed\n")
    again = _icectl("upsert", t.location, str(csv), "--key", "id", "--idempotency-key", "u-1", "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["committed"] is False, again.stderr
    scan = open_scan(Table.load(t.location))
    rows = sorted((r["id"], r["cat"]) for b in scan.batches() for r in b.to_pylist())
    assert rows == [(1, "a"), (2, "b")]
