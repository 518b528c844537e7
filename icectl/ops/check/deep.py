"""``--deep``: every live data and delete file exists with its recorded size and record count.

Parquet files (data, position and equality deletes) are checked against their footer's row
count; a deletion vector's blob is read and its cardinality compared with the manifest entry's
record count (the blob's length, magic and CRC are checked on the way); Avro and ORC files only
for existence and size.
"""

from __future__ import annotations

import struct
import zlib
from concurrent.futures import ThreadPoolExecutor
from typing import Iterable

from icectl.errors import IcectlError, NotFound
from icectl.io.files import FileIO
from icectl.io.parquet import read_footer
from icectl.ops.check.model import Problems
from icectl.spec.manifests import DataFile

__all__ = ["verify_files", "dv_cardinality"]

DV_MAGIC = b"\xd1\xd3\x39\x64"
_NO_RUNS = 12346  # 32-bit Roaring portable format cookies
_WITH_RUNS = 12347


def dv_cardinality(blob: bytes) -> int:
    """Positions in a ``deletion-vector-v1`` blob: length, magic, a portable 64-bit Roaring
    bitmap, CRC-32. Only the bitmaps' container headers are read (they carry each
    container's cardinality). ValueError when the blob is malformed."""
    if len(blob) < 12:
        raise ValueError(f"blob of {len(blob)} bytes is too short")
    (length,) = struct.unpack_from(">I", blob, 0)
    if length != len(blob) - 8:
        raise ValueError(f"blob length field says {length} bytes, the blob holds {len(blob) - 8}")
    body = blob[4:4 + length]
    if body[:4] != DV_MAGIC:
        raise ValueError(f"bad magic {body[:4].hex()}")
    (crc,) = struct.unpack_from(">I", blob, 4 + length)
    if zlib.crc32(body) & 0xFFFFFFFF != crc:
        raise ValueError("CRC-32 does not match")
    vec = body[4:]
    try:
        (count,) = struct.unpack_from("<Q", vec, 0)
        pos = 8
        total = 0
        for _ in range(count):
            pos += 4  # the high 32 bits of the positions in this bitmap
            total_one, pos = _roaring32_cardinality(vec, pos)
            total += total_one
    except struct.error:
        raise ValueError("bitmap is cut short") from None
    return total


def _roaring32_cardinality(buf: bytes, pos: int) -> tuple[int, int]:
    """Cardinality of a 32-bit portable Roaring bitmap at ``pos`` and the offset after it."""
    (cookie,) = struct.unpack_from("<I", buf, pos)
    pos += 4
    if cookie & 0xFFFF == _WITH_RUNS:
        n = (cookie >> 16) + 1
        run_flags = buf[pos:pos + (n + 7) // 8]
        pos += (n + 7) // 8
    elif cookie == _NO_RUNS:
        (n,) = struct.unpack_from("<I", buf, pos)
        pos += 4
        run_flags = b""
    else:
        raise ValueError(f"unknown Roaring cookie {cookie}")
    cards = []
    for i in range(n):
        _key, card_minus_one = struct.unpack_from("<HH", buf, pos + 4 * i)
        cards.append(card_minus_one + 1)
    pos += 4 * n
    if cookie == _NO_RUNS or n >= 4:  # an offset header follows (not read: sizes suffice)
        pos += 4 * n
    for i, card in enumerate(cards):
        is_run = bool(run_flags) and bool(run_flags[i // 8] & (1 << (i % 8)))
        if is_run:
            (runs,) = struct.unpack_from("<H", buf, pos)
            pos += 2 + 4 * runs
        elif card > 4096:
            pos += 8192
        else:
            pos += 2 * card
    if pos > len(buf):
        raise ValueError("bitmap is cut short")
    return sum(cards), pos


def verify_files(io: FileIO, files: Iterable[DataFile], problems: Problems, workers: int) -> int:
    """Check each file (see the module docs); returns how many files were looked at."""
    by_path: dict[str, list[DataFile]] = {}
    for f in files:
        by_path.setdefault(f.file_path, []).append(f)

    def one(path: str) -> list[tuple[str, str, str]]:
        return _verify(io, path, by_path[path])

    found: list[tuple[str, str, str]] = []
    paths = sorted(by_path)
    if workers <= 1 or len(paths) <= 1:
        for p in paths:
            found.extend(one(p))
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for got in pool.map(one, paths):
                found.extend(got)
    for code, path, msg in found:
        problems.error(code, path, msg)
    return len(paths)


def _verify(io: FileIO, path: str, entries: list[DataFile]) -> list[tuple[str, str, str]]:
    out: list[tuple[str, str, str]] = []
    try:
        size = io.info(path).size
    except NotFound:
        return [("file-missing", path, f"the {entries[0].content_name} file does not exist")]
    except IcectlError as e:
        return [("file-unreadable", path, str(e))]
    sizes = sorted({f.file_size_in_bytes for f in entries})
    if sizes != [size]:
        return [("file-size-mismatch", path,
                 f"is {size} bytes; the manifest records {', '.join(map(str, sizes))}")]
    fmt = entries[0].file_format.upper()
    try:
        if fmt == "PARQUET":
            rows = read_footer(io, path).num_rows
            counts = sorted({f.record_count for f in entries})
            if counts != [rows]:
                out.append(("record-count-mismatch", path,
                            f"holds {rows} rows; the manifest records {', '.join(map(str, counts))}"))
        elif fmt == "PUFFIN":
            for f in entries:
                out.extend(_verify_dv(io, path, f))
    except IcectlError as e:
        out.append(("file-unreadable", path, str(e)))
    return out


def _verify_dv(io: FileIO, path: str, f: DataFile) -> list[tuple[str, str, str]]:
    if f.content_offset is None or f.content_size_in_bytes is None:
        return [("dv-invalid", path, f"the deletion vector for {f.referenced_data_file} has no blob offset or size")]
    blob = io.read_range(path, f.content_offset, f.content_size_in_bytes)
    where = f"the deletion vector at offset {f.content_offset} (for {f.referenced_data_file})"
    try:
        n = dv_cardinality(blob)
    except ValueError as e:
        return [("dv-invalid", path, f"{where}: {e}")]
    if n != f.record_count:
        return [("record-count-mismatch", path, f"{where} holds {n} positions; the manifest records {f.record_count}")]
    return []
