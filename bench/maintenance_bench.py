"""Whole-process `icectl expire` / `icectl orphans` against Spark's Iceberg procedures, same run.

The history is expire_bench.py's (base manifests that stay live, then append-and-overwrite churn),
built once with its generator, plus ORPHANS stray files under data/ whose modification time is
set days back. The pristine table is kept aside; before every run of every tool it is copied
(`cp -a`, which keeps modification times) back to the one location its metadata records, so each
tool expires (or cleans) exactly the same table each repetition, and the table is never a copy
living elsewhere (icectl refuses those).

Each run is one fresh process, as a cron job pays it:

* icectl: `python -m icectl expire LOC --older-than MS --retain-last K --json`, and
  `python -m icectl orphans LOC --older-than MS --delete --json`;
* Spark: a fresh `python` that starts a local[2] session with the Iceberg 1.10.2 runtime and a
  Hadoop catalog (tests/interop/spark_support.py, the stack the interop tests use), runs
  `CALL ice.system.expire_snapshots(table => ..., older_than => TIMESTAMP ..., retain_last => K)`
  or `CALL ice.system.remove_orphan_files(table => ..., older_than => TIMESTAMP ...)`, stops
  the session and exits.

Both tools get the same cut-off. expire cuts at the moment the history was built (every snapshot
is older) and keeps the last K; orphans cuts 25 hours back (icectl and Iceberg both refuse a
cut-off under 24 hours) and the strays are 3 days old. After each run the snapshot count and
the set of files left (metadata.json files, version-hint.text and hidden files aside: their names
differ between writers) are compared between the two tools of the same repetition; a difference
is printed loudly and makes the exit status 1.

Repetitions are interleaved (icectl first on even repetitions, Spark first on odd ones).
Reported: median wall time, median peak resident set per process (icectl: the child's maxrss from
wait4; Spark: the Python driver's maxrss plus the JVM's VmHWM read just before the session
stops), the Spark/icectl ratios, the median CPU time of each process (user + system: icectl's
from wait4, Spark's the driver's from wait4 plus the JVM's read from /proc just before the
session stops) and the 1-minute load
average at the start of each run (the machine may be shared: a busy machine stretches both
tools' wall times, Spark's session start the most).

The fixture is synthesised (metadata and manifests written directly, data files empty), so
10,000 snapshots build in minutes: each manifest list entry is encoded once and its bytes
reused in every later list that carries the manifest. `--dir D --reuse` keeps and reuses the
built fixture (the pristine copy and its shape) across invocations of the same size.

Usage:
    python bench/maintenance_bench.py                       # 400 snapshots, 20,000 files, 3 reps
    python bench/maintenance_bench.py --full                # 2,000 snapshots, 100,000 files
    python bench/maintenance_bench.py --snapshots 1000 --files 50000 --reps 5 --json
    python bench/maintenance_bench.py --snapshots 10000 --files 100000 --base 100 --dir D --reuse
"""

from __future__ import annotations

import argparse
import datetime as dt
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
from proc_tree import descendants, status_kb  # noqa: E402

INTEROP = os.path.join(os.path.dirname(HERE), "tests", "interop")
NAMESPACE, TABLE = "bench", "t"
DAY_S = 86400


# ---------------------------------------------------------------- Spark child (fresh process)

