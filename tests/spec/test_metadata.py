"""Table metadata JSON (v1/v2/v3) and the pure update functions."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from icectl.errors import CorruptMetadata, UnsupportedFeature, ValidationError
from icectl.spec.metadata_json import metadata_from_bytes, metadata_from_json, metadata_to_bytes
from icectl.spec.metadata import (
    add_snapshot,
    new_table_metadata,
    next_sequence_number,
    remove_snapshots,
    set_ref,
    with_previous_metadata,
    with_properties,
)
from icectl.spec.partitioning import PartitionSpec
from icectl.spec.schema import Schema
from icectl.spec.snapshots import (
    MetadataLogEntry,
    Snapshot,
    SnapshotRef,
    ancestor_ids,
    carry_totals,
)
from icectl.spec.sorting import SortOrder

DATA = Path(__file__).parent.parent / "data" / "metadata"
FULL_FORM = ["v1_full.json", "v2_full.json", "v3_full.json", "v2_unknown_fields.json"]
# Written by the reference: Java directly, or Spark through it (spark_*.json, added separately).
JAVA_FILES = sorted(p.name for p in [*DATA.glob("java_*.metadata.json"), *DATA.glob("spark_*.json")])


def load(name: str):
    return metadata_from_bytes((DATA / name).read_bytes(), name)


def keys_in_order(obj):
    """Nested key order, to check that the writer keeps the reference's order."""
    if isinstance(obj, dict):
        return [(k, keys_in_order(v)) for k, v in obj.items()]
    if isinstance(obj, list):
        return [keys_in_order(v) for v in obj]
    return None


@pytest.mark.parametrize("name", FULL_FORM)
def test_round_trip_keeps_content_and_key_order(name):
    original = json.loads((DATA / name).read_text())
    md = load(name)
    written = json.loads(metadata_to_bytes(md))
    assert written == original
    assert keys_in_order(written) == keys_in_order(original)
    # and the written form parses back to the same value
    assert metadata_from_bytes(metadata_to_bytes(md)) == md


@pytest.mark.parametrize("name", JAVA_FILES)
def test_reference_written_files_round_trip_byte_for_byte(name):
    data = (DATA / name).read_bytes()
    assert metadata_to_bytes(metadata_from_bytes(data, name)) == data


def test_v1_single_forms_are_read_and_both_forms_written():
    md = load("v1_legacy_single_forms.json")
    assert md.format_version == 1
    assert [s.schema_id for s in md.schemas] == [0] and md.current_schema_id == 0
    assert md.default_spec_id == 0 and md.spec.fields[0].name == "x"
    assert md.last_partition_id == 1000  # derived from the specs
    assert md.sort_order.is_unsorted()
    assert md.current_snapshot() is None and md.refs == {}
    assert md.last_sequence_number == 0
    out = json.loads(metadata_to_bytes(md))
    assert out["schema"] == out["schemas"][0]
    assert out["partition-spec"] == out["partition-specs"][0]["fields"]
    assert out["partition-specs"][0]["spec-id"] == 0
    assert out["current-snapshot-id"] == -1
    assert "last-sequence-number" not in out
    assert out["properties"] == {"owner": "legacy-writer"}


def test_v1_snapshot_with_inline_manifests():
    md = load("v1_full.json")
    first = md.snapshot_by_id(1)
    assert first.manifest_list is None
    assert first.manifests == ("file:/tmp/warehouse/db/v1t/metadata/m1.avro",)
    assert md.snapshot_by_id(2).manifest_list.endswith("snap-2-1-abc.avro")


