"""The columnar manifest decoder agrees with the record reader (icectl.io.manifest.records) on manifests
written by the Java reference (every Spark type as identity partition, deletes, DVs) and by
icectl's writer for every format version, including odd layouts (multi-byte lengths, long
bounds, null maps)."""

from __future__ import annotations

import random
import struct
import uuid
from decimal import Decimal
from pathlib import Path

import pytest

from icectl.errors import CorruptMetadata
from icectl.io.manifest.records import read_manifest, read_manifest_list, write_manifest_raw
from icectl.io.manifest.columns import (
    cache_info,
    clear_cache,
    decode_manifest,
    load_manifest_columns,
)
from icectl.spec.manifests import (
    ADDED,
    DATA,
    DELETED,
    EQUALITY_DELETES,
    EXISTING,
    MANIFEST_DATA,
    MANIFEST_DELETES,
    POSITION_DELETES,
    DataFile,
    ManifestEntry,
)
from icectl.spec.types import (
    DATE,
    STRING,
    UUID,
    DecimalType,
    NestedField,
    StructType,
)

DATA_DIR = Path(__file__).resolve().parent.parent / "data" / "manifests"


def _all_stats_ids(entries: list[ManifestEntry]) -> set[int]:
    ids: set[int] = set()
    for e in entries:
        f = e.data_file
        for m in (f.value_counts, f.null_value_counts, f.nan_value_counts, f.lower_bounds,
                  f.upper_bounds):
            ids.update(m or {})
    return ids


def _key(values: tuple) -> tuple:
    # NaN partition values (identity on double) compare equal here
    return tuple("NaN" if isinstance(v, float) and v != v else v for v in values)


def assert_same(cols, entries: list[ManifestEntry]) -> None:
    assert cols.count == len(entries)
    for i, e in enumerate(entries):
        f = e.data_file
        assert cols.status[i] == e.status
        assert cols.snapshot_id[i] == e.snapshot_id
        assert cols.data_sequence_number[i] == e.sequence_number
        assert cols.file_sequence_number[i] == e.file_sequence_number
        assert cols.content[i] == f.content
        assert cols.file_path[i] == f.file_path
        assert cols.file_format[i] == f.file_format.upper()
        assert _key(cols.partition_tuple(i)) == _key(tuple(f.partition))
        assert cols.record_count[i] == f.record_count
        assert cols.file_size_in_bytes[i] == f.file_size_in_bytes
        assert (tuple(cols.split_offsets[i]) if cols.split_offsets[i] is not None else None) \
            == f.split_offsets
        assert (tuple(cols.equality_ids[i]) if cols.equality_ids[i] is not None else None) \
            == f.equality_ids
        assert cols.referenced_data_file[i] == f.referenced_data_file
        assert cols.content_offset[i] == f.content_offset
        assert cols.content_size_in_bytes[i] == f.content_size_in_bytes
        assert cols.first_row_id[i] == f.first_row_id
        for fid, st in cols.stats.items():
            assert st.value_counts[i] == (f.value_counts or {}).get(fid)
            assert st.null_counts[i] == (f.null_value_counts or {}).get(fid)
            assert st.nan_counts[i] == (f.nan_value_counts or {}).get(fid)
            assert st.lower[i] == (f.lower_bounds or {}).get(fid)
            assert st.upper[i] == (f.upper_bounds or {}).get(fid)


@pytest.mark.parametrize("table", sorted(p.name for p in DATA_DIR.iterdir() if p.is_dir()))
def test_reference_manifests_decode_like_the_record_reader(table: str) -> None:
    d = DATA_DIR / table
    for m in read_manifest_list((d / "manifest-list.avro").read_bytes()):
        data = (d / m.manifest_path.rsplit("/", 1)[-1]).read_bytes()
        entries = read_manifest(data, m)
        ids = _all_stats_ids(entries) | {2147483546, 999}
        cols = decode_manifest(data, wanted_stats=ids, added_snapshot_id=m.added_snapshot_id,
                               sequence_number=m.sequence_number, first_row_id=m.first_row_id)
        assert_same(cols, entries)
        # without statistics, the rest is the same
        bare = decode_manifest(data, added_snapshot_id=m.added_snapshot_id,
                               sequence_number=m.sequence_number, first_row_id=m.first_row_id)
        assert bare.stats == {} and bare.file_path == cols.file_path


PTYPE = StructType((NestedField(1000, "d", DATE, False), NestedField(1001, "s", STRING, False),
                    NestedField(1002, "x", DecimalType(12, 3), False),
                    NestedField(1003, "u", UUID, False)))


