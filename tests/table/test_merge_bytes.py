"""Merging manifests by copying encoded data_file bytes (icectl.io.manifest.copy): the byte copy
and the raw-record copy agree on every entry field and give the same manifest bytes (every
partition type with nulls, NaN, -0.0, negative and pre-1970 values, decimals, fixed, uuid,
nested sources; v1/v2/v3; deflate and null codecs; blocks of any size), inherited values are
made explicit (v3 first row ids spliced into the copied bytes), other encodings fall back, and
a merge through the producer takes the byte path and writes what the record path writes."""

from __future__ import annotations

import math
import random
import shutil
import struct
from dataclasses import replace
from pathlib import Path

import pytest

from icectl.io.manifest import records as avro

from icectl.io.manifest import copy as manifest_copy
from icectl.io.formats.avro_container import decompressed_body, encode_header, split_header
from icectl.spec.manifests import ADDED, DELETED, EXISTING, ManifestFile
from icectl.spec.partitioning import PartitionSpec
from icectl.spec.schema import Schema
from icectl.table.commit.producer import FastAppendProducer
from icectl.table.commit.row_delta import RowDeltaProducer
from icectl.table.table import Table

from merge_support import (
    assert_same_entries,
    java_manifests,
    merging_table,
    random_entries,
    random_file,
    same_entry,
    schema_and_spec,
    without_sync,
)

CARRIED_COLUMNS = ("status", "snapshot_id", "sequence_number", "file_sequence_number", "record_count",
            "file_path", "data_files")
_NAN = struct.pack("<d", math.nan)


def _with_nan_bounds(entries):
    """NaN, -0.0 and negative bounds in the metrics maps (bytes carried untouched)."""
    out = []
    for i, e in enumerate(entries):
        f = e.data_file
        f = replace(f, lower_bounds={**f.lower_bounds, 5: _NAN, 4: struct.pack("<f", -0.0)},
                    upper_bounds={**f.upper_bounds, 5: _NAN, 2: struct.pack("<q", -i - 1)},
                    nan_value_counts={4: i, 5: 0}, key_metadata=None if i % 3 else b"k" * i)
        out.append(replace(e, data_file=f))
    return out


def _null_codec(data: bytes) -> bytes:
    """The same manifest with uncompressed ("null" codec) blocks."""
    meta, sync, start = split_header(data)
    body = decompressed_body(meta["avro.codec"].decode(), data, start, sync)
    return encode_header({**meta, "avro.codec": b"null"}, sync) + body


def _manifest(version: int, seed: int, n: int):
    r = random.Random(seed * 100 + version)
    schema, spec = schema_and_spec()
    entries = _with_nan_bounds(random_entries(r, version, n))
    if version == 1:
        entries = [replace(e, sequence_number=None, file_sequence_number=None) for e in entries]
    layout, metadata = avro.manifest_header(
        spec.partition_type(schema), spec_id=0, partition_spec_json=spec.fields_json(),
        schema_json=schema.to_json(), format_version=version)
    return avro.write_manifest(entries, spec, schema, version, 42), layout, metadata


def _list_entry(data: bytes, version: int) -> ManifestFile:
    return ManifestFile(manifest_path="/m.avro", manifest_length=len(data), partition_spec_id=0,
                        content=0, sequence_number=77 if version > 1 else 0, min_sequence_number=0, added_snapshot_id=9,
                        first_row_id=1000 if version >= 3 else None)


def _assert_agree(a: manifest_copy.CarriedEntries, b: manifest_copy.CarriedEntries) -> None:
    for name in CARRIED_COLUMNS:
        assert getattr(a, name) == getattr(b, name), name
    assert len(a.partitions) == len(b.partitions)
    for pa, pb in zip(a.partitions, b.partitions):
        assert len(pa) == len(pb) and all(same_entry(x, y) for x, y in zip(pa, pb)), (pa, pb)


