"""Every option that takes a time accepts the same forms, run as a user runs icectl.

Points in time (--older-than of expire and orphans, --as-of of plan, --to-timestamp of snapshot
rollback): ISO-8601 with a zone, without one (UTC), a date alone (midnight UTC), epoch
milliseconds, and a duration ago. Lengths of time (--max-ref-age, --max-snapshot-age):
durations. A bad value is one line on stderr that repeats what was typed and names the
accepted forms, exit 2, nothing written. (From the same issue item: an empty --filter is an
error, not a scan of everything.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "ops"))
from expire_history import DAY, History  # noqa: E402
from clirun import icectl as run

HOUR = 3_600_000


def icectl(*args: str) -> subprocess.CompletedProcess:
    return run(*args, env={"ICECTL_WAREHOUSE": None, "ICECTL_DEBUG": None})



def run_all(commands: list[tuple]) -> list[subprocess.CompletedProcess]:
    return [icectl(*c) for c in commands]


def iso_z(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def iso_naive(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")


def iso_plus2(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, timezone(timedelta(hours=2))).isoformat()


def the_date(ms: int) -> tuple[str, int]:
    """The UTC date of ``ms`` as text, and its midnight in epoch ms."""
    d = datetime.fromtimestamp(ms / 1000, timezone.utc).date()
    return d.isoformat(), int(datetime(d.year, d.month, d.day, tzinfo=timezone.utc).timestamp() * 1000)


@pytest.fixture
def history(tmp_path: Path):
    """Snapshots s1, s2, s3 made 72h, 48h and 24h ago (minute-aligned), and a factory for
    fresh copies (rollback and expire change the table)."""
    start = (int(time.time() * 1000) - 4 * DAY) // 60_000 * 60_000

    def make(name: str) -> tuple[str, list[int]]:
        h = History(str(tmp_path / name), start_ms=start, step_ms=DAY)
        ids = [h.append() for _ in range(3)]
        h.save()
        assert [s.timestamp_ms for s in h.md.snapshots] == [start + (i + 1) * DAY for i in range(3)]
        return h.location, ids

    return [start + (i + 1) * DAY for i in range(3)], make


def forms(at: int) -> dict[str, tuple[str, int]]:
    """Each accepted form of a point in time, and the instant (epoch ms) it names."""
    day_text, midnight = the_date(at)
    now = int(time.time() * 1000)
    ago_h = (now - at) // HOUR  # a whole number of hours ago, a little before `at`
    return {
        "iso-z": (iso_z(at), at),
        "iso-naive": (iso_naive(at), at),
        "iso-offset": (iso_plus2(at), at),
        "date": (day_text, midnight),
        "epoch-ms": (str(at), at),
        "duration": (f"{ago_h}h", now - ago_h * HOUR),
    }


def current_at(times: list[int], ids: list[int], t: int) -> int | None:
    """The snapshot current at ``t`` (newest made at or before it)."""
    got = [i for ts, i in zip(times, ids) if ts <= t]
    return got[-1] if got else None


def test_plan_as_of_takes_every_form(history) -> None:
    times, make = history
    loc, ids = make("t")
    cases = forms(times[1] + 6 * HOUR)  # between s2 and s3
    results = run_all([("plan", loc, "--as-of", text, "--json") for text, _ in cases.values()])
    for (form, (text, at)), r in zip(cases.items(), results):
        assert r.returncode == 0, (form, text, r.stderr)
        assert json.loads(r.stdout)["snapshot-id"] == current_at(times, ids, at), (form, text)


def test_rollback_to_timestamp_takes_every_form(history) -> None:
    times, make = history
    cases = forms(times[1] + 6 * HOUR)
    tables = {form: make(f"t-{form}") for form in cases}
    results = run_all([("snapshot", "rollback", tables[form][0], "--to-timestamp", text, "--json")
                       for form, (text, _) in cases.items()])
    for (form, (text, at)), r in zip(cases.items(), results):
        ids = tables[form][1]
        assert r.returncode == 0, (form, text, r.stderr)
        # the newest ancestor committed before the time
        expected = [i for ts, i in zip(times, ids) if ts < at][-1]
        assert json.loads(r.stdout)["snapshot-id"] == expected, (form, text)


def test_expire_older_than_takes_every_form(history) -> None:
    times, make = history
    loc, ids = make("t")
    cases = forms(times[1] + 6 * HOUR)
    results = run_all([("expire", loc, "--older-than", text, "--retain-last", "1", "--dry-run", "--json")
                       for text, _ in cases.values()])
    for (form, (text, at)), r in zip(cases.items(), results):
        assert r.returncode == 0, (form, text, r.stderr)
        expected = [i for ts, i in zip(times, ids) if ts < at and i != ids[-1]]
        assert sorted(json.loads(r.stdout)["expired-snapshot-ids"]) == sorted(expected), (form, text)


def test_orphans_older_than_takes_every_form(history) -> None:
    _, make = history
    loc, _ = make("t")
    orphan = Path(loc) / "data" / "stray.parquet"
    orphan.write_bytes(b"x")
    old = time.time() - 2 * 86_400  # the stray file is two days old
    os.utime(orphan, (old, old))
    # a time after the stray file was written, on a later UTC day, so that the date form (its
    # midnight) is after the file too, whatever the time of day the test runs...
    cases = forms((int(old * 1000) // DAY + 1) * DAY + 6 * HOUR)
    cases["before"] = (f"{3 * 24}h", 0)  # ...and one before it
    results = run_all([("orphans", loc, "--older-than", text, "--json") for text, _ in cases.values()])
    for (form, (text, _)), r in zip(cases.items(), results):
        assert r.returncode == 0, (form, text, r.stderr)
        found = json.loads(r.stdout)["orphan-files"]
        assert found == ([] if form == "before" else [str(orphan)]), (form, text)


def test_retention_options_take_durations(history) -> None:
    _, make = history
    loc, _ = make("t")
    r = icectl("branch", "create", loc, "audit", "--max-ref-age", "2w", "--max-snapshot-age", "36h", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["retention"] == {"max-snapshot-age-ms": 36 * HOUR, "max-ref-age-ms": 14 * DAY}
    r = icectl("tag", "create", loc, "v1", "--max-ref-age", "90m", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["retention"] == {"max-ref-age-ms": 90 * 60_000}


POINT_OPTIONS = [
    ("plan", "{loc}", "--as-of"),
    ("scan", "{loc}", "--as-of"),
    ("snapshot", "rollback", "{loc}", "--to-timestamp"),
    ("expire", "{loc}", "--older-than"),
    ("orphans", "{loc}", "--older-than"),
]


@pytest.mark.parametrize("bad", ["next tuesday", "2024-13-01", ""])  # more shapes: tests/spec/test_time_arguments.py
def test_bad_times_are_one_line_echoing_the_input(history, bad: str) -> None:
    _, make = history
    loc, _ = make("t")
    before = {p: p.read_bytes() for p in Path(loc).rglob("*") if p.is_file()}
    commands = [tuple(a.format(loc=loc) for a in cmd) + (bad,) for cmd in POINT_OPTIONS]
    commands += [("branch", "create", loc, "b", "--max-ref-age", bad),
                 ("branch", "create", loc, "b", "--max-snapshot-age", bad)]
    for cmd, r in zip(commands, run_all(commands)):
        option = cmd[-2]
        assert r.returncode == 2, (cmd, r.stderr)
        assert r.stdout == ""
        lines = r.stderr.splitlines()
        assert len(lines) == 1, (cmd, r.stderr)
        assert lines[0].startswith(f"icectl: error: invalid {option} '{bad}': expected "), (cmd, lines)
        if option in ("--max-ref-age", "--max-snapshot-age"):
            assert "7d, 36h, 90m" in lines[0]
        else:
            for named in ("ISO-8601", "epoch milliseconds", "duration ago"):
                assert named in lines[0], (cmd, lines)
    assert {p: p.read_bytes() for p in Path(loc).rglob("*") if p.is_file()} == before


@pytest.mark.parametrize("bare", ["7", "0", "20240601", "99999999999"])
def test_short_bare_numbers_are_refused_not_read_as_1970(history, bare: str) -> None:
    """`--older-than 7` once read 7 as epoch milliseconds (1970) and did nothing, exit 0: every
    time option refuses a bare number under 12 digits, one line naming the accepted forms, and
    nothing changes."""
    _, make = history
    loc, _ = make("t")
    before = {p: p.read_bytes() for p in Path(loc).rglob("*") if p.is_file()}
    commands = [tuple(a.format(loc=loc) for a in cmd) + (bare,) for cmd in POINT_OPTIONS]
    commands.append(("expire", loc, "--older-than", bare, "--retain-last", "1"))
    for cmd, r in zip(commands, run_all(commands)):
        option = cmd[cmd.index(bare) - 1]
        assert r.returncode == 2, (cmd, r.stderr)
        assert r.stdout == ""
        lines = r.stderr.splitlines()
        assert len(lines) == 1, (cmd, r.stderr)
        assert lines[0].startswith(f"icectl: error: invalid {option} '{bare}': a bare number is taken "
                                   "as epoch milliseconds only from 12 digits on"), (cmd, lines)
        for named in ("ISO-8601", "7d", "2024-06-01", "1717243200000"):
            assert named in lines[0], (cmd, lines)
    assert {p: p.read_bytes() for p in Path(loc).rglob("*") if p.is_file()} == before


def test_an_empty_filter_is_an_error_not_a_full_scan(history) -> None:
    _, make = history
    loc, _ = make("t")
    for text in ("", "  "):
        r = icectl("plan", loc, "--filter", text)
        assert r.returncode == 2 and r.stdout == ""
        assert r.stderr.splitlines() == ["icectl: error: --filter: invalid filter at position 1: empty "
                                         "filter (give a condition, or no filter to select every row), "
                                         "near end of input"]
