"""Commit-cost benchmark: does a commit cost what it changes, or the whole table?

Builds, with the table builder of ``bench/plan_bench.py`` (one day partition per manifest, the
data files themselves do not exist), a *big* table of 200 manifests x 1,000 files and a *small*
one of 10 manifests x 1,000 files, each twice: as built (``commit.manifest-merge.enabled``
unset: true for a delete, as in Iceberg Java) and with merging off. On each it times, in the
same run, median of the repetitions:

* ``icectl delete T --filter F --mode merge-on-read`` as a whole process, F selecting exactly
  one data file of the middle day (day range and the file's id range: dropped whole, no data
  read);
* the commit of a one-partition compaction as a whole process (``--child compact``): the
  middle day planned with icectl's planner and its 1,000 planned files replaced by one file
  with a ``RewriteFilesProducer`` (``icectl compact`` needs the data files; this is its commit,
  a merging one as Java's RewriteFiles);
* Spark's ``DELETE FROM`` with the same filter (Iceberg Java 1.10 through PySpark, one session
  shared by the run; its metadata-only delete), warm in its JVM;

and counts the manifests a commit opens (icectl, in process) and the manifests of the
resulting snapshot (both engines). After every run the table's metadata directory is put back
as built (new files removed, ``version-hint.text`` restored), so every run starts from the same
table. The persistent manifest cache is bypassed (``ICECTL_NO_CACHE=1``).

    python bench/commit_bench.py                    # 5 repetitions, Spark included
    python bench/commit_bench.py --reps 3 --no-spark --dir /tmp/commitbench --keep
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
from dataclasses import replace
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "interop"))

from plan_bench import START_DAY, build_table  # noqa: E402

FILES = 1000
TABLES = {"big": 200, "small": 10}
MERGE_OFF = {"commit.manifest-merge.enabled": "false"}


def target(manifests: int) -> tuple[int, int, int]:
    """(day, lowest id, highest id) of the file the delete removes: one in the middle."""
    d = manifests // 2
    k = d * FILES + FILES // 3
    return START_DAY + d, k * 1000, k * 1000 + 999


def day_bounds(manifests: int) -> tuple[dt.date, dt.date]:
    d = dt.date(1970, 1, 1) + dt.timedelta(days=target(manifests)[0])
    return d, d + dt.timedelta(days=1)


def icectl_filter(manifests: int) -> str:
    (d, d1), (_, lo, hi) = day_bounds(manifests), target(manifests)
    return (f"ts >= '{d.isoformat()}T00:00:00+00:00' and ts < '{d1.isoformat()}T00:00:00+00:00' "
            f"and id >= {lo} and id <= {hi}")


def spark_filter(manifests: int) -> str:
    """The same filter in Spark SQL (the session's time zone is UTC)."""
    (d, d1), (_, lo, hi) = day_bounds(manifests), target(manifests)
    return (f"ts >= TIMESTAMP '{d} 00:00:00' AND ts < TIMESTAMP '{d1} 00:00:00' "
            f"AND id >= {lo} AND id <= {hi}")


# -- tables and their reset ---------------------------------------------------------------------


def build(location: str, manifests: int, merge_off: bool) -> None:
    from icectl.spec.metadata import with_properties
    from icectl.table.table import Table

    build_table(location, manifests, FILES)
    if merge_off:
        Table.load(location).commit(lambda md: with_properties(md, MERGE_OFF))


class Template:
    """A table's metadata directory as built; :meth:`reset` puts it back."""

    def __init__(self, location: str):
        self.location = location
        self.dir = os.path.join(location, "metadata")
        self.files = set(os.listdir(self.dir))
        hint = os.path.join(self.dir, "version-hint.text")
        self.hint = open(hint, "rb").read() if os.path.exists(hint) else None

    def reset(self) -> None:
        for name in set(os.listdir(self.dir)) - self.files:
            os.remove(os.path.join(self.dir, name))
        if self.hint is not None:
            with open(os.path.join(self.dir, "version-hint.text"), "wb") as f:
                f.write(self.hint)
        data = os.path.join(self.location, "data")
        if os.path.isdir(data):
            shutil.rmtree(data)  # nothing is written there; a stray file would change the next run

    def new_snapshot_manifests(self) -> int:
        """Manifests of the current snapshot (after a run)."""
        from icectl.io.manifest import records as avro
        from icectl.table.table import Table

        t = Table.load(self.location)
        return len(avro.load_manifest_list(t.io, t.metadata.current_snapshot().manifest_list))


# -- icectl ---------------------------------------------------------------------------------------


def icectl_cmd() -> list[str]:
    exe = os.path.join(os.path.dirname(sys.executable), "icectl")
    return [exe] if os.path.exists(exe) else [sys.executable, "-m", "icectl"]


def child_env() -> dict[str, str]:
    return dict(os.environ, ICECTL_NO_CACHE="1")


def run_process(cmd: list[str]) -> float:
    began = time.perf_counter()
    done = subprocess.run(cmd, env=child_env(), capture_output=True, text=True)
    took = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip()}")
    return took


