"""Upsert and `delete --equality` on a key that does not cover the partition: the rows are
found and their positions deleted (position deletes on v2, deletion vectors on v3), in one row
delta with the upsert's new rows; null keys, duplicate keys, repeated --key options, dry runs,
conflicts on retry."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest

from icectl.errors import CommitConflict, InvalidInput
from icectl.ops.delete import upsert as upsert_mod
from icectl.ops.delete.equality import delete_equality
from icectl.ops.delete.upsert import upsert_rows
from icectl.ops.write.rows import write_rows
from icectl.spec.manifests import EQUALITY_DELETES, POSITION_DELETES
from icectl.table.table import Table

from support.tables import MOR, empty_table
from tests.ops.ops_support import entries as _entries, files_on_disk as _files
from clirun import icectl

DAY = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)


def _events(tmp_path: Path, fv: int) -> tuple[Table, dict[int, tuple]]:
    """A days(ts) table: ids 0..39 over four days (pre-1970 included), one file per day."""
    t = empty_table(tmp_path / "t", "event_id long, ts timestamptz, user_id string, v string",
                    partition="day(ts)", format_version=fv, properties=MOR)
    model = {}
    days = [DAY, DAY + dt.timedelta(days=1), DAY + dt.timedelta(days=2),
            dt.datetime(1969, 12, 31, 12, tzinfo=dt.timezone.utc)]
    ids = list(range(40))
    rows = {"event_id": pa.array(ids, pa.int64()),
            "ts": pa.array([days[i % 4] for i in ids], pa.timestamp("us", "UTC")),
            "user_id": [None if i % 10 == 9 else f"u{i % 5}" for i in ids],
            "v": [f"v{i}" for i in ids]}
    write_rows(t, pa.table(rows))
    for i in ids:
        model[i] = (i, days[i % 4], rows["user_id"][i], f"v{i}")
    return Table.load(t.location), model


def _model_rows(model: dict) -> list[tuple]:
    return sorted(model.values(), key=lambda r: r[0])


def _table_rows(t: Table) -> list[tuple]:
    from icectl.scan.reader import open_scan

    out = []
    for b in open_scan(Table.load(t.location)).batches():
        out += list(zip(*(b.column(i).to_pylist() for i in range(b.num_columns))))
    return sorted(out, key=lambda r: r[0])


def _column(t: Table, name: str) -> list:
    from icectl.scan.reader import open_scan

    return sorted(v for b in open_scan(Table.load(t.location)).batches()
                  for v in b.column(name).to_pylist())


def _contents(t: Table) -> list[int]:
    snap = Table.load(t.location).metadata.current_snapshot()
    return sorted(e.data_file.content for _, e in _entries(t) if e.snapshot_id == snap.snapshot_id
                  and e.status == 1)


@pytest.mark.parametrize("fv", [2, 3])
def test_upsert_by_a_key_outside_the_partition(tmp_path: Path, fv: int) -> None:
    t, model = _events(tmp_path, fv)
    new_ts = DAY + dt.timedelta(days=5)  # an updated row may move to another partition
    up = pa.table({"event_id": pa.array([1, 6, 100], pa.int64()),
                   "ts": pa.array([new_ts] * 3, pa.timestamp("us", "UTC")),
                   "user_id": ["x", "y", "z"], "v": ["n1", "n6", "n100"]})
    r = upsert_rows(t, up, ["event_id"])
    assert r.committed and r.replaced_rows == 2
    assert r.method == ("deletion-vectors" if fv == 3 else "position-deletes")
    assert r.summary["operation"] == "overwrite" and r.summary["added-records"] == "3"
    assert r.equality_delete_files == () and len(r.position_delete_files) == (1 if fv == 3 else 2)
    assert r.summary["added-position-deletes"] == "2"
    if fv == 3:
        assert r.summary["added-dvs"] == "2"
    model.update({1: (1, new_ts, "x", "n1"), 6: (6, new_ts, "y", "n6"),
                  100: (100, new_ts, "z", "n100")})
    assert _table_rows(t) == _model_rows(model)
    assert EQUALITY_DELETES not in _contents(t) and POSITION_DELETES in _contents(t)

    # again, on a row of a file that already has deletes: on v3 its DV is merged and replaced
    r = upsert_rows(Table.load(t.location), pa.table({
        "event_id": pa.array([5], pa.int64()), "ts": pa.array([DAY], pa.timestamp("us", "UTC")),
        "user_id": ["w"], "v": ["n5"]}), "event_id")
    model[5] = (5, DAY, "w", "n5")
    assert r.replaced_rows == 1 and _table_rows(t) == _model_rows(model)
    if fv == 3:
        assert r.summary["removed-dvs"] == "1" and r.summary["added-dvs"] == "1"
        assert r.summary["total-position-deletes"] == "3"


def test_upsert_null_keys_match_nothing_and_are_no_duplicates(tmp_path: Path) -> None:
    t = empty_table(tmp_path / "t", "k string, ts timestamptz, v string", partition="day(ts)",
                    properties=MOR)
    ts = pa.array([DAY] * 3, pa.timestamp("us", "UTC"))
    write_rows(t, pa.table({"k": ["a", None, "b"], "ts": ts, "v": ["1", "2", "3"]}))
    r = upsert_rows(Table.load(t.location), pa.table({
        "k": [None, None, "a"], "ts": ts, "v": ["n1", "n2", "A"]}), "k")
    assert r.replaced_rows == 1  # only 'a'; the existing null-key row stays
    assert _column(t, "v") == ["2", "3", "A", "n1", "n2"]
    # also on the equality path (the key covers the partition): a null key deletes nothing
    u = empty_table(tmp_path / "u" / "t", "k string, v string", properties=MOR)
    write_rows(u, pa.table({"k": ["a", None], "v": ["1", "2"]}))
    r = upsert_rows(Table.load(u.location), pa.table({"k": [None, "a"], "v": ["n", "A"]}), "k")
    assert r.method == "equality-deletes" and r.summary["added-equality-deletes"] == "1"
    assert _column(u, "v") == ["2", "A", "n"]


def test_duplicate_keys_refused_with_nothing_written(tmp_path: Path) -> None:
    t, _ = _events(tmp_path, 2)
    before = _files(t)
    with pytest.raises(InvalidInput, match="more than one row.*event_id=7"):
        upsert_rows(t, pa.table({"event_id": pa.array([7, 7], pa.int64()),
                                 "ts": pa.array([DAY, DAY], pa.timestamp("us", "UTC")),
                                 "user_id": ["a", "b"], "v": ["x", "y"]}), "event_id")
    assert _files(t) == before


@pytest.mark.parametrize("fv", [2, 3])
def test_delete_equality_on_a_key_outside_the_partition(tmp_path: Path, fv: int) -> None:
    t, model = _events(tmp_path, fv)
    keys = tmp_path / "gdpr.csv"
    keys.write_text("user_id,extra\nu1,x\nnobody,y\n\n")
    before = _files(t)
    dry = delete_equality(t, "user_id", str(keys), dry_run=True)
    assert not dry.committed and dry.deleted_rows == 8 and _files(t) == before
    r = delete_equality(t, "user_id", str(keys))
    assert r.committed and r.deleted_rows == 8 and r.summary["operation"] == "delete"
    assert r.method == ("deletion-vectors" if fv == 3 else "position-deletes")
    assert r.summary["added-position-deletes"] == "8"
    model = {k: v for k, v in model.items() if v[2] != "u1"}
    assert _table_rows(t) == _model_rows(model)
    # nulls match nulls, as in an equality delete
    r = delete_equality(Table.load(t.location), ["user_id"], pa.table({"user_id": pa.array([None], pa.string())}))
    assert r.deleted_rows == 4
    model = {k: v for k, v in model.items() if v[2] is not None}
    assert _table_rows(t) == _model_rows(model)
    # keys found nowhere: nothing committed
    r = delete_equality(Table.load(t.location), "user_id", pa.table({"user_id": ["zz"]}))
    assert not r.committed and r.deleted_rows == 0


def test_many_keys_prune_by_bounds_and_multi_column_keys_match_exactly(tmp_path: Path) -> None:
    t, model = _events(tmp_path, 2)
    # 300 keys (above the in-list pruning limit), only 3 of them present
    ids = [3, 17, 38] + list(range(1000, 1297))
    r = delete_equality(t, "event_id", pa.table({"event_id": pa.array(ids, pa.int64())}))
    assert r.deleted_rows == 3
    for i in (3, 17, 38):
        del model[i]
    assert _table_rows(t) == _model_rows(model)
    # a two-column key: each column's values occur, but only one tuple does
    r = delete_equality(Table.load(t.location), ["event_id", "user_id"],
                        pa.table({"event_id": pa.array([0, 1], pa.int64()), "user_id": ["u1", "u1"]}))
    assert r.deleted_rows == 1
    del model[1]
    assert _table_rows(t) == _model_rows(model)


def test_concurrent_append_of_a_matching_key_conflicts(tmp_path: Path, monkeypatch) -> None:
    t, _ = _events(tmp_path, 2)
    real = upsert_mod.find_key_positions

    def racing(table, rows, keys, branch, nulls_match):
        got = real(table, rows, keys, branch, nulls_match)
        write_rows(Table.load(table.location), pa.table({
            "event_id": pa.array([2], pa.int64()), "ts": pa.array([DAY], pa.timestamp("us", "UTC")),
            "user_id": ["late"], "v": ["late"]}))
        return got

    monkeypatch.setattr(upsert_mod, "find_key_positions", racing)
    before = {p for p in _files(t) if "/data/" in p}
    with pytest.raises(CommitConflict, match="serializable"):
        upsert_rows(t, pa.table({"event_id": pa.array([2], pa.int64()),
                                 "ts": pa.array([DAY], pa.timestamp("us", "UTC")),
                                 "user_id": ["n"], "v": ["n"]}), "event_id")
    after = {p for p in _files(Table.load(t.location)) if "/data/" in p}
    assert len(after - before) == 1  # only the racing append's file; the upsert's are removed


def _cli(*args: str) -> subprocess.CompletedProcess:
    return icectl(*args)



def test_cli_repeated_keys_add_up_and_a_file_without_the_key_column(tmp_path: Path) -> None:
    t, model = _events(tmp_path, 2)
    data = tmp_path / "up.jsonl"
    data.write_text(json.dumps({"event_id": 4, "ts": "2024-01-01T00:00:00+00:00",
                                "user_id": "q", "v": "n4"}) + "\n")
    p = _cli("upsert", t.location, str(data), "--key", "event_id", "--key", "ts", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["key-columns"] == ["event_id", "ts"] and out["method"] == "equality-deletes"
    assert out["replaced-rows"] is None
    p = _cli("upsert", t.location, str(data), "--key", "event_id,user_id", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["key-columns"] == ["event_id", "user_id"] and out["method"] == "position-deletes"
    assert out["replaced-rows"] == 1
    nokey = tmp_path / "nokey.csv"
    nokey.write_text("other\n1\n")
    p = _cli("delete", t.location, "--equality", "event_id", "--from", str(nokey))
    assert p.returncode == 2 and "has no column 'event_id'" in p.stderr, p.stderr
    p = _cli("delete", t.location, "--equality", "user_id", "--from", str(nokey))
    assert p.returncode == 2 and "has no column 'user_id'" in p.stderr, p.stderr


def test_float_keys_match_as_equality_deletes_compare(tmp_path: Path) -> None:
    """NaN equals NaN, -0.0 differs from 0.0 (Java's Double.compare), on the position path too."""
    t = empty_table(tmp_path / "t", "x double, ts timestamptz, v string", partition="day(ts)",
                    properties=MOR)
    ts = pa.array([DAY] * 5, pa.timestamp("us", "UTC"))
    write_rows(t, pa.table({"x": pa.array([float("nan"), 0.0, -0.0, 1.5, None], pa.float64()),
                            "ts": ts, "v": ["nan", "zero", "negzero", "one", "null"]}))
    r = delete_equality(Table.load(t.location), "x",
                        pa.table({"x": pa.array([float("nan"), -0.0], pa.float64())}))
    assert r.method == "position-deletes" and r.deleted_rows == 2
    assert _column(t, "v") == ["null", "one", "zero"]


def test_json_keys_without_a_required_key_column_say_so(tmp_path: Path) -> None:
    """The JSON reader fills a field no row has with nulls; the error names the missing column
    instead of complaining about nulls in a required column."""
    t = empty_table(tmp_path / "t", "id long not null, v string", properties=MOR)
    write_rows(t, pa.table({"id": pa.array([1], pa.int64()), "v": ["a"]}))
    keys = tmp_path / "keys.jsonl"
    keys.write_text('{"other": 1}\n')
    for args in (["delete", t.location, "--equality", "id", "--from", str(keys)],
                 ["upsert", t.location, str(keys), "--key", "id"]):
        p = _cli(*args)
        assert p.returncode == 2, p.stderr
        assert "no values for key column 'id'" in p.stderr and "missing" in p.stderr, p.stderr
        assert len(p.stderr.strip().splitlines()) == 1


def test_files_are_pruned_by_the_keys_in_sets_and_bounds(tmp_path: Path) -> None:
    from icectl.ops.delete.equality import resolve_keys
    from icectl.ops.delete.keyed import find_key_positions

    t = empty_table(tmp_path / "t", "event_id long, ts timestamptz", partition="day(ts)",
                    properties=MOR)
    for k in range(4):  # four files of one partition, ids k*100 .. k*100+49
        write_rows(Table.load(t.location), pa.table({
            "event_id": pa.array(range(k * 100, k * 100 + 50), pa.int64()),
            "ts": pa.array([DAY] * 50, pa.timestamp("us", "UTC"))}))
    t = Table.load(t.location)
    keys = resolve_keys(t.metadata.schema, "event_id")
    few = find_key_positions(t, pa.table({"event_id": pa.array([105, 120, 170], pa.int64())}),
                             keys, None, nulls_match=False)
    assert len(few.planned) == 1 and few.rows == 2  # one file's bounds hold the keys
    # 300 keys: 'in' no longer prunes, the keys' bounds (205 .. 1299) still do
    many = find_key_positions(t, pa.table({"event_id": pa.array([205] + list(range(1000, 1299)),
                                                                 pa.int64())}),
                              keys, None, nulls_match=False)
    assert len(many.planned) == 2 and many.rows == 1


@pytest.mark.parametrize("fv", [2, 3])
def test_keyed_deletes_on_a_branch_leave_main_alone(tmp_path: Path, fv: int) -> None:
    from icectl.scan.reader import open_scan

    t, model = _events(tmp_path, fv)
    p = _cli("branch", "create", t.location, "dev")
    assert p.returncode == 0, p.stderr
    main_rows = _table_rows(t)
    write_rows(Table.load(t.location), pa.table({  # main moves on; dev must not see it
        "event_id": pa.array([2], pa.int64()), "ts": pa.array([DAY], pa.timestamp("us", "UTC")),
        "user_id": ["main"], "v": ["main"]}))
    main_rows = _table_rows(t)
    r = upsert_rows(Table.load(t.location), pa.table({
        "event_id": pa.array([2], pa.int64()), "ts": pa.array([DAY], pa.timestamp("us", "UTC")),
        "user_id": ["dev"], "v": ["dev"]}), "event_id", branch="dev")
    assert r.replaced_rows == 1  # dev holds event 2 once
    d = delete_equality(Table.load(t.location), "user_id", pa.table({"user_id": ["u3"]}), branch="dev")
    assert d.deleted_rows == 8
    assert _table_rows(t) == main_rows
    scan = open_scan(Table.load(t.location), None, ref="dev")
    got = sorted((r for b in scan.batches() for r in zip(*(c.to_pylist() for c in b.columns))),
                 key=lambda r: r[0])
    model[2] = (2, DAY, "dev", "dev")
    assert got == _model_rows({k: v for k, v in model.items() if v[2] != "u3"})
