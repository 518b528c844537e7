"""Merging manifests by copying raw Avro records: the copy path and the DataFile path give
byte-identical manifests (random partitions of every type, nulls included), inherited values are
made explicit, Java's manifests are copied, and a merge through the producer keeps every entry."""

from __future__ import annotations

import json
import math
import random
import uuid
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import pytest

from icectl.io import avro
from icectl.io.avro_container import split_header
from icectl.spec.manifests import (
    ADDED,
    DATA,
    DELETED,
    EXISTING,
    DataFile,
    ManifestEntry,
    ManifestFile,
    manifest_entry_avro_schema,
)
from icectl.spec.partitioning import PartitionSpec
from icectl.spec.schema import Schema
from icectl.spec.transforms import parse_transform
from icectl.table.producer import FastAppendProducer
from icectl.table.table import Table

from conftest import FAST_RETRY

JAVA_DIR = Path(__file__).resolve().parent.parent / "data" / "manifests"

# (Iceberg type, random value); every partition value type, awkward values included
_COLUMNS = [
    ("boolean", lambda r: r.random() < 0.5),
    ("int", lambda r: r.randint(-2**31, 2**31 - 1)),
    ("long", lambda r: r.randint(-2**63, 2**63 - 1)),
    ("float", lambda r: r.choice([-0.0, math.nan, math.inf, 1.5, -2.25])),
    ("double", lambda r: r.choice([-0.0, 0.0, math.nan, -math.inf, r.uniform(-1e300, 1e300)])),
    ("date", lambda r: r.randint(-800_000, 2_932_896)),
    ("time", lambda r: r.randint(0, 86_399_999_999)),
    ("timestamp", lambda r: r.randint(-62_135_596_800_000_001, 253_402_300_800_000_000)),
    ("timestamptz", lambda r: r.randint(-2**62, 2**62)),
    ("string", lambda r: r.choice(["", "héllo ✓", "a" * 40, str(r.random())])),
    ("uuid", lambda r: uuid.UUID(int=r.getrandbits(128))),
    ("fixed[3]", lambda r: bytes(r.getrandbits(8) for _ in range(3))),
    ("binary", lambda r: bytes(r.getrandbits(8) for _ in range(r.randint(0, 20)))),
    ("decimal(9,2)", lambda r: Decimal(r.randint(-999_999_999, 999_999_999)).scaleb(-2)),
    ("decimal(38,10)", lambda r: Decimal(r.randint(-10**38 + 1, 10**38 - 1)).scaleb(-10)),
]


def _schema_and_spec() -> tuple[Schema, PartitionSpec]:
    schema = Schema.from_json({"type": "struct", "schema-id": 0, "fields": [
        {"id": i + 1, "name": f"c{i}", "required": False, "type": t}
        for i, (t, _) in enumerate(_COLUMNS)]})
    spec = PartitionSpec.from_fields_json(
        [{"name": f"c{i}", "transform": "identity", "source-id": i + 1, "field-id": 1000 + i}
         for i in range(len(_COLUMNS))])
    return schema, spec


def _partition(r: random.Random) -> tuple:
    return tuple(None if r.random() < 0.2 else gen(r) for _, gen in _COLUMNS)


def _file(r: random.Random, i: int, version: int) -> DataFile:
    kw = {}
    if version >= 3:
        kw["first_row_id"] = r.choice([None, r.randint(0, 10**6)])
    return DataFile(DATA, f"/wh/t/data/f{i}.parquet", "PARQUET", _partition(r), r.randint(1, 10**6),
                    r.randint(1, 10**9), column_sizes={1: r.randint(0, 99), 2: 7},
                    value_counts={1: 5}, null_value_counts={1: 0}, nan_value_counts={4: 1},
                    lower_bounds={1: b"\x01", 3: b""}, upper_bounds={1: b"\xff" * 8},
                    split_offsets=(4, r.randint(5, 10**6)), sort_order_id=0, **kw)


def _entries(r: random.Random, version: int, n: int = 60) -> list[ManifestEntry]:
    out = []
    for i in range(n):
        status = r.choice([ADDED, EXISTING, DELETED])
        seq = None if status == ADDED and r.random() < 0.7 else r.randint(0, 50)
        out.append(ManifestEntry(status, r.choice([None, r.randint(1, 2**62)]), seq,
                                 seq if seq is None else seq - r.randint(0, seq), _file(r, i, version)))
    return out


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    return a == b and type(a) is type(b)