def spark_child(spec: dict) -> None:
    """Start a session, run one CALL, report rows and timings as JSON on stdout, stop."""
    from pathlib import Path

    sys.path.insert(0, INTEROP)
    from spark_support import start_spark

    t0 = time.perf_counter()
    started = start_spark(Path(spec["warehouse"]), Path(spec["scratch"]))
    t1 = time.perf_counter()
    rows = [[str(v) for v in r] for r in started.session.sql(spec["sql"]).collect()]
    t2 = time.perf_counter()
    jvm_kb = sum(status_kb(p, "VmHWM") for p in descendants(os.getpid()))
    jvm_cpu = sum(cpu_seconds(p) for p in descendants(os.getpid()))
    started.session.stop()
    print(json.dumps({"rows": rows, "start-seconds": t1 - t0, "call-seconds": t2 - t1,
                      "jvm-peak-kb": jvm_kb, "jvm-cpu-seconds": jvm_cpu}))


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a live process (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------- parent

def load_average() -> float:
    with open("/proc/loadavg", encoding="ascii") as f:
        return float(f.read().split()[0])


def run_process(cmd: list[str], scratch: str) -> tuple[float, int, str, str, float]:
    """Run cmd to completion; (wall seconds, child's peak RSS in KiB from wait4, stdout, stderr,
    CPU seconds of the child and the children it waited for)."""
    out_path, err_path = os.path.join(scratch, "out.txt"), os.path.join(scratch, "err.txt")
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
    with open(out_path, encoding="utf-8") as f:
        stdout = f.read()
    with open(err_path, encoding="utf-8", errors="replace") as f:
        stderr = f.read()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} ... exited {proc.returncode}\n{stderr[-3000:]}")
    return wall, usage.ru_maxrss, stdout, stderr, usage.ru_utime + usage.ru_stime


def restore(pristine: str, location: str) -> None:
    """Put the pristine table back at `location` (the path its metadata records), mtimes kept."""
    shutil.rmtree(location, ignore_errors=True)
    subprocess.run(["cp", "-a", pristine, location], check=True)


def files_left(location: str) -> set[str]:
    """Relative paths under `location`, less the names that differ between writers."""
    out = set()
    for root, dirs, names in os.walk(location):
        dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
        for n in names:
            if n.startswith((".", "_")) or n.endswith(".metadata.json") or n == "version-hint.text":
                continue
            out.add(os.path.relpath(os.path.join(root, n), location))
    return out


def snapshot_count(location: str) -> int:
    from icectl.table.table import Table

    return len(Table.load(location).metadata.snapshots)


def sql_timestamp(ms: int) -> str:
    t = dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc)
    return "TIMESTAMP '" + t.strftime("%Y-%m-%d %H:%M:%S.") + f"{ms % 1000:03d}'"


def plant_orphans(location: str, n: int, age_days: float) -> None:
    old = time.time() - age_days * DAY_S
    for i in range(n):
        p = os.path.join(location, "data", f"orphan-{i:06d}.parquet")
        with open(p, "wb") as f:
            f.write(b"orphan")
        os.utime(p, (old, old))


def build(args, root: str) -> dict:
    sys.path.insert(0, HERE)
    from expire_bench import generate

    location = os.path.join(root, "wh", NAMESPACE, TABLE)
    saved = os.path.join(root, "shape.json")
    wanted = {"snapshots": args.snapshots, "requested-files": args.files, "base": args.base,
              "orphans": args.orphans}
    if args.reuse and os.path.exists(saved):
        with open(saved, encoding="utf-8") as f:
            shape = json.load(f)
        if all(shape.get(k) == v for k, v in wanted.items()) and os.path.isdir(shape["pristine"]):
            print(f"reusing the fixture in {root}", file=sys.stderr, flush=True)
            return shape
    shutil.rmtree(location, ignore_errors=True)
    shutil.rmtree(os.path.join(root, "pristine"), ignore_errors=True)
    t0 = time.perf_counter()
    shape = generate(location, args.snapshots, args.files, args.base, True)
    expire_cut = int(time.time() * 1000)
    plant_orphans(location, args.orphans, 3)
    pristine = os.path.join(root, "pristine")
    subprocess.run(["cp", "-a", location, pristine], check=True)
    shape.update(location=location, pristine=pristine, build_seconds=time.perf_counter() - t0,
                 expire_cut_ms=expire_cut, orphans_cut_ms=int((time.time() - DAY_S - 3600) * 1000))
    shape.update(wanted)
    with open(saved, "w", encoding="utf-8") as f:
        json.dump(shape, f)
    return shape


