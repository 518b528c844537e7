"""Both manifest readers -- the record reader (fastavro, icectl.io.manifest.records) and the generated column
decoder (icectl.io.manifest.columns) -- give equal values for partition fields and bounds of
every type, at the edges: 38-digit decimals, negative values, non-BMP strings, NaN, the
extremes of ints, longs and timestamps, and named Avro types referenced a second time."""

from __future__ import annotations

import math
import pickle
import random
import struct
import uuid
from decimal import Decimal

import pytest

from icectl.io.manifest.records import read_manifest, write_manifest_raw
from icectl.io.manifest.columns import decode_manifest
from icectl.spec.manifests import (
    ADDED,
    DATA,
    DELETED,
    EXISTING,
    DataFile,
    ManifestEntry,
    ManifestFile,
)
from icectl.spec.types import (
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMP_NS,
    TIMESTAMPTZ,
    TIMESTAMPTZ_NS,
    UUID,
    DecimalType,
    FixedType,
    NestedField,
    StructType,
)
from icectl.spec.values import to_bytes

I64 = (-(2**63), 2**63 - 1)


def _decimal(rng: random.Random, precision: int, scale: int) -> Decimal:
    digits = precision if rng.random() < 0.5 else rng.randint(1, precision)
    unscaled = rng.randint(10 ** (digits - 1) if digits > 1 else 0, 10**digits - 1)
    return Decimal(-unscaled if rng.random() < 0.5 else unscaled).scaleb(-scale)


def _text(rng: random.Random) -> str:
    alphabet = "aZ0 é中\U0001d11e\U0001f600\U00010348"  # ASCII, BMP, and beyond it
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))


# (partition field type, value generator); two fields share decimal(9,2) and fixed[7], so the
# Avro schema defines those named types once and refers to them by name the second time
TYPES = [
    (DecimalType(38, 2), lambda r: _decimal(r, 38, 2)),
    (DecimalType(38, 0), lambda r: _decimal(r, 38, 0)),
    (DecimalType(38, 38), lambda r: _decimal(r, 38, 38)),
    (DecimalType(9, 2), lambda r: _decimal(r, 9, 2)),
    (DecimalType(9, 2), lambda r: _decimal(r, 9, 2)),
    (DecimalType(18, 6), lambda r: _decimal(r, 18, 6)),
    (FixedType(7), lambda r: bytes(r.randrange(256) for _ in range(7))),
    (FixedType(7), lambda r: bytes(r.randrange(256) for _ in range(7))),
    (BINARY, lambda r: bytes(r.randrange(256) for _ in range(r.randint(0, 80)))),
    (UUID, lambda r: uuid.UUID(int=r.getrandbits(128))),
    (TIME, lambda r: r.randint(0, 86_400_000_000 - 1)),
    (TIMESTAMP, lambda r: r.choice([r.randint(*I64), -1, 0, I64[0], I64[1]])),
    (TIMESTAMPTZ, lambda r: r.randint(-(10**17), 10**17)),
    (TIMESTAMP_NS, lambda r: r.choice([r.randint(*I64), -1, I64[0], I64[1]])),
    (TIMESTAMPTZ_NS, lambda r: r.randint(*I64)),
    (DATE, lambda r: r.randint(-(2**31), 2**31 - 1)),
    (STRING, _text),
    (BOOLEAN, lambda r: r.random() < 0.5),
    (INT, lambda r: r.choice([r.randint(-(2**31), 2**31 - 1), -(2**31), 2**31 - 1])),
    (LONG, lambda r: r.randint(*I64)),
    (FLOAT, lambda r: r.choice([float("nan"), -0.0, math.inf, -math.inf,
                                struct.unpack("<f", struct.pack("<f", r.uniform(-1e30, 1e30)))[0]])),
    (DOUBLE, lambda r: r.choice([float("nan"), -0.0, -math.inf, r.uniform(-1e300, 1e300)])),
]
PTYPE = StructType(tuple(NestedField(1000 + i, f"p{i}", t, False) for i, (t, _) in enumerate(TYPES)))


