"""Locating the current version and the filesystem commit protocol (Hadoop-table layout)."""

from __future__ import annotations

import json
import os
from dataclasses import replace

import pytest

from icectl.errors import CorruptMetadata, InvalidInput, NotFound, ValidationError
from icectl.io.storage.files import FileIO
from icectl.spec.metadata import with_properties
from icectl.spec.metadata_json import metadata_from_bytes, metadata_to_bytes
from icectl.table import store
from icectl.table.store import VersionConflict



def meta_dir(location):
    return os.path.join(location, "metadata")


def listing(location):
    return sorted(os.listdir(meta_dir(location)))


def commit_props(io, location, base, **props):
    return store.commit(io, location, base, with_properties(base.metadata, props))


@pytest.fixture
def table3(location, make_md):
    """A table with versions 1..3."""
    io = FileIO()
    cur = store.commit(io, location, None, make_md(location))
    for i in range(2):
        cur = commit_props(io, location, cur, step=str(i))
    return io, cur


def test_first_commit_is_v1_with_hint(location, make_md):
    io = FileIO()
    cur = store.commit(io, location, None, make_md(location))
    assert cur.version == 1
    assert listing(location) == ["v1.metadata.json", "version-hint.text"]
    with open(os.path.join(meta_dir(location), "version-hint.text"), "rb") as f:
        assert f.read() == b"1"  # decimal, no newline
    assert cur.metadata.metadata_log == ()


def test_commit_appends_metadata_log(table3, location):
    io, cur = table3
    assert cur.version == 3
    log = cur.metadata.metadata_log
    assert [e.metadata_file for e in log] == [os.path.join(meta_dir(location), f"v{i}.metadata.json") for i in (1, 2)]
    v2 = store.read_metadata(io, os.path.join(meta_dir(location), "v2.metadata.json"))
    assert log[-1].timestamp_ms == v2.last_updated_ms
    assert cur.metadata.last_updated_ms > 0
    on_disk = store.load_current(io, location)
    assert on_disk.version == 3 and on_disk.metadata == cur.metadata


def test_load_without_hint_lists_versions(table3, location):
    io, _ = table3
    os.remove(os.path.join(meta_dir(location), "version-hint.text"))
    assert store.find_current_version(io, location)[0] == 3


def test_unreadable_hint_falls_back_to_listing(table3, location):
    io, _ = table3
    with open(os.path.join(meta_dir(location), "version-hint.text"), "w") as f:
        f.write("garbage")
    assert store.find_current_version(io, location)[0] == 3


def test_stale_hint_probes_forward(table3, location):
    io, _ = table3
    with open(os.path.join(meta_dir(location), "version-hint.text"), "w") as f:
        f.write("1")
    assert store.load_current(io, location).version == 3


def test_hint_naming_missing_file_is_an_error(table3, location):
    io, _ = table3
    with open(os.path.join(meta_dir(location), "version-hint.text"), "w") as f:
        f.write("7")
    with pytest.raises(CorruptMetadata, match="version 7"):
        store.load_current(io, location)


def test_no_table(location):
    io = FileIO()
    with pytest.raises(NotFound, match="no Iceberg table at .*t"):
        store.load_current(io, location)
    os.makedirs(meta_dir(location))
    assert store.find_current_version(io, location) is None


def test_gzip_codec_and_legacy_gz_names(location, make_md):
    io = FileIO()
    cur = store.commit(io, location, None, make_md(location, **{"write.metadata.compression-codec": "gzip"}))
    assert listing(location) == ["v1.gz.metadata.json", "version-hint.text"]
    with open(os.path.join(meta_dir(location), "v1.gz.metadata.json"), "rb") as f:
        assert f.read(2) == b"\x1f\x8b"
    cur = commit_props(io, location, cur, a="1")
    # a legacy writer's name for the next version is found too
    legacy = os.path.join(meta_dir(location), "v3.metadata.json.gz")
    with open(legacy, "wb") as f:
        f.write(metadata_to_bytes(with_properties(cur.metadata, {"legacy": "yes"}), compress=True))
    loaded = store.load_current(io, location)
    assert loaded.version == 3 and loaded.metadata.properties["legacy"] == "yes"
    with pytest.raises(InvalidInput, match="compression-codec"):
        with_properties(loaded.metadata, {"write.metadata.compression-codec": "zip"})
    hand_edited = replace(loaded.metadata, properties={**loaded.metadata.properties,
                                                       "write.metadata.compression-codec": "zip"})
    with pytest.raises(ValidationError, match="compression-codec"):
        store.commit(io, location, loaded, hand_edited)


def test_conflict_when_version_exists_leaves_no_temp_file(table3, location):
    io, cur = table3
    base = store.load_current(io, location)
    commit_props(io, location, base, winner="yes")
    with pytest.raises(VersionConflict, match="version 4"):
        commit_props(io, location, base, loser="yes")
    assert listing(location) == [f"v{i}.metadata.json" for i in (1, 2, 3, 4)] + ["version-hint.text"]
    assert "winner" in store.load_current(io, location).metadata.properties


def test_previous_versions_max_and_delete_after_commit(location, make_md):
    io = FileIO()
    md = make_md(location, **{"write.metadata.previous-versions-max": "2",
                                     "write.metadata.delete-after-commit.enabled": "true"})
    cur = store.commit(io, location, None, md)
    for i in range(4):
        cur = commit_props(io, location, cur, n=str(i))
    assert cur.version == 5
    assert [os.path.basename(e.metadata_file) for e in cur.metadata.metadata_log] == \
        ["v3.metadata.json", "v4.metadata.json"]
    assert listing(location) == ["v3.metadata.json", "v4.metadata.json", "v5.metadata.json", "version-hint.text"]


def test_previous_versions_max_without_delete_keeps_files(location, make_md):
    io = FileIO()
    cur = store.commit(io, location, None, make_md(location, **{"write.metadata.previous-versions-max": "1"}))
    for i in range(3):
        cur = commit_props(io, location, cur, n=str(i))
    assert [os.path.basename(e.metadata_file) for e in cur.metadata.metadata_log] == ["v3.metadata.json"]
    assert len([n for n in listing(location) if n.endswith(".metadata.json")]) == 4


def test_version_hint_replaces_crc_sidecar(table3, location):
    io, cur = table3
    crc = os.path.join(meta_dir(location), ".version-hint.text.crc")
    with open(crc, "wb") as f:
        f.write(b"stale checksum")
    commit_props(io, location, cur, x="1")
    assert not os.path.exists(crc)
    with open(os.path.join(meta_dir(location), "version-hint.text")) as f:
        assert f.read() == "4"


def test_file_url_locations(tmp_path, make_md):
    io = FileIO()
    location = "file:" + str(tmp_path / "t")
    cur = store.commit(io, location, None, make_md(location))
    cur = commit_props(io, location, cur, a="1")
    assert cur.metadata.metadata_log[0].metadata_file == location + "/metadata/v1.metadata.json"
    doc = json.loads((tmp_path / "t" / "metadata" / "v2.metadata.json").read_text())
    assert doc["metadata-log"][0]["metadata-file"] == location + "/metadata/v1.metadata.json"
    assert metadata_from_bytes(io.read(cur.metadata_location)) == cur.metadata