def test_v2_accessors():
    md = load("v2_full.json")
    assert md.schema.schema_id == 1 and md.schema.identifier_field_ids == (1, 2)
    assert md.schema_by_id(0).highest_field_id() == 1
    assert md.spec_by_id(0).fields[0].source_id == 1
    assert md.sort_order.order_id == 3 and len(md.sort_order.fields) == 2
    cur = md.current_snapshot()
    assert cur.snapshot_id == 3055729675574597004 and cur.sequence_number == 34
    assert cur.operation == "overwrite" and cur.summary["added-data-files"] == "4"
    audit = md.refs["audit"]
    assert (audit.min_snapshots_to_keep, audit.max_snapshot_age_ms, audit.max_ref_age_ms) == (2, 86400000, 604800000)
    assert md.refs["v1.0"].is_tag
    assert md.snapshot_for_ref("v1.0").snapshot_id == 3051729675574597004
    assert md.snapshot_for_ref("nope") is None
    assert md.property_as_int("commit.retry.num-retries", 4) == 10
    assert md.statistics[0]["statistics-path"] == "s3://a/b/stats.puffin"
    assert ancestor_ids(cur.snapshot_id, md.snapshot_by_id) == [3055729675574597004, 3051729675574597004]
    assert ancestor_ids(3051729675574597004, md.snapshot_by_id) == [3051729675574597004]


def test_v3_row_lineage_and_encryption_keys():
    md = load("v3_full.json")
    assert md.next_row_id == 150
    assert md.current_snapshot().first_row_id == 100 and md.current_snapshot().added_rows == 50
    assert md.current_snapshot().key_id == "k1"
    assert md.encryption_keys[0]["key-id"] == "k1"


def test_unknown_keys_survive_a_rewrite():
    md = load("v2_unknown_fields.json")
    md2 = with_properties(md, {"k": "v"}, timestamp_ms=1700000000001)
    out = json.loads(metadata_to_bytes(md2))
    assert out["future-top-level-key"] == {"nested": ["kept", 1, None]}
    assert out["another-new-key"] == 42
    assert out["refs"]["main"]["future-ref-key"] is True
    assert out["snapshots"][0]["future-snapshot-key"] == {"a": [1, 2]}
    assert out["properties"] == {"k": "v"}


def test_format_version_4_is_refused_clearly():
    with pytest.raises(UnsupportedFeature, match=r"format version 4 is not supported \(icectl reads 1-3\)"):
        load("v4_unsupported.json")


@pytest.mark.parametrize("text, fragment", [
    (b"{not json", "invalid JSON"),
    (b"[1, 2]", "not a JSON object"),
    (b'{"format-version": 2}', "'table-uuid'"),
    (b'{"format-version": "two"}', "'format-version' must be an integer"),
])
def test_malformed_metadata_names_the_file_and_key(text, fragment):
    with pytest.raises(CorruptMetadata) as e:
        metadata_from_bytes(text, "/t/metadata/v9.metadata.json")
    assert "/t/metadata/v9.metadata.json" in str(e.value)
    assert fragment in str(e.value)


def test_v2_requires_the_array_forms():
    obj = json.loads((DATA / "v2_full.json").read_text())
    del obj["partition-specs"]
    with pytest.raises(CorruptMetadata, match="'partition-specs' must exist in format v2"):
        metadata_from_json(obj, "x.json")


def test_missing_refs_derive_main_from_current_snapshot():
    obj = json.loads((DATA / "v2_full.json").read_text())
    del obj["refs"]
    md = metadata_from_json(obj)
    assert md.refs == {"main": SnapshotRef(3055729675574597004, "branch")}


def test_current_snapshot_encodings():
    obj = json.loads((DATA / "v3_full.json").read_text())
    for empty in (None, -1):
        o = dict(obj, **{"current-snapshot-id": empty})
        del o["refs"]
        md = metadata_from_json(o)
        assert md.current_snapshot() is None and md.refs == {}
        assert json.loads(metadata_to_bytes(md))["current-snapshot-id"] is None  # v3 writes null


def test_main_ref_must_match_current_snapshot():
    obj = json.loads((DATA / "v2_full.json").read_text())
    obj["current-snapshot-id"] = 3051729675574597004
    with pytest.raises(CorruptMetadata, match="does not match the main branch"):
        metadata_from_json(obj)