def _entries(rng: random.Random, n: int, fv: int) -> list[ManifestEntry]:
    out = []
    for k in range(n):
        values = tuple(None if rng.random() < 0.15 else gen(rng) for _, gen in TYPES)
        # bounds of every type too, keyed by the partition field ids
        bounds = {1000 + i: to_bytes(t, v) for i, ((t, _), v) in enumerate(zip(TYPES, values))
                  if v is not None and not (isinstance(v, float) and math.isnan(v))}
        status = rng.choice([ADDED, EXISTING, DELETED]) if fv > 1 else ADDED
        seq = None if status == ADDED else rng.randint(0, 50)
        f = DataFile(DATA, f"/data/{k}-\U0001f600.parquet", "PARQUET", values,
                     record_count=rng.randint(1, 10**6), file_size_in_bytes=rng.randint(1, 10**9),
                     value_counts={fid: 5 for fid in bounds}, null_value_counts={1000: 1},
                     nan_value_counts={1020: 1, 1021: 0}, lower_bounds=bounds,
                     upper_bounds=bounds,
                     first_row_id=rng.choice([None, rng.randint(0, 10**9)]) if fv >= 3 else None)
        out.append(ManifestEntry(status, rng.choice([None, 42]), seq, seq, f))
    return out


def _key(v):
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    if isinstance(v, float):
        return (v, math.copysign(1.0, v))  # -0.0 and 0.0 differ
    return (type(v).__name__, v)


@pytest.mark.parametrize("fv", [1, 2, 3])
def test_both_readers_agree_on_every_type(fv: int) -> None:
    rng = random.Random(fv)
    entries = _entries(rng, 400, fv)
    data = write_manifest_raw(entries, partition_type=PTYPE, spec_id=1, partition_spec_json=[],
                              schema_json={"type": "struct", "schema-id": 0, "fields": []},
                              format_version=fv, snapshot_id=42)
    assert b'"decimal_9_2"' in data[:4096]  # a named type referenced by name, as Java does
    mf = ManifestFile("m.avro", len(data), 1, sequence_number=7 if fv > 1 else 0,
                      min_sequence_number=0, added_snapshot_id=42,
                      first_row_id=10 if fv >= 3 else None)
    records = read_manifest(data, mf)
    ids = {f.field_id for f in PTYPE.fields()}
    cols = decode_manifest(data, wanted_stats=ids, added_snapshot_id=42,
                           sequence_number=mf.sequence_number, first_row_id=mf.first_row_id)
    assert cols.count == len(records) == len(entries)
    for i, (e, written) in enumerate(zip(records, entries)):
        f = e.data_file
        # the written values come back from both readers, exactly (38 digits included)
        assert [_key(v) for v in cols.partition_tuple(i)] == [_key(v) for v in f.partition] \
            == [_key(v) for v in written.data_file.partition]
        assert (cols.status[i], cols.snapshot_id[i], cols.data_sequence_number[i],
                cols.file_sequence_number[i], cols.first_row_id[i]) \
            == (e.status, e.snapshot_id, e.sequence_number, e.file_sequence_number,
                f.first_row_id)
        assert cols.file_path[i] == f.file_path
        for fid, st in cols.stats.items():
            assert (st.lower[i], st.upper[i], st.value_counts[i], st.null_counts[i],
                    st.nan_counts[i]) == ((f.lower_bounds or {}).get(fid),
                                          (f.upper_bounds or {}).get(fid),
                                          (f.value_counts or {}).get(fid),
                                          (f.null_value_counts or {}).get(fid),
                                          (f.nan_value_counts or {}).get(fid))
    # inheritance happened (ADDED entries without numbers took the manifest's)
    assert all(s is not None for s in cols.snapshot_id)
    if fv > 1:
        assert {cols.data_sequence_number[i] for i in range(cols.count)
                if cols.status[i] == ADDED} == {7}


def test_decoded_manifest_is_a_plain_value() -> None:
    """The decoded form round-trips through pickle (the seam for an on-disk cache)."""
    entries = _entries(random.Random(9), 50, 2)
    data = write_manifest_raw(entries, partition_type=PTYPE, spec_id=1, partition_spec_json=[],
                              schema_json={"type": "struct", "schema-id": 0, "fields": []},
                              format_version=2, snapshot_id=42)
    cols = decode_manifest(data, path="m.avro", wanted_stats={1000, 1016},
                           added_snapshot_id=42, sequence_number=3)
    back = pickle.loads(pickle.dumps(cols))
    assert [[_key(v) for v in c] for c in back.partitions] == \
        [[_key(v) for v in c] for c in cols.partitions]
    back.partitions = cols.partitions = []
    assert back == cols
