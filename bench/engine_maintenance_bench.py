"""`icectl plan` and `icectl expire` on a big metadata-only table, local engine vs Spark engine.

The table is synthesised by expire_bench.py's generator with ``touch=False``: manifests and
manifest lists are real (icectl's writers), the data files they name do not exist (deleting a
missing file counts as deleted, as both engines and Iceberg's actions do). History: ``--base``
snapshots each append one manifest that stays live, then append-and-overwrite churn (each churn
snapshot adds a manifest and rewrites away the previous snapshot's files), ``--snapshots`` in all.

For every size (``--files``, repeatable) the table is built once and kept aside; before every run
it is copied back (``cp -a``) to the location its metadata records. Runs, each one fresh process
as a cron job pays it (wall time, peak resident set of the whole process tree: icectl, its
workers, and for Spark the JVM and its Python workers, sampled from /proc by proc_tree):

* ``plan``: ``icectl plan LOC --summary --no-cache`` (every manifest decoded, nothing cached);
* ``expire/local``: ``icectl expire LOC --older-than NOW --retain-last 1 --json``;
* ``expire/spark``: the same with ``--engine spark --spark-master local[N]`` (the session is
  started by the command; ``spark-start`` is a bare session's start and one job, measured alone,
  to tell the fixed cost from the work);

and the two expiries must agree: the same counts, the same files left, the same snapshots (a
difference is printed loudly and makes the exit status 1).

Usage:
    python bench/engine_maintenance_bench.py --files 300000 --files 1000000
    python bench/engine_maintenance_bench.py --files 100000 --snapshots 60 --base 30 --json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from proc_tree import run_measured  # noqa: E402


def env() -> dict:
    e = dict(os.environ)
    e["PYTHONPATH"] = ROOT + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    e["ICECTL_NO_CACHE"] = "1"
    return e


def icectl(*args: str) -> list[str]:
    return [sys.executable, "-m", "icectl", *args]


def restore(pristine: str, location: str) -> None:
    shutil.rmtree(location, ignore_errors=True)
    subprocess.run(["cp", "-a", pristine, location], check=True)


def left(location: str) -> list[str]:
    return sorted(os.path.relpath(os.path.join(r, n), location) for r, _, ns in os.walk(location)
                  for n in ns if not n.endswith(".metadata.json") and n != "version-hint.text")


def snapshots(location: str) -> list[int]:
    from icectl.table.table import Table

    return sorted(s.snapshot_id for s in Table.load(location).metadata.snapshots)


SPARK_START = """
import sys, time
sys.path.insert(0, {root!r})
from icectl.engines.spark import SparkEngine
e = SparkEngine(master={master!r})
e.spark_context().parallelize([1], 1).count()
e.stop()
"""


def one_size(files: int, args, root: str) -> dict:
    from expire_bench import generate

    loc = os.path.join(root, f"t{files}")
    t0 = time.perf_counter()
    shape = generate(loc, args.snapshots, files, args.base, False)
    build_s = time.perf_counter() - t0
    cut = str(int(time.time() * 1000))
    pristine = loc + ".pristine"
    subprocess.run(["cp", "-a", loc, pristine], check=True)
    out = {"files": shape["files"], "snapshots": args.snapshots, "distinct_manifests": shape["distinct_manifests"],
           "manifest_list_entries": shape["manifest_list_entries"], "build_s": round(build_s, 1)}
    wall, mib, _ = run_measured(icectl("plan", loc, "--summary", "--no-cache"), env())
    out["plan"] = {"s": round(wall, 1), "peak_mib": round(mib)}
    results = {}
    for engine in args.engines:
        restore(pristine, loc)
        extra = [] if engine == "local" else ["--engine", "spark", "--spark-master", args.master]
        wall, mib, stdout = run_measured(icectl("expire", loc, "--older-than", cut, "--retain-last", "1",
                                                "--json", *extra), env())
        res = json.loads(stdout)
        counts = {k: v for k, v in res.items() if k.startswith("deleted_")}
        results[engine] = (counts, left(loc), snapshots(loc))
        out[f"expire_{engine}"] = {"s": round(wall, 1), "peak_mib": round(mib), **counts}
        print(f"  {files:>9,} files  expire/{engine}: {wall:.1f} s, {mib:.0f} MiB", file=sys.stderr)
    same = len({json.dumps(r, sort_keys=True) for r in results.values()}) == 1
    out["engines_agree"] = same
    if not same:
        print(f"!!! the engines disagree at {files} files", file=sys.stderr)
    shutil.rmtree(loc, ignore_errors=True)
    shutil.rmtree(pristine, ignore_errors=True)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--files", type=int, action="append", help="table size in data files (repeatable)")
    p.add_argument("--snapshots", type=int, default=200)
    p.add_argument("--base", type=int, default=100)
    p.add_argument("--engines", default="local,spark")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    args.engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    sizes = args.files or [300_000, 1_000_000]
    report: dict = {"load_average_start": os.getloadavg()[0], "cpus": os.cpu_count(), "sizes": []}
    if "spark" in args.engines:
        wall, mib, _ = run_measured([sys.executable, "-c", SPARK_START.format(root=ROOT, master=args.master)], env())
        report["spark_start"] = {"s": round(wall, 1), "peak_mib": round(mib)}
        print(f"  spark session start + one job: {wall:.1f} s, {mib:.0f} MiB", file=sys.stderr)
    root = tempfile.mkdtemp(prefix="icectl-engine-bench-")
    ok = True
    try:
        for n in sizes:
            r = one_size(n, args, root)
            ok &= r["engines_agree"]
            report["sizes"].append(r)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    report["load_average_end"] = os.getloadavg()[0]
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"load average {report['load_average_start']:.1f} -> {report['load_average_end']:.1f}, "
              f"{report['cpus']} CPUs")
        if "spark_start" in report:
            print(f"spark start + one job: {report['spark_start']['s']} s, {report['spark_start']['peak_mib']} MiB")
        print(f"{'files':>10} {'snaps':>6} {'plan s':>7} {'MiB':>6} " + " ".join(
            f"{'exp/' + e + ' s':>14} {'MiB':>6}" for e in args.engines) + "  agree")
        for r in report["sizes"]:
            print(f"{r['files']:>10,} {r['snapshots']:>6} {r['plan']['s']:>7} {r['plan']['peak_mib']:>6} " + " ".join(
                f"{r['expire_' + e]['s']:>14} {r['expire_' + e]['peak_mib']:>6}" for e in args.engines)
                + f"  {r['engines_agree']}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
