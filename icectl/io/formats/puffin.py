"""Deletion vectors: the ``deletion-vector-v1`` blob of a Puffin file (format v3).

A blob is read at the delete entry's ``content_offset`` / ``content_size_in_bytes``:

* 4 bytes, big-endian: the length of magic + bitmap;
* magic ``D1 D3 39 64``;
* the deleted positions as a 64-bit roaring bitmap in the portable serialization: a
  little-endian 64-bit count of buckets, then for each bucket its little-endian 32-bit key (the
  positions' high 32 bits) and a 32-bit portable roaring bitmap of the low 32 bits;
* 4 bytes, big-endian: CRC-32 of magic + bitmap.

A 32-bit portable roaring bitmap starts with a cookie: ``12347`` in the low 16 bits (the high 16
bits holding the container count - 1) means a run bitmap follows, one bit per container; the
cookie ``12346`` is followed by a 32-bit container count and there are no run containers. Then one
(16-bit key, 16-bit cardinality - 1) pair per container, then (without runs, or with at least
four containers) 32-bit offsets, then the containers: runs (16-bit count, then (start,
length - 1) pairs), arrays (cardinality 16-bit values, at most 4096) or bitmaps (8 KiB).

Anything that does not parse, or a CRC that does not match, is :class:`CorruptMetadata`.

Writing: :func:`serialize_roaring64` (no run containers: arrays up to 4096 values, else 8 KiB
bitmaps) and :func:`deletion_vector_blob`; the Puffin file around the blobs is
:mod:`icectl.io.formats.puffin_file`'s (its names are re-exported here).
"""

from __future__ import annotations

import struct
import zlib
from array import array
from sys import byteorder
from typing import TYPE_CHECKING, Iterable

from icectl.errors import CorruptMetadata, IcectlError, StorageError
from icectl.io.formats.puffin_file import PUFFIN_MAGIC, PuffinBlob, puffin_file
from icectl.spec.reserved import ROW_POSITION_ID as ROW_POSITION_FIELD_ID

if TYPE_CHECKING:
    from icectl.io.storage.files import FileIO

__all__ = ["DV_MAGIC", "read_deletion_vector", "parse_deletion_vector", "parse_roaring64",
           "serialize_roaring64", "deletion_vector_blob", "PuffinBlob",
           "puffin_file", "PUFFIN_MAGIC", "DV_BLOB_TYPE", "ROW_POSITION_FIELD_ID"]

DV_MAGIC = b"\xd1\xd3\x39\x64"
_COOKIE_NO_RUN = 12346
_COOKIE_RUN = 12347
_NO_OFFSET_THRESHOLD = 4
_ARRAY_MAX = 4096
DV_BLOB_TYPE = "deletion-vector-v1"


class _Buf:
    __slots__ = ("data", "pos", "what")

    def __init__(self, data: bytes, what: str):
        self.data = data
        self.pos = 0
        self.what = what

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise CorruptMetadata(f"{self.what}: roaring bitmap is truncated")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def u16s(self, n: int) -> array:
        a = array("H")
        a.frombytes(self.take(2 * n))
        if byteorder == "big":
            a.byteswap()
        return a

    def u32(self) -> int:
        return struct.unpack("<I", self.take(4))[0]


def _bitmap_values(raw: bytes, base: int, out: list[int]) -> None:
    words = array("Q")
    words.frombytes(raw)
    if byteorder == "big":
        words.byteswap()
    for wi, w in enumerate(words):
        start = base + (wi << 6)
        while w:
            low = w & -w
            out.append(start + low.bit_length() - 1)
            w ^= low


