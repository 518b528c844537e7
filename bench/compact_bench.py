"""Whole-process compaction: `icectl compact` (local engine, 1 and 2 workers) against Spark's
`rewrite_data_files` (local[2]), on copies of the same table of small files, same run.

The table (format v2, partitioned by identity(cat), 4 partitions) is built once: FILES small
Parquet files of ROWS rows each (columns id long, cat string, ts timestamptz, v double,
s string; v and ts from random bits, so the data does not compress away), written with pyarrow (zstd, as Iceberg tables are created) under the table's data/
directory and registered with one `icectl append`. The pristine table is kept aside and copied
back (`cp -a`) to the location its metadata records before every run, so every run compacts
exactly the same table.

Each run is one fresh process, as a cron job or a pipeline step pays it:

* icectl: `python -m icectl compact LOC --engine local --workers N --json` (N = 1 and 2);
* Spark: a fresh `python` that starts a local[2] session with the Iceberg 1.10.2 runtime and a
  Hadoop catalog (the interop tests' stack), runs
  `CALL ice.system.rewrite_data_files(table => 'bench.t')`, stops the session and exits
  (session start included).

Both use the procedure's defaults (target 512 MB, min-input-files 5). After each run the number
of live data files and the record total are read back and compared between the tools.

Reported: the median wall time, and the median peak resident memory of the whole process tree
(driver, worker processes, the JVM), sampled every 50 ms from /proc (the sum of the tree's
VmRSS at its largest), per tool, and the ratios; and of the compacted table: the bytes of its
live data files and the median time to read them whole with pyarrow (one thread; each tool's
last output kept aside and scanned 7 times at the end, the tools interleaved), per tool and
against Spark's (same codec: the table's, zstd).

Usage:
    python bench/compact_bench.py                      # 200 files x 25,000 rows (~0.1 GB), 3 reps
    python bench/compact_bench.py --files 2000         # ~1 GB of small files
    python bench/compact_bench.py --files 400 --rows 20000 --reps 1 --json
    python bench/compact_bench.py --files 2000 --sort v     # the sort strategy (by v) on both sides
    python bench/compact_bench.py --tools icectl-w1,icectl-w2   # icectl alone (no Spark)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from proc_tree import run_measured  # noqa: E402

INTEROP = os.path.join(os.path.dirname(HERE), "tests", "interop")
NAMESPACE, TABLE = "bench", "t"
CATS = ("a", "b", "c", "d")




# ---------------------------------------------------------------- Spark child (fresh process)

def spark_child(spec: dict) -> None:
    from pathlib import Path

    sys.path.insert(0, INTEROP)
    from spark_support import start_spark

    t0 = time.perf_counter()
    started = start_spark(Path(spec["warehouse"]), Path(spec["scratch"]))
    t1 = time.perf_counter()
    rows = [[str(v) for v in r] for r in started.session.sql(spec["sql"]).collect()]
    t2 = time.perf_counter()
    started.session.stop()
    print(json.dumps({"rows": rows, "start-seconds": t1 - t0, "call-seconds": t2 - t1}))


# ---------------------------------------------------------------- the table

def _small_file(i: int, n: int, cat: str):
    """One small file's rows: sequential ids, a random 64-bit column and a double derived from
    it (so the data does not compress away), a timestamp and a text column."""
    import pyarrow as pa
    import pyarrow.compute as pc

    ids = pa.array(range(i * n, i * n + n), pa.int64())
    r = pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(os.urandom(8 * n))])
    ts = pc.add(pc.multiply(pc.cast(pc.bit_wise_and(r, pa.scalar(0xFFFFFFFF, pa.int64())), pa.int64()), 20),
                pa.scalar(1_700_000_000_000_000, pa.int64()))
    return pa.table({
        "id": ids,
        "cat": pa.array([cat] * n, pa.string()),
        "ts": ts.cast(pa.timestamp("us", tz="UTC")),
        "v": pc.divide(pc.cast(pc.bit_wise_and(r, pa.scalar(0xFFFFFFFFFFFF, pa.int64())), pa.float64()), 7.0),
        "s": pc.binary_join_element_wise("row-", pc.cast(ids, pa.string()), ""),
    })


def build(args, root: str) -> dict:
    import pyarrow.parquet as pq

    location = os.path.join(root, "wh", NAMESPACE, TABLE)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "icectl", "create", location, "--schema",
                    "id long not null, cat string, ts timestamptz, v double, s string",
                    "--partition", "cat"], check=True, capture_output=True)
    paths = []
    for i in range(args.files):
        cat = CATS[i % len(CATS)]
        t = _small_file(i, args.rows, cat)
        d = os.path.join(location, "data", f"cat={cat}")
        os.makedirs(d, exist_ok=True)
        p = os.path.join(d, f"small-{i:06d}.parquet")
        pq.write_table(t, p, compression="zstd")
        paths.append(p)
    lst = os.path.join(root, "files.txt")
    with open(lst, "w") as f:
        f.write("\n".join(paths) + "\n")
    r = subprocess.run([sys.executable, "-m", "icectl", "append", location, "--from-list", lst, "--json"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"icectl append failed (exit {r.returncode}): {r.stderr.strip()}")
    pristine = os.path.join(root, "pristine")
    subprocess.run(["cp", "-a", location, pristine], check=True)
    size = sum(os.path.getsize(p) for p in paths)
    return {"location": location, "pristine": pristine, "files": args.files, "rows": args.rows,
            "bytes": size, "build_seconds": time.perf_counter() - t0}


def restore(shape: dict) -> None:
    shutil.rmtree(shape["location"], ignore_errors=True)
    subprocess.run(["cp", "-a", shape["pristine"], shape["location"]], check=True)


def live_state(location: str) -> tuple[int, int]:
    """(live data files, total records) of the current snapshot."""
    from icectl.table.table import Table

    s = Table.load(location).metadata.current_snapshot().summary
    return int(s["total-data-files"]), int(s["total-records"])


def live_files(location: str) -> list[str]:
    """The paths of the current snapshot's live data files."""
    from icectl.ops.read.inspect import files_view
    from icectl.table.table import Table

    t = Table.load(location)
    return [f["file-path"] for f in files_view(t.io, t.metadata, t.metadata.current_snapshot(), "data")]


