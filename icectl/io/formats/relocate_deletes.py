"""Position delete files with the data file paths they name moved (``icectl relocate``).

* A Parquet position delete file is read whole and written again with its ``file_path`` column
  (the reserved ``DELETE_FILE_PATH_ID``) mapped through ``new_path``; every other column
  (``pos``, a ``row`` struct), the field ids, the file's key-value metadata, the codec and the row-group
  size are kept. Moving one prefix to another keeps the rows sorted by
  path and position, as the spec wants them.
* A Puffin file of deletion vectors (format v3) keeps every byte up to its footer, so each blob
  stays at the offset the manifests record; only the footer's JSON changes: each blob's
  ``referenced-data-file`` property moves.

Both return the new bytes; Parquet also the new row-group offsets (the entry's
``split_offsets``).
"""

from __future__ import annotations

import io
import json
import struct
from typing import Callable

from icectl.errors import CorruptMetadata, ValidationError
from icectl.io.formats.puffin import PUFFIN_MAGIC
from icectl.spec.reserved import DELETE_FILE_PATH_ID

__all__ = ["relocated_position_deletes", "relocated_deletion_vectors"]

NewPath = Callable[[str], str]

_CODECS = {"UNCOMPRESSED": "none", "SNAPPY": "snappy", "GZIP": "gzip", "ZSTD": "zstd",
           "LZ4": "lz4", "LZ4_RAW": "lz4", "BROTLI": "brotli"}


def _path_column(schema) -> int:
    for i, f in enumerate(schema):
        meta = f.metadata or {}
        if meta.get(b"PARQUET:field_id") == str(DELETE_FILE_PATH_ID).encode():
            return i
    if "file_path" in schema.names:
        return schema.get_field_index("file_path")
    raise CorruptMetadata(f"position delete file has no file_path column (field id {DELETE_FILE_PATH_ID})")


def relocated_position_deletes(data: bytes, new_path: NewPath, where: str) -> tuple[bytes, list[int]]:
    """The Parquet position delete file ``data`` with each ``file_path`` moved, and its row-group
    offsets."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(io.BytesIO(data))
        table = pf.read()
    except (OSError, ValueError, pa.ArrowException) as e:
        raise CorruptMetadata(f"cannot read position delete file {where}: {e}") from None
    md = pf.metadata
    codec = "none"
    if md.num_row_groups and md.num_columns:
        codec = _CODECS.get(md.row_group(0).column(0).compression.upper(), "zstd")
    rows_per_group = max([md.row_group(i).num_rows for i in range(md.num_row_groups)] or [1])
    i = _path_column(table.schema)
    column = table.column(i).combine_chunks()
    encoded = column.dictionary_encode()
    moved = pa.array([new_path(p) for p in encoded.dictionary.to_pylist()], type=column.type)
    table = table.set_column(i, table.schema.field(i), moved.take(encoded.indices))
    kv = dict(md.metadata or {})
    arrow_schema = kv.pop(b"ARROW:schema", None) is not None
    sink = io.BytesIO()
    writer = pq.ParquetWriter(sink, table.schema.remove_metadata(), compression=codec, store_schema=arrow_schema)
    if kv:  # the writer's key-value metadata (Java's iceberg.schema, delete-type ...), as it was
        writer.add_key_value_metadata({k.decode("utf-8", "replace"): v.decode("utf-8", "replace")
                                       for k, v in kv.items()})
    writer.write_table(table.replace_schema_metadata(None), row_group_size=max(rows_per_group, 1))
    writer.close()
    out = sink.getvalue()
    written = pq.ParquetFile(io.BytesIO(out)).metadata
    offsets = []
    for g in range(written.num_row_groups):
        chunk = written.row_group(g).column(0)
        start = chunk.data_page_offset
        if chunk.has_dictionary_page and 0 < chunk.dictionary_page_offset < start:
            start = chunk.dictionary_page_offset
        offsets.append(start)
    return out, offsets


def relocated_deletion_vectors(data: bytes, new_path: NewPath, where: str) -> bytes:
    """The Puffin file ``data`` with each blob's ``referenced-data-file`` moved; every blob stays
    where it was."""
    tail = 4 + 4 + len(PUFFIN_MAGIC)  # payload length, flags, magic
    if len(data) < len(PUFFIN_MAGIC) * 2 + tail - 4 or data[:4] != PUFFIN_MAGIC or data[-4:] != PUFFIN_MAGIC:
        raise CorruptMetadata(f"{where} is not a Puffin file")
    (payload_len,) = struct.unpack("<I", data[-12:-8])
    flags = data[-8:-4]
    if flags[0] & 1:
        raise ValidationError(f"{where}: a compressed Puffin footer is not supported")
    footer_start = len(data) - tail - payload_len - len(PUFFIN_MAGIC)
    if footer_start < len(PUFFIN_MAGIC) or data[footer_start:footer_start + 4] != PUFFIN_MAGIC:
        raise CorruptMetadata(f"{where}: Puffin footer not found")
    try:
        meta = json.loads(data[footer_start + 4:footer_start + 4 + payload_len].decode("utf-8"))
    except ValueError as e:
        raise CorruptMetadata(f"{where}: unreadable Puffin footer: {e}") from None
    for blob in meta.get("blobs", []):
        props = blob.get("properties") or {}
        ref = props.get("referenced-data-file")
        if ref is not None:
            props["referenced-data-file"] = new_path(ref)
    payload = json.dumps(meta, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return (data[:footer_start] + PUFFIN_MAGIC + payload + struct.pack("<I", len(payload)) + flags
            + PUFFIN_MAGIC)
