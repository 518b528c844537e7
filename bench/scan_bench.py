"""Scan benchmark: `icectl scan --format parquet --output` vs pyiceberg's ``to_arrow()``.

Builds a format-v2 table of FILES Parquet data files x ROWS rows (written with pyarrow, field
ids in the schema) plus one position delete file per data file deleting every 10th row, and a
format-v3 twin whose deletes are deletion vectors. Then, in the same run and REPEAT times each,
as whole processes:

* ``icectl scan TABLE --format parquet --output OUT``;
* a pyiceberg script: ``StaticTable.from_metadata(...).scan().to_arrow()`` written to Parquet
  (v2 only when pyiceberg cannot read deletion vectors);

and reports median wall time, rows/s and the peak RSS of each process (from ``getrusage`` of a
fresh wrapper process), with the table's size on disk.

    python bench/scan_bench.py            # 20 files x 500,000 rows, 3 repetitions
    python bench/scan_bench.py --quick    # 4 files x 100,000 rows
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import zlib
import struct

PYICEBERG = r"""
import sys, glob
import pyarrow.parquet as pq
from pyiceberg.table import StaticTable
meta = sorted(glob.glob(sys.argv[1] + "/metadata/v*.metadata.json"),
              key=lambda p: int(p.rsplit("/v", 1)[1].split(".")[0]))[-1]
