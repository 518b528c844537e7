"""`icectl expire` and `icectl orphans` through the CLI: JSON keys, text output, exit codes, and
SIGKILL at random points followed by a rerun."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from clirun import icectl

from icectl.ops.maintain.orphans import find_orphan_files
from icectl.table.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "ops"))
from expire_history import DAY, History  # noqa: E402

SPARK_KEYS = ("deleted_data_files_count", "deleted_position_delete_files_count",
              "deleted_equality_delete_files_count", "deleted_manifest_files_count",
              "deleted_manifest_lists_count", "deleted_statistics_files_count")


def build(tmp_path, name="t", n=3, files=2) -> History:
    h = History(str(tmp_path / name), start_ms=1_600_000_000_000, step_ms=DAY)
    for _ in range(n):
        h.append(files)
        h.overwrite(h.live()[:files], add=1)
    h.save()
    return h


def test_expire_json_dry_run_then_real(tmp_path):
    h = build(tmp_path)
    before = h.all_files()
    r = icectl(*["expire", h.location, "--older-than", "1d", "--retain-last", "1", "--dry-run", "--json"])
    assert r.exit_code == 0, r.output
    dry = json.loads(r.stdout)
    for key in SPARK_KEYS + ("expired-snapshot-ids", "removed-refs", "metadata-file", "files",
                             "metadata-files-eligible-for-cleanup", "manifests-read"):
        assert key in dry
    assert dry["dry-run"] is True and dry["metadata-file"] is None and h.all_files() == before
    listed = {p for ps in dry["files"].values() for p in ps}
    assert dry["deleted_data_files_count"] == 6 and len(listed) == sum(dry[k] for k in SPARK_KEYS)
    r = icectl(*["expire", h.location, "--older-than", "2021-01-01T00:00:00Z", "--retain-last", "1", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert "files" not in out and out["expired-snapshot-ids"] == dry["expired-snapshot-ids"]
    assert before - h.all_files() == listed
    assert all(out[k] == dry[k] for k in SPARK_KEYS)


def test_expire_text_and_errors(tmp_path):
    h = build(tmp_path, n=1)
    r = icectl(*["expire", h.location, "--older-than", "soon"])
    assert r.exit_code == 2 and "invalid --older-than" in r.stderr
    r = icectl(*["expire", h.location, "--snapshot-id", "7"])
    assert r.exit_code == 3
    r = icectl(*["expire", h.location, "--retain-last", "0"])
    assert r.exit_code == 2 and "--retain-last" in r.stderr  # a bad number is a usage error
    r = icectl(*["expire", h.location, "--older-than", "1d", "--dry-run"])
    assert r.exit_code == 0
    assert "would-delete-data-files" in r.stdout and "data_files\t" in r.stdout


def test_orphans_cli(tmp_path):
    h = build(tmp_path, n=1)
    stray = os.path.join(h.location, "data", "stray.parquet")
    open(stray, "wb").close()
    r = icectl(*["orphans", h.location, "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["orphan-files"] == []  # too young (3d default)
    r = icectl(*["orphans", h.location, "--older-than", "2099-01-01"])
    assert r.exit_code == 0 and r.stdout.split() == [stray] and os.path.exists(stray)
    r = icectl(*["orphans", h.location, "--older-than", "2099-01-01", "--delete", "--allow-recent", "--json"])
    out = json.loads(r.stdout)
    assert out["deleted-files-count"] == 1 and out["delete"] is True and not os.path.exists(stray)


def _run_expire(loc: str) -> subprocess.Popen:
    env = dict(os.environ, NO_COLOR="1")
    return subprocess.Popen([sys.executable, "-m", "icectl", "expire", loc, "--older-than", "1d",
                             "--retain-last", "1", "--workers", "2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)


def test_sigkill_at_random_points_then_rerun_finishes(tmp_path):
    """Kill `icectl expire` with SIGKILL at random moments across its run; each time the table
    still loads with every referenced file present, and a rerun leaves exactly the files an
    uninterrupted run leaves."""
    from icectl.ops.maintain.orphans import referenced_files

    twin = build(tmp_path, "twin", n=6, files=60)
    t0 = time.monotonic()
    assert _run_expire(twin.location).wait(120) == 0
    duration = time.monotonic() - t0
    expected = {os.path.relpath(p, twin.location) for p in twin.all_files()}
    rng = random.Random(6)
    phases = []
    for i in range(6):
        h = build(tmp_path, f"t{i}", n=6, files=60)
        proc = _run_expire(h.location)
        time.sleep(rng.uniform(0.3, 1.0) * duration)
        proc.send_signal(signal.SIGKILL)
        proc.wait(60)
        table = Table.load(h.location)
        refs = referenced_files(table.io, table.metadata, table.metadata_location, table.location)
        assert all(os.path.exists(p) for p in refs if not p.endswith("version-hint.text"))
        pending = [n for n in os.listdir(os.path.join(h.location, "metadata")) if n.startswith(".icectl-expire-")]
        phases.append((table.version, len(pending)))
        assert _run_expire(h.location).wait(120) == 0
        left = {os.path.relpath(p, h.location) for p in h.all_files()}
        # killed inside the commit: the temp metadata file that never became a version is an
        # orphan (as with the reference), which `icectl orphans` finds
        temp = {p for p in left - expected if re.fullmatch(r"metadata/[0-9a-f-]{36}\.icectl\.metadata\.json", p)}
        assert left - temp == expected, (i, phases[-1])
        if temp:
            found = find_orphan_files(Table.load(h.location), older_than_ms=int(time.time() * 1000) + 1000)
            assert {os.path.relpath(p, h.location) for p in found.orphan_files} == temp
    print("versions and pending records after the kills:", phases)