@pytest.mark.parametrize("name", ["v3.gz.metadata.json", "v3.metadata.json.gz"])
def test_gzip_metadata_is_readable(name):
    md = load("v3_full.json")
    data = metadata_to_bytes(md, compress=True)
    assert data[:2] == b"\x1f\x8b"
    assert metadata_from_bytes(data, name) == md
    assert gzip.decompress(data) == metadata_to_bytes(md)


# -- new_table_metadata -------------------------------------------------------------------------

def _user_schema():
    return Schema.from_json({"type": "struct", "schema-id": 7, "fields": [
        {"id": 5, "name": "id", "required": True, "type": "long"},
        {"id": 7, "name": "data", "required": False, "type": "string"},
        {"id": 9, "name": "ts", "required": False, "type": "timestamptz"},
        {"id": 10, "name": "tags", "required": False,
         "type": {"type": "list", "element-id": 11, "element": "string", "element-required": False}}]})


@pytest.mark.parametrize("version", [1, 2, 3])
def test_new_table_metadata_matches_the_reference(version):
    schema = _user_schema()
    spec = PartitionSpec.from_json({"spec-id": 3, "fields": [
        {"name": "ts_day", "transform": "day", "source-id": 9, "field-id": 2000},
        {"name": "id_bucket", "transform": "bucket[16]", "source-id": 5, "field-id": 2001}]})
    order = SortOrder.from_json({"order-id": 5, "fields": [
        {"transform": "identity", "source-id": 7, "direction": "asc", "null-order": "nulls-first"},
        {"transform": "identity", "source-id": 5, "direction": "desc", "null-order": "nulls-last"}]})
    props = {"format-version": str(version), "owner": "icectl-tests", "commit.retry.num-retries": "7"}
    ours = json.loads(metadata_to_bytes(new_table_metadata(schema, spec, order, "file:/tmp/wh/db/t", props)))
    java = json.loads((DATA / f"java_new_table_v{version}.metadata.json").read_text())
    for volatile in ("table-uuid", "last-updated-ms"):
        ours.pop(volatile)
        java.pop(volatile)
    assert ours == java


def test_new_unpartitioned_table_matches_the_reference():
    ours = json.loads(metadata_to_bytes(new_table_metadata(_user_schema(), location="file:/tmp/wh/db/u",
                                                          properties={"format-version": "2"})))
    java = json.loads((DATA / "java_new_table_unpartitioned_v2.metadata.json").read_text())
    for volatile in ("table-uuid", "last-updated-ms"):
        ours.pop(volatile)
        java.pop(volatile)
    assert ours == java
    assert ours["last-partition-id"] == 999


def test_new_table_refuses_unsupported_version():
    with pytest.raises(UnsupportedFeature):
        new_table_metadata(_user_schema(), properties={"format-version": "4"})


# -- updates --------------------------------------------------------------------------------------

def _v2_table():
    return new_table_metadata(_user_schema(), location="file:/t", properties={"format-version": "2"},
                              timestamp_ms=1000)


def test_with_properties_sets_removes_and_refuses_reserved():
    md = with_properties(_v2_table(), {"a": "1", "b": "2"}, timestamp_ms=2000)
    assert md.properties["a"] == "1" and md.last_updated_ms == 2000
    md = with_properties(md, {"a": "3"}, ["b"], timestamp_ms=3000)
    assert md.properties["a"] == "3" and "b" not in md.properties
    with pytest.raises(ValidationError, match="reserved"):
        with_properties(md, {"uuid": "x"})
    up = with_properties(md, {"format-version": "3"}, timestamp_ms=4000)
    assert up.format_version == 3 and up.next_row_id == 0 and "format-version" not in up.properties
    with pytest.raises(ValidationError, match="downgrade"):
        with_properties(up, {"format-version": "2"})