def icectl_cmd(job: str, shape: dict, args) -> list[str]:
    loc = shape["location"]
    if job == "expire":
        return [sys.executable, "-m", "icectl", "expire", loc, "--older-than", str(shape["expire_cut_ms"]),
                "--retain-last", str(args.retain_last), "--json"]
    return [sys.executable, "-m", "icectl", "orphans", loc, "--older-than", str(shape["orphans_cut_ms"]),
            "--delete", "--json"]


def spark_sql(job: str, shape: dict, args) -> str:
    ident = f"'{NAMESPACE}.{TABLE}'"
    if job == "expire":
        return (f"CALL ice.system.expire_snapshots(table => {ident}, "
                f"older_than => {sql_timestamp(shape['expire_cut_ms'])}, retain_last => {args.retain_last})")
    return (f"CALL ice.system.remove_orphan_files(table => {ident}, "
            f"older_than => {sql_timestamp(shape['orphans_cut_ms'])})")


def run_one(tool: str, job: str, shape: dict, args, root: str) -> dict:
    loc = shape["location"]
    restore(shape["pristine"], loc)
    scratch = os.path.join(root, "scratch")
    os.makedirs(scratch, exist_ok=True)
    load = load_average()
    if tool == "icectl":
        wall, rss_kb, stdout, _, cpu = run_process(icectl_cmd(job, shape, args), scratch)
        out = json.loads(stdout)
        found = out["orphan-files-count"] if job == "orphans" else out["expired-snapshots-count"]
        res = {"wall": wall, "rss_mb": rss_kb / 1024, "found": found}
    else:
        spec = {"warehouse": os.path.join(root, "wh"), "scratch": os.path.join(scratch, "spark"),
                "sql": spark_sql(job, shape, args)}
        cmd = [sys.executable, os.path.abspath(__file__), "--spark-child", json.dumps(spec)]
        wall, rss_kb, stdout, _, cpu = run_process(cmd, scratch)
        out = json.loads(stdout.strip().splitlines()[-1])
        rows = out["rows"]
        # expire_snapshots returns one row of counts; remove_orphan_files one row per orphan
        found = len(rows) if job == "orphans" else None
        cpu += out.get("jvm-cpu-seconds", 0.0)  # the JVM is not a child the driver waits for
        res = {"wall": wall, "rss_mb": (rss_kb + out["jvm-peak-kb"]) / 1024, "found": found,
               "start": out["start-seconds"], "call": out["call-seconds"], "rows": rows[:1]}
    res.update(snapshots=snapshot_count(loc), files=files_left(loc), cpu=cpu, load=load)
    return res


def compare(job: str, rep: int, a: dict, b: dict) -> list[str]:
    problems = []
    if a["snapshots"] != b["snapshots"]:
        problems.append(f"snapshots left: icectl {a['snapshots']} vs spark {b['snapshots']}")
    if a["files"] != b["files"]:
        only_i, only_s = sorted(a["files"] - b["files"]), sorted(b["files"] - a["files"])
        problems.append(f"files left differ: {len(only_i)} only after icectl {only_i[:5]}, "
                        f"{len(only_s)} only after spark {only_s[:5]}")
    if job == "orphans" and a["found"] != b["found"]:
        problems.append(f"orphans found: icectl {a['found']} vs spark {b['found']}")
    for p in problems:
        print(f"!!! MISMATCH {job} rep {rep}: {p}", file=sys.stderr, flush=True)
    return problems


