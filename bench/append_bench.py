"""Benchmark: `icectl append` of many small Parquet files in one commit vs pyiceberg's add_files.

Both register the same files (footers read, metrics collected, one snapshot committed) into
fresh, identical tables created by icectl. pyiceberg commits through a minimal filesystem
catalog defined here (writes ``v<N+1>.metadata.json`` like a Hadoop table). Each tool runs
``--runs`` times on fresh tables; the report gives each run's seconds and the median ratio.

    python bench/append_bench.py --files 10000 --runs 3
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from icectl.ops.write.append import append_files
from icectl.ops.metadata.create import create_table
from icectl.table.table import Table

SCHEMA = "id long not null, ts timestamptz, cat string, amount double"


def make_files(root: Path, n: int) -> list[str]:
    root.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        rows = 10
        t = pa.table({
            "id": pa.array(range(i * rows, (i + 1) * rows), pa.int64()),
            "ts": pa.array([1_700_000_000_000_000 + i * 1_000_000] * rows, pa.timestamp("us", tz="UTC")),
            "cat": pa.array([f"c{i % 13}"] * rows, pa.string()),
            "amount": pa.array([float(i)] * rows, pa.float64()),
        }, schema=pa.schema([pa.field("id", pa.int64(), nullable=False),
                             pa.field("ts", pa.timestamp("us", tz="UTC")),
                             pa.field("cat", pa.string()), pa.field("amount", pa.float64())]))
        p = root / f"part-{i:05d}.parquet"
        pq.write_table(t, str(p))
        paths.append(str(p))
    return paths


def new_table(root: Path, name: str) -> str:
    loc = str(root / name)
    create_table(loc, schema_text=SCHEMA, partition_text=None, format_version=2)
    return loc


def run_icectl(loc: str, paths: list[str]) -> float:
    t0 = time.perf_counter()
    append_files(Table.load(loc), paths)
    return time.perf_counter() - t0


def pyiceberg_catalog(loc: str):
    from pyiceberg.catalog import MetastoreCatalog
    from pyiceberg.io import load_file_io
    from pyiceberg.serializers import FromInputFile
    from pyiceberg.table import CommitTableResponse
    from pyiceberg.table import Table as PyTable

    class FsCatalog(MetastoreCatalog):
        """Just enough of a catalog for one filesystem table: load and commit."""

        def __init__(self) -> None:
            super().__init__("bench")

        def load_table(self, identifier):
            current = Table.load(loc)
            io = load_file_io(location=current.metadata_location)
            md = FromInputFile.table_metadata(io.new_input(current.metadata_location))
            return PyTable(("db", "t"), md, current.metadata_location, io, self)

        def commit_table(self, table, requirements, updates):
            current = Table.load(loc)
            staged = self._update_and_stage_table(table, table.name(), requirements, updates)
            path = f"{loc}/metadata/v{current.version + 1}.metadata.json"
            self._write_metadata(staged.metadata, staged.io, path)
            Path(loc, "metadata", "version-hint.text").write_text(str(current.version + 1))
            return CommitTableResponse(metadata=staged.metadata, metadata_location=path)

        def _nope(self, *a, **k):
            raise NotImplementedError

        create_namespace = create_table = drop_namespace = drop_table = drop_view = _nope
        list_namespaces = list_tables = list_views = load_namespace_properties = _nope
        load_view = register_table = register_view = rename_table = _nope
        update_namespace_properties = view_exists = _nope

    return FsCatalog()


def run_pyiceberg(loc: str, paths: list[str]) -> float:
    catalog = pyiceberg_catalog(loc)
    t0 = time.perf_counter()
    table = catalog.load_table(("db", "t"))
    table.add_files(paths)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default=None, help="work directory (default: a temp dir, removed)")
    args = ap.parse_args(argv)
    work = Path(args.dir or tempfile.mkdtemp(prefix="icectl-append-bench-"))
    try:
        t0 = time.perf_counter()
        paths = make_files(work / "files", args.files)
        print(f"wrote {len(paths)} files in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
        mine, theirs = [], []
        for run in range(args.runs):
            # alternate the order so neither always gets the warmer page cache
            order = [("icectl", run_icectl, mine), ("pyiceberg", run_pyiceberg, theirs)]
            if run % 2:
                order.reverse()
            for name, fn, acc in order:
                loc = new_table(work / "tables", f"{name}_{run}")
                acc.append(fn(loc, paths))
                snap = Table.load(loc).metadata.current_snapshot()
                assert snap is not None and snap.summary["total-data-files"] == str(len(paths)), name
                print(f"run {run + 1}: {name} {acc[-1]:.2f}s", file=sys.stderr)
        m_mine, m_theirs = statistics.median(mine), statistics.median(theirs)
        print(f"files: {args.files}  runs: {args.runs}  cpus: {os.cpu_count()}")
        print(f"icectl append      median {m_mine:.2f}s  runs {' '.join(f'{x:.2f}' for x in mine)}")
        print(f"pyiceberg add_files median {m_theirs:.2f}s  runs {' '.join(f'{x:.2f}' for x in theirs)}")
        print(f"ratio pyiceberg/icectl (median): {m_theirs / m_mine:.2f}x")
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
