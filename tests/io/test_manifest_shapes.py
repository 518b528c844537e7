"""A merge finds its entries by shape patterns (icectl.io.manifest.shapes): the rows it reads must
be the generated extents decoder's, value for value and position for position, on manifests of
every partition type, format version and content whose shapes change now and then (paths of
other lengths, maps present or null with other keys, bounds long and short, arrays of other
counts) or with every entry, on the manifests Java wrote, and where no shape serves (the
generated decoder then reads)."""

from __future__ import annotations

import json
import random
import struct

import pytest

from icectl.errors import CorruptMetadata
from icectl.io.manifest.records import write_manifest_raw
from icectl.io.formats.avro_container import decoded_blocks, split_header
from icectl.io.formats.avro_schema import wire_schema_jsons
from icectl.io.manifest.codegen import Decoder, compile_decoder
from icectl.io.manifest.columns import run_decoder
from icectl.io.manifest.shapes import bound_widths, shape_decoder
from icectl.spec.manifests import ADDED, DELETED, EXISTING, DataFile, ManifestEntry
from icectl.spec.reserved import (
    DATA,
    EQUALITY_DELETES,
    MANIFEST_DATA,
    MANIFEST_DELETES,
    POSITION_DELETES,
)

from tests.table.merge_support import JAVA_DIR, PARTITION_COLUMNS, schema_and_spec

SCHEMA, SPEC = schema_and_spec()
PTYPE = SPEC.partition_type(SCHEMA)
# the table's columns are the partition sources: ids 1..15, every type (fixed widths and not)
COLUMN_IDS = [f.field_id for f in SCHEMA.fields]
WIDTHS = bound_widths(json.dumps(SCHEMA.to_json()))


def _key(v):
    """Values compared exactly: floats by their bits (NaN, -0.0), the rest with their type."""
    if isinstance(v, float):
        return ("float", struct.pack("<d", v))
    return (type(v).__name__, v)


def _rows(dec, data: bytes) -> tuple[list[tuple], list[int]]:
    meta, sync, start = split_header(data)
    rows: list[tuple] = []
    ends = []
    for n, block in decoded_blocks(data, start, sync, meta.get("avro.codec", b"null").decode()):
        ends.append(dec.fn(block, n, rows.append))
    return [tuple(_key(v) for v in r) for r in rows], ends


def _both(data: bytes):
    meta, _, _ = split_header(data)
    plain = compile_decoder(wire_schema_jsons(bytes(meta["avro.schema"]))[0], (), (), extents=True)
    fast = shape_decoder(plain, bound_widths(meta.get("schema")))
    assert fast is not plain  # every layout the spec has is covered by shapes
    return plain, fast


def _shape(r: random.Random, i: int, content: int, *, path_len: int | None = None) -> dict:
    """What entries of one shape share: which maps are present and their keys, the array
    counts, the path's length, the format."""
    def maybe(v):
        return None if r.random() < 0.2 else v

    def keys(k):
        return sorted(r.sample(COLUMN_IDS, r.randint(0, k)))
    return {"path_len": r.randint(20, 150) if path_len is None else path_len,
            "format": r.choice(["PARQUET", "PARQUET", "AVRO"]),
            "sizes": maybe(keys(4)), "values": maybe(keys(15)), "nulls": maybe(keys(2)),
            "nans": maybe(keys(2)), "lower": maybe(keys(15)), "upper": maybe(keys(15)),
            "key_metadata": r.choice([None, 0, 16, 70]), "splits": maybe(r.randint(0, 5)),
            "equality_ids": (keys(3) or [1]) if content == EQUALITY_DELETES else None,
            "sort": maybe(r.randint(0, 3)), "first": i,
            "long_bounds": {fid: r.choice([64, 200]) for fid in COLUMN_IDS
                            if fid not in WIDTHS and r.random() < 0.3},
            # a long or double column evolved from int or float: its older files' bounds are
            # 4 bytes, narrower than the schema's type says
            "evolved": {fid for fid, w in WIDTHS.items() if w == 8 and r.random() < 0.3}}


def _bound(r: random.Random, fid: int, sh: dict) -> bytes:
    """A bound of field ``fid``: its type's width (4 bytes when the shape's file predates a
    promotion), or of a variable width a short length or the long one of the shape (a byte
    length of 64 or more is part of a shape)."""
    width = 4 if fid in sh["evolved"] else WIDTHS.get(fid, sh["long_bounds"].get(fid))
    n = width if width is not None else r.choice([0, 1, 5, 63])
    return bytes(r.getrandbits(8) for _ in range(n))


