"""The icectl half of bench/maintenance_bench.py on a tiny history (no Spark).

Each run restores the pristine table to the location its metadata records, so icectl accepts
it (it refuses copies living elsewhere) and every run starts from the same files and mtimes.
"""

from __future__ import annotations

import argparse
import os
import sys

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")
sys.path.insert(0, BENCH)

import maintenance_bench as mb  # noqa: E402


def test_restore_and_icectl_runs_agree_across_repetitions(tmp_path):
    args = argparse.Namespace(snapshots=8, files=40, base=3, orphans=5, retain_last=2, reuse=False, dir=None)
    shape = mb.build(args, str(tmp_path))
    loc = shape["location"]
    pristine_files = mb.files_left(shape["pristine"])
    assert sum(f.startswith("data/orphan-") for f in pristine_files) == 5

    first = mb.run_one("icectl", "expire", shape, args, str(tmp_path))
    assert first["found"] == 6 and first["snapshots"] == 2
    assert first["files"] < pristine_files

    # the next run starts again from the whole history, orphans and all
    orphans = mb.run_one("icectl", "orphans", shape, args, str(tmp_path))
    assert orphans["found"] == 5 and orphans["snapshots"] == 8
    assert orphans["files"] == {f for f in pristine_files if not f.startswith("data/orphan-")}
    # the pristine copy is untouched by the runs
    assert mb.files_left(shape["pristine"]) == pristine_files
    assert os.path.isdir(loc)
    assert mb.compare("orphans", 0, orphans, dict(orphans)) == []
    assert mb.compare("expire", 0, first, orphans)  # a difference is reported


def test_sql_timestamp_matches_epoch_millis():
    assert mb.sql_timestamp(1_700_000_000_123) == "TIMESTAMP '2023-11-14 22:13:20.123'"
    assert mb.sql_timestamp(5) == "TIMESTAMP '1970-01-01 00:00:00.005'"