def _assert_same_entries(got: list[ManifestEntry], want: list[ManifestEntry]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        gp, wp = g.data_file.partition, w.data_file.partition
        assert len(gp) == len(wp) and all(_same(x, y) for x, y in zip(gp, wp)), (gp, wp)
        assert replace(g, data_file=replace(g.data_file, partition=())) == replace(
            w, data_file=replace(w.data_file, partition=()))


def _without_sync(data: bytes) -> bytes:
    _, sync, _ = split_header(data)
    return data.replace(sync, b"S" * len(sync))


@pytest.mark.parametrize("version", [1, 2, 3])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_copied_records_give_the_same_bytes_as_entries(version, seed):
    r = random.Random(seed * 10 + version)
    schema, spec = _schema_and_spec()
    ptype = spec.partition_type(schema)
    entries = _entries(r, version)
    if version == 1:
        entries = [replace(e, sequence_number=None, file_sequence_number=None) for e in entries]
    layout, metadata = avro.manifest_header(
        ptype, spec_id=0, partition_spec_json=spec.fields_json(), schema_json=schema.to_json(),
        format_version=version)
    assert layout == manifest_entry_avro_schema(ptype, version)
    written = avro.write_manifest(entries, spec, schema, version, 42)
    records, partitions = avro.read_manifest_records(written, schema=layout)
    copied = avro.write_manifest_records(records, layout, metadata)
    assert _without_sync(copied) == _without_sync(written)
    stored = avro.read_manifest(written)
    for p, e in zip(partitions, stored, strict=True):
        assert all(_same(x, y) for x, y in zip(p, e.data_file.partition, strict=True))
    # the DataFile path on the same records' entries gives these bytes too
    again = avro.write_manifest(stored, spec, schema, version, 42)
    assert _without_sync(again) == _without_sync(written)


@pytest.mark.parametrize("version", [2, 3])
def test_copy_makes_inherited_values_explicit(version):
    r = random.Random(version)
    schema, spec = _schema_and_spec()
    layout = manifest_entry_avro_schema(spec.partition_type(schema), version)
    entries = [replace(e, snapshot_id=None) if e.status == ADDED else e
               for e in _entries(r, version)]
    written = avro.write_manifest(entries, spec, schema, version, None)
    mf = ManifestFile(manifest_path="/m.avro", manifest_length=len(written), partition_spec_id=0,
                      content=0, sequence_number=77, min_sequence_number=0, added_snapshot_id=9,
                      first_row_id=1000 if version >= 3 else None)
    records, _ = avro.read_manifest_records(written, mf, schema=layout)
    copy = avro.write_manifest_records(records, *avro.manifest_header(
        spec.partition_type(schema), spec_id=0, partition_spec_json=spec.fields_json(),
        schema_json=schema.to_json(), format_version=version))
    # read without its list entry, the copy holds what the original gives with it
    _assert_same_entries([replace(e, data_file=replace(e.data_file, spec_id=0))
                          for e in avro.read_manifest(copy)],
                         avro.read_manifest(written, mf))
    assert all(e.snapshot_id is not None for e in avro.read_manifest(copy))


def test_another_layout_is_not_copied():
    schema, spec = _schema_and_spec()
    written = avro.write_manifest(_entries(random.Random(5), 2), spec, schema, 2, 1)
    other = manifest_entry_avro_schema(spec.partition_type(schema), 3)
    assert avro.read_manifest_records(written, schema=other) is None


def java_manifests(table: str):
    """(list entry, bytes, icectl's layout and metadata for it) of each manifest Java wrote
    for the stored table ``table``."""
    d = JAVA_DIR / table
    lst = (d / "manifest-list.avro").read_bytes()
    version = int(avro.read_avro_metadata(lst)["format-version"])
    for m in avro.read_manifest_list(lst):
        raw = (d / m.manifest_path.rsplit("/", 1)[-1]).read_bytes()
        meta = avro.read_avro_metadata(raw)
        schema = Schema.from_json(json.loads(meta["schema"]))
        spec = PartitionSpec.from_fields_json(json.loads(meta["partition-spec"]),
                                              int(meta["partition-spec-id"]))
        layout, metadata = avro.manifest_header(
            spec.partition_type(schema), spec_id=spec.spec_id, partition_spec_json=spec.fields_json(),
            schema_json=schema.to_json(), format_version=version, content=m.content)
        yield m, raw, layout, metadata


@pytest.mark.parametrize("table", ["t2", "d2", "t3", "u3"])
def test_java_manifests_are_copied_as_they_read(table):
    """Java's manifests (docs in the schema) are in icectl's layout: copied, they read the same."""
    for m, raw, layout, metadata in java_manifests(table):
        got = avro.read_manifest_records(raw, m, schema=layout)
        assert got is not None
        copy = avro.write_manifest_records(got[0], layout, metadata)
        _assert_same_entries(avro.read_manifest(copy, replace(m, manifest_path="/copy")),
                             avro.read_manifest(raw, m))


def merging_table(tmp_path: Path, version: int, r: random.Random, *, appends: int,
                  files: int) -> Table:
    """A table of every partition type merging from 4 manifests on, with ``appends`` appends
    of ``files`` random files each."""
    from icectl.spec.metadata import new_table_metadata

    schema, spec = _schema_and_spec()
    location = str(tmp_path / "t")
    md = new_table_metadata(schema, spec, location=location, properties={
        "format-version": str(version), **FAST_RETRY,
        "commit.manifest-merge.enabled": "true", "commit.manifest.min-count-to-merge": "4"})
    table = Table.create(location, md)
    for k in range(appends):
        added = [replace(_file(r, 100 * k + i, version), first_row_id=None) for i in range(files)]
        FastAppendProducer(table, [(f, "") for f in added]).commit()
    return table


@pytest.mark.parametrize("version", [1, 2, 3])
def test_merge_keeps_every_entry_of_every_type(tmp_path, version):
    r = random.Random(version)
    table = merging_table(tmp_path, version, r, appends=3, files=20)
    snap = table.metadata.current_snapshot()
    before = [(m, e) for m in avro.load_manifest_list(table.io, snap.manifest_list)
              for e in avro.load_manifest(table.io, m)]
    assert len(before) == 60 and len({m.manifest_path for m, _ in before}) == 3
    last = replace(_file(r, 999, version), first_row_id=None)
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
    _assert_same_entries(got, sorted(want, key=lambda e: e.data_file.file_path))
    m = manifests[0]
    assert (m.added_files_count, m.existing_files_count, m.deleted_files_count) == (1, 60, 0)
    assert m.existing_rows_count == sum(e.data_file.record_count for _, e in before)
