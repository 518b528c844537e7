"""`icectl check`: clean on untouched tables; each deliberate break found with its code, and
exit code 10 for errors (warnings alone exit 0)."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from check_tables import (
    AddDeletes, AddEntries, build, dv_blob, dv_files, edit_metadata, live_data_files, metadata_file,
    rewrite_list, rows, snapshot_list,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from clirun import icectl

from icectl.io.storage.files import FileIO, local_path
from icectl.ops.check import check_table, dv_cardinality
from icectl.ops.metadata.schema import add_column, evolve_schema
from icectl.ops.metadata.partition_spec import add_partition_field, drop_partition_field
from icectl.ops.maintain.expire import expire_snapshots
from icectl.ops.write.rows import write_rows
from icectl.spec.manifests import ADDED, DATA, DataFile, ManifestEntry
from icectl.spec.types import STRING
from icectl.table.table import Table



def check(t: Table | str, *args: str) -> tuple[int, dict]:
    loc = t.location if isinstance(t, Table) else t
    r = icectl("check", str(loc), "--json", *args)
    assert r.exit_code in (0, 10), r.output
    return r.exit_code, json.loads(r.stdout)


def codes(out: dict, severity: str = "error") -> set[str]:
    return {p["code"] for p in out["problems"] if p["severity"] == severity}


def assert_found(t: Table | str, code: str, *args: str) -> dict:
    rc, out = check(t, *args)
    assert code in codes(out), out["problems"]
    assert rc == 10 and not out["clean"] and out["errors"] >= 1
    return out


# -- clean tables --------------------------------------------------------------------------------


@pytest.mark.parametrize("fv", [1, 2, 3])
def test_untouched_tables_with_evolution_are_clean(tmp_path: Path, fv: int) -> None:
    t = build(tmp_path, format_version=fv)
    evolve_schema(t, lambda u: add_column(u, "extra", STRING))
    add_partition_field(t, "truncate(2, extra)")
    write_rows(Table.load(t.location), rows(100).append_column("extra", pa.array(["xy", "xz", None])))
    rc, out = check(t, "--deep")
    assert rc == 0 and out["clean"] and out["problems"] == [], out["problems"]
    c = out["checked"]
    assert (c["snapshots"], c["manifest-lists"], c["manifests"], c["schemas"]) == (3, 3, 3, 2)
    assert c["data-files"] == c["files-verified"] == c["manifest-entries"] > 0
    assert out["table"] == t.location and out["errors"] == out["warnings"] == 0


def test_an_expired_parent_is_routine_not_a_problem(tmp_path: Path) -> None:
    t = build(tmp_path, writes=3)
    expire_snapshots(t, older_than_ms=t.metadata.last_updated_ms + 1, retain_last=1)
    [kept] = t.metadata.snapshots
    assert kept.parent_snapshot_id is not None and t.metadata.snapshot_by_id(kept.parent_snapshot_id) is None
    rc, out = check(t, "--deep")
    assert rc == 0 and out["clean"]
    assert codes(out, "warning") == set() and codes(out) == set() and out["problems"] == []


def test_each_manifest_is_read_once(tmp_path: Path) -> None:
    t = build(tmp_path, writes=4)  # fast appends: every snapshot lists all earlier manifests
    reads: list[str] = []

    class Counting(FileIO):
        def read(self, path: str) -> bytes:
            reads.append(path)
            return super().read(path)

    result = check_table(t.location, io=Counting())
    assert result.clean and result.checked["manifests"] == 4
    manifests = [p for p in reads if p.endswith(".avro") and "/snap-" not in p]
    assert len(manifests) == 4 and len(set(manifests)) == 4


# -- broken metadata -----------------------------------------------------------------------------


def _schema_fields(o):
    return o["schemas"][0]["fields"]


METADATA_BREAKS = {
    "duplicate-field-id": lambda o: _schema_fields(o)[1].update(id=1),
    "last-column-id-too-low": lambda o: o.update({"last-column-id": 1}),
    "last-partition-id-too-low": lambda o: o.update({"last-partition-id": 999}),
    "last-sequence-number-too-low": lambda o: o.update({"last-sequence-number": 1}),
    "default-sort-order-missing": lambda o: o.update({"default-sort-order-id": 7}),
    "ref-snapshot-missing": lambda o: o["refs"].update(audit={"snapshot-id": 123, "type": "branch"}),
    "parent-cycle": lambda o: o["snapshots"][0].update({"parent-snapshot-id": o["snapshots"][1]["snapshot-id"]}),
    "sequence-number-not-increasing": lambda o: o["snapshots"][1].update({"sequence-number": 1}),
    "snapshot-log-unordered": lambda o: o["snapshot-log"][0].update(
        {"timestamp-ms": o["snapshot-log"][1]["timestamp-ms"] + 120_000}),
    "metadata-log-unordered": lambda o: o["metadata-log"][0].update(
        {"timestamp-ms": o["metadata-log"][1]["timestamp-ms"] + 120_000}),
    "invalid-property": lambda o: o["properties"].update({"commit.retry.num-retries": "abc"}),
    "summary-count-mismatch": lambda o: o["snapshots"][1]["summary"].update({"added-records": "999"}),
    "summary-total-mismatch": lambda o: o["snapshots"][1]["summary"].update({"total-records": "5"}),
    "current-snapshot-missing": lambda o: (o.update({"current-snapshot-id": 5}), o["refs"].pop("main")),
}


@pytest.mark.parametrize("code", sorted(METADATA_BREAKS))
def test_each_metadata_break_is_found(tmp_path: Path, code: str) -> None:
    t = build(tmp_path)
    assert check(t)[0] == 0
    edit_metadata(t, METADATA_BREAKS[code])
    assert_found(t, code)


def test_metadata_the_parser_refuses_names_the_rule_and_checks_the_version_before(tmp_path: Path) -> None:
    t = build(tmp_path)
    edit_metadata(t, lambda o: o.update({"current-schema-id": 9}))
    out = assert_found(t, "current-schema-missing")
    assert "metadata-invalid" in codes(out)
    assert codes(out, "warning") == {"older-version-checked"}
    assert out["checked"]["snapshots"] == 1  # the version before the last write


def test_truncated_newest_metadata_is_reported(tmp_path: Path) -> None:
    t = build(tmp_path)
    newest = metadata_file(t)
    nxt = newest.with_name(f"v{t.version + 1}.metadata.json")
    nxt.write_bytes(newest.read_bytes()[:200])  # a crash cut the next version short
    out = assert_found(t, "metadata-unreadable")
    assert [p["where"] for p in out["problems"] if p["code"] == "metadata-unreadable"] == [str(nxt)]
    older = [p for p in out["problems"] if p["code"] == "older-version-checked"]
    assert older and older[0]["where"].endswith(newest.name)
    assert out["checked"]["snapshots"] == 2


def test_version_hint_naming_a_missing_version(tmp_path: Path) -> None:
    t = build(tmp_path)
    (Path(local_path(t.location)) / "metadata" / "version-hint.text").write_text("9")
    out = assert_found(t, "version-hint-broken")
    assert out["checked"]["snapshots"] == 2  # the newest version, found by listing


def test_unknown_table_is_not_found(tmp_path: Path) -> None:
    r = icectl("check", str(tmp_path / "nothing"))
    assert r.exit_code == 3


@pytest.mark.parametrize("key, value", [("write.format.default", "nonsense"),
                                        ("write.parquet.compression-codec", "lz5"),
                                        ("gc.enabled", "maybe"),
                                        ("schema.name-mapping.default", "[{")])
def test_property_the_catalogue_refuses_is_found(tmp_path: Path, key: str, value: str) -> None:
    # the same catalogue `properties set` applies (spec/properties.py), on a hand-edited table
    t = build(tmp_path, writes=0)
    assert check(t)[0] == 0
    edit_metadata(t, lambda o: o["properties"].update({key: value}))
    out = assert_found(t, "invalid-property")
    assert [p["where"] for p in out["problems"] if p["code"] == "invalid-property"] == [f"property {key}"]


def test_invalid_metrics_mode_is_a_warning_as_iceberg_ignores_it(tmp_path: Path) -> None:
    t = build(tmp_path, writes=0)
    edit_metadata(t, lambda o: o["properties"].update({"write.metadata.metrics.column.id": "nonsense"}))
    code, out = check(t)
    assert code == 0
    assert [(p["severity"], p["code"]) for p in out["problems"]] == [("warning", "invalid-property")]


# -- broken manifest lists and manifests ----------------------------------------------------------


def _current_manifest(t: Table) -> Path:
    return Path(local_path(snapshot_list(t)[1][0].manifest_path))


def test_missing_manifest_list(tmp_path: Path) -> None:
    t = build(tmp_path)
    os.remove(local_path(t.metadata.current_snapshot().manifest_list))
    out = assert_found(t, "manifest-list-missing")
    assert str(t.metadata.current_snapshot().snapshot_id) in out["problems"][0]["message"]


def test_unreadable_manifest_list(tmp_path: Path) -> None:
    t = build(tmp_path)
    p = Path(local_path(t.metadata.current_snapshot().manifest_list))
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])
    assert_found(t, "manifest-list-unreadable")


def test_missing_manifest(tmp_path: Path) -> None:
    t = build(tmp_path)
    _current_manifest(t).unlink()
    assert_found(t, "manifest-missing")


def test_truncated_manifest(tmp_path: Path) -> None:
    t = build(tmp_path)
    p = _current_manifest(t)
    p.write_bytes(p.read_bytes()[:-40])
    out = assert_found(t, "manifest-length-mismatch")
    assert "manifest-unreadable" in codes(out)


@pytest.mark.parametrize("field", ["added_files_count", "added_rows_count", "existing_files_count"])
def test_manifest_list_counts_that_do_not_match_the_entries(tmp_path: Path, field: str) -> None:
    t = build(tmp_path)
    rewrite_list(t, lambda ms: [replace(m, **{field: (getattr(m, field) or 0) + 1}) for m in ms])
    out = assert_found(t, "manifest-counts-mismatch")
    assert field.replace("_", "-") in out["problems"][0]["message"]


def test_manifest_with_unknown_spec(tmp_path: Path) -> None:
    t = build(tmp_path)
    rewrite_list(t, lambda ms: [replace(m, partition_spec_id=42) for m in ms])
    assert_found(t, "manifest-spec-missing")


def test_partition_tuples_that_do_not_fit_their_spec(tmp_path: Path) -> None:
    arity = build(tmp_path, "arity", partition="cat")
    add_partition_field(arity, "bucket(4, id)")
    rewrite_list(arity, lambda ms: [replace(m, partition_spec_id=1) for m in ms])
    assert_found(arity, "partition-arity-mismatch")

    typed = build(tmp_path, "typed", partition="cat")
    drop_partition_field(typed, "cat")
    add_partition_field(Table.load(typed.location), "bucket(4, id)")
    rewrite_list(typed, lambda ms: [replace(m, partition_spec_id=2) for m in ms])
    out = assert_found(typed, "partition-type-mismatch")
    assert "partition-arity-mismatch" not in codes(out)


def _new_data_file(t: Table, name: str, n: int = 3) -> DataFile:
    path = Path(local_path(t.location)) / "data" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(rows(500, n), path)
    return DataFile(DATA, str(path), "PARQUET", (), n, path.stat().st_size)


def test_entry_sequence_numbers_above_the_snapshot(tmp_path: Path) -> None:
    t = build(tmp_path, partition=None)
    f = _new_data_file(t, "late.parquet")
    AddEntries(t, [ManifestEntry(ADDED, None, 99, 99, f)]).commit()
    out = assert_found(t, "data-sequence-number-too-high")
    assert "file-sequence-number-too-high" in codes(out)
    assert f.file_path in out["problems"][0]["message"]


# -- delete files ----------------------------------------------------------------------------------


def _v3_with_data(tmp_path: Path) -> tuple[Table, list[DataFile]]:
    t = build(tmp_path, format_version=3, partition=None, writes=1)
    return t, live_data_files(t)


def test_deletion_vectors_on_live_files_are_clean(tmp_path: Path) -> None:
    t, data = _v3_with_data(tmp_path)
    AddDeletes(t, dv_files(tmp_path / "t" / "data", [(data[0].file_path, [0, 2])])).commit()
    rc, out = check(t, "--deep")
    assert rc == 0 and out["problems"] == []
    assert out["checked"]["delete-files"] == 1 and out["checked"]["files-verified"] == 2


def test_dangling_deletion_vector_is_a_warning(tmp_path: Path) -> None:
    t, _ = _v3_with_data(tmp_path)
    gone = str(tmp_path / "t" / "data" / "gone.parquet")
    AddDeletes(t, dv_files(tmp_path / "t" / "data", [(gone, [1])])).commit()
    rc, out = check(t, "--deep")
    assert rc == 0 and out["clean"]
    assert codes(out, "warning") == {"dangling-delete"}
    assert gone in out["problems"][0]["message"]


def _delete(t: Table, content: int, name: str, partition: tuple, *, bounds: tuple | None = None,
            equality_ids: tuple[int, ...] | None = None) -> DataFile:
    """A delete file entry (the file itself is not read without --deep); ``bounds``: the
    position delete's (lower, upper) file_path bounds."""
    from icectl.table.delete_index import DELETE_FILE_PATH_ID

    lower = upper = None
    if bounds is not None:
        lower, upper = ({DELETE_FILE_PATH_ID: b.encode()} for b in bounds)
    return DataFile(content, f"{t.location}/data/{name}", "PARQUET", partition, 1, 100,
                    lower_bounds=lower, upper_bounds=upper, equality_ids=equality_ids)


