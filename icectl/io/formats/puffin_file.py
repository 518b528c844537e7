"""Puffin files: a container of blobs with a JSON footer (Iceberg's puffin-spec.md).

Layout: magic ``PFA1``, the blobs, then the footer: magic, the footer payload (UTF-8 JSON
``{"blobs": [...], "properties": {...}}``, LZ4-framed when flag bit 0 of byte 0 is set), its
4-byte little-endian length, 4 flag bytes, magic. Each blob's footer entry names its ``type``,
``fields``, ``snapshot-id``, ``sequence-number``, ``offset``, ``length``, optionally
``compression-codec`` (``zstd`` or ``lz4``: one frame with the content size present) and
``properties``, in that order, as Java writes them.

Writing (:func:`puffin_file`) compresses a blob when its ``compression`` asks for ``zstd``;
reading (:func:`read_puffin`, :func:`blob_data`) checks the magics, the sizes and the offsets,
and decompresses. Anything that does not add up is :class:`CorruptMetadata`.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from icectl.errors import CorruptMetadata, IcectlError, StorageError

if TYPE_CHECKING:
    from icectl.io.storage.files import FileIO

__all__ = ["PUFFIN_MAGIC", "PuffinBlob", "PuffinFooter", "puffin_file", "read_puffin",
           "parse_footer", "blob_data"]

PUFFIN_MAGIC = b"PFA1"
_TAIL = 12  # payload length, flags, magic
_FOOTER_COMPRESSED = 1
_CODECS = ("zstd", "lz4")


@dataclass(frozen=True)
class PuffinBlob:
    """A blob and its footer entry (``offset`` and ``length`` filled in by the writer; ``data``
    is the blob as given, uncompressed). ``snapshot_id``/``sequence_number`` are -1 where the
    spec says they are not known (deletion vectors)."""

    type: str
    data: bytes
    fields: tuple[int, ...]
    properties: Mapping[str, str] = field(default_factory=dict)
    offset: int = 0
    length: int = 0
    snapshot_id: int = -1
    sequence_number: int = -1
    compression: str | None = None

    def footer_entry(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"type": self.type, "fields": list(self.fields),
                                 "snapshot-id": self.snapshot_id,
                                 "sequence-number": self.sequence_number,
                                 "offset": self.offset, "length": self.length}
        if self.compression:
            entry["compression-codec"] = self.compression
        if self.properties:
            entry["properties"] = dict(self.properties)
        return entry


@dataclass(frozen=True)
class PuffinFooter:
    """A Puffin file's footer: its blobs (``data`` empty: read them with :func:`blob_data`),
    file properties and the footer's size in bytes (magic to magic)."""

    blobs: tuple[PuffinBlob, ...]
    properties: dict[str, str]
    footer_size: int
    file_size: int


def _compress(codec: str | None, data: bytes) -> bytes:
    if not codec:
        return data
    if codec != "zstd":
        raise ValueError(f"Puffin blobs are written uncompressed or with zstd, not {codec!r}")
    import pyarrow as pa

    return pa.Codec("zstd").compress(data, asbytes=True)


