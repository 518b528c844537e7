"""Helpers shared by the manifest-merge tests: random entries of every partition value type,
their comparison, Java's stored manifests and a table whose commits merge manifests."""

from __future__ import annotations

import json
import math
import random
import uuid
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

from icectl.io.manifest import records as avro
from icectl.io.formats.avro_container import split_header
from icectl.spec.manifests import (
    ADDED,
    DATA,
    DELETED,
    EXISTING,
    DataFile,
    ManifestEntry,
)
from icectl.spec.partitioning import PartitionSpec
from icectl.spec.schema import Schema
from icectl.table.commit.producer import FastAppendProducer
from icectl.table.table import Table

from tests.table.conftest import FAST_RETRY

JAVA_DIR = Path(__file__).resolve().parent.parent / "data" / "manifests"


# (Iceberg type, random value); every partition value type, awkward values included
PARTITION_COLUMNS = [
    ("boolean", lambda r: r.random() < 0.5),
    ("int", lambda r: r.randint(-2**31, 2**31 - 1)),
    ("long", lambda r: r.randint(-2**63, 2**63 - 1)),
    ("float", lambda r: r.choice([-0.0, math.nan, math.inf, 1.5, -2.25])),
    ("double", lambda r: r.choice([-0.0, 0.0, math.nan, -math.inf, r.uniform(-1e300, 1e300)])),
    ("date", lambda r: r.randint(-800_000, 2_932_896)),
    ("time", lambda r: r.randint(0, 86_399_999_999)),
    ("timestamp", lambda r: r.randint(-62_135_596_800_000_001, 253_402_300_800_000_000)),
    ("timestamptz", lambda r: r.randint(-2**62, 2**62)),
    ("string", lambda r: r.choice(["", "héllo ✓", "a" * 40, str(r.random())])),
    ("uuid", lambda r: uuid.UUID(int=r.getrandbits(128))),
    ("fixed[3]", lambda r: bytes(r.getrandbits(8) for _ in range(3))),
    ("binary", lambda r: bytes(r.getrandbits(8) for _ in range(r.randint(0, 20)))),
    ("decimal(9,2)", lambda r: Decimal(r.randint(-999_999_999, 999_999_999)).scaleb(-2)),
    ("decimal(38,10)", lambda r: Decimal(r.randint(-10**38 + 1, 10**38 - 1)).scaleb(-10)),
]


def schema_and_spec() -> tuple[Schema, PartitionSpec]:
    schema = Schema.from_json({"type": "struct", "schema-id": 0, "fields": [
        {"id": i + 1, "name": f"c{i}", "required": False, "type": t}
        for i, (t, _) in enumerate(PARTITION_COLUMNS)]})
    spec = PartitionSpec.from_fields_json(
        [{"name": f"c{i}", "transform": "identity", "source-id": i + 1, "field-id": 1000 + i}
         for i in range(len(PARTITION_COLUMNS))])
    return schema, spec


def random_partition(r: random.Random) -> tuple:
    return tuple(None if r.random() < 0.2 else gen(r) for _, gen in PARTITION_COLUMNS)


def random_file(r: random.Random, i: int, version: int) -> DataFile:
    kw = {}
    if version >= 3:
        kw["first_row_id"] = r.choice([None, r.randint(0, 10**6)])
    return DataFile(DATA, f"/wh/t/data/f{i}.parquet", "PARQUET", random_partition(r), r.randint(1, 10**6),
                    r.randint(1, 10**9), column_sizes={1: r.randint(0, 99), 2: 7},
                    value_counts={1: 5}, null_value_counts={1: 0}, nan_value_counts={4: 1},
                    lower_bounds={1: b"\x01", 3: b""}, upper_bounds={1: b"\xff" * 8},
                    split_offsets=(4, r.randint(5, 10**6)), sort_order_id=0, **kw)


def random_entries(r: random.Random, version: int, n: int = 60) -> list[ManifestEntry]:
    out = []
    for i in range(n):
        status = r.choice([ADDED, EXISTING, DELETED])
        seq = None if status == ADDED and r.random() < 0.7 else r.randint(0, 50)
        out.append(ManifestEntry(status, r.choice([None, r.randint(1, 2**62)]), seq,
                                 seq if seq is None else seq - r.randint(0, seq), random_file(r, i, version)))
    return out


def same_entry(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    return a == b and type(a) is type(b)


def assert_same_entries(got: list[ManifestEntry], want: list[ManifestEntry]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        gp, wp = g.data_file.partition, w.data_file.partition
        assert len(gp) == len(wp) and all(same_entry(x, y) for x, y in zip(gp, wp)), (gp, wp)
        assert replace(g, data_file=replace(g.data_file, partition=())) == replace(
            w, data_file=replace(w.data_file, partition=()))


def without_sync(data: bytes) -> bytes:
    _, sync, _ = split_header(data)
    return data.replace(sync, b"S" * len(sync))


def java_manifests(table: str):
    """(list entry, bytes, icectl's layout and metadata for it) of each manifest Java wrote
    for the stored table ``table``."""
    d = JAVA_DIR / table
    lst = (d / "manifest-list.avro").read_bytes()
    version = int(avro.read_avro_metadata(lst)["format-version"])
    for m in avro.read_manifest_list(lst):
        raw = (d / m.manifest_path.rsplit("/", 1)[-1]).read_bytes()
        meta = avro.read_avro_metadata(raw)
        schema = Schema.from_json(json.loads(meta["schema"]))
        spec = PartitionSpec.from_fields_json(json.loads(meta["partition-spec"]),
                                              int(meta["partition-spec-id"]))
        layout, metadata = avro.manifest_header(
            spec.partition_type(schema), spec_id=spec.spec_id, partition_spec_json=spec.fields_json(),
            schema_json=schema.to_json(), format_version=version, content=m.content)
        yield m, raw, layout, metadata


def merging_table(tmp_path: Path, version: int, r: random.Random, *, appends: int,
                  files: int) -> Table:
    """A table of every partition type merging from 4 manifests on, with ``appends`` appends
    of ``files`` random files each."""
    from icectl.spec.metadata import new_table_metadata

    schema, spec = schema_and_spec()
    location = str(tmp_path / "t")
    md = new_table_metadata(schema, spec, location=location, properties={
        "format-version": str(version), **FAST_RETRY,
        "commit.manifest-merge.enabled": "true", "commit.manifest.min-count-to-merge": "4"})
    table = Table.create(location, md)
    for k in range(appends):
        added = [replace(random_file(r, 100 * k + i, version), first_row_id=None) for i in range(files)]
        FastAppendProducer(table, [(f, "") for f in added]).commit()
    return table
