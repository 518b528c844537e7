"""The byte-level rewrites of relocation: a delete manifest's ``file_path`` bounds (moved when
they name one data file, dropped otherwise), a Parquet position delete file's paths (rows and
every other column kept), and a deletion vector file's footer (every blob at its offset)."""

from __future__ import annotations

import io
import json
import struct
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from clirun import icectl
from icectl.io.formats.puffin import PUFFIN_MAGIC, PuffinBlob, deletion_vector_blob, parse_deletion_vector, puffin_file
from icectl.io.formats.relocate_deletes import relocated_deletion_vectors, relocated_position_deletes
from icectl.io.manifest.relocate import read_raw, relocated_manifest
from icectl.ops.relocate.paths import PrefixMove
from icectl.spec.reserved import DELETE_FILE_PATH_ID

PATH_ID = DELETE_FILE_PATH_ID


def _delete_manifest(tmp_path: Path) -> tuple[Path, bytes]:
    t = tmp_path / "t"
    (tmp_path / "r.csv").write_text("id\n1\n2\n3\n")
    for args in (["create", t, "--schema", "id long"], ["write", t, tmp_path / "r.csv"],
                 ["delete", t, "--filter", "id = 2", "--mode", "merge-on-read"]):
        assert icectl(*map(str, args)).returncode == 0
    manifests = json.loads(icectl("inspect", "manifests", str(t), "--json").stdout)
    path = next(m["path"] for m in manifests if m["content"] == "deletes")
    return t, Path(path).read_bytes()


def _bounds(raw, key: str) -> dict:
    df = raw.records[0]["data_file"]
    return {kv["key"]: kv["value"] for kv in df[key] or []}


def test_file_scoped_bounds_move_and_others_are_dropped(tmp_path: Path) -> None:
    t, data = _delete_manifest(tmp_path)
    raw = read_raw(data, "manifest")
    lower = _bounds(raw, "lower_bounds")[PATH_ID].decode()
    assert lower.startswith(str(t) + "/data/") and _bounds(raw, "upper_bounds")[PATH_ID].decode() == lower
    move = PrefixMove(str(t), "s3://b/new")
    out = read_raw(relocated_manifest(raw, move, {}), "manifest")
    assert _bounds(out, "lower_bounds")[PATH_ID].decode() == move(lower)
    assert _bounds(out, "upper_bounds")[PATH_ID].decode() == move(lower)
    assert out.records[0]["data_file"]["file_path"] == move(raw.records[0]["data_file"]["file_path"])
    assert out.metadata == raw.metadata and out.schema == raw.schema
    # a delete file of several data files: its path bounds cannot be moved in order, so they go
    df = raw.records[0]["data_file"]
    df["upper_bounds"] = [kv if kv["key"] != PATH_ID else {"key": PATH_ID, "value": (lower + "x").encode()}
                          for kv in df["upper_bounds"]]
    out = read_raw(relocated_manifest(raw, move, {}), "manifest")
    assert PATH_ID not in _bounds(out, "lower_bounds") and PATH_ID not in _bounds(out, "upper_bounds")
    assert set(_bounds(out, "lower_bounds")) == set(_bounds(raw, "lower_bounds")) - {PATH_ID}


def test_position_delete_rows_keep_order_and_columns() -> None:
    schema = pa.schema([pa.field("file_path", pa.string(), False, {b"PARQUET:field_id": b"2147483546"}),
                        pa.field("pos", pa.int64(), False, {b"PARQUET:field_id": b"2147483545"})],
                       metadata={b"delete-type": b"position"})
    rows = pa.table({"file_path": ["/old/t/data/a.parquet"] * 2 + ["/old/t/data/b.parquet"], "pos": [0, 9, 4]},
                    schema=schema)
    buf = io.BytesIO()
    pq.write_table(rows, buf, compression="zstd")
    out, offsets = relocated_position_deletes(buf.getvalue(), PrefixMove("/old/t", "/new/place"), "f")
    got = pq.read_table(io.BytesIO(out))
    assert got.column("file_path").to_pylist() == ["/new/place/data/a.parquet"] * 2 + ["/new/place/data/b.parquet"]
    assert got.column("pos").to_pylist() == [0, 9, 4]
    assert got.schema.field("pos").metadata[b"PARQUET:field_id"] == b"2147483545"
    md = pq.ParquetFile(io.BytesIO(out)).metadata
    assert md.metadata[b"delete-type"] == b"position"  # the key-value metadata, as it was
    assert md.row_group(0).column(0).compression == "ZSTD" and offsets == [4]


def test_deletion_vectors_stay_at_their_offsets() -> None:
    blobs = [PuffinBlob("deletion-vector-v1", deletion_vector_blob(p), (2147483645,),
                        {"referenced-data-file": f"/old/t/data/{n}.parquet", "cardinality": str(len(p))})
             for n, p in (("a", [1, 5]), ("b", [0, 70000, 1 << 33]))]
    data, placed = puffin_file(blobs)
    out = relocated_deletion_vectors(data, PrefixMove("/old/t", "s3://bucket/far/away/t"), "f")
    assert out[:4] == PUFFIN_MAGIC and out[-4:] == PUFFIN_MAGIC
    (n,) = struct.unpack("<I", out[-12:-8])
    footer = json.loads(out[-12 - n:-12])
    assert [b["properties"]["referenced-data-file"] for b in footer["blobs"]] == \
        ["s3://bucket/far/away/t/data/a.parquet", "s3://bucket/far/away/t/data/b.parquet"]
    for b, p in zip(placed, ([1, 5], [0, 70000, 1 << 33])):
        assert parse_deletion_vector(out[b.offset:b.offset + b.length]) == p
