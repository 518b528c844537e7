"""Benchmark `icectl expire`: 2,000 snapshots and 100,000 files, expire all but the last 10.

The table is generated with icectl's own manifest writers (no engine), shaped like a real
append-and-overwrite history:

* base: the first B snapshots each append one manifest of F files (these stay live forever);
* churn: every later snapshot appends C new files and overwrites (deletes) the files the previous
  snapshot added, so its manifest list holds the B base manifests, its new manifest and one
  rewritten manifest with the deleted entries.

Data files are empty real files (``--no-files`` skips creating them). `icectl expire --older-than
1s --retain-last 10` then runs in a child process; its wall time, peak RSS and the counters it
reports are printed, with the number of manifest reads a per-snapshot walk would need
(snapshots x manifests per snapshot) next to the manifests actually read: every manifest is read
at most once, so the work follows the distinct manifests, not snapshots x manifests.

Usage:
    python bench/expire_bench.py [--snapshots 2000] [--files 100000] [--base 100] [--dir DIR]
    python bench/expire_bench.py --scaling     # same file count, 500/1000/2000 snapshots
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

from icectl.io.manifest import records as avro
from icectl.io.storage.files import join
from icectl.spec.manifests import ADDED, DATA, DELETED, MANIFEST_DATA, DataFile, ManifestEntry, summarize_columns
from icectl.spec.metadata import add_snapshot, new_table_metadata
from icectl.spec.schema import Schema
from icectl.spec.snapshots import Snapshot
from icectl.table.table import Table

SCHEMA = Schema.from_json({"type": "struct", "fields": [
    {"id": 1, "name": "id", "required": True, "type": "long"},
    {"id": 2, "name": "data", "required": False, "type": "string"}]})


def generate(location: str, snapshots: int, files: int, base: int, touch: bool) -> dict:
    os.makedirs(os.path.join(location, "metadata"), exist_ok=True)
    os.makedirs(os.path.join(location, "data"), exist_ok=True)
    start = int(time.time() * 1000) - snapshots * 1000 - 60_000
    md = new_table_metadata(SCHEMA, location=location, format_version=2, timestamp_ms=start)
    spec, schema = md.spec, md.schema
    churn_snapshots = snapshots - base
    per_base = (files // 2) // base
    per_churn = max(1, -(-(files - per_base * base) // max(1, churn_snapshots)))
    counter = 0
    list_entries = 0

    def new_files(n: int) -> list[DataFile]:
        nonlocal counter
        out = []
        for _ in range(n):
            counter += 1
            p = join(location, "data", f"f-{counter:07d}.parquet")
            if touch:
                open(p, "wb").close()
            out.append(DataFile(DATA, p, "PARQUET", (), 1, 1))
        return out

    def write_manifest(sid: int, seq: int, entries: list[ManifestEntry], i: int):
        path = join(location, "metadata", f"{sid}-m{i}.avro")
        data = avro.write_manifest(entries, spec, schema, 2, sid, MANIFEST_DATA)
        with open(path, "wb") as f:
            f.write(data)
        mf = summarize_columns([e.status for e in entries], [e.data_file.record_count for e in entries],
                                [e.sequence_number for e in entries], [e.data_file.partition for e in entries],
                                manifest_path=path, manifest_length=len(data),
                                partition_spec_id=0, content=MANIFEST_DATA, snapshot_id=sid)
        return mf

    from dataclasses import replace

    write_list = _ListWriter()
    base_manifests = []
    prev_added: list[ManifestEntry] = []
    parent = None
    sid = 0
    for k in range(1, snapshots + 1):
        sid = 10_000 + k
        seq = k
        if k <= base:
            fs = new_files(per_base)
            m = write_manifest(sid, seq, [ManifestEntry(ADDED, sid, None, None, f) for f in fs], 0)
            manifests = [m] + base_manifests
            m = replace(m, sequence_number=seq, min_sequence_number=seq)
            base_manifests = [m] + base_manifests
            op = "append"
        else:
            fs = new_files(per_churn)
            added = [ManifestEntry(ADDED, sid, None, None, f) for f in fs]
            new = write_manifest(sid, seq, added, 0)
            manifests = [new]
            if prev_added:
                gone = [ManifestEntry(DELETED, sid, e.sequence_number, e.file_sequence_number, e.data_file)
                        for e in prev_added]
                manifests.append(write_manifest(sid, seq, gone, 1))
            manifests += base_manifests
            prev_added = [replace(e, sequence_number=seq, file_sequence_number=seq) for e in added]
            op = "overwrite" if k > base + 1 else "append"
        list_path = join(location, "metadata", f"snap-{sid}-1-bench.avro")
        with open(list_path, "wb") as f:
            f.write(write_list(manifests, sid, parent, seq))
        list_entries += len(manifests)
        md = add_snapshot(md, Snapshot(sid, start + k * 1000, parent, seq, list_path, {"operation": op},
                                       schema_id=0))
        parent = sid
    Table.create(location, md)
    return {"files": counter, "snapshots": snapshots, "manifest_list_entries": list_entries,
            "distinct_manifests": base + 2 * churn_snapshots - 1}


class _ListWriter:
    """Writes v2 manifest lists as ``avro.write_manifest_list`` does (same records, header and
    container), encoding each manifest's entry once: a long history repeats the same base
    manifests in every list, and encoding them again per list made a 10,000-snapshot fixture
    take minutes. The bytes of an entry depend only on the manifest (its sequence numbers are
    set once it is committed), except for the entry a list adds itself, which is encoded with
    the list's sequence number and not kept."""

    def __init__(self):
        from icectl.io.formats.avro_files import _compile  # the writer's own record encoder
        from icectl.spec.manifests import manifest_list_avro_schema

        self.schema = manifest_list_avro_schema(2)
        self.encode = _compile(self.schema, {})
        self.encoded: dict[str, bytes] = {}

    def __call__(self, manifests, sid: int, parent, seq: int) -> bytes:
        from icectl.io.formats.avro_files import compact_json, container_file
        from icectl.io.manifest.manifest_list import _list_record
        from icectl.spec.manifests import iceberg_schema_json, manifest_file_type

        chunks = []
        for m in manifests:
            b = self.encoded.get(m.manifest_path) if m.sequence_number is not None else None
            if b is None:
                out: list = []
                self.encode(_list_record(m, 2, sid, seq), out)
                b = b"".join(out)
                if m.sequence_number is not None:
                    self.encoded[m.manifest_path] = b
            chunks.append(b)
        metadata = {"snapshot-id": str(sid), "parent-snapshot-id": "null" if parent is None else str(parent),
                    "sequence-number": str(seq), "format-version": "2",
                    "iceberg.schema": compact_json(iceberg_schema_json(manifest_file_type(2)))}
        return container_file(self.schema, metadata, [(len(chunks), b"".join(chunks))])