def _dangling(t: Table) -> list[str]:
    rc, out = check(t)
    assert rc == 0 and out["clean"], out["problems"]
    assert {p["code"] for p in out["problems"]} <= {"dangling-delete"}, out["problems"]
    return sorted(p["message"] for p in out["problems"])


def test_dangling_is_the_one_rule_for_every_kind_of_delete_file(tmp_path: Path) -> None:
    """`check` warns of the delete files table/delete_index.is_dangling calls dangling (those
    remove-dangling-deletes removes), and of no other."""
    from icectl.spec.manifests import EQUALITY_DELETES, POSITION_DELETES

    t = build(tmp_path, partition="cat", writes=1)  # partitions a and b, data sequence number 1
    first = min(f.file_path for f in live_data_files(t))
    AddDeletes(t, [
        # applies: bounds around a live file of its partition / an older live file of its partition
        _delete(t, POSITION_DELETES, "pos-range.parquet", live_data_files(t)[0].partition,
                bounds=(f"{t.location}/data/", f"{t.location}/data/~")),
        _delete(t, EQUALITY_DELETES, "eq-a.parquet", ("a",), equality_ids=(1,)),
        _delete(t, EQUALITY_DELETES, "eq-b.parquet", ("b",), equality_ids=(1,)),
        _delete(t, POSITION_DELETES, "pos-first.parquet", next(
            f.partition for f in live_data_files(t) if f.file_path == first), bounds=(first, first)),
    ]).commit()
    assert _dangling(Table.load(t.location)) == []
    t = Table.load(t.location)
    AddDeletes(t, [
        _delete(t, POSITION_DELETES, "pos-c.parquet", ("c",), bounds=(f"{t.location}/", f"{t.location}/~")),
        _delete(t, POSITION_DELETES, "pos-outside.parquet", ("a",), bounds=("/elsewhere/a", "/elsewhere/z")),
        _delete(t, EQUALITY_DELETES, "eq-c.parquet", ("c",), equality_ids=(1,)),
    ]).commit()
    # data sequence number 1: no live data file is older (equal ones are not)
    AddDeletes(Table.load(t.location), [_delete(t, EQUALITY_DELETES, "eq-same.parquet", ("a",), equality_ids=(1,))],
               sequence_number=1).commit()
    got = _dangling(Table.load(t.location))
    assert [m.split(" in snapshot ")[0] for m in got] == [
        "equality delete file (data sequence number 1) has no older live data file in its partition",
        "equality delete file (data sequence number 3) has no older live data file in its partition",
        "position delete file (data sequence number 3) applies to no live data file of its partition",
        "position delete file (data sequence number 3) applies to no live data file of its partition",
    ]


