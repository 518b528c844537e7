"""Orphan files: what counts as referenced, hidden names, the age cut-off, path spellings and
the table boundary."""

from __future__ import annotations

import os
import time

import pytest

from expire_history import History

from icectl.ops.maintain.orphans import delete_orphan_files, find_orphan_files, normalize_path
from icectl.table.table import Table

OLD = time.time() - 5 * 86400


def touch(path: str, old: bool = True) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(b"x")
    if old:
        os.utime(path, (OLD, OLD))
    return path


def age_all(root: str) -> None:
    for d, _, names in os.walk(root):
        for n in names:
            os.utime(os.path.join(d, n), (OLD, OLD))


def test_normalize_path():
    assert normalize_path("file:/t/x") == normalize_path("file:///t/x") == normalize_path("/t/x") == "/t/x"
    assert normalize_path("/t/a/../x") == "/t/x"
    assert normalize_path("s3a://b/k") == normalize_path("s3://b/k") == normalize_path("s3n://b/k")


def test_finds_and_deletes_only_orphans(tmp_path):
    h = History(str(tmp_path / "t"))
    h.append(2)
    h.overwrite([h.live()[0]], add=1)  # the removed file is still in snapshot 1: not an orphan
    h.delete_rows([h.live()[0]])
    table = h.save()
    loc = h.location
    age_all(loc)
    orphans = [
        touch(f"{loc}/data/stray.parquet"),
        touch(f"{loc}/data/cat=x/stray2.parquet"),
        touch(f"{loc}/metadata/0000-abc.metadata.json"),
        touch(f"{loc}/metadata/stray-m0.avro"),
        touch(f"{loc}/elsewhere/file.txt"),  # anywhere under the table location, as the reference
    ]
    kept = [
        touch(f"{loc}/data/young.parquet", old=False),  # too young
        touch(f"{loc}/data/.hidden.parquet"),  # hidden name
        touch(f"{loc}/data/_temporary/x.parquet"),  # hidden directory
        touch(f"{loc}/metadata/.v1.metadata.json.crc"),
        touch(f"{loc}/metadata/.icectl-expire-1234.json"),
        touch(str(tmp_path / "outside.parquet")),  # outside the table
    ]
    cutoff = int(time.time() * 1000) - 86400_000
    found = find_orphan_files(table, older_than_ms=cutoff)
    assert sorted(found.orphan_files) == sorted(orphans)
    assert all(os.path.exists(p) for p in orphans)  # listing deletes nothing
    done = delete_orphan_files(Table.load(loc), older_than_ms=cutoff)
    assert sorted(done.orphan_files) == sorted(orphans) and not done.failed
    assert not any(os.path.exists(p) for p in orphans)
    assert all(os.path.exists(p) for p in kept)
    # everything the table references is still there; a second pass finds nothing
    assert find_orphan_files(Table.load(loc), older_than_ms=cutoff).orphan_files == ()


def test_partition_directories_of_underscore_fields_are_listed(tmp_path):
    from dataclasses import replace

    from icectl.spec.partitioning import PartitionField, PartitionSpec

    h = History(str(tmp_path / "t"))
    h.append()
    spec = PartitionSpec(1, (PartitionField(1, 1000, "_id", "identity"),))
    h.md = replace(h.md, specs=h.md.specs + (spec,))
    table = h.save()
    age_all(h.location)
    stray = touch(f"{h.location}/data/_id=3/stray.parquet")
    hidden = touch(f"{h.location}/data/_other=3/stray.parquet")
    found = find_orphan_files(table, older_than_ms=int(time.time() * 1000))
    assert stray in found.orphan_files and hidden not in found.orphan_files


def test_file_url_locations_match_plain_paths(tmp_path):
    loc = str(tmp_path / "t")
    h = History("file:" + loc)
    h.append(2)
    h.save()
    age_all(loc)
    stray = touch(f"{loc}/data/stray.parquet")
    found = find_orphan_files(Table.load(loc), older_than_ms=int(time.time() * 1000))
    assert [normalize_path(p) for p in found.orphan_files] == [stray]


def test_a_missing_manifest_list_stops_orphan_cleanup_instead_of_deleting_live_files(tmp_path) -> None:
    """If a manifest list the metadata names is gone, the files it reaches are unknowable:
    icectl refuses (as the reference's action fails) rather than calling live data orphans."""
    import os

    from icectl.errors import CorruptMetadata
    from icectl.ops.maintain.orphans import delete_orphan_files
    from icectl.ops.write.rows import write_rows
    from icectl.ops.metadata.create import create_table
    from icectl.table.table import Table

    import pyarrow as pa

    loc = str(tmp_path / "t")
    create_table(loc, schema_text="id long")
    t = Table.load(loc)
    write_rows(t, pa.table({"id": pa.array([1, 2], pa.int64())}))
    t = Table.load(loc)
    data = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(loc, "data")) for f in fs]
    assert data
    os.remove(t.metadata.current_snapshot().manifest_list)
    with pytest.raises(CorruptMetadata, match="missing"):
        delete_orphan_files(t, older_than_ms=2**62, allow_recent=True)
    assert all(os.path.exists(p) for p in data)
