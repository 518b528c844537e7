"""Racing writers on one s3:// table lose no commit: 8 processes run mixed commands (write,
append, delete, compact) at once; every snapshot a command acknowledged is in the final
metadata, nothing else is, and the rows are exactly those written minus those deleted.

Before conditional creates (a rename that is "exists? then copy + delete" on S3), 4 processes x
5 appends kept 16 and 19 of 20 acknowledged snapshots in two runs (tests/objectstore/
race_harness.py against main's code)."""

from __future__ import annotations

import pytest

from tests.objectstore.race_harness import race


def _check(rep) -> None:
    assert rep.missing == [], f"acknowledged but lost: {rep.missing}"
    assert rep.extra == [], f"snapshots nobody acknowledged: {rep.extra}"
    assert rep.acknowledged == rep.snapshots
    assert rep.rows_ok, (rep.rows_expected, rep.rows_found)
    # a failure is only ever a clean refusal (a conflict that re-validation found), never a crash
    assert all(": exit 6:" in f or ": exit 5:" in f for f in rep.failed), rep.failed


def test_eight_racing_writers_lose_nothing(s3) -> None:
    b = s3.new_bucket()
    rep = race(f"s3://{b}/db/events", s3.endpoint, s3.env, processes=8, commits=3)
    _check(rep)
    assert rep.commands_ok >= 8


@pytest.mark.slow
@pytest.mark.parametrize("run", range(3))
def test_eight_writers_times_ten_commits_lose_nothing(s3, run) -> None:
    b = s3.new_bucket()
    _check(race(f"s3://{b}/db/events", s3.endpoint, s3.env, processes=8, commits=10))