def test_a_position_delete_older_than_its_data_file_is_dangling(tmp_path: Path) -> None:
    """A position delete naming a live data file newer than it (as a global equality delete of an
    unpartitioned table with nothing older) applies to nothing."""
    from icectl.spec.manifests import EQUALITY_DELETES, POSITION_DELETES

    t = build(tmp_path, partition=None, writes=1)  # data sequence number 1
    late = _new_data_file(t, "late.parquet")
    AddEntries(t, [ManifestEntry(ADDED, None, None, None, late)]).commit()  # sequence number 2
    t = Table.load(t.location)
    AddDeletes(t, [_delete(t, POSITION_DELETES, "pos-late.parquet", (), bounds=(late.file_path,) * 2),
                   _delete(t, EQUALITY_DELETES, "eq-all.parquet", (), equality_ids=(1,))],
               sequence_number=1).commit()
    assert [m.split(" in snapshot ")[0] for m in _dangling(Table.load(t.location))] == [
        "equality delete file (data sequence number 1) has no older live data file in the table",
        f"position delete file names data file {late.file_path}, which is newer than it (data sequence "
        "number 2 > 1)",
    ]


def test_two_deletion_vectors_for_one_file(tmp_path: Path) -> None:
    t, data = _v3_with_data(tmp_path)
    AddDeletes(t, dv_files(tmp_path / "t" / "data", [(data[0].file_path, [0]), (data[0].file_path, [1])])).commit()
    assert_found(t, "duplicate-dv")