def summarize(job: str, runs: dict) -> dict:
    ice, spk = runs["icectl"], runs["spark"]
    med = lambda rs, k: statistics.median(r[k] for r in rs)  # noqa: E731
    out = {
        "job": job,
        "icectl-seconds": round(med(ice, "wall"), 3), "spark-seconds": round(med(spk, "wall"), 3),
        "spark-session-start-seconds": round(med(spk, "start"), 3),
        "spark-call-seconds": round(med(spk, "call"), 3),
        "icectl-peak-rss-mb": round(med(ice, "rss_mb"), 1), "spark-peak-rss-mb": round(med(spk, "rss_mb"), 1),
        "icectl-cpu-seconds": round(med(ice, "cpu"), 3), "spark-cpu-seconds": round(med(spk, "cpu"), 3),
        "icectl-runs": [round(r["wall"], 3) for r in ice], "spark-runs": [round(r["wall"], 3) for r in spk],
        "load-at-start": [round(r["load"], 2) for r in ice + spk],
        "snapshots-left": ice[-1]["snapshots"], "files-left": len(ice[-1]["files"]),
    }
    out["speedup"] = round(out["spark-seconds"] / out["icectl-seconds"], 2)
    out["rss-ratio"] = round(out["spark-peak-rss-mb"] / out["icectl-peak-rss-mb"], 2)
    if job == "orphans":
        out["orphans-found"] = ice[-1]["found"]
    else:
        out["spark-expire-row"] = spk[-1]["rows"][0] if spk[-1]["rows"] else None
    return out


def print_table(shape: dict, args, results: list[dict]) -> None:
    print(f"{shape['snapshots']} snapshots, {shape['files']} data files, {args.orphans} orphans, "
          f"retain-last {args.retain_last}, median of {args.reps} (build {shape['build_seconds']:.1f}s)")
    print(f"{'job':8} {'icectl':>9} {'spark':>9} {'(start':>8} {'call)':>8} {'x faster':>9} "
          f"{'icectl RSS':>11} {'spark RSS':>10} {'icectl CPU':>11} {'spark CPU':>10}  load")
    for r in results:
        loads = r["load-at-start"]
        print(f"{r['job']:8} {r['icectl-seconds']:8.2f}s {r['spark-seconds']:8.2f}s "
              f"{r['spark-session-start-seconds']:7.2f}s {r['spark-call-seconds']:7.2f}s {r['speedup']:8.2f}x "
              f"{r['icectl-peak-rss-mb']:8.0f} MiB {r['spark-peak-rss-mb']:6.0f} MiB "
              f"{r['icectl-cpu-seconds']:10.2f}s {r['spark-cpu-seconds']:9.2f}s  {min(loads):.1f}-{max(loads):.1f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--snapshots", type=int, default=400)
    ap.add_argument("--files", type=int, default=20_000)
    ap.add_argument("--base", type=int, default=40, help="snapshots of long-lived base files")
    ap.add_argument("--full", action="store_true", help="expire_bench's size: 2,000 snapshots, 100,000 files")
    ap.add_argument("--orphans", type=int, default=1000, help="stray files planted under data/")
    ap.add_argument("--retain-last", type=int, default=10)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--jobs", default="expire,orphans")
    ap.add_argument("--dir", default=None, help="work directory (default: a temp dir, removed)")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--reuse", action="store_true", help="with --dir: reuse a fixture of the same size built there")
    args = ap.parse_args()
    if args.full:
        args.snapshots, args.files, args.base = 2000, 100_000, 100
    root = args.dir or tempfile.mkdtemp(prefix="icectl-maint-bench-")
    try:
        if args.reuse and args.dir is None:
            ap.error("--reuse needs --dir")
        shape = build(args, root)
        results, problems = [], []
        for job in args.jobs.split(","):
            runs: dict[str, list[dict]] = {"icectl": [], "spark": []}
            for rep in range(args.reps):
                order = ("icectl", "spark") if rep % 2 == 0 else ("spark", "icectl")
                for tool in order:
                    runs[tool].append(run_one(tool, job, shape, args, root))
                    print(f"{job} rep {rep} {tool}: {runs[tool][-1]['wall']:.2f}s", file=sys.stderr, flush=True)
                problems += compare(job, rep, runs["icectl"][-1], runs["spark"][-1])
            results.append(summarize(job, runs))
        if args.json:
            print(json.dumps({"snapshots": shape["snapshots"], "files": shape["files"], "orphans": args.orphans,
                              "retain-last": args.retain_last, "reps": args.reps, "results": results,
                              "mismatches": problems}, indent=2))
        else:
            print_table(shape, args, results)
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
