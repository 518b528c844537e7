"""The Avro object container format: header, blocks and block codecs.

Shared by the record reader (icectl.io.formats.avro_files) and the columnar manifest decoder
(icectl.io.manifest.columns). Codecs need nothing beyond the standard library and pyarrow.

The reference writes manifests with ``deflate`` unless ``write.avro.compression-codec`` says
otherwise. ``snappy`` blocks (raw snappy followed by a 4-byte CRC-32 of the uncompressed bytes)
are decompressed with pyarrow's snappy codec, ``bzip2`` and ``xz`` with the standard library.
``zstandard`` blocks written by streaming compressors do not record their decompressed size,
which pyarrow's codec requires, so they are refused with a clear error.
"""

from __future__ import annotations

import bz2
import lzma
import struct
import zlib
from contextlib import contextmanager
from typing import Iterator


from icectl.errors import CorruptMetadata, UnsupportedFeature

SUPPORTED = ("null", "deflate", "snappy", "bzip2", "xz")


@contextmanager
def naming_file(what: str, path: str) -> Iterator[None]:
    """Around the decoding of the container at ``path`` (a manifest, a manifest list): an error
    about its bytes (the header, a block) names the file, as ``what path: problem``."""
    try:
        yield
    except CorruptMetadata as e:
        if not path or path in str(e):
            raise
        raise CorruptMetadata(f"{what} {path}: {e}") from e


def _varint(data: bytes, pos: int = 0) -> tuple[int, int]:
    shift = result = 0
    while True:
        if pos >= len(data):
            raise CorruptMetadata("truncated varint in compressed Avro block")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7


def decompress_block(codec: str, data: bytes) -> bytes:
    """The uncompressed bytes of one Avro block written with ``codec``."""
    if codec == "null":
        return data
    try:
        if codec == "deflate":
            return zlib.decompress(data, -15)
        if codec == "snappy":
            if len(data) < 4:
                raise CorruptMetadata("snappy Avro block is shorter than its checksum")
            body, crc = data[:-4], struct.unpack(">I", data[-4:])[0]
            size, _ = _varint(body)
            import pyarrow as pa  # only here: keeps pyarrow out of every command's start-up

            try:
                out = pa.Codec("snappy").decompress(body, decompressed_size=size).to_pybytes()
            except pa.ArrowException as e:
                raise CorruptMetadata(f"cannot decompress snappy Avro block: {e}") from None
            if zlib.crc32(out) & 0xFFFFFFFF != crc:
                raise CorruptMetadata("snappy Avro block fails its CRC-32 check")
            return out
        if codec == "bzip2":
            return bz2.decompress(data)
        if codec == "xz":
            return lzma.decompress(data)
    except (zlib.error, OSError, lzma.LZMAError) as e:
        raise CorruptMetadata(f"cannot decompress {codec} Avro block: {e}") from None
    raise UnsupportedFeature(
        f"Avro codec {codec!r} is not supported (icectl reads {', '.join(SUPPORTED)}); "
        "set write.avro.compression-codec=gzip on the table for new manifests")


MAGIC = b"Obj\x01"
SYNC_SIZE = 16


def read_long(buf: bytes, pos: int) -> tuple[int, int]:
    """A zig-zag varint at ``pos``: (value, next position)."""
    n, pos = _varint(buf, pos)
    return (n >> 1) ^ -(n & 1), pos


def write_long(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def _read_bytes(buf: bytes, pos: int) -> tuple[bytes, int]:
    n, pos = read_long(buf, pos)
    if n < 0 or pos + n > len(buf):
        raise CorruptMetadata("truncated Avro header")
    return bytes(buf[pos:pos + n]), pos + n


def split_header(buf: bytes) -> tuple[dict[str, bytes], bytes, int]:
    """Header metadata, sync marker and the offset of the first data block."""
    if bytes(buf[:4]) != MAGIC:
        raise CorruptMetadata("not an Avro container file (bad magic)")
    pos = 4
    meta: dict[str, bytes] = {}
    while True:
        count, pos = read_long(buf, pos)
        if count == 0:
            break
        if count < 0:
            count = -count
            _, pos = read_long(buf, pos)  # block size in bytes, unused
        for _ in range(count):
            k, pos = _read_bytes(buf, pos)
            v, pos = _read_bytes(buf, pos)
            meta[k.decode("utf-8")] = v
    sync = bytes(buf[pos:pos + SYNC_SIZE])
    if len(sync) != SYNC_SIZE:
        raise CorruptMetadata("truncated Avro header")
    return meta, sync, pos + SYNC_SIZE


def encode_header(meta: dict[str, bytes], sync: bytes) -> bytes:
    out = bytearray(MAGIC)
    if meta:
        out += write_long(len(meta))
        for k, v in meta.items():
            kb = k.encode("utf-8")
            out += write_long(len(kb)) + kb + write_long(len(v)) + v
    out += write_long(0)
    out += sync
    return bytes(out)


def iter_blocks(buf: bytes, pos: int, sync: bytes) -> Iterator[tuple[int, bytes]]:
    """(object count, still-compressed data) of every block after the header ending at ``pos``."""
    n = len(buf)
    while pos < n:
        count, pos = read_long(buf, pos)
        size, pos = read_long(buf, pos)
        data = buf[pos:pos + size]
        pos += size
        if buf[pos:pos + 16] != sync:
            raise CorruptMetadata("Avro block sync marker mismatch")
        pos += 16
        yield count, data


def decoded_blocks(buf: bytes, pos: int, sync: bytes, codec: str) -> Iterator[tuple[int, bytes]]:
    """(object count, uncompressed data) of every block after the header ending at ``pos``."""
    if codec == "deflate":  # the reference's default: inline for speed
        for count, data in iter_blocks(buf, pos, sync):
            yield count, zlib.decompress(data, -15)
        return
    for count, data in iter_blocks(buf, pos, sync):
        yield count, decompress_block(codec, data)


def decompressed_body(codec: str, buf: bytes, pos: int, sync: bytes) -> bytes:
    """The blocks after the header re-encoded uncompressed (for readers that lack ``codec``)."""
    out = bytearray()
    for count, data in iter_blocks(buf, pos, sync):
        raw = decompress_block(codec, data)
        out += write_long(count) + write_long(len(raw)) + raw + sync
    return bytes(out)