@pytest.mark.parametrize("codec", ["deflate", "null"])
@pytest.mark.parametrize("version", [1, 2, 3])
@pytest.mark.parametrize("seed,n", [(1, 1), (2, 60), (3, 700)])
def test_byte_copy_agrees_with_the_record_copy(version, codec, seed, n):
    data, layout, metadata = _manifest(version, seed, n)
    if codec == "null":
        data = _null_codec(data)
    assert avro.read_avro_metadata(data)["avro.codec"] == codec
    for mf in (None, _list_entry(data, version)):
        by_bytes = manifest_copy.read_carried(data, mf, layout)
        assert by_bytes is not None
        by_records = manifest_copy.carried_from_records(
            *avro.read_manifest_records(data, mf, schema=layout), layout)
        _assert_agree(by_bytes, by_records)
        if mf is None and version > 1:  # stored entries lack inherited sequence numbers
            continue
        merged = manifest_copy.write_carried(layout, metadata, by_bytes)
        assert without_sync(merged) == without_sync(
            manifest_copy.write_carried(layout, metadata, by_records))
        # fastavro reads the copy, without its list entry, as the original reads with it
        want = avro.read_manifest(data, mf)
        if version == 1:  # v1 entries have no sequence number fields: nothing to make explicit
            want = [replace(e, sequence_number=None, file_sequence_number=None) for e in want]
        got = avro.read_manifest(merged)
        assert_same_entries([replace(e, data_file=replace(e.data_file, spec_id=0)) for e in got],
                             [replace(e, data_file=replace(e.data_file, spec_id=0)) for e in want])
        assert all(e.snapshot_id is not None for e in got)


def test_v3_first_row_ids_are_spliced_into_the_copied_bytes():
    data, layout, metadata = _manifest(3, 7, 80)
    stored = avro.read_manifest(data)
    assert any(e.data_file.first_row_id is None for e in stored)
    assert any(e.data_file.first_row_id is not None for e in stored)
    mf = _list_entry(data, 3)
    c = manifest_copy.read_carried(data, mf, layout)
    got = avro.read_manifest(manifest_copy.write_carried(layout, metadata, c))
    want = avro.read_manifest(data, mf)
    assert [e.data_file.first_row_id for e in got] == [e.data_file.first_row_id for e in want]
    assert any(e.data_file.first_row_id is None for e in stored if e.status != DELETED)
    assert all(e.data_file.first_row_id is not None for e in got if e.status != DELETED)
    # a manifest list entry without a first row id clears the files' values: spliced out too
    c = manifest_copy.read_carried(data, replace(mf, first_row_id=None), layout)
    got = avro.read_manifest(manifest_copy.write_carried(layout, metadata, c))
    assert all(e.data_file.first_row_id is None for e in got)


def test_carry_rewrites_statuses_and_drops_older_deletes():
    data, layout, metadata = _manifest(2, 4, 90)
    mf = _list_entry(data, 2)
    before = avro.read_manifest(data, mf)
    c = manifest_copy.carry(manifest_copy.read_carried(data, mf, layout), own=False, snapshot_id=9)
    got = avro.read_manifest(manifest_copy.write_carried(layout, metadata, c))
    want = [replace(e, status=ADDED if e.status == ADDED and e.snapshot_id == 9 else EXISTING)
            for e in before if e.status != DELETED or e.snapshot_id == 9]
    want = [replace(e, status=DELETED) if o.status == DELETED else e
            for e, o in zip(want, [e for e in before if e.status != DELETED or e.snapshot_id == 9])]
    assert len(got) == len(want) < len(before)
    assert_same_entries([replace(e, data_file=replace(e.data_file, spec_id=0)) for e in got],
                         [replace(e, data_file=replace(e.data_file, spec_id=0)) for e in want])


