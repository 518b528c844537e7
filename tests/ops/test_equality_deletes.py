"""`icectl delete --equality` and `icectl upsert`: equality delete files (contents, field ids,
partition scoping, sequence-number rule), the snapshot summaries, and refusals with nothing
written."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icectl.errors import InvalidInput, NotFound, UnsupportedFeature
from icectl.ops.delete.equality import delete_equality
from icectl.ops.delete.upsert import upsert_rows
from icectl.ops.write.rows import write_rows
from icectl.spec.manifests import DATA, EQUALITY_DELETES
from icectl.table.table import Table

from support.tables import MOR, empty_table, with_files
from tests.ops.ops_support import entries as _entries, files_on_disk as _files, rows as _rows
from clirun import icectl


def _cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return icectl(*args, input=stdin)



def _table(tmp_path: Path, partition: str | None = "region", fv: int = 2) -> Table:
    t = empty_table(tmp_path / "t", "id long not null, region string, v string",
                    partition=partition, format_version=fv, properties=MOR)
    return with_files(t, 1, lambda i: {"id": pa.array([1, 2, 3, 4], pa.int64()),
                                        "region": ["eu", "eu", "us", "us"], "v": ["a", "b", "c", "d"]})


@pytest.mark.parametrize("fv", [2, 3])
def test_equality_delete_files_partitioned_like_the_table(tmp_path: Path, fv: int) -> None:
    t = _table(tmp_path, fv=fv)
    keys = tmp_path / "keys.csv"
    keys.write_text("region,id,ignored\neu,1,x\nus,3,y\nus,99,z\n")
    r = delete_equality(t, "id,region", str(keys))
    assert r.committed and r.key_rows == 3 and r.partitions == 2
    s = r.summary
    assert s["operation"] == "delete"
    assert s["added-equality-delete-files"] == "2" and s["added-equality-deletes"] == "3"
    assert s["added-delete-files"] == "2" and s["total-equality-deletes"] == "3"
    assert _rows(t) == [(2, "eu", "b"), (4, "us", "d")]
    t = Table.load(t.location)
    schema = t.metadata.schema
    ids = (schema.find_field("id").field_id, schema.find_field("region").field_id)
    eq = [e.data_file for c, e in _entries(t) if e.data_file.content == EQUALITY_DELETES]
    assert len(eq) == 2
    for f in eq:
        assert f.equality_ids == ids and f.file_format == "PARQUET"
        region = f.partition[0]
        assert f"region={region}" in f.file_path
        data = pq.read_table(f.file_path)
        assert data.column_names == ["id", "region"]
        assert [fl.metadata[b"PARQUET:field_id"] for fl in data.schema] == [str(i).encode() for i in ids]
        assert set(data.column("region").to_pylist()) == {region}
        assert f.lower_bounds and ids[0] in f.lower_bounds and f.value_counts[ids[0]] == f.record_count


def test_unpartitioned_table_gets_one_global_delete_and_nulls_match(tmp_path: Path) -> None:
    t = empty_table(tmp_path / "t", "id long, name string", properties=MOR)
    write_rows(t, pa.table({"id": pa.array([1, 2, None, 4], pa.int64()), "name": ["a", None, "c", "d"]}))
    r = delete_equality(Table.load(t.location), ["id"], pa.table({"id": pa.array([None, 4], pa.int64())}))
    assert len(r.equality_delete_files) == 1 and r.partitions == 1
    assert _rows(t) == [(1, "a"), (2, None)]


def test_rows_added_after_the_delete_survive_it(tmp_path: Path) -> None:
    t = _table(tmp_path)
    delete_equality(t, "id,region", pa.table({"id": pa.array([1], pa.int64()), "region": ["eu"]}))
    write_rows(Table.load(t.location), pa.table({"id": pa.array([1], pa.int64()), "region": ["eu"],
                                                  "v": ["again"]}))
    assert (1, "eu", "again") in _rows(t) and (1, "eu", "a") not in _rows(t)


def test_partition_source_must_be_a_key_and_bad_keys_refused(tmp_path: Path) -> None:
    t = _table(tmp_path)
    before = _files(t)
    one = pa.table({"id": pa.array([1], pa.int64()), "region": ["eu"]})
    # a key without the partition column: the rows are found, their positions deleted
    dry = delete_equality(t, "id", one, dry_run=True)
    assert dry.method == "position-deletes" and dry.deleted_rows == 1 and not dry.committed
    with pytest.raises(NotFound, match="nosuch"):
        delete_equality(t, "id,nosuch", one)
    with pytest.raises(InvalidInput, match="no column 'region'"):
        delete_equality(t, "id,region", pa.table({"id": pa.array([1], pa.int64())}))
    with pytest.raises(InvalidInput, match="twice"):
        delete_equality(t, "id,ID,region", one)
    nested = empty_table(tmp_path / "n" / "t", "id long, loc struct<lat: double, lon: double>",
                         properties=MOR)
    with pytest.raises(InvalidInput, match="'loc' is a struct"):
        delete_equality(nested, "loc", pa.table({"loc": [{"lat": 1.0, "lon": 2.0}]}))
    with pytest.raises(InvalidInput, match="no rows"):
        delete_equality(t, "id,region", one.slice(0, 0))
    assert _files(t) == before


def test_partition_evolution_writes_the_keys_under_every_live_spec(tmp_path: Path) -> None:
    t = empty_table(tmp_path / "t", "id long, region string", properties=MOR)  # spec 0: unpartitioned
    write_rows(t, pa.table({"id": pa.array([1, 2], pa.int64()), "region": ["eu", "us"]}))
    p = _cli("partition", "add", t.location, "region")
    assert p.returncode == 0, p.stderr
    write_rows(Table.load(t.location), pa.table({"id": pa.array([3, 1], pa.int64()), "region": ["eu", "eu"]}))
    r = delete_equality(Table.load(t.location), "id,region",
                        pa.table({"id": pa.array([1], pa.int64()), "region": ["eu"]}))
    # spec 0 (unpartitioned) still has live files: one global delete there reaches every file
    assert len(r.equality_delete_files) == 1
    assert _rows(t) == [(2, "us"), (3, "eu")]


def test_v1_refused(tmp_path: Path) -> None:
    t = empty_table(tmp_path / "t", "id long", format_version=1, properties=MOR)
    with pytest.raises(UnsupportedFeature, match="v2"):
        delete_equality(t, "id", pa.table({"id": pa.array([1], pa.int64())}))
    with pytest.raises(UnsupportedFeature, match="v2"):
        upsert_rows(t, pa.table({"id": pa.array([1], pa.int64())}), "id")


@pytest.mark.parametrize("fv", [2, 3])
def test_upsert_replaces_older_rows_and_keeps_its_own(tmp_path: Path, fv: int) -> None:
    t = _table(tmp_path, fv=fv)
    r = upsert_rows(t, pa.table({"id": pa.array([2, 5], pa.int64()), "region": ["eu", "us"],
                                 "v": ["B", "e"]}), "id,region")
    s = r.summary
    assert s["operation"] == "overwrite" and s["added-data-files"] == "2"
    assert s["added-equality-delete-files"] == "2" and s["added-equality-deletes"] == "2"
    assert s["added-records"] == "2"
    assert _rows(t) == [(1, "eu", "a"), (2, "eu", "B"), (3, "us", "c"), (4, "us", "d"), (5, "us", "e")]
    # the same key again, in a later snapshot: replaced again, exactly once
    upsert_rows(Table.load(t.location), pa.table({"id": pa.array([2], pa.int64()), "region": ["eu"],
                                                  "v": ["BB"]}), "id,region")
    assert _rows(t) == [(1, "eu", "a"), (2, "eu", "BB"), (3, "us", "c"), (4, "us", "d"), (5, "us", "e")]
    snap = Table.load(t.location).metadata.current_snapshot()
    contents = {(e.data_file.content, e.sequence_number) for c, e in _entries(t)
                if e.snapshot_id == snap.snapshot_id}
    assert contents == {(DATA, snap.sequence_number), (EQUALITY_DELETES, snap.sequence_number)}
    if fv == 3:
        assert snap.added_rows == 1


def test_upsert_refuses_duplicate_keys_and_writes_nothing(tmp_path: Path) -> None:
    t = _table(tmp_path)
    before = _files(t)
    with pytest.raises(InvalidInput, match="more than one row.*id=7"):
        upsert_rows(t, pa.table({"id": pa.array([7, 7, 8], pa.int64()), "region": ["eu"] * 3,
                                 "v": ["x", "y", "z"]}), "id,region")
    dry = upsert_rows(t, pa.table({"id": pa.array([1], pa.int64()), "region": ["us"], "v": ["x"]}),
                      "id", dry_run=True)  # the key need not cover the partition
    assert dry.method == "position-deletes" and dry.replaced_rows == 1
    with pytest.raises(InvalidInput, match="no column 'region'"):  # not silently null keys
        upsert_rows(t, pa.table({"id": pa.array([7], pa.int64()), "v": ["x"]}), "id,region")
    assert _files(t) == before


def test_cli_equality_delete_upsert_and_bad_input(tmp_path: Path) -> None:
    t = _table(tmp_path)
    loc = t.location
    keys = tmp_path / "keys.jsonl"
    keys.write_text('{"id": 1, "region": "eu"}\n')
    before = _files(t)
    for args, code, needle in [
        (["--equality", "id,region", "--from", str(tmp_path / "none.csv")], 3, "not found"),
        (["--equality", "id,nosuch", "--from", str(keys)], 3, "nosuch"),
        (["--equality", "id", "--from", str(keys), "--mode", "copy-on-write"], 2, "merge-on-read only"),
        (["--equality", "id,region"], 2, "--from"),
        (["--equality", "id,region", "--from", str(keys), "--filter", "id = 1"], 2, "combined"),
        ([], 2, "--filter"),
    ]:
        p = _cli("delete", loc, *args)
        assert p.returncode == code, (args, p.stderr)
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and needle in lines[0] and "Traceback" not in p.stderr, (args, p.stderr)
        assert p.stdout == ""
    nokey = tmp_path / "nokey.csv"
    nokey.write_text("id\n1\n")
    p = _cli("delete", loc, "--equality", "id,region", "--from", str(nokey))
    assert p.returncode == 2 and "no column 'region'" in p.stderr
    assert _files(t) == before
    p = _cli("delete", loc, "--equality", "id,region", "--from", "-", "--json", "--mode", "merge-on-read",
             stdin='{"id": 1, "region": "eu"}\n')
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["committed"] and out["operation"] == "delete" and out["key-rows"] == 1
    rows = tmp_path / "up.csv"
    rows.write_text("id,region,v\n1,eu,back\n2,eu,B\n")
    p = _cli("upsert", loc, str(rows), "--key", "id,region", "--dry-run", "--json")
    assert p.returncode == 0 and json.loads(p.stdout)["committed"] is False
    p = _cli("upsert", loc, str(rows), "--key", "id,region", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["operation"] == "overwrite" and len(out["data-files"]) == 1
    assert _rows(t) == [(1, "eu", "back"), (2, "eu", "B"), (3, "us", "c"), (4, "us", "d")]
    dup = tmp_path / "dup.csv"
    dup.write_text("id,region,v\n9,eu,x\n9,eu,y\n")
    p = _cli("upsert", loc, str(dup), "--key", "id,region")
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "more than one row" in p.stderr
    p = _cli("upsert", loc, str(rows), "--key", "v,region,id", "--branch", "nosuch")
    assert p.returncode == 3 and "nosuch" in p.stderr  # a missing ref is "not found"


def test_two_partitioned_specs_each_get_the_keys_in_their_partition(tmp_path: Path) -> None:
    t = _table(tmp_path)  # spec 0: identity(region)
    p = _cli("partition", "add", t.location, "bucket(4, id)")
    assert p.returncode == 0, p.stderr
    write_rows(Table.load(t.location), pa.table({"id": pa.array([1, 3, 5], pa.int64()),
                                                  "region": ["eu", "us", "eu"], "v": ["n1", "n3", "n5"]}))
    r = delete_equality(Table.load(t.location), "id,region",
                        pa.table({"id": pa.array([1, 3], pa.int64()), "region": ["eu", "us"]}))
    specs = {e.data_file.spec_id for c, e in _entries(t) if e.data_file.content == EQUALITY_DELETES}
    assert specs == {0, 1} and len(r.equality_delete_files) == 4  # 2 keys x 2 specs
    assert _rows(t) == [(2, "eu", "b"), (4, "us", "d"), (5, "eu", "n5")]
    # 'region' alone does not determine the bucket partition of spec 1: rows found by position
    r = delete_equality(Table.load(t.location), "region", pa.table({"region": ["eu"]}))
    assert r.method == "position-deletes" and r.deleted_rows == 2
    assert _rows(t) == [(4, "us", "d")]


def test_upsert_and_equality_delete_on_a_branch_leave_main_alone(tmp_path: Path) -> None:
    t = _table(tmp_path)
    p = _cli("branch", "create", t.location, "dev")
    assert p.returncode == 0, p.stderr
    main_rows = _rows(t)
    upsert_rows(Table.load(t.location), pa.table({"id": pa.array([1], pa.int64()), "region": ["eu"],
                                                  "v": ["dev"]}), "id,region", branch="dev")
    delete_equality(Table.load(t.location), "id,region",
                    pa.table({"id": pa.array([4], pa.int64()), "region": ["us"]}), branch="dev")
    assert _rows(t) == main_rows
    from icectl.scan.reader import open_scan

    scan = open_scan(Table.load(t.location), None, ref="dev")
    got = sorted(r for b in scan.batches() for r in zip(*(c.to_pylist() for c in b.columns)))
    assert got == [(1, "eu", "dev"), (2, "eu", "b"), (3, "us", "c")]


@pytest.mark.parametrize("fv", [2, 3])
def test_upserts_merge_manifests_and_keep_entry_history(tmp_path: Path, fv: int) -> None:
    t = empty_table(tmp_path / "t", "id long not null, region string, v string", partition="region",
                    format_version=fv, properties={**MOR, "commit.manifest.min-count-to-merge": "3"})
    write_rows(t, pa.table({"id": pa.array([1, 2], pa.int64()), "region": ["eu", "us"], "v": ["a", "b"]}))
    first = Table.load(t.location).metadata.current_snapshot().snapshot_id
    for n in range(4):
        upsert_rows(Table.load(t.location), pa.table({"id": pa.array([1, 10 + n], pa.int64()),
                                                      "region": ["eu", "us"], "v": [f"u{n}", "x"]}),
                    "id,region")
    assert _rows(t) == [(1, "eu", "u3"), (2, "us", "b"), (10, "us", "x"), (11, "us", "x"),
                        (12, "us", "x"), (13, "us", "x")]
    t = Table.load(t.location)
    from icectl.io.manifest import records as avro

    snap = t.metadata.current_snapshot()
    manifests = avro.load_manifest_list(t.io, snap.manifest_list, fv)
    # unmerged there would be 9: one data and one delete manifest per upsert, and the write's
    assert len(manifests) <= 4, [(m.content, m.added_files_count) for m in manifests]
    entries = [e for c, e in _entries(t)]
    first_files = [e for e in entries if e.data_file.content == DATA and e.snapshot_id == first]
    assert len(first_files) == 2 and all(e.sequence_number == 1 for e in first_files)
    assert {e.snapshot_id for e in entries} >= {first, snap.snapshot_id}
    if fv == 3:
        row_ids = [e.data_file.first_row_id for e in entries if e.data_file.content == DATA]
        assert None not in row_ids and len(set(row_ids)) == len(row_ids)
