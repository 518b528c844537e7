"""Plain fixed[N] partition values in manifests: written length-prefixed as Iceberg Java 1.10.2
writes them (Avro bytes under a schema that says fixed; Java reads nothing else), read in that
form and in the plain Avro fixed form older icectl wrote, by both manifest readers alike.
Spark reading them both ways: tests/interop/test_fuzz_findings_interop.py."""

from __future__ import annotations

import pytest

from icectl.io.manifest import records as avro_module
from icectl.io.manifest.records import read_manifest, write_manifest_raw
from icectl.io.formats.avro_container import decoded_blocks, split_header
from icectl.io.formats.avro_schema import manifest_wire_schemas
from icectl.io.manifest.columns import decode_manifest
from icectl.spec.manifests import ADDED, DATA, DataFile, ManifestEntry, ManifestFile
from icectl.spec.types import DecimalType, FixedType, NestedField, StructType, UUID

# two fields of the same fixed[4] (the Avro schema names it once, then refers to it), a decimal
# and a uuid (fixed on disk as well, but written as plain fixed by Java too)
PTYPE = StructType((NestedField(1000, "f", FixedType(4), False),
                    NestedField(1001, "f_void", FixedType(4), False),
                    NestedField(1002, "d", DecimalType(9, 2), False),
                    NestedField(1003, "u", UUID, False)))
# the first value starts with 0x08, the zigzag form of 4: a plain file whose bytes could begin
# a length-prefixed value
VALUES = [(b"\x08bcd", None, None, None), (b"abcd", b"wxyz", None, None), (None, None, None, None),
          (b"\x00\x00\x00\x00", b"\xff\xff\xff\xff", None, None)]


def _manifest(values: list[tuple]) -> bytes:
    entries = [ManifestEntry(ADDED, 1, None, None,
                             DataFile(DATA, f"/d/{i}.parquet", "PARQUET", v, 1, 10))
               for i, v in enumerate(values)]
    return write_manifest_raw(entries, partition_type=PTYPE, spec_id=0, partition_spec_json=[],
                              schema_json={"type": "struct", "schema-id": 0, "fields": []},
                              format_version=2, snapshot_id=1)


def _legacy_manifest(values: list[tuple], monkeypatch: pytest.MonkeyPatch) -> bytes:
    """A manifest as icectl wrote it before: plain Avro fixed on disk."""
    with monkeypatch.context() as m:
        m.setattr(avro_module, "manifest_wire_schemas", lambda schema: [schema])
        return _manifest(values)


def _both_readers(data: bytes) -> tuple[list[tuple], list[tuple]]:
    mf = ManifestFile("m.avro", len(data), 0, sequence_number=1, min_sequence_number=1,
                      added_snapshot_id=1)
    records = [tuple(e.data_file.partition) for e in read_manifest(data, mf)]
    cols = decode_manifest(data, added_snapshot_id=1, sequence_number=1)
    return records, [cols.partition_tuple(i) for i in range(cols.count)]


def _body(data: bytes) -> bytes:
    meta, sync, start = split_header(data)
    return b"".join(block for _, block in decoded_blocks(data, start, sync, "deflate"))


def _plain(values: list[tuple]) -> list[tuple]:
    return [(v[0], v[1]) for v in values]


def test_written_as_java_writes_them() -> None:
    data = _manifest(VALUES[1:2])
    body = _body(data)
    # union branch 1 (02), zigzag length 4 (08), the bytes -- for both fields
    assert b"\x02\x08abcd\x02\x08wxyz" in body
    # the header still says fixed (named once, then referred to), as Java's does
    assert b'{"type":"fixed","name":"fixed_4","size":4}' in data[:4096]
    assert b'["null","fixed_4"]' in data[:4096]


def test_read_back_by_both_readers() -> None:
    records, columns = _both_readers(_manifest(VALUES))
    assert [r[:2] for r in records] == [c[:2] for c in columns] == _plain(VALUES)


def test_manifests_of_older_icectl_are_read_by_both_readers(monkeypatch: pytest.MonkeyPatch) -> None:
    data = _legacy_manifest(VALUES, monkeypatch)
    assert b"\x02abcd\x02wxyz" in _body(data)  # plain fixed on disk
    records, columns = _both_readers(data)
    assert [r[:2] for r in records] == [c[:2] for c in columns] == _plain(VALUES)


@pytest.mark.parametrize("first", [b"\x08\x08\x08\x08", b"\x08abc", b"\x08\x00\x00\x00"])
def test_a_plain_value_that_looks_length_prefixed(first: bytes,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Every value starting with the byte 0x08 (zigzag 4): the length-prefixed decode goes
    wrong later in the entry and the plain one is taken."""
    values = [(first, first, None, None)] * 3
    records, columns = _both_readers(_legacy_manifest(values, monkeypatch))
    assert [r[:2] for r in records] == [c[:2] for c in columns] == _plain(values)


def test_only_plain_fixed_partition_fields_change_encoding() -> None:
    schema = {"type": "record", "name": "manifest_entry", "fields": [
        {"name": "data_file", "type": {"type": "record", "name": "r2", "fields": [
            {"name": "partition", "type": {"type": "record", "name": "r102", "fields": [
                {"name": "d", "type": ["null", {"type": "fixed", "name": "decimal_9_2", "size": 4,
                                                "logicalType": "decimal", "precision": 9,
                                                "scale": 2}]},
                {"name": "f", "type": ["null", {"type": "fixed", "name": "fixed_4", "size": 4}]},
                {"name": "g", "type": ["null", "fixed_4"]}]}},
            {"name": "key_metadata", "type": ["null", "bytes"]}]}}]}
    wire, original = manifest_wire_schemas(schema)
    assert original is schema
    fields = wire["fields"][0]["type"]["fields"][0]["type"]["fields"]
    assert fields[0] == schema["fields"][0]["type"]["fields"][0]["type"]["fields"][0]
    assert [f["type"][1]["type"] for f in fields[1:]] == ["bytes", "bytes"]
    no_fixed = {"type": "record", "name": "manifest_entry", "fields": []}
    assert manifest_wire_schemas(no_fixed) == [no_fixed]
