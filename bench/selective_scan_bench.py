"""Selective scan benchmark: 1% of a table's rows by a filter on a clustered column.

Builds (into a temporary directory, never the repository) a format-v2 table of about SIZE bytes
of Parquet: FILES data files written with pyarrow, rows ordered by ``id`` (so a range of ids is
one file and one or two row groups of it), row groups of ROW_GROUP rows (pyarrow's default,
1,048,576, about 30 MB here), registered with ``icectl append`` (column metrics from the footers,
as Iceberg's importer records them). Columns: id long (clustered), name string (1,000 values),
amount double (random), payload string (random digits, hard to compress: the bulk of the bytes).

Then, in the same run, REPEAT times each, as whole processes, the filter
``id >= LO and id < HI`` selecting 1% of the rows:

* ``icectl scan --filter ... --format parquet --output OUT`` and ``icectl scan --count``;
* ``icectl (no row-group skipping)``: the same read through the Python API with
  ``Scan.skip_row_groups = False`` (the reader before row groups were skipped);
* pyiceberg: ``StaticTable.from_metadata(...).scan(row_filter=...).to_arrow()`` written to
  Parquet;
* DuckDB (the raw-Parquet anchor, no Iceberg metadata): ``COPY (SELECT * FROM
  read_parquet([...files]) WHERE ...) TO OUT`` and the ``count(*)``.

It prints median wall times, each as a ratio to DuckDB's, the rows each returned (all must agree)
and the table's size.

    python bench/selective_scan_bench.py                  # about 2 GB, 3 repetitions
    python bench/selective_scan_bench.py --size-mb 500    # a smaller table
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
import time

BYTES_PER_ROW = 28  # measured on this table's Parquet (snappy, 1.66 GiB for 63 M rows)

PYICEBERG = r"""
import sys, glob
import pyarrow.parquet as pq
from pyiceberg.expressions import And, GreaterThanOrEqual, LessThan
from pyiceberg.table import StaticTable
meta = sorted(glob.glob(sys.argv[1] + "/metadata/v*.metadata.json"),
              key=lambda p: int(p.rsplit("/v", 1)[1].split(".")[0]))[-1]
lo, hi = int(sys.argv[3]), int(sys.argv[4])
t = StaticTable.from_metadata(meta).scan(
    row_filter=And(GreaterThanOrEqual("id", lo), LessThan("id", hi))).to_arrow()
pq.write_table(t, sys.argv[2])
print(t.num_rows)
"""

NO_SKIP = r"""
import sys
from icectl.scan.reader import open_scan
from icectl.table.table import Table
s = open_scan(Table.load(sys.argv[1]), sys.argv[3])
s.skip_row_groups = False
print(s.write_parquet(sys.argv[2], s.batches()))
"""

DUCKDB = r"""
import glob, sys, duckdb
files = sorted(glob.glob(sys.argv[1] + "/data/*.parquet"))
where = f"id >= {int(sys.argv[3])} AND id < {int(sys.argv[4])}"
con = duckdb.connect()
if sys.argv[2] == "count":
    print(con.execute(f"SELECT count(*) FROM read_parquet($1) WHERE {where}", [files]).fetchone()[0])
else:
    con.execute(f"COPY (SELECT * FROM read_parquet({files!r}) WHERE {where}) "
                f"TO '{sys.argv[2]}' (FORMAT parquet)")
"""


def _field(name, t, fid):
    import pyarrow as pa
    return pa.field(name, t, metadata={b"PARQUET:field_id": str(fid).encode()})


def build(location: str, files: int, rows_per_file: int, row_group: int) -> None:
    """The table: data files written by pyarrow, appended with ``icectl append``."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    schema = pa.schema([_field("id", pa.int64(), 1), _field("name", pa.string(), 2),
                        _field("amount", pa.float64(), 3), _field("payload", pa.string(), 4)])
    subprocess.run([sys.executable, "-m", "icectl", "create", location, "--schema",
                    "id long, name string, amount double, payload string"], check=True,
                   stdout=subprocess.DEVNULL)
    os.makedirs(f"{location}/data", exist_ok=True)
    paths = []
    for i in range(files):
        n = rows_per_file
        ids = pc.add(pc.cumulative_sum(pa.repeat(pa.scalar(1, pa.int64()), n)), i * n - 1)
        names = pc.binary_join_element_wise(
            "name-", pc.cast(pc.floor(pc.multiply(pc.random(n), 1000)).cast(pa.int64()),
                             pa.string()), "")
        amount = pc.multiply(pc.random(n), 1e6)
        payload = pc.cast(pc.floor(pc.multiply(pc.random(n), 1e15)).cast(pa.int64()), pa.string())
        path = f"{location}/data/d{i:04d}.parquet"
        pq.write_table(pa.table([ids, names, amount, payload], schema=schema), path,
                       row_group_size=row_group)
        paths.append(path)
    subprocess.run([sys.executable, "-m", "icectl", "append", location, *paths], check=True,
                   stdout=subprocess.DEVNULL)


