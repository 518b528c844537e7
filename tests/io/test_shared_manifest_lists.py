"""SharedEntryReader (each distinct manifest-list entry decoded once per table) reads exactly what
read_manifest_list reads, on random histories of lists that share entries; and the per-directory
path normaliser of the deleting commands equals normalize_path on random paths."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icectl.errors import CorruptMetadata, IcectlError
from icectl.io.manifest.manifest_list import SharedEntryReader, read_manifest_list, write_manifest_list
from icectl.ops.maintain.file_removal import PathIdentities, normalize_path
from icectl.spec.manifests import FieldSummary, ManifestFile

SETTINGS = settings(derandomize=True, deadline=None, max_examples=60,
                    suppress_health_check=[HealthCheck.too_slow])

_name = st.text(st.sampled_from("abé-_.%/x"), min_size=1, max_size=12)
_path = st.one_of(
    _name.map(lambda n: f"/t/metadata/{n}.avro"),
    st.integers(60, 9000).map(lambda n: "/t/" + "d" * n + ".avro"),  # two- and three-byte lengths
    _name.map(lambda n: f"s3://bucket/t/metadata/{n}.avro"),
)
_summary = st.builds(FieldSummary, st.booleans(), st.one_of(st.none(), st.booleans()),
                     st.one_of(st.none(), st.binary(max_size=6)), st.one_of(st.none(), st.binary(max_size=6)))
_count = st.integers(0, 3000)


@st.composite
def _manifest(draw, path: str) -> ManifestFile:
    return ManifestFile(
        manifest_path=path, manifest_length=draw(st.integers(1, 1 << 40)),
        partition_spec_id=draw(st.integers(0, 3)), content=draw(st.sampled_from([0, 1])),
        sequence_number=draw(st.integers(0, 50)), min_sequence_number=draw(st.integers(0, 50)),
        added_snapshot_id=draw(st.integers(1, 1 << 62)),
        added_files_count=draw(_count), existing_files_count=draw(_count), deleted_files_count=draw(_count),
        added_rows_count=draw(_count), existing_rows_count=draw(_count), deleted_rows_count=draw(_count),
        partitions=draw(st.one_of(st.none(), st.lists(_summary, max_size=3).map(tuple))),
        key_metadata=draw(st.one_of(st.none(), st.binary(max_size=4))),
        first_row_id=draw(st.integers(0, 1000)))


@st.composite
def _history(draw) -> list[tuple[int, list[ManifestFile]]]:
    paths = draw(st.lists(_path, min_size=1, max_size=8, unique=True))
    # a path may carry different entries (the reader must compare bytes, not trust the path)
    pool = [draw(_manifest(p)) for p in paths for _ in range(draw(st.integers(1, 2)))]
    lists = []
    for _ in range(draw(st.integers(1, 8))):
        fv = draw(st.sampled_from([1, 2, 3]))
        picked = draw(st.lists(st.sampled_from(pool), max_size=12))
        lists.append((fv, picked))
    return lists


def _write(fv: int, manifests: list[ManifestFile]) -> bytes:
    return write_manifest_list(manifests, fv, 7, None, 60, first_row_id=5000 if fv >= 3 else None)


@SETTINGS
@given(_history())
def test_shared_reader_reads_what_the_plain_reader_reads(history):
    reader = SharedEntryReader()
    for fv, manifests in history + history:  # the second pass finds every entry known
        data = _write(fv, manifests)
        assert reader.read(data) == read_manifest_list(data, fv)
    distinct = {(fv, m) for fv, ms in history for m in ms}
    assert reader.decoded <= len(distinct)


def test_entries_shared_between_lists_are_decoded_once():
    base = [ManifestFile(manifest_path=f"/t/metadata/m{i}.avro", manifest_length=100 + i, partition_spec_id=0,
                         sequence_number=i, min_sequence_number=i, added_snapshot_id=i + 1,
                         added_files_count=1, existing_files_count=0, deleted_files_count=0,
                         added_rows_count=1, existing_rows_count=0, deleted_rows_count=0)
            for i in range(50)]
    reader = SharedEntryReader()
    for k in range(1, 51):
        data = _write(2, base[:k][::-1])
        assert reader.read(data) == read_manifest_list(data, 2)
    assert reader.decoded == 50  # of 1,275 entries read


def test_a_cut_list_is_corrupt_for_both_readers():
    m = ManifestFile(manifest_path="/t/metadata/m.avro", manifest_length=1, partition_spec_id=0,
                     sequence_number=1, min_sequence_number=1, added_snapshot_id=1, added_files_count=1,
                     existing_files_count=0, deleted_files_count=0, added_rows_count=1, existing_rows_count=0,
                     deleted_rows_count=0)
    data = _write(2, [m, m])
    cut = data[:-30]
    with pytest.raises(CorruptMetadata):
        read_manifest_list(cut, 2)
    with pytest.raises(CorruptMetadata):
        SharedEntryReader().read(cut)


_part = st.sampled_from(["a", "b", "é", ".", "..", "", "x%20y", "q?r", "h#i", "data", "m.avro", "/"])
_prefix = st.sampled_from(["", "/", "//", "file:", "file:/", "file://", "file:///", "file://localhost/",
                           "s3://bkt/", "s3a://bkt/", "s3n://bkt", "gs://b/", "./", "../"])


@SETTINGS
@given(st.lists(st.tuples(_prefix, st.lists(_part, max_size=5)), min_size=1, max_size=30))
def test_path_identities_equal_normalize_path(specs):
    norm = PathIdentities()
    for prefix, parts in specs + specs:
        path = prefix + "/".join(parts)
        try:
            want = normalize_path(path)
        except IcectlError:
            with pytest.raises(IcectlError):
                norm(path)
            continue
        assert norm(path) == want, path


def test_path_identities_return_a_path_that_is_its_own_identity_itself():
    """Sets of identities share their strings with the paths read (the memory of expire and
    orphans at millions of files): no equal copy for a path already in its normal spelling."""
    norm = PathIdentities()
    for path in ("/wh/t/data/f-1.parquet", "/wh/t/data/f-2.parquet", "s3://bkt/t/data/f-3.parquet"):
        assert normalize_path(path) == path
        assert norm(path) is path
    spelled = "file:///wh/t/data/f-4.parquet"
    assert norm(spelled) == normalize_path(spelled) == "/wh/t/data/f-4.parquet"
