"""The icectl half of bench/compact_bench.py on a tiny table (no Spark): the table is built and
restored the same way for every run, and both worker counts compact it to the same state."""

from __future__ import annotations

import argparse
import os
import sys

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")
sys.path.insert(0, BENCH)

import compact_bench as cb  # noqa: E402


def test_icectl_runs_compact_the_same_restored_table(tmp_path):
    shape = cb.build(argparse.Namespace(files=20, rows=200), str(tmp_path))
    assert cb.live_state(shape["pristine"]) == (20, 4000)
    one = cb.run_one("icectl-w1", shape, str(tmp_path))
    two = cb.run_one("icectl-w2", shape, str(tmp_path))
    # 4 partitions of 5 files (min-input-files): each becomes one file, from the same start
    assert (one["files_after"], one["records"]) == (two["files_after"], two["records"]) == (4, 4000)
    assert one["added"] == two["added"] == 4 and one["wall"] > 0 and one["rss_mb"] > 0
    # the compacted files are measured: their bytes (the same rows, the same bytes) and a scan
    assert one["bytes_after"] == two["bytes_after"] > 0
    scans = cb.scan_outputs({"icectl-w1": [one], "icectl-w2": [two]}, reps=1)
    assert set(scans) == {"icectl-w1", "icectl-w2"} and min(scans.values()) > 0
    # the pristine copy is untouched
    assert cb.live_state(shape["pristine"]) == (20, 4000)
