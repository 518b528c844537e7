"""`icectl snapshot|branch|tag ...` through the CLI: JSON keys, text, exit codes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from clirun import icectl

from icectl.table.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "ops"))
from expire_history import DAY, History  # noqa: E402



def build(tmp_path):
    h = History(str(tmp_path / "t"), start_ms=1_700_000_000_000, step_ms=DAY)
    ids = [h.append() for _ in range(3)]
    h.save()
    return h.location, ids


def run_json(*args):
    r = icectl(*[*map(str, args), "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_snapshot_commands(tmp_path):
    loc, (s1, s2, s3) = build(tmp_path)
    out = run_json("snapshot", "rollback", loc, s2)
    assert set(out) == {"location", "action", "ref", "type", "previous-snapshot-id", "snapshot-id",
                        "created-snapshot", "retention", "metadata-file"}
    assert (out["previous-snapshot-id"], out["snapshot-id"], out["ref"]) == (s3, s2, "main")
    # 2023-11-16T22:13:20Z is s2's time; strictly older -> s1
    out = run_json("snapshot", "rollback", loc, "--to-timestamp", "2023-11-16T22:13:20Z")
    assert out["snapshot-id"] == s1
    out = run_json("snapshot", "set-current", loc, s3)
    assert out["snapshot-id"] == s3
    r = icectl(*["snapshot", "cherry-pick", loc, str(s2)])
    assert r.exit_code == 5 and "already an ancestor" in r.stderr
    r = icectl(*["snapshot", "rollback", loc])
    assert r.exit_code == 2
    r = icectl(*["snapshot", "set-current", loc, "99"])
    assert r.exit_code == 3


def test_branch_and_tag_commands(tmp_path):
    loc, (s1, s2, s3) = build(tmp_path)
    out = run_json("branch", "create", loc, "audit", "--snapshot-id", s1, "--max-ref-age", "30d",
                   "--max-snapshot-age", "7d", "--min-snapshots-to-keep", "4")
    assert out["retention"] == {"min-snapshots-to-keep": 4, "max-snapshot-age-ms": 7 * DAY, "max-ref-age-ms": 30 * DAY}
    assert run_json("branch", "fast-forward", loc, "audit", "--to", "main")["snapshot-id"] == s3
    assert run_json("branch", "replace", loc, "audit", "--snapshot-id", s2)["snapshot-id"] == s2
    r = icectl(*["branch", "create", loc, "audit"])
    assert r.exit_code == 4
    r = icectl(*["branch", "drop", loc, "main"])
    assert r.exit_code == 5
    r = icectl(*["branch", "drop", loc, "audit"])
    assert r.exit_code == 0 and "dropped branch audit" in r.stderr
    out = run_json("tag", "create", loc, "v1", "--max-ref-age", "365d")
    assert out["type"] == "tag" and out["snapshot-id"] == s3
    assert run_json("tag", "replace", loc, "v1", "--snapshot-id", s1)["snapshot-id"] == s1
    r = icectl(*["tag", "create", loc, "v2", "--max-ref-age", "soon"])
    assert r.exit_code == 2
    assert run_json("tag", "drop", loc, "v1")["previous-snapshot-id"] == s1
    assert set(Table.load(loc).metadata.refs) == {"main"}