def scan_seconds(paths: list[str], reps: int = 3) -> float:
    """Median seconds to read every column of these Parquet files with pyarrow (one thread, so
    the figure is the files' decoding cost rather than the machine's parallelism)."""
    import pyarrow.parquet as pq

    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for p in paths:
            pq.read_table(p, use_threads=False)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def run_one(tool: str, shape: dict, root: str, sort: str | None = None) -> dict:
    restore(shape)
    loc = shape["location"]
    if tool.startswith("icectl"):
        workers = tool.split("-w")[1]
        cmd = [sys.executable, "-m", "icectl", "compact", loc, "--engine", "local", "--workers", workers, "--json"]
        if sort:
            cmd += ["--strategy", "sort", "--sort-order", sort]
        wall, rss, out = run_measured(cmd)
        res = {"wall": wall, "rss_mb": rss, "added": json.loads(out)["added-data-files-count"]}
    else:
        spec = {"warehouse": os.path.join(root, "wh"), "scratch": os.path.join(root, "scratch", "spark"),
                "sql": f"CALL ice.system.rewrite_data_files(table => '{NAMESPACE}.{TABLE}'"
                       + (f", strategy => 'sort', sort_order => '{sort}'" if sort else "") + ")"}
        wall, rss, out = run_measured([sys.executable, os.path.abspath(__file__), "--spark-child", json.dumps(spec)])
        o = json.loads(out.strip().splitlines()[-1])
        res = {"wall": wall, "rss_mb": rss, "start": o["start-seconds"], "call": o["call-seconds"],
               "added": int(o["rows"][0][1]) if o["rows"] else None}
    res["files_after"], res["records"] = live_state(loc)
    out = live_files(loc)
    res["bytes_after"] = sum(os.path.getsize(p) for p in out)
    # the compacted files are kept aside, to be scanned with the other tools' at the end
    keep = os.path.join(root, "outputs", tool)
    shutil.rmtree(keep, ignore_errors=True)
    os.makedirs(keep)
    res["outputs"] = [shutil.copy(p, os.path.join(keep, f"{i:04d}-{os.path.basename(p)}")) for i, p in enumerate(out)]
    return res


def scan_outputs(runs: dict[str, list[dict]], reps: int = 7) -> dict[str, float]:
    """Median seconds to read each tool's last compacted files, the tools interleaved."""
    times: dict[str, list[float]] = {t: [] for t in runs}
    for _ in range(reps):
        for t in runs:
            times[t].append(scan_seconds(runs[t][-1]["outputs"], reps=1))
    return {t: statistics.median(v) for t, v in times.items()}