def run(cmd: list[str]) -> tuple[float, str, str]:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        return float("nan"), "", r.stderr.strip()[-300:]
    return dt, r.stdout.strip(), ""


def rows_of(written: str | None, stdout: str) -> int | None:
    import pyarrow.parquet as pq
    if written is not None:
        return pq.ParquetFile(written).metadata.num_rows if os.path.exists(written) else None
    try:
        return int(stdout.splitlines()[-1])
    except (ValueError, IndexError):
        return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=int, default=2048, help="Parquet bytes to generate")
    ap.add_argument("--files", type=int, default=16)
    ap.add_argument("--row-group", type=int, default=1_048_576, help="rows per row group")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", help="build the table here (or reuse it) and keep it")
    args = ap.parse_args()
    total_rows = args.size_mb * 2**20 // BYTES_PER_ROW
    per_file = max(1, total_rows // args.files)
    total_rows = per_file * args.files
    root = tempfile.mkdtemp(prefix="selscan", dir="/tmp")
    loc = args.keep or f"{root}/t"
    try:
        t0 = time.perf_counter()
        if not os.path.exists(f"{loc}/metadata"):
            build(loc, args.files, per_file, args.row_group)
        built = time.perf_counter() - t0
        lo = total_rows // 2 + 12_345
        hi = lo + total_rows // 100
        text = f"id >= {lo} and id < {hi}"
        py = sys.executable
        out = lambda name: f"{root}/{name}.parquet"  # noqa: E731
        tools = {  # name: (command, the Parquet file it writes, or None: it prints a count)
            "icectl": ([py, "-m", "icectl", "scan", loc, "--filter", text, "--format",
                        "parquet", "--output", out("icectl")], out("icectl")),
            "icectl (no row-group skipping)": ([py, "-c", NO_SKIP, loc, out("noskip"), text],
                                               out("noskip")),
            "pyiceberg": ([py, "-c", PYICEBERG, loc, out("pyiceberg"), str(lo), str(hi)],
                          out("pyiceberg")),
            "duckdb read_parquet": ([py, "-c", DUCKDB, loc, out("duckdb"), str(lo), str(hi)],
                                    out("duckdb")),
            "icectl --count": ([py, "-m", "icectl", "scan", loc, "--filter", text, "--count"],
                               None),
            "duckdb count(*)": ([py, "-c", DUCKDB, loc, "count", str(lo), str(hi)], None),
        }
        report: dict = {}
        for name, (cmd, written) in tools.items():
            times, got, err = [], None, ""
            for _ in range(args.repeat):
                dt, stdout, err = run(cmd)
                times.append(dt)
                got = rows_of(written, stdout)
            report[name] = {"median-seconds": round(statistics.median(times), 3), "rows": got,
                            "error": err or None}
        anchor = {"": report["duckdb read_parquet"]["median-seconds"],
                  "count": report["duckdb count(*)"]["median-seconds"]}
        for name, r in report.items():
            base = anchor["count" if "count" in name else ""]
            r["x-duckdb"] = round(r["median-seconds"] / base, 2) if base else None
        expected = hi - lo
        summary = {
            "table-parquet-mib": round(sum(os.path.getsize(p) for p in
                                           glob.glob(f"{loc}/data/*.parquet")) / 2**20, 1),
            "files": args.files, "rows": total_rows, "row-group-rows": args.row_group,
            "filter": text, "expected-rows": expected, "build-seconds": round(built, 1),
            "all-correct": all(r["rows"] == expected for r in report.values()),
        }
        print(json.dumps({"table": summary, "results": report}, indent=2))
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