def puffin_file(blobs: Iterable[PuffinBlob], properties: Mapping[str, str] | None = None
                ) -> tuple[bytes, list[PuffinBlob]]:
    """A whole Puffin file of ``blobs`` and the blobs with their offsets and stored lengths."""
    out = bytearray(PUFFIN_MAGIC)
    placed: list[PuffinBlob] = []
    for b in blobs:
        stored = _compress(b.compression, b.data)
        placed.append(replace(b, offset=len(out), length=len(stored)))
        out += stored
    meta: dict[str, Any] = {"blobs": [b.footer_entry() for b in placed]}
    if properties:
        meta["properties"] = dict(properties)
    payload = json.dumps(meta, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    out += PUFFIN_MAGIC + payload + struct.pack("<i", len(payload)) + b"\0\0\0\0" + PUFFIN_MAGIC
    return bytes(out), placed


# -- reading ---------------------------------------------------------------------------------------


def _frame_size(codec: str, data: bytes, what: str) -> int:
    """The content size a zstd or LZ4 frame header carries (the spec requires it present)."""
    try:
        if codec == "zstd" and data[:4] == b"\x28\xb5\x2f\xfd":
            fhd = data[4]
            single, fcs_flag = fhd >> 5 & 1, fhd >> 6
            pos = 5 + (0 if single else 1) + (0, 1, 2, 4)[fhd & 3]
            size = (1 if single else 0, 2, 4, 8)[fcs_flag]
            if size:
                n = int.from_bytes(data[pos:pos + size], "little")
                return n + 256 if size == 2 else n
        elif codec == "lz4" and data[:4] == b"\x04\x22\x4d\x18" and data[4] & 0x08:
            return struct.unpack_from("<Q", data, 6)[0]
    except (IndexError, struct.error):
        pass
    raise CorruptMetadata(f"{what}: not a {codec} frame with its content size")


def _decompress(codec: str | None, data: bytes, what: str) -> bytes:
    if not codec:
        return data
    if codec not in _CODECS:
        raise CorruptMetadata(f"{what}: unknown compression codec {codec!r}")
    import pyarrow as pa

    size = _frame_size(codec, data, what)
    try:
        return pa.Codec(codec).decompress(data, decompressed_size=size, asbytes=True)
    except (OSError, ValueError, pa.ArrowException) as e:
        raise CorruptMetadata(f"{what}: cannot decompress ({codec}): {e}") from None


def _blob_of(entry: Any, file_size: int, what: str) -> PuffinBlob:
    try:
        b = PuffinBlob(type=str(entry["type"]), data=b"",
                       fields=tuple(int(x) for x in entry["fields"]),
                       properties={str(k): str(v) for k, v in (entry.get("properties") or {}).items()},
                       offset=int(entry["offset"]), length=int(entry["length"]),
                       snapshot_id=int(entry["snapshot-id"]),
                       sequence_number=int(entry["sequence-number"]),
                       compression=entry.get("compression-codec"))
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise CorruptMetadata(f"{what}: bad blob entry in the footer ({e!r})") from None
    if b.offset < len(PUFFIN_MAGIC) or b.length < 0 or b.offset + b.length > file_size:
        raise CorruptMetadata(f"{what}: blob at {b.offset} + {b.length} lies outside the file")
    return b


def _footer_size(tail: bytes, file_size: int, what: str) -> int:
    """The footer's size (magic to magic) from the file's last 12 bytes."""
    if len(tail) < _TAIL or tail[-4:] != PUFFIN_MAGIC:
        raise CorruptMetadata(f"{what}: does not end with the Puffin magic")
    (n,) = struct.unpack_from("<i", tail, len(tail) - _TAIL)
    size = n + _TAIL + 4
    if n < 0 or size + len(PUFFIN_MAGIC) > file_size:
        raise CorruptMetadata(f"{what}: footer payload of {n} bytes does not fit the file")
    return size


def parse_footer(tail: bytes, file_size: int, what: str = "Puffin file") -> PuffinFooter:
    """The footer from the file's last bytes (``tail``: at least the whole footer)."""
    footer_size = _footer_size(tail, file_size, what)
    if footer_size > len(tail):
        raise CorruptMetadata(f"{what}: footer of {footer_size} bytes, {len(tail)} given")
    footer = tail[len(tail) - footer_size:]
    if footer[:4] != PUFFIN_MAGIC:
        raise CorruptMetadata(f"{what}: no Puffin magic at the start of the footer")
    payload = footer[4:footer_size - _TAIL]
    if footer[-8] & _FOOTER_COMPRESSED:
        payload = _decompress("lz4", payload, what)
    try:
        meta = json.loads(payload.decode("utf-8"))
        entries = meta["blobs"]
        props = {str(k): str(v) for k, v in (meta.get("properties") or {}).items()}
    except (UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise CorruptMetadata(f"{what}: footer is not Puffin JSON ({e})") from None
    if not isinstance(entries, list):
        raise CorruptMetadata(f"{what}: footer 'blobs' is not a list")
    return PuffinFooter(tuple(_blob_of(e, file_size, what) for e in entries), props, footer_size,
                        file_size)


def read_puffin(file_io: FileIO, path: str, file_size: int | None = None) -> PuffinFooter:
    """Read the footer of the Puffin file at ``path`` (its size from storage when not given)."""
    what = f"Puffin file {path}"
    try:
        size = file_io.info(path).size if file_size is None else file_size
        if size < len(PUFFIN_MAGIC) + _TAIL + 4:
            raise CorruptMetadata(f"{what}: {size} bytes is too short")
        tail = file_io.read_range(path, size - min(size, 16384), min(size, 16384))
        need = _footer_size(tail, size, what)
        if need > len(tail):
            tail = file_io.read_range(path, size - need, need)
        head = file_io.read_range(path, 0, len(PUFFIN_MAGIC))
    except IcectlError:
        raise
    except OSError as e:
        raise StorageError(f"cannot read {what}: {e}") from e
    if head != PUFFIN_MAGIC:
        raise CorruptMetadata(f"{what}: does not start with the Puffin magic")
    return parse_footer(tail, size, what)


def blob_data(file_io: FileIO, path: str, blob: PuffinBlob) -> bytes:
    """A blob's bytes, decompressed."""
    what = f"{blob.type} blob of {path} at {blob.offset}"
    try:
        raw = file_io.read_range(path, blob.offset, blob.length)
    except OSError as e:
        raise StorageError(f"cannot read {what}: {e}") from e
    if len(raw) != blob.length:
        raise CorruptMetadata(f"{what}: the file ends before its {blob.length} bytes")
    return _decompress(blob.compression, raw, what)
