"""Merging manifests by copying raw Avro records: the copy path and the DataFile path give
byte-identical manifests (random partitions of every type, nulls included), inherited values are
made explicit, Java's manifests are copied, and a merge through the producer keeps every entry."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from icectl.io.manifest import records as avro
from icectl.spec.manifests import (
    ADDED,
    EXISTING,
    ManifestFile,
    manifest_entry_avro_schema,
)
from icectl.table.commit.producer import FastAppendProducer

from merge_support import (assert_same_entries, java_manifests, merging_table, random_entries,
                           random_file, schema_and_spec, same_entry, without_sync)


@pytest.mark.parametrize("version", [1, 2, 3])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_copied_records_give_the_same_bytes_as_entries(version, seed):
    r = random.Random(seed * 10 + version)
    schema, spec = schema_and_spec()
    ptype = spec.partition_type(schema)
    entries = random_entries(r, version)
    if version == 1:
        entries = [replace(e, sequence_number=None, file_sequence_number=None) for e in entries]
    layout, metadata = avro.manifest_header(
        ptype, spec_id=0, partition_spec_json=spec.fields_json(), schema_json=schema.to_json(),
        format_version=version)
    assert layout == manifest_entry_avro_schema(ptype, version)
    written = avro.write_manifest(entries, spec, schema, version, 42)
    records, partitions = avro.read_manifest_records(written, schema=layout)
    copied = avro.write_manifest_records(records, layout, metadata)
    assert without_sync(copied) == without_sync(written)
    stored = avro.read_manifest(written)
    for p, e in zip(partitions, stored, strict=True):
        assert all(same_entry(x, y) for x, y in zip(p, e.data_file.partition, strict=True))
    # the DataFile path on the same records' entries gives these bytes too
    again = avro.write_manifest(stored, spec, schema, version, 42)
    assert without_sync(again) == without_sync(written)


@pytest.mark.parametrize("version", [2, 3])
def test_copy_makes_inherited_values_explicit(version):
    r = random.Random(version)
    schema, spec = schema_and_spec()
    layout = manifest_entry_avro_schema(spec.partition_type(schema), version)
    entries = [replace(e, snapshot_id=None) if e.status == ADDED else e
               for e in random_entries(r, version)]
    written = avro.write_manifest(entries, spec, schema, version, None)
    mf = ManifestFile(manifest_path="/m.avro", manifest_length=len(written), partition_spec_id=0,
                      content=0, sequence_number=77, min_sequence_number=0, added_snapshot_id=9,
                      first_row_id=1000 if version >= 3 else None)
    records, _ = avro.read_manifest_records(written, mf, schema=layout)
    copy = avro.write_manifest_records(records, *avro.manifest_header(
        spec.partition_type(schema), spec_id=0, partition_spec_json=spec.fields_json(),
        schema_json=schema.to_json(), format_version=version))
    # read without its list entry, the copy holds what the original gives with it
    assert_same_entries([replace(e, data_file=replace(e.data_file, spec_id=0))
                          for e in avro.read_manifest(copy)],
                         avro.read_manifest(written, mf))
    assert all(e.snapshot_id is not None for e in avro.read_manifest(copy))


def test_another_layout_is_not_copied():
    schema, spec = schema_and_spec()
    written = avro.write_manifest(random_entries(random.Random(5), 2), spec, schema, 2, 1)
    other = manifest_entry_avro_schema(spec.partition_type(schema), 3)
    assert avro.read_manifest_records(written, schema=other) is None


@pytest.mark.parametrize("table", ["t2", "d2", "t3", "u3"])
def test_java_manifests_are_copied_as_they_read(table):
    """Java's manifests (docs in the schema) are in icectl's layout: copied, they read the same."""
    for m, raw, layout, metadata in java_manifests(table):
        got = avro.read_manifest_records(raw, m, schema=layout)
        assert got is not None
        copy = avro.write_manifest_records(got[0], layout, metadata)
        assert_same_entries(avro.read_manifest(copy, replace(m, manifest_path="/copy")),
                             avro.read_manifest(raw, m))


@pytest.mark.parametrize("version", [1, 2, 3])
def test_merge_keeps_every_entry_of_every_type(tmp_path, version):
    r = random.Random(version)
    table = merging_table(tmp_path, version, r, appends=3, files=20)
    snap = table.metadata.current_snapshot()
    before = [(m, e) for m in avro.load_manifest_list(table.io, snap.manifest_list)
              for e in avro.load_manifest(table.io, m)]
    assert len(before) == 60 and len({m.manifest_path for m, _ in before}) == 3
    last = replace(random_file(r, 999, version), first_row_id=None)
    with pytest.MonkeyPatch.context() as mp:  # the merge copies records: it builds no entries
        mp.setattr(avro, "load_manifest", lambda *a, **k: pytest.fail("merge read DataFiles"))
        result = FastAppendProducer(table, [(last, "")]).commit()
    manifests = avro.load_manifest_list(table.io, result.snapshot.manifest_list)
    assert len(manifests) == 1
    after = avro.load_manifest(table.io, manifests[0])
    assert after[0].status == ADDED and after[0].data_file.file_path == last.file_path
    assert after[0].snapshot_id == result.snapshot.snapshot_id
    want = [replace(e, status=EXISTING) for _, e in before]
    got = sorted(after[1:], key=lambda e: e.data_file.file_path)
    assert_same_entries(got, sorted(want, key=lambda e: e.data_file.file_path))
    m = manifests[0]
    assert (m.added_files_count, m.existing_files_count, m.deleted_files_count) == (1, 60, 0)
    assert m.existing_rows_count == sum(e.data_file.record_count for _, e in before)