def _parse32(buf: _Buf, high: int, out: list[int]) -> None:
    cookie = buf.u32()
    if cookie & 0xFFFF == _COOKIE_RUN:
        count = (cookie >> 16) + 1
        run_bits = buf.take((count + 7) // 8)
    elif cookie == _COOKIE_NO_RUN:
        count = buf.u32()
        run_bits = b""
    else:
        raise CorruptMetadata(f"{buf.what}: not a portable roaring bitmap (cookie {cookie})")
    header = buf.u16s(2 * count)
    if not run_bits or count >= _NO_OFFSET_THRESHOLD:
        buf.take(4 * count)  # offsets: containers are read in order
    last_key = -1
    for i in range(count):
        key, card = header[2 * i], header[2 * i + 1] + 1
        if key <= last_key:
            raise CorruptMetadata(f"{buf.what}: roaring container keys are not ascending")
        last_key = key
        base = (high << 32) | (key << 16)
        if run_bits and run_bits[i // 8] >> (i % 8) & 1:
            n = buf.u16s(1)[0]
            runs = buf.u16s(2 * n)
            for r in range(n):
                start = base + runs[2 * r]
                out.extend(range(start, start + runs[2 * r + 1] + 1))
        elif card <= _ARRAY_MAX:
            out.extend(base + v for v in buf.u16s(card))
        else:
            _bitmap_values(buf.take(8192), base, out)


def parse_roaring64(data: bytes, what: str = "roaring bitmap") -> list[int]:
    """The values of a 64-bit portable roaring bitmap, ascending."""
    buf = _Buf(data, what)
    (buckets,) = struct.unpack("<Q", buf.take(8))
    if buckets > len(data):
        raise CorruptMetadata(f"{what}: impossible bucket count {buckets}")
    out: list[int] = []
    last = -1
    for _ in range(buckets):
        high = buf.u32()
        if high <= last:
            raise CorruptMetadata(f"{what}: roaring bucket keys are not ascending")
        last = high
        _parse32(buf, high, out)
    if buf.pos != len(data):
        raise CorruptMetadata(f"{what}: {len(data) - buf.pos} bytes after the roaring bitmap")
    return out


def parse_deletion_vector(blob: bytes, what: str = "deletion vector") -> list[int]:
    """The deleted positions of one ``deletion-vector-v1`` blob, ascending."""
    if len(blob) < 12:
        raise CorruptMetadata(f"{what}: blob of {len(blob)} bytes is too short")
    (length,) = struct.unpack(">I", blob[:4])
    if length != len(blob) - 8:
        raise CorruptMetadata(f"{what}: length field says {length} bytes, blob holds "
                              f"{len(blob) - 8}")
    body = blob[4:4 + length]
    if body[:4] != DV_MAGIC:
        raise CorruptMetadata(f"{what}: bad magic {body[:4].hex()}")
    (crc,) = struct.unpack(">I", blob[4 + length:])
    if zlib.crc32(body) & 0xFFFFFFFF != crc:
        raise CorruptMetadata(f"{what}: CRC-32 does not match")
    return parse_roaring64(body[4:], what)


def read_deletion_vector(file_io: FileIO, path: str, offset: int | None,
                         length: int | None) -> list[int]:
    """Read and parse the blob of a deletion vector entry."""
    if offset is None or length is None:
        raise CorruptMetadata(f"deletion vector in {path} has no content offset or size")
    try:
        blob = file_io.read_range(path, offset, length)
    except IcectlError:
        raise
    except OSError as e:
        raise StorageError(f"cannot read deletion vector in {path}: {e}") from e
    if len(blob) != length:
        raise CorruptMetadata(f"deletion vector in {path}: file ends before offset "
                              f"{offset} + {length}")
    return parse_deletion_vector(blob, f"deletion vector in {path} at {offset}")


# -- writing --------------------------------------------------------------------------------------


def _serialize32(lows: list[int]) -> bytes:
    """A 32-bit portable roaring bitmap (no run containers) of ascending distinct values."""
    containers: list[tuple[int, list[int]]] = []
    for v in lows:
        key = v >> 16
        if not containers or containers[-1][0] != key:
            containers.append((key, []))
        containers[-1][1].append(v & 0xFFFF)
    header = bytearray(struct.pack("<II", _COOKIE_NO_RUN, len(containers)))
    bodies: list[bytes] = []
    for key, values in containers:
        header += struct.pack("<HH", key, len(values) - 1)
        if len(values) <= _ARRAY_MAX:
            bodies.append(struct.pack(f"<{len(values)}H", *values))
        else:
            words = [0] * 1024
            for v in values:
                words[v >> 6] |= 1 << (v & 63)
            bodies.append(struct.pack("<1024Q", *words))
    offset = len(header) + 4 * len(containers)
    for b in bodies:
        header += struct.pack("<I", offset)
        offset += len(b)
    return bytes(header) + b"".join(bodies)


def serialize_roaring64(positions: Iterable[int]) -> bytes:
    """The portable 64-bit roaring serialization of non-negative ``positions``."""
    values = sorted(set(positions))
    if values and values[0] < 0:
        raise ValueError("roaring bitmaps hold non-negative values only")
    buckets: list[tuple[int, list[int]]] = []
    for v in values:
        high = v >> 32
        if not buckets or buckets[-1][0] != high:
            buckets.append((high, []))
        buckets[-1][1].append(v & 0xFFFFFFFF)
    out = [struct.pack("<Q", len(buckets))]
    for high, lows in buckets:
        out.append(struct.pack("<I", high))
        out.append(_serialize32(lows))
    return b"".join(out)


def deletion_vector_blob(positions: Iterable[int]) -> bytes:
    """A ``deletion-vector-v1`` blob: length, magic, bitmap, CRC-32 (see the module docs)."""
    body = DV_MAGIC + serialize_roaring64(positions)
    return struct.pack(">I", len(body)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)