def _file(r: random.Random, i: int, version: int, content: int, sh: dict) -> DataFile:
    stem = f"/wh/t/data/{sh['first']}-"
    path = stem + "x" * max(0, sh["path_len"] - len(stem) - 8) + ".parquet"
    kw = {}
    if version >= 3 and content == DATA:
        kw["first_row_id"] = r.choice([None, r.randint(0, 10**12)])
    if content != DATA:
        kw["referenced_data_file"] = r.choice([None, f"/wh/t/data/{r.randint(0, 9)}.parquet"])

    def counts(k, top):
        return None if sh[k] is None else {fid: r.randint(0, top) for fid in sh[k]}

    def bounds(k):
        return None if sh[k] is None else {fid: _bound(r, fid, sh) for fid in sh[k]}
    return DataFile(
        content, path, sh["format"],
        tuple(None if r.random() < 0.2 else gen(r) for _, gen in PARTITION_COLUMNS),
        r.randint(0, 10**12), r.randint(1, 10**12), column_sizes=counts("sizes", 2**40),
        value_counts=counts("values", 99), null_value_counts=counts("nulls", 3),
        nan_value_counts=counts("nans", 3), lower_bounds=bounds("lower"),
        upper_bounds=bounds("upper"),
        key_metadata=(None if sh["key_metadata"] is None
                      else bytes(r.getrandbits(8) for _ in range(sh["key_metadata"]))),
        split_offsets=(None if sh["splits"] is None
                       else tuple(sorted(r.randint(4, 10**9) for _ in range(sh["splits"])))),
        equality_ids=None if sh["equality_ids"] is None else tuple(sh["equality_ids"]),
        sort_order_id=sh["sort"], **kw)


def _manifest(r: random.Random, version: int, content: int, n: int, *, shapes: str) -> bytes:
    """``shapes``: "runs" (a new shape now and then) or "all-new" (one for every entry)."""
    entries = []
    sh = _shape(r, 0, content)
    for i in range(n):
        if shapes == "all-new":
            sh = _shape(r, i, content, path_len=64 + i)
        elif r.random() < 0.1:
            sh = _shape(r, i, content)
        status = r.choice([ADDED, EXISTING, DELETED]) if version > 1 else ADDED
        seq = None if status == ADDED and r.random() < 0.7 else r.randint(0, 2**40)
        fseq = None if seq is None else seq - r.randint(0, seq)
        entries.append(ManifestEntry(status, r.choice([None, r.randint(1, 2**63 - 1)]), seq, fseq,
                                     _file(r, i, version, content, sh)))
    return write_manifest_raw(entries, partition_type=PTYPE, spec_id=SPEC.spec_id,
                              partition_spec_json=SPEC.fields_json(), schema_json=SCHEMA.to_json(),
                              format_version=version, snapshot_id=r.randint(1, 2**62),
                              content=MANIFEST_DELETES if content != DATA else MANIFEST_DATA)


CASES = [(v, c) for v in (1, 2, 3) for c in (DATA, POSITION_DELETES, EQUALITY_DELETES)
         if v > 1 or c == DATA]


@pytest.mark.parametrize("version,content", CASES)
@pytest.mark.parametrize("shapes", ["runs", "all-new"])
def test_shapes_read_what_the_generated_decoder_reads(version, content, shapes) -> None:
    entries = by_plain = 0
    for seed in range(4):
        r = random.Random(f"{version}-{content}-{shapes}-{seed}")
        data = _manifest(r, version, content, 150, shapes=shapes)
        plain, fast = _both(data)
        assert _rows(fast, data) == _rows(plain, data)
        # the same, counting the entries the generated decoder read
        calls: list[int] = []
        counting = Decoder(lambda buf, count, app, pos=0: calls.append(count) or plain.fn(
            buf, count, app, pos), plain.sinks, plain.layout)
        meta, _, _ = split_header(data)
        assert _rows(shape_decoder(counting, bound_widths(meta.get("schema"))), data) \
            == _rows(plain, data)
        entries += 150
        by_plain += sum(calls)
    if shapes == "runs":  # a shape is compiled the second time it is seen, then matched
        assert by_plain < entries * 0.4, (by_plain, entries)
    else:  # no shape repeats: each entry learned until learning stops, then read as before
        assert by_plain == entries


def test_the_manifests_java_wrote() -> None:
    seen = 0
    for d in sorted(p for p in JAVA_DIR.iterdir() if p.is_dir()):
        for f in sorted(d.glob("*-m*.avro")):
            data = f.read_bytes()
            plain, fast = _both(data)
            got, want = _rows(fast, data), _rows(plain, data)
            assert got == want, f
            seen += len(got[0])
    assert seen > 0


def test_a_corrupt_block_fails_as_with_the_generated_decoder() -> None:
    r = random.Random(7)
    data = _manifest(r, 2, DATA, 20, shapes="runs")
    plain, fast = _both(data)
    meta, sync, start = split_header(data)
    (n, block), = list(decoded_blocks(data, start, sync, meta.get("avro.codec", b"null").decode()))
    for cut in (len(block) - 1, len(block) // 2, 5):
        for dec in (plain, fast):
            with pytest.raises(CorruptMetadata):
                run_decoder(dec, [(n, block[:cut])], "m.avro")


def test_bound_widths_are_the_single_value_serialization_widths() -> None:
    w = WIDTHS
    by_type = {t: w.get(i + 1) for i, (t, _) in enumerate(PARTITION_COLUMNS)}
    assert by_type == {"boolean": 1, "int": 4, "long": 8, "float": 4, "double": 8, "date": 4,
                       "time": 8, "timestamp": 8, "timestamptz": 8, "string": None, "uuid": 16,
                       "fixed[3]": 3, "binary": None, "decimal(9,2)": None, "decimal(38,10)": None}
    assert bound_widths(None) == {} and bound_widths(b"not json") == {}