def test_nested_and_evolved_partition_sources():
    """Partition fields on a nested struct field and on a renamed column of an evolved schema
    (ids out of order, a dropped column): the layout is the partition type's, copied alike."""
    schema = Schema.from_json({"type": "struct", "schema-id": 3, "fields": [
        {"id": 7, "name": "renamed_ts", "required": False, "type": "timestamp"},
        {"id": 2, "name": "s", "required": False, "type": {"type": "struct", "fields": [
            {"id": 9, "name": "x", "required": False, "type": "long"},
            {"id": 10, "name": "d", "required": False, "type": "decimal(20,3)"}]}},
    ]})
    spec = PartitionSpec.from_fields_json([
        {"name": "ts_day", "transform": "day", "source-id": 7, "field-id": 1000},
        {"name": "s_x_bucket", "transform": "bucket[7]", "source-id": 9, "field-id": 1001},
        {"name": "s_d", "transform": "identity", "source-id": 10, "field-id": 1002}], spec_id=2)
    r = random.Random(11)
    base = random_entries(r, 2, 40)
    from decimal import Decimal
    entries = [replace(e, data_file=replace(e.data_file, partition=(
        None if i % 5 == 0 else r.randint(-40_000, 40_000), r.randint(0, 6),
        None if i % 4 == 0 else Decimal(r.randint(-10**17, 10**17)).scaleb(-3))))
        for i, e in enumerate(base)]
    data = avro.write_manifest(entries, spec, schema, 2, 5)
    layout, metadata = avro.manifest_header(
        spec.partition_type(schema), spec_id=2, partition_spec_json=spec.fields_json(),
        schema_json=schema.to_json(), format_version=2)
    mf = replace(_list_entry(data, 2), partition_spec_id=2)
    by_bytes = manifest_copy.read_carried(data, mf, layout)
    _assert_agree(by_bytes, manifest_copy.carried_from_records(
        *avro.read_manifest_records(data, mf, schema=layout), layout))
    got = avro.read_manifest(manifest_copy.write_carried(layout, metadata, by_bytes))
    assert_same_entries(got, avro.read_manifest(data, mf))


def test_other_encodings_fall_back():
    data, layout, metadata = _manifest(2, 5, 30)
    # another layout (the v3 one; a v1 manifest in a v2 table)
    _, v3_layout, _ = _manifest(3, 5, 1)
    assert manifest_copy.read_carried(data, None, v3_layout) is None
    v1, _, _ = _manifest(1, 5, 30)
    assert manifest_copy.read_carried(v1, None, layout) is None
    # the plain Avro fixed partition values icectl wrote before following Java: not decodable
    # in the length-prefixed encoding, left to the record path (which reads both)
    records, _ = avro.read_manifest_records(data, schema=layout)
    for rec in records:
        rec["data_file"]["partition"]["c11"] = b"\x01\x02\x03"  # the fixed[3] field
    plain = avro.write_avro_records(layout, records, metadata)
    assert manifest_copy.read_carried(plain, None, layout) is None
    assert all(e.data_file.partition[11] == b"\x01\x02\x03" for e in avro.read_manifest(plain))
    prefixed = avro.write_manifest_records(records, layout, metadata)
    c = manifest_copy.read_carried(prefixed, None, layout)
    assert c is not None and all(p[11] == b"\x01\x02\x03" for p in c.partitions)


@pytest.mark.parametrize("table", ["t2", "d2", "t3", "u3"])
def test_java_manifests_are_copied_by_bytes(table):
    for m, raw, layout, metadata in java_manifests(table):
        c = manifest_copy.read_carried(raw, m, layout)
        assert c is not None and len(c.status) > 0
        _assert_agree(c, manifest_copy.carried_from_records(
            *avro.read_manifest_records(raw, m, schema=layout), layout))
        copy = manifest_copy.write_carried(layout, metadata, c)
        assert_same_entries(avro.read_manifest(copy, replace(m, manifest_path="/copy")),
                             avro.read_manifest(raw, m))


def _table(tmp_path: Path, version: int) -> Table:
    return merging_table(tmp_path, version, random.Random(version + 40), appends=4, files=25)


