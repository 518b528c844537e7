"""Z-order compaction, whole processes: `icectl compact --strategy zorder --columns a,b` against
Spark's `rewrite_data_files(strategy => 'sort', sort_order => 'zorder(a, b)')` (local[2]), on
copies of the same table, same target file size, same run.

The table (format v2, unpartitioned; columns a long, b double (or long, with --b-type long), id
long, s string; a and b independent and uniform over [-1e6, 1e6) and [-1, 1) (or [-1e6, 1e6)
as a long)) is FILES small Parquet files of ROWS rows, registered with one
`icectl append`. The pristine table is copied back before every run, so each run z-orders
exactly the same rows. The target file size is the table's bytes / OUT (so both sides write
about OUT files).

Measured per tool (medians over --reps fresh processes; Spark's session start included, as a
pipeline step pays it):

* wall time, and peak resident memory of the whole process tree (the JVM or icectl's workers
  included), sampled every 50 ms from /proc;
* the data files read by QUERIES 2-column box filters (``a`` in a range and ``b`` in a range,
  each about --side of its domain; the same boxes for both tools), planned by icectl's planner
  from the files' column bounds: what a reader of the compacted table scans. The rows after the
  compaction are counted too (they must not change).

Usage:
    python bench/zorder_bench.py                          # 40 files x 25,000 rows, 16 outputs, 3 reps
    python bench/zorder_bench.py --files 80 --reps 1 --json
    python bench/zorder_bench.py --b-type long            # two long columns of one range
    python bench/zorder_bench.py --tools icectl           # icectl alone (no Spark)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from proc_tree import run_measured as measured  # noqa: E402

INTEROP = os.path.join(os.path.dirname(HERE), "tests", "interop")
NAMESPACE, TABLE = "bench", "z"
A_RANGE = 1_000_000



def spark_child(spec: dict) -> None:
    from pathlib import Path

    sys.path.insert(0, INTEROP)
    from spark_support import start_spark

    started = start_spark(Path(spec["warehouse"]), Path(spec["scratch"]))
    rows = [[str(v) for v in r] for r in started.session.sql(spec["sql"]).collect()]
    started.session.stop()
    print(json.dumps({"rows": rows}))


def build(args, root: str) -> dict:
    import pyarrow as pa
    import pyarrow.parquet as pq

    location = os.path.join(root, "wh", NAMESPACE, TABLE)
    subprocess.run([sys.executable, "-m", "icectl", "create", location, "--schema",
                    f"a long, b {args.b_type}, id long, s string"], check=True, capture_output=True)
    rnd = random.Random(20261202)
    paths = []
    for i in range(args.files):
        n = args.rows
        a = [rnd.randrange(-A_RANGE, A_RANGE) for _ in range(n)]
        b = [rnd.random() * 2 - 1 for _ in range(n)] if args.b_type == "double" else \
            [rnd.randrange(-A_RANGE, A_RANGE) for _ in range(n)]
        ids = list(range(i * n, i * n + n))
        t = pa.table({"a": pa.array(a, pa.int64()),
                      "b": pa.array(b, pa.float64() if args.b_type == "double" else pa.int64()),
                      "id": pa.array(ids, pa.int64()), "s": pa.array([f"row-{x}" for x in ids])})
        d = os.path.join(location, "data")
        os.makedirs(d, exist_ok=True)
        p = os.path.join(d, f"small-{i:05d}.parquet")
        pq.write_table(t, p, compression="zstd")
        paths.append(p)
    lst = os.path.join(root, "files.txt")
    with open(lst, "w") as f:
        f.write("\n".join(paths) + "\n")
    subprocess.run([sys.executable, "-m", "icectl", "append", location, "--from-list", lst],
                   check=True, capture_output=True)
    pristine = os.path.join(root, "pristine")
    subprocess.run(["cp", "-a", location, pristine], check=True)
    size = sum(os.path.getsize(p) for p in paths)
    return {"location": location, "pristine": pristine, "bytes": size,
            "target": max(1, size // args.out), "rows": args.files * args.rows}


def restore(shape: dict) -> None:
    shutil.rmtree(shape["location"], ignore_errors=True)
    subprocess.run(["cp", "-a", shape["pristine"], shape["location"]], check=True)


def boxes(n: int, side: float, b_type: str) -> list[str]:
    rnd = random.Random(7)
    scale = 1.0 if b_type == "double" else float(A_RANGE)
    out = []
    for _ in range(n):
        a0 = rnd.randrange(-A_RANGE, int(A_RANGE * (1 - 2 * side)))
        b0 = rnd.uniform(-1, 1 - 2 * side) * scale
        b1 = b0 + 2 * side * scale
        if b_type != "double":
            b0, b1 = int(b0), int(b1)
        out.append(f"a >= {a0} and a < {a0 + int(2 * A_RANGE * side)} and b >= {b0!r} and b < {b1!r}")
    return out


def files_read(location: str, filters: list[str]) -> tuple[int, int, int]:
    """(data files read by the filters in all, live data files, records)."""
    from icectl.scan.planner import plan_scan
    from icectl.table.table import Table

    t = Table.load(location)
    total = sum(len(plan_scan(t, f).files) for f in filters)
    s = t.metadata.current_snapshot().summary
    return total, int(s["total-data-files"]), int(s["total-records"])


def run_one(tool: str, shape: dict, root: str, filters: list[str]) -> dict:
    restore(shape)
    loc, target = shape["location"], shape["target"]
    if tool == "icectl":
        wall, rss, _ = measured([sys.executable, "-m", "icectl", "compact", loc, "--strategy", "zorder",
                                 "--columns", "a,b", "--target-file-size", str(target),
                                 "--engine", "local", "--workers", "2", "--json"])
    else:
        spec = {"warehouse": os.path.join(root, "wh"), "scratch": os.path.join(root, "scratch"),
                "sql": f"CALL ice.system.rewrite_data_files(table => '{NAMESPACE}.{TABLE}', "
                       f"strategy => 'sort', sort_order => 'zorder(a, b)', "
                       f"options => map('target-file-size-bytes', '{target}'))"}
        wall, rss, _ = measured([sys.executable, os.path.abspath(__file__), "--spark-child", json.dumps(spec)])
    read, files, records = files_read(loc, filters)
    return {"wall": wall, "rss_mb": rss, "files_read": read, "files": files, "records": records}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=40)
    ap.add_argument("--rows", type=int, default=25_000)
    ap.add_argument("--out", type=int, default=16, help="about this many output files (sets the target size)")
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--side", type=float, default=0.1, help="each box side, as a share of the domain")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--b-type", choices=("double", "long"), default="double")
    ap.add_argument("--tools", default="icectl,spark")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--spark-child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.spark_child:
        spark_child(json.loads(args.spark_child))
        return 0
    root = tempfile.mkdtemp(prefix="zorder-bench-")
    try:
        shape = build(args, root)
        filters = boxes(args.queries, args.side, args.b_type)
        tools = args.tools.split(",")
        runs: dict[str, list[dict]] = {t: [] for t in tools}
        for _ in range(args.reps):
            for t in tools:
                runs[t].append(run_one(t, shape, root, filters))
        result = {"b-type": args.b_type, "rows": shape["rows"], "input-bytes": shape["bytes"], "target-file-size": shape["target"],
                  "queries": args.queries, "box-side": args.side, "reps": args.reps, "tools": {}}
        for t in tools:
            rs = runs[t]
            result["tools"][t] = {
                "wall-seconds": statistics.median(r["wall"] for r in rs),
                "peak-rss-mb": statistics.median(r["rss_mb"] for r in rs),
                "files-read": statistics.median(r["files_read"] for r in rs),
                "files-after": statistics.median(r["files"] for r in rs),
                "records": sorted({r["records"] for r in rs}),
            }
        if {"icectl", "spark"} <= set(tools):
            i, s = result["tools"]["icectl"], result["tools"]["spark"]
            result["ratios icectl/spark"] = {
                "files-read": i["files-read"] / max(1, s["files-read"]),
                "wall": i["wall-seconds"] / s["wall-seconds"], "peak-rss": i["peak-rss-mb"] / s["peak-rss-mb"]}
        if args.json:
            print(json.dumps(result, indent=2))
        else:
            print(f"b {args.b_type}: {shape['rows']} rows, {shape['bytes']} input bytes, target {shape['target']} bytes, "
                  f"{args.queries} boxes of {args.side:.0%} x {args.side:.0%}, median of {args.reps}")
            for t, r in result["tools"].items():
                print(f"  {t:7} files after {r['files-after']:>4}  files read {r['files-read']:>6}  "
                      f"wall {r['wall-seconds']:6.1f} s  peak {r['peak-rss-mb']:7.0f} MiB  records {r['records']}")
            for k, v in result.get("ratios icectl/spark", {}).items():
                print(f"  icectl/spark {k}: {v:.2f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
