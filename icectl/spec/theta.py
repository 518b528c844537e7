"""Theta sketches of distinct values: the ``apache-datasketches-theta-v1`` Puffin blob.

The blob is an Apache DataSketches *compact* theta sketch (serial version 3), as Iceberg Java's
Spark action ``compute_table_stats`` writes it:

* each non-null value is turned into its single-value bytes (Iceberg's ``Conversions``) and
  hashed with MurmurHash3 x64 128 under the update seed 9001; the first 64-bit half, shifted
  right by one, is the value's hash (empty strings and binaries are skipped, as DataSketches
  skips empty input);
* each reading task feeds its values, in row order, to an *Alpha* sketch of nominal size
  K = 4096: exact until K + 1 distinct hashes, then every newly kept hash lowers theta by the
  factor K / (K + 1) and hashes at or above theta are forgotten;
* the tasks' sketches are combined by a theta union of nominal size K: theta is the smallest
  of the tasks' thetas and, when more than K hashes lie under it, the (K + 1)-th smallest of
  them; the sketch keeps the hashes under theta, ascending.

The estimate is ``kept * 2**63 / theta`` (exact, the number kept, while theta is 1.0); Java
stores it truncated to a whole number as the blob property ``ndv``.

Serialized form (little-endian): byte 0 preamble longs (1 for an empty or single-hash sketch, 2
exact, 3 with theta), byte 1 serial version 3, byte 2 family 3 (compact), bytes 3-4 zero, byte
5 flags (read-only 2, empty 4, compact 8, ordered 16, single item 32), bytes 6-7 the seed hash
(the low 16 bits of MurmurHash3 x64 128 of the seed as an 8-byte long, seed 0; 0x93CC for 9001);
then with two or more preamble longs the 32-bit count of hashes and the float p = 1.0, with
three the 64-bit theta, then the hashes. An empty sketch is the 8 bytes ``01 03 03 00 00 1E 00
00``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Iterable, Iterator

import mmh3

from icectl.errors import CorruptMetadata

__all__ = ["THETA_BLOB_TYPE", "UPDATE_SEED", "NOMINAL_ENTRIES", "MAX_THETA", "NDV_PROPERTY",
           "AlphaSketch", "CompactSketch", "value_hash", "union", "seed_hash", "parse_sketch",
           "iter_hashes"]

THETA_BLOB_TYPE = "apache-datasketches-theta-v1"
NDV_PROPERTY = "ndv"
UPDATE_SEED = 9001
NOMINAL_ENTRIES = 4096  # DataSketches' default nominal size (lg K = 12)
MAX_THETA = (1 << 63) - 1  # theta 1.0
_ALPHA = NOMINAL_ENTRIES / (NOMINAL_ENTRIES + 1.0)
_SER_VER = 3
_FAMILY_COMPACT = 3
_READ_ONLY, _EMPTY, _COMPACT, _ORDERED, _SINGLE = 2, 4, 8, 16, 32
_EMPTY_BYTES = bytes([1, _SER_VER, _FAMILY_COMPACT, 0, 0, _READ_ONLY | _EMPTY | _COMPACT | _ORDERED,
                      0, 0])
_P_ONE = struct.pack("<f", 1.0)


def seed_hash(seed: int = UPDATE_SEED) -> int:
    """DataSketches' 16-bit seed hash: low bits of the x64 128 hash of the seed, hash seed 0."""
    return mmh3.hash64(struct.pack("<q", seed), 0, signed=False)[0] & 0xFFFF


_SEED_HASH = seed_hash()


def value_hash(data: bytes) -> int:
    """The theta hash of a value's bytes (non-empty): the first half of MurmurHash3 x64 128
    under seed 9001, as an unsigned 64-bit number shifted right by one."""
    return mmh3.hash64(data, UPDATE_SEED, signed=False)[0] >> 1


class AlphaSketch:
    """The Alpha sketch one reading task builds, fed hashes in row order."""

    __slots__ = ("theta", "seen", "kept")

    def __init__(self) -> None:
        self.theta = MAX_THETA
        self.seen = 0  # distinct hashes accepted so far
        self.kept: set[int] = set()

    def update(self, h: int) -> None:
        if h <= 0 or h >= self.theta or h in self.kept:
            return  # zero, over theta, or a duplicate: DataSketches rejects it
        self.kept.add(h)
        self.seen += 1
        if self.seen > NOMINAL_ENTRIES:  # sketch mode: every accepted hash lowers theta
            self.theta = int(float(self.theta) * _ALPHA)
            if len(self.kept) > 4 * NOMINAL_ENTRIES:
                self.kept = {x for x in self.kept if x < self.theta}

    def update_all(self, hashes: Iterable[int]) -> None:
        """:meth:`update` with each of ``hashes`` in turn (the same steps, inlined)."""
        theta, seen, kept = self.theta, self.seen, self.kept
        for h in hashes:
            if h <= 0 or h >= theta or h in kept:
                continue
            kept.add(h)
            seen += 1
            if seen > NOMINAL_ENTRIES:
                theta = int(float(theta) * _ALPHA)
                if len(kept) > 4 * NOMINAL_ENTRIES:
                    kept = {x for x in kept if x < theta}
        self.theta, self.seen, self.kept = theta, seen, kept

    def valid(self) -> tuple[int, set[int]]:
        """Theta and the hashes under it (the sketch's compact form)."""
        return self.theta, {x for x in self.kept if x < self.theta}


