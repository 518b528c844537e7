"""Theta sketches (icectl.spec.theta) against DataSketches' documented forms and the values
Spark's compute_table_stats was seen to write (byte-for-byte checks against Spark itself are in
tests/interop/test_theta_stats_interop.py)."""

from __future__ import annotations

import random
import struct

import pytest

from icectl.errors import CorruptMetadata
from icectl.spec.theta import (MAX_THETA, NOMINAL_ENTRIES, AlphaSketch, CompactSketch, iter_hashes,
                               parse_sketch, seed_hash, union, value_hash)


def _longs(values) -> CompactSketch:
    a = AlphaSketch()
    a.update_all(iter_hashes(struct.pack("<q", v) for v in values))
    return union([a.valid()])


def test_the_seed_hash_of_the_default_seed() -> None:
    assert seed_hash(9001) == 0x93CC  # DataSketches' DEFAULT_UPDATE_SEED hash


@pytest.mark.parametrize("n, ndv", [(7, 7), (50, 50), (20000, 19993)])
def test_ndv_of_distinct_longs_equals_what_spark_wrote(n: int, ndv: int) -> None:
    # Spark's compute_table_stats on ids 0..n-1 (bigint) wrote these ndv values
    assert _longs(range(n)).ndv == ndv


def test_exact_sketches_serialize_as_datasketches_compact_form() -> None:
    s = _longs([5, 1, 5, 3])
    data = s.to_bytes()
    assert data[:8] == bytes([2, 3, 3, 0, 0, 0x1A, 0xCC, 0x93])
    assert struct.unpack_from("<i", data, 8)[0] == 3 and data[12:16] == struct.pack("<f", 1.0)
    hashes = struct.unpack_from("<3q", data, 16)
    assert list(hashes) == sorted(value_hash(struct.pack("<q", v)) for v in (1, 3, 5))
    assert len(data) == 16 + 3 * 8 and parse_sketch(data) == s


def test_empty_and_single_item_forms() -> None:
    empty = union([AlphaSketch().valid()], any_value=False)
    assert empty.to_bytes() == bytes([1, 3, 3, 0, 0, 0x1E, 0, 0]) and empty.ndv == 0
    assert parse_sketch(empty.to_bytes()).empty
    one = _longs([42, 42])
    data = one.to_bytes()
    assert data[:8] == bytes([1, 3, 3, 0, 0, 0x3A, 0xCC, 0x93]) and len(data) == 16
    assert parse_sketch(data) == one and one.ndv == 1


def test_estimating_sketches_keep_k_hashes_under_theta() -> None:
    s = _longs(range(100_000))
    assert s.theta < MAX_THETA and len(s.hashes) <= NOMINAL_ENTRIES
    assert all(h < s.theta for h in s.hashes) and list(s.hashes) == sorted(s.hashes)
    assert abs(s.estimate - 100_000) < 100_000 * 0.05
    data = s.to_bytes()
    assert data[0] == 3 and struct.unpack_from("<q", data, 16)[0] == s.theta
    assert parse_sketch(data) == s


def test_the_union_of_exact_parts_keeps_the_k_smallest_hashes() -> None:
    # tasks of at most K distinct values are exact; their union keeps the K smallest hashes of
    # all, theta the (K+1)-th, however the rows were split
    rng = random.Random(7)
    values = [rng.randrange(-10**12, 10**12) for _ in range(30_000)]
    every = sorted({value_hash(struct.pack("<q", v)) for v in values})
    for size in (3000, 4096, 1000):
        parts = [_part(values[i:i + size]) for i in range(0, len(values), size)]
        assert all(t == MAX_THETA for t, _ in parts)
        u = union(parts)
        assert u.theta == every[NOMINAL_ENTRIES] and list(u.hashes) == every[:NOMINAL_ENTRIES]


def _part(values):
    a = AlphaSketch()
    a.update_all(iter_hashes(struct.pack("<q", v) for v in values))
    return a.valid()


def test_small_parts_union_exactly_in_any_order() -> None:
    values = list(range(3000))
    parts = [_part(values[i::3]) for i in range(3)]
    assert union(parts) == union(parts[::-1]) == union([_part(values)])
    assert union(parts).ndv == 3000


def test_empty_values_are_not_counted() -> None:
    assert list(iter_hashes([b"", b"a", b""])) == [value_hash(b"a")]


@pytest.mark.parametrize("data, why", [
    (b"\x02\x03", "too short"),
    (bytes([2, 2, 3, 0, 0, 0x1A, 0xCC, 0x93]) + bytes(8), "serial version 3"),
    (bytes([2, 3, 3, 0, 0, 0x1A, 0x00, 0x11]) + bytes(8), "seed hash"),
    (bytes([2, 3, 3, 0, 0, 0x1A, 0xCC, 0x93]) + struct.pack("<if", 5, 1.0), "do not fit"),
    (bytes([1, 3, 3, 0, 0, 0x3A, 0xCC, 0x93]) + bytes(4), "single-item"),
])
def test_corrupt_sketches_are_refused(data: bytes, why: str) -> None:
    with pytest.raises(CorruptMetadata, match=why):
        parse_sketch(data)