def _random_entries(rng: random.Random, fv: int, content: int, n: int) -> list[ManifestEntry]:
    out = []
    for k in range(n):
        def maybe_map(vals: dict) -> dict | None:
            return None if rng.random() < 0.1 else vals
        ids = rng.sample(range(1, 200), rng.randint(0, 8))
        bounds = {}
        for fid in ids:
            kind = rng.random()
            if kind < 0.2:
                bounds[fid] = bytes(rng.randrange(256) for _ in range(rng.choice([63, 64, 70, 200])))
            elif kind < 0.6:
                bounds[fid] = struct.pack("<q", rng.randint(-2**63, 2**63 - 1))
            else:
                bounds[fid] = "".join(rng.choice("aé中z") for _ in range(rng.randint(0, 20))).encode()
        counts = {fid: rng.choice([0, 1, 63, 64, 2**20, 2**40]) for fid in ids}
        status = rng.choice([ADDED, EXISTING, DELETED]) if fv > 1 else rng.choice([ADDED, EXISTING])
        seq = None if status == ADDED and rng.random() < 0.5 else rng.randint(0, 10**12)
        f = DataFile(
            content=content if fv > 1 else DATA,
            file_path=f"s3://bucket/{'x' * rng.randint(0, 200)}/{k}-é.parquet",
            file_format=rng.choice(["PARQUET", "AVRO", "ORC"]),
            partition=(rng.choice([None, rng.randint(-10**5, 10**5)]),
                       rng.choice([None, "", "a" * rng.randint(0, 90)]),
                       rng.choice([None, Decimal(rng.randint(-10**9, 10**9)).scaleb(-3)]),
                       rng.choice([None, uuid.UUID(int=rng.getrandbits(128))])),
            record_count=rng.randint(0, 10**9),
            file_size_in_bytes=rng.randint(0, 10**12),
            column_sizes=maybe_map(dict(counts)),
            value_counts=maybe_map(dict(counts)),
            null_value_counts=maybe_map({k2: v // 2 for k2, v in counts.items()}),
            nan_value_counts=maybe_map({k2: 0 for k2 in ids[:2]}),
            lower_bounds=maybe_map(dict(bounds)),
            upper_bounds=maybe_map({k2: v + b"\x01" for k2, v in bounds.items()}),
            split_offsets=rng.choice([None, (), (4,), tuple(sorted(rng.sample(range(10**9), 5)))]),
            equality_ids=(1, 2) if content == EQUALITY_DELETES and fv > 1 else None,
            sort_order_id=rng.choice([None, 0, 1]),
            referenced_data_file=rng.choice([None, "s3://bucket/f.parquet"])
            if content == POSITION_DELETES and fv > 1 else None,
            first_row_id=rng.choice([None, rng.randint(0, 10**6)]) if fv >= 3 and content == DATA else None,
        )
        out.append(ManifestEntry(status, rng.choice([None, rng.randint(1, 2**62)]), seq,
                                 None if seq is None else seq, f))
    return out


@pytest.mark.parametrize("fv,content", [(1, DATA), (2, DATA), (2, POSITION_DELETES),
                                        (2, EQUALITY_DELETES), (3, DATA), (3, POSITION_DELETES)])
def test_random_manifests_decode_like_the_record_reader(fv: int, content: int) -> None:
    from icectl.spec.manifests import ManifestFile

    rng = random.Random(fv * 10 + content)
    entries = _random_entries(rng, fv, content, 300)
    data = write_manifest_raw(entries, partition_type=PTYPE, spec_id=3, partition_spec_json=[],
                              schema_json={"type": "struct", "schema-id": 0, "fields": []},
                              format_version=fv, snapshot_id=77,
                              content=MANIFEST_DATA if content == DATA else MANIFEST_DELETES)
    mf = ManifestFile("m.avro", len(data), 3, MANIFEST_DATA, sequence_number=5 if fv > 1 else 0,
                      min_sequence_number=0, added_snapshot_id=77,
                      first_row_id=1000 if fv >= 3 and content == DATA else None)
    expected = read_manifest(data, mf)
    ids = _all_stats_ids(entries)
    cols = decode_manifest(data, wanted_stats=ids, added_snapshot_id=77,
                           sequence_number=mf.sequence_number, first_row_id=mf.first_row_id)
    assert_same(cols, expected)


def test_corrupt_manifest_is_reported() -> None:
    d = DATA_DIR / "t2"
    m = read_manifest_list((d / "manifest-list.avro").read_bytes())[0]
    data = (d / m.manifest_path.rsplit("/", 1)[-1]).read_bytes()
    with pytest.raises(CorruptMetadata):
        decode_manifest(b"nope" + data[4:])
    with pytest.raises(CorruptMetadata):
        decode_manifest(data[: len(data) - 40])


class _CountingIO:
    def __init__(self, data: dict[str, bytes]):
        self.data = data
        self.reads = 0

    def read(self, path: str) -> bytes:
        self.reads += 1
        return self.data[path]


def test_cache_by_path_and_length_widens_statistics() -> None:
    d = DATA_DIR / "t2"
    m = read_manifest_list((d / "manifest-list.avro").read_bytes())[0]
    data = (d / m.manifest_path.rsplit("/", 1)[-1]).read_bytes()
    io = _CountingIO({"p": data})
    clear_cache()
    load_manifest_columns(io, "p", len(data), wanted_stats={1}, sequence_number=1,
                          added_snapshot_id=5)
    assert io.reads == 1 and cache_info()["manifests"] == 0  # met once: not kept in memory
    a = load_manifest_columns(io, "p", len(data), wanted_stats={1}, sequence_number=1,
                              added_snapshot_id=5)
    b = load_manifest_columns(io, "p", len(data), wanted_stats={1}, sequence_number=1,
                              added_snapshot_id=5)
    assert a is b and io.reads == 2
    c = load_manifest_columns(io, "p", len(data), wanted_stats={2}, sequence_number=1,
                              added_snapshot_id=5)
    assert io.reads == 3 and set(c.stats) == {1, 2}
    load_manifest_columns(io, "p", len(data), wanted_stats={1, 2}, sequence_number=1,
                          added_snapshot_id=5)
    assert io.reads == 3 and cache_info()["manifests"] == 1
    # NaN counts only for the ids asked for; asking for more decodes again
    clear_cache()
    for _ in range(2):  # kept in memory from the second decoding on
        d = load_manifest_columns(io, "p", len(data), wanted_stats={1, 2}, nan_stats={2},
                                  sequence_number=1, added_snapshot_id=5)
    assert d.nan_decoded == {2} and set(d.stats[1].nan_counts) == {None}
    reads = io.reads
    e = load_manifest_columns(io, "p", len(data), wanted_stats={1}, nan_stats={1},
                              sequence_number=1, added_snapshot_id=5)
    assert io.reads == reads + 1 and e.nan_decoded == {1, 2}
    # other inheritance inputs (another manifest list entry): decoded again
    reads = io.reads
    load_manifest_columns(io, "p", len(data), sequence_number=2, added_snapshot_id=5)
    assert io.reads == reads + 1
    clear_cache()
    assert cache_info() == {"manifests": 0, "entries": 0}


def test_repeating_shapes_take_the_fast_path_and_agree() -> None:
    """Entries with the same metric-map shapes (the usual case) are matched by one compiled
    pattern per shape; values, absent keys, null maps and shape changes must all agree."""
    from icectl.spec.manifests import ManifestFile

    rng = random.Random(5)
    entries = []
    for k in range(400):
        shape = k // 100  # four runs of shapes
        ids = [1, 2, 3, 70] if shape != 2 else [1, 3]
        lo = {i: struct.pack("<q", rng.randint(-2**40, 2**40)) for i in ids}
        if shape == 3:
            lo[2] = "x" * rng.randint(0, 63)
            lo[2] = lo[2].encode()
        counts = {i: rng.choice([0, 5, 64, 10**6]) for i in ids}
        f = DataFile(DATA, f"f{k}", "PARQUET", (None, None, None, None), 10, 100,
                     column_sizes=counts, value_counts=counts,
                     null_value_counts=None if shape == 1 else {i: 0 for i in ids},
                     nan_value_counts={}, lower_bounds=lo,
                     upper_bounds={i: v + b"\xff" for i, v in lo.items()})
        entries.append(ManifestEntry(ADDED, 1, None, None, f))
    data = write_manifest_raw(entries, partition_type=PTYPE, spec_id=0, partition_spec_json=[],
                              schema_json={"type": "struct", "schema-id": 0, "fields": []},
                              format_version=2, snapshot_id=1)
    mf = ManifestFile("m", len(data), 0, sequence_number=3, min_sequence_number=3,
                      added_snapshot_id=1)
    expected = read_manifest(data, mf)
    for wanted in ({2}, {1, 70}, {1, 2, 3, 70, 99}):
        cols = decode_manifest(data, wanted_stats=wanted, added_snapshot_id=1, sequence_number=3)
        assert_same(cols, expected)