def test_deletion_vector_cardinality_and_crc_are_checked_deep(tmp_path: Path) -> None:
    t, data = _v3_with_data(tmp_path)
    dvs = dv_files(tmp_path / "t" / "data", [(data[0].file_path, [0, 1])], record_counts=[5])
    AddDeletes(t, dvs).commit()
    assert check(t)[0] == 0  # the count is only known by reading the blob
    assert_found(t, "record-count-mismatch", "--deep")

    t2, data2 = _v3_with_data(tmp_path / "crc")
    dvs = dv_files(tmp_path / "crc" / "t" / "data", [(data2[0].file_path, [0, 1])])
    AddDeletes(t2, dvs).commit()
    p = Path(dvs[0].file_path)
    raw = bytearray(p.read_bytes())
    raw[dvs[0].content_offset + 10] ^= 0xFF
    p.write_bytes(bytes(raw))
    assert_found(t2, "dv-invalid", "--deep")


@settings(max_examples=60, deadline=None)
@given(st.sets(st.one_of(st.integers(0, 70_000), st.integers(0, 2**40)), max_size=300),
       st.lists(st.tuples(st.integers(0, 2**33), st.integers(1, 9000)), max_size=3))
def test_dv_cardinality_matches_roaring(points: set[int], runs: list[tuple[int, int]]) -> None:
    positions = set(points)
    for start, n in runs:
        positions.update(range(start, start + n))
    blob, card = dv_blob(positions)
    assert dv_cardinality(blob) == card == len(positions)