@dataclass(frozen=True)
class CompactSketch:
    """A compact theta sketch: theta, the hashes under it (ascending), and whether it is empty
    (it saw no value at all)."""

    theta: int
    hashes: tuple[int, ...]
    empty: bool = False

    @property
    def estimate(self) -> float:
        if self.theta >= MAX_THETA:
            return float(len(self.hashes))
        return len(self.hashes) * (float(1 << 63) / self.theta)

    @property
    def ndv(self) -> int:
        """The estimate as Java stores it in the ``ndv`` property (truncated)."""
        return int(self.estimate)

    def to_bytes(self) -> bytes:
        if self.empty or (not self.hashes and self.theta >= MAX_THETA):
            return _EMPTY_BYTES
        n = len(self.hashes)
        flags = _READ_ONLY | _COMPACT | _ORDERED
        if n == 1 and self.theta >= MAX_THETA:
            head = struct.pack("<BBBBBBH", 1, _SER_VER, _FAMILY_COMPACT, 0, 0, flags | _SINGLE,
                               _SEED_HASH)
            return head + struct.pack("<q", self.hashes[0])
        pre = 3 if self.theta < MAX_THETA else 2
        out = [struct.pack("<BBBBBBH", pre, _SER_VER, _FAMILY_COMPACT, 0, 0, flags, _SEED_HASH),
               struct.pack("<i", n), _P_ONE]
        if pre == 3:
            out.append(struct.pack("<q", self.theta))
        out.append(struct.pack(f"<{n}q", *self.hashes))
        return b"".join(out)


def union(parts: Iterable[tuple[int, set[int]]], any_value: bool = True) -> CompactSketch:
    """The theta union (nominal size K) of sketches given as (theta, hashes under theta)."""
    theta = MAX_THETA
    pool: set[int] = set()
    for t, hashes in parts:
        theta = min(theta, t)
        pool |= hashes
        if len(pool) > 4 * NOMINAL_ENTRIES:
            theta, pool = _cut(pool, theta)
    theta, kept = _cut(pool, theta)
    return CompactSketch(theta, tuple(sorted(kept)), empty=not any_value)


def _cut(pool: set[int], theta: int) -> tuple[int, set[int]]:
    """Theta and the hashes kept: under theta, at most K of them (theta becomes the (K+1)-th)."""
    under = sorted(x for x in pool if x < theta)
    if len(under) > NOMINAL_ENTRIES:
        theta = under[NOMINAL_ENTRIES]
        under = under[:NOMINAL_ENTRIES]
    return theta, set(under)


def parse_sketch(data: bytes, what: str = "theta sketch") -> CompactSketch:
    """Read a compact theta sketch (serial version 3) written with seed 9001."""
    if len(data) < 8:
        raise CorruptMetadata(f"{what}: {len(data)} bytes is too short")
    pre, ser, fam, _, _, flags, shash = struct.unpack_from("<BBBBBBH", data)
    pre &= 0x3F
    if ser != _SER_VER or fam != _FAMILY_COMPACT:
        raise CorruptMetadata(f"{what}: not a compact theta sketch of serial version 3 "
                              f"(version {ser}, family {fam})")
    if flags & _EMPTY:
        return CompactSketch(MAX_THETA, (), empty=True)
    if shash != _SEED_HASH:
        raise CorruptMetadata(f"{what}: seed hash {shash:#06x} is not that of seed {UPDATE_SEED}")
    if pre == 1:
        if len(data) != 16:
            raise CorruptMetadata(f"{what}: a single-item sketch has 16 bytes, not {len(data)}")
        return CompactSketch(MAX_THETA, (struct.unpack_from("<q", data, 8)[0],))
    if pre not in (2, 3) or len(data) < 8 * pre:
        raise CorruptMetadata(f"{what}: bad preamble of {pre} longs in {len(data)} bytes")
    (n,) = struct.unpack_from("<i", data, 8)
    theta = struct.unpack_from("<q", data, 16)[0] if pre == 3 else MAX_THETA
    if n < 0 or len(data) != 8 * (pre + n) or not 0 < theta <= MAX_THETA:
        raise CorruptMetadata(f"{what}: {n} hashes and theta {theta} do not fit {len(data)} bytes")
    return CompactSketch(theta, struct.unpack_from(f"<{n}q", data, 8 * pre))


def iter_hashes(values: Iterable[bytes]) -> Iterator[int]:
    """The theta hash (:func:`value_hash`) of every non-empty value (bytes or a buffer)."""
    hash64, seed = mmh3.hash64, UPDATE_SEED
    for v in values:
        if len(v):
            yield hash64(v, seed, signed=False)[0] >> 1