def run_expire(location: str) -> dict:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "icectl", "expire", location, "--older-than", "1s",
                           "--retain-last", "10", "--json"], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    out = json.loads(proc.stdout)
    out["wall_seconds"] = round(wall, 2)
    out["peak_rss_mb"] = round(peak_kb / 1024, 1)
    return out


def one(args, snapshots: int, root: str) -> dict:
    loc = os.path.join(root, f"t{snapshots}")
    shutil.rmtree(loc, ignore_errors=True)
    t0 = time.perf_counter()
    shape = generate(loc, snapshots, args.files, args.base, not args.no_files)
    gen = time.perf_counter() - t0
    res = run_expire(loc)
    return {
        "snapshots": snapshots, "files": shape["files"], "generate_seconds": round(gen, 1),
        "expire_wall_seconds": res["wall_seconds"], "peak_rss_mb": res["peak_rss_mb"],
        "expired": res["expired-snapshots-count"],
        "deleted_data_files": res["deleted_data_files_count"],
        "deleted_manifests": res["deleted_manifest_files_count"],
        "deleted_manifest_lists": res["deleted_manifest_lists_count"],
        "manifest_lists_read": res["manifest-lists-read"], "manifests_read": res["manifests-read"],
        "distinct_manifests": shape["distinct_manifests"],
        "per_snapshot_manifest_reads": shape["manifest_list_entries"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--snapshots", type=int, default=2000)
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--base", type=int, default=100, help="snapshots of long-lived base files")
    ap.add_argument("--dir", default=None, help="where to build the tables (default: a temp dir)")
    ap.add_argument("--no-files", action="store_true", help="do not create the (empty) data files")
    ap.add_argument("--scaling", action="store_true", help="run 500, 1000 and 2000 snapshots")
    args = ap.parse_args()
    root = args.dir or tempfile.mkdtemp(prefix="icectl-expire-bench-")
    sizes = [500, 1000, 2000] if args.scaling else [args.snapshots]
    try:
        for n in sizes:
            print(json.dumps(one(args, n, root)), flush=True)
    finally:
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