# -- data files (--deep) -------------------------------------------------------------------------


def test_damaged_data_files_are_found_only_deep(tmp_path: Path) -> None:
    t = build(tmp_path)
    files = live_data_files(t)
    short, gone = Path(local_path(files[0].file_path)), Path(local_path(files[1].file_path))
    short.write_bytes(short.read_bytes()[:-10])
    gone.unlink()
    rc, out = check(t)
    assert rc == 0 and out["problems"] == []
    out = assert_found(t, "file-size-mismatch", "--deep")
    assert {p["where"] for p in out["problems"]} == {str(short), str(gone)}
    assert codes(out) == {"file-size-mismatch", "file-missing"}


def test_record_count_against_the_parquet_footer(tmp_path: Path) -> None:
    t = build(tmp_path, partition=None, writes=1)
    f = replace(_new_data_file(t, "counted.parquet", 3), record_count=4)
    AddEntries(t, [ManifestEntry(ADDED, None, None, None, f)]).commit()
    out = assert_found(t, "record-count-mismatch", "--deep")
    assert out["problems"][0]["where"] == f.file_path


def test_position_delete_files_name_their_data_file_by_equal_bounds(tmp_path: Path) -> None:
    from icectl.table.delete_index import DELETE_FILE_PATH_ID
    from icectl.spec.manifests import POSITION_DELETES

    t = build(tmp_path, partition=None, writes=1)
    live = live_data_files(t)[0].file_path
    gone = live.replace(".parquet", "-gone.parquet")
    deletes = []
    for i, target in enumerate((live, gone)):
        path = Path(local_path(t.location)) / "data" / f"pos-{i}.parquet"
        pq.write_table(pa.table({"file_path": [target], "pos": pa.array([0], pa.int64())}), path)
        bound = {DELETE_FILE_PATH_ID: target.encode()}
        deletes.append(DataFile(POSITION_DELETES, str(path), "PARQUET", (), 1, path.stat().st_size,
                                lower_bounds=bound, upper_bounds=dict(bound)))
    AddDeletes(t, deletes).commit()
    rc, out = check(t, "--deep")
    assert rc == 0 and out["clean"] and out["checked"]["delete-files"] == 2
    assert [(p["code"], p["where"]) for p in out["problems"]] == [("dangling-delete", deletes[1].file_path)]
    assert gone in out["problems"][0]["message"]