def icectl_delete(location: str, manifests: int) -> list[str]:
    return icectl_cmd() + ["delete", location, "--filter", icectl_filter(manifests),
                           "--mode", "merge-on-read", "--json"]


def compact_child(location: str, manifests: int) -> list[str]:
    return [sys.executable, os.path.abspath(__file__), "--child", "compact", location, str(manifests)]


def compact_commit(location: str, manifests: int) -> dict[str, Any]:
    """Plan the middle day and replace its files by one (what ``icectl compact`` commits)."""
    from icectl.scan.planner import plan_scan
    from icectl.table.commit.rewrite import RewriteFilesProducer
    from icectl.table.table import Table

    table = Table.load(location)
    day = target(manifests)[0]
    d, d1 = day_bounds(manifests)
    plan = plan_scan(table, f"ts >= '{d.isoformat()}T00:00:00+00:00' and ts < '{d1.isoformat()}T00:00:00+00:00'")
    # as ops/maintain/compact.py hands them over: the planned files, their manifest known
    removed = [p.data_file() for p in plan.files]
    new = replace(removed[0], manifest_path=None,
                  file_path=f"{location}/data/ts_day={day}/compacted-bench.parquet",
                  record_count=sum(f.record_count for f in removed),
                  file_size_in_bytes=sum(f.file_size_in_bytes for f in removed))
    p = RewriteFilesProducer(table, starting_snapshot_id=plan.snapshot_id, removed=removed,
                             added=[(new, f"ts_day={d.isoformat()}")])
    p.commit()
    return {"replaced": len(removed), "manifests_opened": p.manifests_opened}


def icectl_delete_opened(location: str, manifests: int) -> int:
    """Manifests the delete's commit opens (in process, once; not timed)."""
    from icectl.ops.delete.merge_on_read import delete_rows
    from icectl.table.commit.row_delta import RowDeltaProducer
    from icectl.table.table import Table

    opened: list[int] = []
    real = RowDeltaProducer.commit

    def commit(self):
        out = real(self)
        opened.append(self.manifests_opened)
        return out

    RowDeltaProducer.commit = commit  # type: ignore[method-assign]
    try:
        r = delete_rows(Table.load(location), icectl_filter(manifests), mode="merge-on-read")
    finally:
        RowDeltaProducer.commit = real  # type: ignore[method-assign]
    assert len(r.removed_data_files) == 1, r.removed_data_files
    return opened[0]


# -- Spark ----------------------------------------------------------------------------------------


def start(warehouse: str, scratch: str) -> Any:
    from pathlib import Path

    from spark_support import start_spark

    return start_spark(Path(warehouse), Path(scratch)).session


def spark_delete(spark: Any, name: str, manifests: int) -> float:
    spark.sql(f"REFRESH TABLE ice.db.{name}")
    spark.sql(f"SELECT count(*) FROM ice.db.{name}.snapshots").collect()  # loaded before timing
    began = time.perf_counter()
    spark.sql(f"DELETE FROM ice.db.{name} WHERE {spark_filter(manifests)}").collect()
    return time.perf_counter() - began


def check_spark_deleted_one(location: str) -> None:
    from icectl.table.table import Table

    summary = Table.load(location).metadata.current_snapshot().summary or {}
    if summary.get("deleted-data-files") != "1":
        raise SystemExit(f"Spark's delete did not drop exactly one file: {summary}")