def test_add_snapshot_bumps_sequence_logs_and_moves_refs():
    md = _v2_table()
    assert next_sequence_number(md) == 1
    s1 = Snapshot(1, 5000, None, 1, "file:/t/metadata/snap-1.avro", {"operation": "append"}, 0)
    md = add_snapshot(md, s1)
    assert md.current_snapshot_id == 1 and md.last_sequence_number == 1
    assert md.refs["main"] == SnapshotRef(1, "branch")
    assert [(e.timestamp_ms, e.snapshot_id) for e in md.snapshot_log] == [(5000, 1)]
    assert md.last_updated_ms == 5000
    s2 = Snapshot(2, 6000, 1, 2, "file:/t/metadata/snap-2.avro", {"operation": "append"}, 0)
    md2 = add_snapshot(md, s2, branch="dev")
    assert md2.current_snapshot_id == 1 and md2.refs["dev"].snapshot_id == 2
    assert len(md2.snapshot_log) == 1  # only main is logged
    with pytest.raises(ValidationError, match="older than"):
        add_snapshot(md2, Snapshot(3, 7000, 2, 2, "x", {"operation": "append"}))
    with pytest.raises(ValidationError, match="already exists"):
        add_snapshot(md2, s2)
    tagged = set_ref(md2, "t1", SnapshotRef(1, "tag"), timestamp_ms=8000)
    assert tagged.snapshot_for_ref("t1").snapshot_id == 1
    removed = remove_snapshots(tagged, [1], timestamp_ms=9000)
    assert removed.current_snapshot() is None and "t1" not in removed.refs and "main" not in removed.refs
    assert removed.snapshot_log == ()


def test_v3_add_snapshot_advances_next_row_id():
    md = new_table_metadata(_user_schema(), location="file:/t", properties={"format-version": "3"})
    s = Snapshot(1, 5000, None, 1, "m", {"operation": "append"}, 0, first_row_id=0, added_rows=10)
    md = add_snapshot(md, s)
    assert md.next_row_id == 10
    with pytest.raises(ValidationError, match="first-row-id"):
        add_snapshot(md, Snapshot(2, 6000, 1, 2, "m2", {"operation": "append"}, 0, first_row_id=5, added_rows=1))
    with pytest.raises(ValidationError):
        add_snapshot(md, Snapshot(3, 6000, 1, 2, "m3", {"operation": "append"}, 0))


def test_metadata_log_is_capped_by_previous_versions_max():
    md = with_properties(_v2_table(), {"write.metadata.previous-versions-max": "2"})
    for i in range(1, 5):
        md = with_previous_metadata(md, f"file:/t/metadata/v{i}.metadata.json", i)
    assert md.metadata_log == (MetadataLogEntry(3, "file:/t/metadata/v3.metadata.json"),
                               MetadataLogEntry(4, "file:/t/metadata/v4.metadata.json"))


def test_snapshot_json_order_and_summary_operation_first():
    s = Snapshot.from_json({"snapshot-id": 3, "timestamp-ms": 9, "summary": {"added-records": "2"},
                            "manifest-list": "x", "sequence-number": 4, "parent-snapshot-id": 2})
    assert s.operation == "overwrite"  # the reference's reading of a summary without one
    assert list(s.to_json()) == ["sequence-number", "snapshot-id", "parent-snapshot-id", "timestamp-ms",
                                 "summary", "manifest-list"]
    assert list(s.to_json()["summary"]) == ["operation", "added-records"]
    v1 = Snapshot(1, 2, manifest_list="x")
    assert "sequence-number" not in v1.to_json()


def test_carry_totals():
    prev = {"operation": "append", "total-records": "10", "total-data-files": "2"}
    cur = carry_totals(prev, {"operation": "delete", "deleted-records": "4", "deleted-data-files": "1"})
    assert cur["total-records"] == "6" and cur["total-data-files"] == "1"
    assert "total-files-size" not in cur  # previous snapshot had no such total
    first = carry_totals(None, {"operation": "append", "added-records": "3", "added-files-size": "100"})
    assert first["total-records"] == "3" and first["total-files-size"] == "100"
    assert first["total-delete-files"] == "0"
