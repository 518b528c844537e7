"""Manifests compressed with codecs other than deflate are read with no optional packages."""

from __future__ import annotations

import io
import zlib

import fastavro
import pytest

from icectl.errors import CorruptMetadata, UnsupportedFeature
from icectl.io.formats import avro_container as avro_codecs
from icectl.io.manifest.records import read_avro_records
from icectl.io.formats.avro_container import split_header as _split_header
from icectl.io.formats.avro_container import decoded_blocks as _blocks

SCHEMA = {"type": "record", "name": "r", "fields": [
    {"name": "id", "type": "long"}, {"name": "s", "type": ["null", "string"]}]}
RECORDS = [{"id": i, "s": None if i % 3 else f"value-{i}" * (i % 7)} for i in range(500)]


def _container(codec: str) -> bytes:
    out = io.BytesIO()
    fastavro.writer(out, SCHEMA, RECORDS, codec="null", sync_interval=1000)
    plain = out.getvalue()
    if codec == "null":
        return plain
    # re-encode the blocks with ``codec`` by hand (fastavro would need cramjam for snappy)
    import bz2
    import lzma
    import struct

    import pyarrow as pa

    meta, sync, start = _split_header(plain)
    compress = {
        "snappy": lambda b: pa.Codec("snappy").compress(b).to_pybytes() + struct.pack(">I", zlib.crc32(b)),
        "bzip2": bz2.compress,
        "xz": lzma.compress,
    }[codec]
    body = bytearray()
    for count, data in avro_codecs.iter_blocks(plain, start, sync):
        c = compress(data)
        body += avro_codecs.write_long(count) + avro_codecs.write_long(len(c)) + c + sync
    header_end = start
    header = bytearray(plain[:header_end])
    old = b"\x14avro.codec\x08null"
    assert old in header
    new = b"\x14avro.codec" + avro_codecs.write_long(len(codec)) + codec.encode()
    header = header.replace(old, new)
    return bytes(header) + bytes(body)


@pytest.mark.parametrize("codec", ["null", "snappy", "bzip2", "xz"])
def test_record_reader_and_block_decoder_read_every_supported_codec(codec: str) -> None:
    data = _container(codec)
    meta, records = read_avro_records(data)
    assert meta["avro.codec"] == codec
    assert records == RECORDS
    m, sync, start = _split_header(data)
    assert sum(count for count, _ in _blocks(data, start, sync, codec)) == len(RECORDS)


def test_corrupt_snappy_block_and_unsupported_codec() -> None:
    data = bytearray(_container("snappy"))
    data[-20] ^= 0xFF  # flip a byte inside the last block
    with pytest.raises(CorruptMetadata):
        read_avro_records(bytes(data))
    with pytest.raises(UnsupportedFeature, match="zstandard"):
        avro_codecs.decompress_block("zstandard", b"\x28\xb5\x2f\xfd")