TOOLS = ("icectl-w1", "icectl-w2", "spark")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--rows", type=int, default=25_000, help="rows per small file")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--dir", default=None, help="work directory (default: a temp dir, removed)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--sort", default=None, metavar="ORDER",
                    help="the sort strategy with this order (e.g. 'v'), on both sides (default: binpack)")
    ap.add_argument("--tools", default=",".join(TOOLS), help="comma-separated subset of " + ",".join(TOOLS))
    args = ap.parse_args()
    tools = tuple(t for t in TOOLS if t in args.tools.split(","))
    root = args.dir or tempfile.mkdtemp(prefix="icectl-compact-bench-")
    try:
        shape = build(args, root)
        print(f"built {shape['files']} files, {shape['bytes'] / 2**20:.0f} MiB in {shape['build_seconds']:.1f}s",
              file=sys.stderr, flush=True)
        runs: dict[str, list[dict]] = {t: [] for t in tools}
        problems = []
        for rep in range(args.reps):
            order = tools if rep % 2 == 0 else tuple(reversed(tools))
            for tool in order:
                runs[tool].append(run_one(tool, shape, root, args.sort))
                print(f"rep {rep} {tool}: {runs[tool][-1]['wall']:.2f}s {runs[tool][-1]['rss_mb']:.0f} MiB",
                      file=sys.stderr, flush=True)
            states = {t: (runs[t][-1]["files_after"], runs[t][-1]["records"]) for t in tools}
            mine = [states[t] for t in tools if t.startswith("icectl")]
            if len(set(s[1] for s in states.values())) != 1 or len(set(mine)) > 1 or \
                    ("spark" in states and any(m[0] > states["spark"][0] for m in mine)):
                problems.append(f"rep {rep}: files/records after compaction differ: {states}")
                print(f"!!! MISMATCH {problems[-1]}", file=sys.stderr)
        scans = scan_outputs(runs)
        med = lambda t, k: statistics.median(r[k] for r in runs[t])  # noqa: E731
        result = {
            "files": shape["files"], "rows-per-file": shape["rows"], "bytes": shape["bytes"], "reps": args.reps,
            "strategy": f"sort by {args.sort}" if args.sort else "binpack",
            "tools": {t: {"seconds": round(med(t, "wall"), 2), "peak-rss-mb": round(med(t, "rss_mb"), 0),
                          "runs": [round(r["wall"], 2) for r in runs[t]],
                          "peak-rss-runs": [round(r["rss_mb"]) for r in runs[t]],
                          "files-after": runs[t][-1]["files_after"],
                          "bytes-after": runs[t][-1]["bytes_after"],
                          "scan-seconds": round(scans[t], 3)} for t in tools},
            "mismatches": problems,
        }
        if "spark" in tools:
            result["spark-session-start-seconds"] = round(med("spark", "start"), 2)
            result["spark-call-seconds"] = round(med("spark", "call"), 2)
            sp, sp_mem = result["tools"]["spark"]["seconds"], result["tools"]["spark"]["peak-rss-mb"]
            for t in tools:
                if t != "spark":
                    result["tools"][t]["x-faster-than-spark"] = round(sp / result["tools"][t]["seconds"], 2)
                    result["tools"][t]["peak-rss-vs-spark"] = round(result["tools"][t]["peak-rss-mb"] / sp_mem, 2)
                    result["tools"][t]["bytes-vs-spark"] = round(
                        result["tools"][t]["bytes-after"] / result["tools"]["spark"]["bytes-after"], 3)
                    result["tools"][t]["scan-vs-spark"] = round(
                        result["tools"][t]["scan-seconds"] / result["tools"]["spark"]["scan-seconds"], 2)
        if "icectl-w1" in tools and "icectl-w2" in tools:
            result["scaling-w1-to-w2"] = round(result["tools"]["icectl-w1"]["seconds"] /
                                               result["tools"]["icectl-w2"]["seconds"], 2)
        if args.json:
            print(json.dumps(result, indent=2))
        else:
            print(f"{shape['files']} files x {shape['rows']} rows = {shape['bytes'] / 2**20:.0f} MiB, "
                  f"{result['strategy']}, median of {args.reps}")
            print(f"{'tool':22} {'seconds':>8} {'peak RSS':>10} {'files after':>12} {'x vs spark':>11} "
                  f"{'RSS/spark':>10}")
            for t in tools:
                r = result["tools"][t]
                name = {"icectl-w1": "icectl --workers 1", "icectl-w2": "icectl --workers 2",
                        "spark": "spark local[2]"}[t]
                print(f"{name:22} {r['seconds']:8.2f} {r['peak-rss-mb']:7.0f} MiB {r['files-after']:12d} "
                      f"{r.get('x-faster-than-spark', 1.0):10.2f}x {r.get('peak-rss-vs-spark', 1.0):9.2f}x")
            print(f"{'output':22} {'bytes':>12} {'x spark':>8} {'scan s':>8} {'x spark':>8}")
            for t in tools:
                r = result["tools"][t]
                print(f"{t:22} {r['bytes-after']:12d} {r.get('bytes-vs-spark', 1.0):8.3f} "
                      f"{r['scan-seconds']:8.3f} {r.get('scan-vs-spark', 1.0):8.2f}")
            if "spark" in tools:
                print(f"spark: session start {result['spark-session-start-seconds']:.2f}s, "
                      f"rewrite_data_files {result['spark-call-seconds']:.2f}s")
            if "scaling-w1-to-w2" in result:
                print(f"icectl scaling 1 -> 2 workers: {result['scaling-w1-to-w2']:.2f}x")
            if problems:
                print(f"MISMATCHES: {len(problems)} (see stderr)")
        return 1 if problems else 0
    finally:
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--spark-child":
        spark_child(json.loads(sys.argv[2]))
    else:
        sys.exit(main())
