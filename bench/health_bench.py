"""`icectl health` against the same figures from Spark's metadata tables, as whole processes.

Builds, with the table builder of ``bench/plan_bench.py``, a v2 table partitioned by
``days(ts)`` with one snapshot of 200 manifests x 1,000 data files (the data files themselves do
not exist: health and metadata tables read only metadata). Each repetition runs, one after the
other (the order alternates between repetitions, so the same load weighs on each):

* **icectl cold**: the persistent manifest cache emptied, then
  ``python -m icectl health T --json > file`` (every dimension but orphans);
* **icectl warm**: the same command again (the cache filled by the previous run);
* **Spark**: a fresh ``python`` that starts a local Spark session (Iceberg 1.10 runtime, the
  interop tests' stack) and collects the metadata-table queries giving the same counts and byte
  totals -- ``files`` by content, ``manifests``, ``partitions`` (every row, as health has a row
  per partition), ``snapshots``, ``refs``, ``all_files`` -- then runs them a second time in the
  same JVM; the process's wall time, and inside it the first (cold JVM) and second (warm) query
  times, are reported.

Every figure icectl reports is checked against Spark's answer in each repetition. Medians of the
repetitions, and the per-repetition ratios' medians.

    python bench/health_bench.py                      # 3 repetitions
    python bench/health_bench.py --reps 5 --dir /tmp/hb --keep
    python bench/health_bench.py --quick              # 20 manifests x 1,000 files
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
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "interop"))

FILES = 1000

QUERIES = {
    "files": "SELECT content, count(*), sum(file_size_in_bytes), sum(record_count) FROM {t}.files GROUP BY content",
    "manifests": "SELECT count(*), sum(length), sum(added_data_files_count), sum(existing_data_files_count) "
                 "FROM {t}.manifests",
    "partitions": "SELECT partition, record_count, file_count, total_data_file_size_in_bytes FROM {t}.partitions",
    "snapshots": "SELECT count(*) FROM {t}.snapshots",
    "refs": "SELECT count(*) FROM {t}.refs",
    "all_files": "SELECT count(*), sum(file_size_in_bytes) FROM {t}.all_files",
}


def env(cache: str) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
                ICECTL_CACHE_DIR=cache)


def run_icectl(location: str, cache: str, out: str, cold: bool) -> float:
    if cold and os.path.isdir(cache):
        shutil.rmtree(cache)
    cmd = [sys.executable, "-m", "icectl", "health", location, "--json"]
    began = time.perf_counter()
    with open(out, "w") as fh:
        done = subprocess.run(cmd, env=env(cache), stdout=fh, stderr=subprocess.PIPE, text=True)
    took = time.perf_counter() - began
    if done.returncode not in (0, 14):
        raise SystemExit(f"icectl health failed ({done.returncode}): {done.stderr.strip()}")
    return took


def run_spark(warehouse: str, scratch: str, out: str) -> float:
    cmd = [sys.executable, os.path.abspath(__file__), "--child-spark", warehouse, scratch, out]
    began = time.perf_counter()
    done = subprocess.run(cmd, env=env(os.path.join(scratch, "cache")), capture_output=True, text=True)
    took = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"the Spark child failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return took


def child_spark(warehouse: str, scratch: str, out: str) -> int:
    """In a fresh process: start Spark, run the queries twice, write their answers and times."""
    from pathlib import Path

    from spark_support import start_spark

    spark = start_spark(Path(warehouse), Path(scratch)).session
    t = "ice.db.health"
    times = []
    answers: dict[str, Any] = {}
    for _ in range(2):
        began = time.perf_counter()
        for name, q in QUERIES.items():
            answers[name] = [tuple(r) for r in spark.sql(q.format(t=t)).collect()]
        times.append(time.perf_counter() - began)
    answers["partitions"] = len(answers["partitions"]), sum(r[3] for r in answers["partitions"])
    with open(out, "w") as fh:
        json.dump({"answers": answers, "cold-jvm-s": times[0], "warm-jvm-s": times[1]}, fh, default=str)
    spark.stop()
    return 0


def check(health_json: str, spark_json: str) -> None:
    doc = json.load(open(health_json))
    h = {d["name"]: d["figures"] for d in doc["dimensions"]}
    a = json.load(open(spark_json))["answers"]
    (content, n, size, records), = a["files"]
    assert content == 0 and (h["data-files"]["data-files"], h["data-files"]["data-bytes"],
                             h["data-files"]["records"]) == (n, size, records), (h["data-files"], a["files"])
    (mn, mbytes, added, existing), = a["manifests"]
    m = h["manifests"]
    assert (m["manifests"], m["manifest-bytes"], m["added-files"], m["existing-files"]) == \
        (mn, mbytes, added, existing), (m, a["manifests"])
    parts, part_bytes = a["partitions"]
    assert h["partitions"]["partitions"] == parts
    assert sum(p["data-bytes"] for p in h["data-files"]["partitions"]) == part_bytes
    assert h["snapshots"]["snapshots"] == a["snapshots"][0][0] and h["snapshots"]["refs"] == a["refs"][0][0]
    assert [h["snapshots"]["all-files"], h["snapshots"]["all-files-bytes"]] == list(a["all_files"][0])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--dir")
    p.add_argument("--keep", action="store_true")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--child-spark", nargs=3, metavar=("WAREHOUSE", "SCRATCH", "OUT"))
    args = p.parse_args(argv)
    if args.child_spark:
        return child_spark(*args.child_spark)
    work = args.dir or tempfile.mkdtemp(prefix="health-bench-")
    manifests = 20 if args.quick else 200
    warehouse = os.path.join(work, "wh")
    location = os.path.join(warehouse, "db", "health")
    if not os.path.exists(os.path.join(location, "metadata")):
        from plan_bench import build_table

        began = time.perf_counter()
        build_table(location, manifests, FILES)
        print(f"built {manifests} x {FILES} in {time.perf_counter() - began:.1f} s", flush=True)
    cache = os.path.join(work, "cache")
    scratch = os.path.join(work, "spark")
    samples: dict[str, list[float]] = {"icectl-cold": [], "icectl-warm": [], "spark-process": [],
                                       "spark-cold-jvm-queries": [], "spark-warm-jvm-queries": []}
    ratios: dict[str, list[float]] = {"spark-process/icectl-cold": [], "spark-process/icectl-warm": [],
                                      "spark-warm-jvm-queries/icectl-warm": []}
    try:
        for rep in range(args.reps):
            hout, sout = os.path.join(work, "health.json"), os.path.join(work, "spark.json")
            order = ["icectl", "spark"] if rep % 2 == 0 else ["spark", "icectl"]
            got: dict[str, float] = {}
            for who in order:
                if who == "icectl":
                    got["icectl-cold"] = run_icectl(location, cache, hout, cold=True)
                    got["icectl-warm"] = run_icectl(location, cache, hout, cold=False)
                else:
                    got["spark-process"] = run_spark(warehouse, scratch, sout)
                    child = json.load(open(sout))
                    got["spark-cold-jvm-queries"] = child["cold-jvm-s"]
                    got["spark-warm-jvm-queries"] = child["warm-jvm-s"]
            check(hout, sout)
            for k, v in got.items():
                samples[k].append(v)
            for k in ratios:
                num, den = k.split("/")
                ratios[k].append(got[num] / got[den])
            load = os.getloadavg()[0]
            print(f"rep {rep + 1}: " + ", ".join(f"{k} {v:.2f}s" for k, v in got.items())
                  + f" (load {load:.1f})", flush=True)
    finally:
        if not args.keep and not args.dir:
            shutil.rmtree(work, ignore_errors=True)
    print(f"medians of {args.reps} ({manifests} manifests x {FILES} files; figures checked equal each time):")
    for k, v in samples.items():
        print(f"  {k}: {statistics.median(v):.2f} s")
    for k, v in ratios.items():
        print(f"  {k}: x{statistics.median(v):.2f}")
    la = os.getloadavg()
    print(f"load average {la[0]:.1f} / {la[1]:.1f} / {la[2]:.1f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
