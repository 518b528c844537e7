"""``--deep``: every live data and delete file exists with its recorded size and record count.

Parquet files (data, position and equality deletes) are checked against their footer's row
count; a deletion vector's blob is read and its cardinality compared with the manifest entry's
record count (the blob's length, magic and CRC are checked on the way); Avro and ORC files only
for existence and size.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Iterable

from icectl.errors import CorruptMetadata, IcectlError, NotFound
from icectl.io.storage.files import FileIO
from icectl.io.formats.parquet import read_footer
from icectl.io.formats.puffin import parse_deletion_vector
from icectl.ops.check.model import Problems
from icectl.spec.manifests import DataFile

__all__ = ["verify_files", "dv_cardinality"]

def dv_cardinality(blob: bytes) -> int:
    """Positions in a ``deletion-vector-v1`` blob, read by the one deletion-vector parser
    (:mod:`icectl.io.formats.puffin`: length, magic, CRC-32 and the bitmap are all checked).
    CorruptMetadata when the blob is malformed."""
    return len(parse_deletion_vector(blob))


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
    except CorruptMetadata as e:
        return [("dv-invalid", path, f"{where}: {e}")]
    if n != f.record_count:
        return [("record-count-mismatch", path, f"{where} holds {n} positions; the manifest records {f.record_count}")]
    return []
