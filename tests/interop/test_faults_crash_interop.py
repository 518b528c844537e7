"""Crash sample read by Spark: ``icectl write`` killed before each of its file operations in turn
(the io layer's ``ICECTL_FAULT_KILL_AT`` testing hook); after every kill Spark reads the table and
counts exactly the rows of the commits that landed. The full crash suite is tests/faults."""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "faults"))

from faults_support import (EXIT_OK, check_versions, child_env, create_table, row_count,  # noqa: E402
                            run_icectl, write_csv)


def test_spark_reads_after_each_kill(spark: Any, ice_table: Any, tmp_path: Path) -> None:
    loc = ice_table.location
    create_table(loc)
    rows = write_csv(tmp_path / "rows.csv", range(3), "k")
    assert run_icectl("write", loc, rows).returncode == EXIT_OK
    kills = 0
    for n in range(1, 50):
        done = run_icectl("write", loc, rows, env=child_env(ICECTL_FAULT_KILL_AT=str(n)))
        spark.sql(f"REFRESH TABLE {ice_table.ident}")
        count = spark.sql(f"SELECT count(*) FROM {ice_table.ident}").collect()[0][0]
        assert count == row_count(loc) and count % 3 == 0, f"after kill {n}: Spark counts {count}"
        check_versions(loc, delete_after_commit=False)
        if done.returncode != -signal.SIGKILL:
            assert done.returncode == EXIT_OK, done.stderr
            break
        kills += 1
    print(f"\ncrash[Spark sample]: kills {kills}, tables unreadable by Spark 0")
    assert kills >= 5
