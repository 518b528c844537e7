"""Puffin files (icectl.io.formats.puffin_file): what the writer lays out is what the spec says
and what the reader reads back; broken files are refused, never misread."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from icectl.errors import CorruptMetadata
from icectl.io.formats.puffin_file import PUFFIN_MAGIC, PuffinBlob, blob_data, puffin_file, read_puffin
from icectl.io.storage.files import FileIO


def _write(tmp_path: Path, data: bytes) -> str:
    p = tmp_path / "f.stats"
    p.write_bytes(data)
    return str(p)


def test_layout_and_round_trip(tmp_path: Path) -> None:
    payload = b"sketch" * 100
    blobs = [PuffinBlob("apache-datasketches-theta-v1", payload, (1,), {"ndv": "3"}, snapshot_id=7,
                        sequence_number=2, compression="zstd"),
             PuffinBlob("other", b"raw", (2, 3))]
    data, placed = puffin_file(blobs, {"created-by": "test"})
    assert data[:4] == PUFFIN_MAGIC and data[-4:] == PUFFIN_MAGIC
    (n,) = struct.unpack_from("<i", data, len(data) - 12)
    assert data[-8:-4] == b"\0\0\0\0"
    footer_start = len(data) - 12 - n - 4
    assert data[footer_start:footer_start + 4] == PUFFIN_MAGIC
    meta = json.loads(data[footer_start + 4:footer_start + 4 + n])
    assert meta == {"blobs": [
        {"type": "apache-datasketches-theta-v1", "fields": [1], "snapshot-id": 7, "sequence-number": 2,
         "offset": 4, "length": placed[0].length, "compression-codec": "zstd", "properties": {"ndv": "3"}},
        {"type": "other", "fields": [2, 3], "snapshot-id": -1, "sequence-number": -1,
         "offset": 4 + placed[0].length, "length": 3}], "properties": {"created-by": "test"}}
    assert placed[0].length < len(payload)  # compressed
    assert data[4:8] == b"\x28\xb5\x2f\xfd"  # a zstd frame
    path = _write(tmp_path, data)
    io = FileIO()
    footer = read_puffin(io, path)
    assert footer.footer_size == len(data) - footer_start and footer.file_size == len(data)
    assert footer.properties == {"created-by": "test"}
    assert [blob_data(io, path, b) for b in footer.blobs] == [payload, b"raw"]
    assert footer.blobs[0].snapshot_id == 7 and footer.blobs[1].compression is None


def test_deletion_vector_files_keep_their_footer() -> None:
    data, _ = puffin_file([PuffinBlob("deletion-vector-v1", b"x", (2147483545,),
                                      {"referenced-data-file": "f", "cardinality": "1"})])
    n = struct.unpack_from("<i", data, len(data) - 12)[0]
    meta = json.loads(data[len(data) - 12 - n:len(data) - 12])
    assert meta["blobs"][0]["snapshot-id"] == -1 and "compression-codec" not in meta["blobs"][0]


@pytest.mark.parametrize("mangle, why", [
    (lambda d: d[:-1] + b"X", "does not end with the Puffin magic"),
    (lambda d: b"XXXX" + d[4:], "does not start with the Puffin magic"),
    (lambda d: d[:-12] + struct.pack("<i", 10**6) + d[-8:], "does not fit"),
    (lambda d: d[:-8] + b"\x01\0\0\0" + d[-4:], "lz4"),  # flagged compressed, is not
])
def test_broken_files_are_refused(tmp_path: Path, mangle, why: str) -> None:
    data, _ = puffin_file([PuffinBlob("t", b"abc", (1,))])
    with pytest.raises(CorruptMetadata, match=why):
        read_puffin(FileIO(), _write(tmp_path, mangle(data)))


def test_a_blob_outside_the_file_is_refused(tmp_path: Path) -> None:
    data, _ = puffin_file([PuffinBlob("t", b"abc", (1,))])
    data = data.replace(b'"length":3', b'"length":9999')
    data = data[:-12] + struct.pack("<i", struct.unpack_from("<i", data, len(data) - 12)[0] + 3) + data[-8:]
    with pytest.raises(CorruptMetadata, match="outside the file"):
        read_puffin(FileIO(), _write(tmp_path, data))