# -- the run --------------------------------------------------------------------------------------


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--dir", default=None, help="work directory (default: a temporary one)")
    p.add_argument("--keep", action="store_true", help="keep (and reuse) the built tables")
    p.add_argument("--no-spark", action="store_true")
    p.add_argument("--json", default=None, help="also write the figures to this file")
    p.add_argument("--child", nargs=3, metavar=("WHAT", "LOCATION", "MANIFESTS"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(compact_commit(args.child[1], int(args.child[2]))))
        return 0
    work = args.dir or tempfile.mkdtemp(prefix="commitbench-")
    warehouse = os.path.join(work, "wh")
    os.environ.setdefault("ICECTL_NO_CACHE", "1")
    tables: dict[str, Template] = {}
    for name, manifests in TABLES.items():
        for merge_off in (False, True):
            key = name + ("-nomerge" if merge_off else "")
            loc = os.path.join(warehouse, "db", key.replace("-", "_"))
            if not os.path.exists(os.path.join(loc, "metadata")):
                print(f"building {key} ({manifests} x {FILES})", file=sys.stderr)
                build(loc, manifests, merge_off)
            tables[key] = Template(loc)
            tables[key].reset()
    spark = None if args.no_spark else start(warehouse, os.path.join(work, "spark"))
    rows: dict[str, dict[str, Any]] = {}
    try:
        for key, tpl in tables.items():
            manifests = TABLES[key.split("-")[0]]
            loc = tpl.location
            r: dict[str, Any] = {"manifests": manifests}
            r["delete_opened"] = icectl_delete_opened(loc, manifests)
            r["delete_result_manifests"] = tpl.new_snapshot_manifests()
            tpl.reset()
            out = subprocess.run(compact_child(loc, manifests), env=child_env(), capture_output=True,
                                 text=True, check=True)
            r["compact_opened"] = json.loads(out.stdout)["manifests_opened"]
            r["compact_result_manifests"] = tpl.new_snapshot_manifests()
            tpl.reset()
            times: dict[str, list[float]] = {"icectl_delete": [], "icectl_compact": [], "spark_delete": []}
            for _ in range(args.reps):
                times["icectl_delete"].append(run_process(icectl_delete(loc, manifests)))
                tpl.reset()
                times["icectl_compact"].append(run_process(compact_child(loc, manifests)))
                tpl.reset()
                if spark is not None:
                    times["spark_delete"].append(spark_delete(spark, os.path.basename(loc), manifests))
                    check_spark_deleted_one(loc)
                    r["spark_result_manifests"] = tpl.new_snapshot_manifests()
                    tpl.reset()
            for k, v in times.items():
                if v:
                    r[k] = median(v)
                    r[k + "_all"] = v
            rows[key] = r
            print(key, json.dumps({k: v for k, v in r.items() if not k.endswith("_all")}), file=sys.stderr)
    finally:
        if spark is not None:
            spark.stop()
        if not args.keep and args.dir is None:
            shutil.rmtree(work, ignore_errors=True)
    print(format_table(rows, args.reps))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


def format_table(rows: dict[str, dict[str, Any]], reps: int) -> str:
    cols = [("icectl_delete", "icectl delete (process)"), ("icectl_compact", "icectl compaction commit (process)"),
            ("spark_delete", "Spark DELETE (warm JVM)")]
    lines = [f"median of {reps} runs; seconds; big = 200 x 1,000 files, small = 10 x 1,000 files", "",
             "| table | " + " | ".join(c[1] for c in cols) + " | manifests opened (delete / compaction) "
             "| manifests after delete (icectl / Spark) | manifests after compaction (icectl) |",
             "|---" * (len(cols) + 4) + "|"]
    for key, r in rows.items():
        cells = [f"{r[c]:.2f}" if c in r else "-" for c, _ in cols]
        lines.append(f"| {key} | " + " | ".join(cells) + f" | {r['delete_opened']} / {r['compact_opened']} "
                     f"| {r['delete_result_manifests']} / {r.get('spark_result_manifests', '-')} "
                     f"| {r.get('compact_result_manifests', '-')} |")
    lines.append("")
    for suffix in ("", "-nomerge"):
        big, small = rows.get("big" + suffix), rows.get("small" + suffix)
        if big and small:
            ratios = [f"{label} {big[c] / small[c]:.2f}x" for c, label in cols if c in big and c in small]
            lines.append(f"big / small{suffix or ' (merge on, the default)'}: " + ", ".join(ratios))
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