@pytest.mark.parametrize("version", [1, 2, 3])
def test_a_merging_delete_copies_bytes_and_writes_what_the_record_path_writes(tmp_path, version):
    """The same delete of one whole file on copies of a table (same snapshot id) whose commit
    merges its 3 manifests (the one rewritten without the file and 2 others) into one: by bytes
    decoded in worker processes, by bytes here (no raw records decoded) and by records, the same
    manifest."""
    import multiprocessing

    from icectl import command_files
    from icectl.spec.metadata import with_properties

    table = merging_table(tmp_path, version, random.Random(version + 40), appends=3, files=25)
    table.commit(lambda md: with_properties(md, {"commit.manifest.min-count-to-merge": "3"}))
    snap = table.metadata.current_snapshot()
    before = [(m, e) for m in avro.load_manifest_list(table.io, snap.manifest_list)
              for e in avro.load_manifest(table.io, m)]
    assert len({m.manifest_path for m, _ in before}) == 3
    victim = before[30][1].data_file
    results = {}
    for mode in ("workers", "bytes", "records"):
        loc = tmp_path / f"copy-{mode}"
        shutil.copytree(table.location, loc)
        t = Table.load(str(loc))
        producer = RowDeltaProducer(t, snap.snapshot_id, removed=[(replace(victim, spec_id=0), "")],
                                    snapshot_id=123456789)
        producer.copy_entry_bytes = mode != "records"
        pooled: list[int] = []
        with pytest.MonkeyPatch.context() as mp:
            if mode != "records":
                mp.setattr(avro, "read_manifest_records",
                           lambda *a, **k: pytest.fail("merge decoded raw records"))
            if mode == "workers":
                # small manifests, and the test process may run helper threads: fork anyway
                mp.setattr(manifest_copy, "PARALLEL_MIN_MANIFESTS", 2)
                mp.setattr(manifest_copy, "PARALLEL_MIN_BYTES", 0)
                mp.setattr(manifest_copy, "PARALLEL_MIN_WORKERS", 1)  # a 2-core machine too
                mp.setattr(command_files, "can_fork",
                           lambda: "fork" in multiprocessing.get_all_start_methods())
                real = command_files.forked_imap
                mp.setattr(command_files, "forked_imap",
                           lambda fn, items, n: pooled.append(len(items)) or real(fn, items, 2))
            else:
                mp.setattr(command_files, "forked_imap",
                           lambda *a: pytest.fail("a small bin decoded in worker processes"))
            result = producer.commit()
        assert pooled == ([3] if mode == "workers" else [])
        manifests = avro.load_manifest_list(t.io, result.snapshot.manifest_list)
        assert len(manifests) == 1
        results[mode] = (t.io.read(manifests[0].manifest_path), manifests[0], t)
    data, mf, t = results["bytes"]
    for other, other_mf, _ in (results["workers"], results["records"]):
        assert without_sync(data) == without_sync(other)
        assert replace(mf, manifest_path="") == replace(other_mf, manifest_path="")
    after = avro.load_manifest(t.io, mf)
    gone = [e for e in after if e.status == DELETED]
    assert [e.data_file.file_path for e in gone] == [victim.file_path]
    kept = sorted((e for e in after if e.status != DELETED), key=lambda e: e.data_file.file_path)
    want = sorted((replace(e, status=EXISTING) for _, e in before
                   if e.data_file.file_path != victim.file_path), key=lambda e: e.data_file.file_path)
    assert_same_entries(kept, want)
    assert (mf.added_files_count, mf.existing_files_count, mf.deleted_files_count) == (0, 74, 1)


def test_v1_manifests_of_an_upgraded_table_are_converted(tmp_path):
    """A table upgraded from v1 to v2: its v1 manifests are in another layout, converted from
    their entries (sequence number 0 made explicit); the v2 manifest written since is copied."""
    from icectl.ops.metadata.properties import upgrade_table

    table = _table(tmp_path, 1)
    snap = table.metadata.current_snapshot()
    before = [e for m in avro.load_manifest_list(table.io, snap.manifest_list)
              for e in avro.load_manifest(table.io, m)]
    upgrade_table(table, 2)
    r = random.Random(3)
    for i in range(3):
        FastAppendProducer(table, [(replace(random_file(r, 900 + i, 2), first_row_id=None), "")],
                           merge=False).commit()
    copied = []
    real = manifest_copy.read_carried
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(manifest_copy, "read_carried",
                   lambda *a, **k: copied.append(real(*a, **k)) or copied[-1])
        result = FastAppendProducer(table, [(replace(random_file(r, 910, 2), first_row_id=None), "")]
                                    ).commit()
    assert sorted(c is None for c in copied) == [False] * 4 + [True]  # the v1 one converted
    manifests = avro.load_manifest_list(table.io, result.snapshot.manifest_list)
    assert len(manifests) == 1
    after = avro.load_manifest(table.io, manifests[0])
    old = sorted((e for e in after if e.data_file.file_path in {b.data_file.file_path for b in before}),
                 key=lambda e: e.data_file.file_path)
    want = sorted((replace(e, status=EXISTING, sequence_number=0, file_sequence_number=0)
                   for e in before), key=lambda e: e.data_file.file_path)
    assert_same_entries(old, want)
    assert len(after) == len(before) + 4
    assert all(e.sequence_number is not None for e in avro.read_manifest(
        table.io.read(manifests[0].manifest_path)) if e.status == EXISTING)