t = StaticTable.from_metadata(meta).scan().to_arrow()
pq.write_table(t, sys.argv[2])
print(t.num_rows)
"""

WRAP = r"""
import resource, subprocess, sys, time
t0 = time.perf_counter()
r = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
dt = time.perf_counter() - t0
print(r.returncode, dt, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, repr(r.stderr[-300:]))
"""


def _field(name, t, fid):
    import pyarrow as pa
    return pa.field(name, t, metadata={b"PARQUET:field_id": str(fid).encode()})


def _dv_blob(positions):
    """One 64-bit portable roaring bitmap (one bucket, array/bitmap containers) as a DV blob."""
    groups = {}
    for v in positions:
        groups.setdefault(v >> 16, []).append(v & 0xFFFF)
    keys = sorted(groups)
    out = bytearray(struct.pack("<II", 12346, len(keys)))
    bodies = []
    for k in keys:
        out += struct.pack("<HH", k, len(groups[k]) - 1)
        lows = groups[k]
        if len(lows) <= 4096:
            bodies.append(struct.pack(f"<{len(lows)}H", *lows))
        else:
            words = [0] * 1024
            for v in lows:
                words[v >> 6] |= 1 << (v & 63)
            bodies.append(struct.pack("<1024Q", *words))
    off = len(out) + 4 * len(keys)
    for b in bodies:
        out += struct.pack("<I", off)
        off += len(b)
    body = b"\xd1\xd3\x39\x64" + struct.pack("<QI", 1, 0) + bytes(out) + b"".join(bodies)
    return struct.pack(">I", len(body)) + body + struct.pack(">I", zlib.crc32(body))


def build(location: str, fv: int, files: int, rows: int) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from icectl.ops.metadata.create import create_table
    from icectl.spec.manifests import (ADDED, DATA, MANIFEST_DATA, MANIFEST_DELETES,
                                       POSITION_DELETES, DataFile, ManifestEntry)
    from icectl.spec.summary import SummaryBuilder
    from icectl.table.commit.producer import SnapshotProducer
    from icectl.table.table import Table

    class P(SnapshotProducer):
        def __init__(self, t, files, content, op):
            super().__init__(t)
            self.files, self.content, self.operation = files, content, op

        def apply(self, base, parent, attempt):
            entries = [ManifestEntry(ADDED, self.snapshot_id, None, None, f) for f in self.files]
            return (self.write_manifests(attempt, base, base.spec_by_id(0), entries, self.content)
                    + self.parent_manifests(base, parent))

        def summary(self, base):
            return SummaryBuilder()

    create_table(location, schema_text="id long, name string, amount double, day date",
                 format_version=fv)
    schema = pa.schema([_field("id", pa.int64(), 1), _field("name", pa.string(), 2),
                        _field("amount", pa.float64(), 3), _field("day", pa.date32(), 4)])
    data, deletes = [], []
    for i in range(files):
        base_id = i * rows
        ids = pa.array(range(base_id, base_id + rows), pa.int64())
        tbl = pa.table([ids, pa.array([f"name-{j % 1000}" for j in range(rows)]),
                        pa.array([j * 0.5 for j in range(rows)], pa.float64()),
                        pa.array([19723 + j % 30 for j in range(rows)], pa.int32()).cast(pa.date32())],
                       schema=schema)
        path = f"{location}/data/d{i:04d}.parquet"
        os.makedirs(os.path.dirname(path), exist_ok=True)
        pq.write_table(tbl, path, row_group_size=128 * 1024)
        data.append(DataFile(DATA, path, "PARQUET", (), rows, os.path.getsize(path)))
        positions = list(range(0, rows, 10))
        if fv >= 3:
            blob = _dv_blob(positions)
            dpath = f"{location}/data/dv{i:04d}.puffin"
            footer = json.dumps({"blobs": [{
                "type": "deletion-vector-v1", "fields": [2147483645], "snapshot-id": -1,
                "sequence-number": -1, "offset": 4, "length": len(blob),
                "properties": {"referenced-data-file": path,
                               "cardinality": str(len(positions))}}]}).encode()
            with open(dpath, "wb") as fh:  # a Puffin file: magic, blob, footer
                fh.write(b"PFA1" + blob + b"PFA1" + footer
                         + struct.pack("<I", len(footer)) + b"\0\0\0\0" + b"PFA1")
            deletes.append(DataFile(POSITION_DELETES, dpath, "PUFFIN", (), len(positions),
                                    os.path.getsize(dpath), referenced_data_file=path,
                                    content_offset=4, content_size_in_bytes=len(blob)))
        else:
            dpath = f"{location}/data/pd{i:04d}.parquet"
            pd = pa.table([pa.array([path] * len(positions)), pa.array(positions, pa.int64())],
                          schema=pa.schema([_field("file_path", pa.string(), 2147483546),
                                            _field("pos", pa.int64(), 2147483545)]))
            pq.write_table(pd, dpath)
            deletes.append(DataFile(POSITION_DELETES, dpath, "PARQUET", (), len(positions),
                                    os.path.getsize(dpath)))
    P(Table.load(location), data, MANIFEST_DATA, "append").commit()
    P(Table.load(location), deletes, MANIFEST_DELETES, "delete").commit()
    return files * (rows - len(range(0, rows, 10)))


def run(cmd: list[str]) -> tuple[float, int, str]:
    out = subprocess.run([sys.executable, "-c", WRAP, *cmd], capture_output=True, text=True)
    rc, dt, rss, err = out.stdout.split(" ", 3)
    return (float(dt), int(rss), err.strip()) if rc == "0" else (float("nan"), 0, err.strip())


def dir_size(path: str) -> int:
    return sum(os.path.getsize(p) for p in glob.glob(f"{path}/**/*", recursive=True)
               if os.path.isfile(p))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=20)
    ap.add_argument("--rows", type=int, default=500_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.files, args.rows, args.repeat = 4, 100_000, 3
    root = tempfile.mkdtemp(prefix="scanbench")
    report = {}
    try:
        for fv in (2, 3):
            loc = f"{root}/t{fv}"
            expected = build(loc, fv, args.files, args.rows)
            tools = {
                "icectl": [sys.executable, "-m", "icectl", "scan", loc, "--format", "parquet",
                           "--output", f"{root}/icectl{fv}.parquet"],
                "pyiceberg": [sys.executable, "-c", PYICEBERG, loc, f"{root}/pyiceberg{fv}.parquet"],
            }
            for name, cmd in tools.items():
                times, rss, err = [], [], ""
                for _ in range(args.repeat):
                    dt, peak, err = run(cmd)
                    times.append(dt)
                    rss.append(peak)
                med = statistics.median(times)
                key = f"v{fv} {name}"
                out_path = cmd[-1] if name == "icectl" else cmd[-1]
                import pyarrow.parquet as pq
                got = pq.ParquetFile(out_path).metadata.num_rows if os.path.exists(out_path) else None
                report[key] = {
                    "rows": expected, "median-seconds": round(med, 3),
                    "rows-per-second": None if med != med else round(expected / med),
                    "median-peak-rss-mib": round(statistics.median(rss) / 1024, 1),
                    "output-rows": got, "correct": got == expected,
                    "error": err if med != med else None,
                }
            report[f"v{fv} table-size-mib"] = round(dir_size(loc) / 2**20, 1)
        print(json.dumps(report, indent=2))
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
