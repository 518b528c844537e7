"""Racing writers on one table of each object store (S3, GCS, Azure) lose no commit: 8 processes
run mixed commands (write, append, delete, compact) at once; every snapshot a command
acknowledged is in the final metadata, nothing else is, and the rows are exactly those written
minus those deleted.

Before conditional creates (a rename that is "exists? then copy + delete" on S3), 4 processes x
5 appends kept 16 and 19 of 20 acknowledged snapshots in two runs (tests/objectstore/
race_harness.py against main's code)."""

from __future__ import annotations

import pytest

from tests.objectstore.race_harness import check_race, figures, race


def test_eight_racing_writers_lose_nothing(store) -> None:
    b = store.new_bucket()
    rep = race(store.url(b, "db/events"), store.fs_options, store.env, processes=8, commits=2)
    figures(store, rep, 8, 2)
    check_race(rep)
    assert rep.unknown == 0 and rep.extra == []
    assert rep.commands_ok >= 8


@pytest.mark.slow
@pytest.mark.parametrize("run", range(3))
def test_eight_writers_times_ten_commits_lose_nothing(store, run) -> None:
    b = store.new_bucket()
    rep = race(store.url(b, "db/events"), store.fs_options, store.env, processes=8, commits=10)
    figures(store, rep, 8, 10)
    check_race(rep)
    assert rep.unknown == 0 and rep.extra == []
