"""`icectl.Table.maintain`: the same operation and result as `icectl maintain`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import icectl
from clirun import icectl as run_cli
from maintain_support import build_table, head_timestamp, measures, scan_rows


def test_maintain_from_python_is_the_commands(tmp_path: Path) -> None:
    loc = build_table(tmp_path / "wh")
    policy = {"icectl.maintain.expire.older-than": head_timestamp(loc), "icectl.maintain.orphans.enabled": False}
    rows = scan_rows(loc)
    t = icectl.load_table(str(loc))
    plan = t.maintain(policy, dry_run=True)
    (tmp_path / "p.json").write_text(json.dumps(policy))
    cli = json.loads(run_cli("maintain", loc, "--policy", tmp_path / "p.json", "--dry-run", "--json").stdout)
    assert plan.to_json()["due-steps"] == cli["due-steps"] == ["expire", "compact", "rewrite-manifests"]
    assert plan.to_json()["expected-after"] == cli["expected-after"]
    done = t.maintain(policy, workers=1)
    assert done.failed_step is None and done.exit_code == 0
    assert done.after == measures(loc) == done.expected_after()
    assert t.refresh().current_snapshot_id == icectl.load_table(str(loc)).current_snapshot_id
    assert scan_rows(loc) == rows
    with pytest.raises(icectl.InvalidInput, match="icectl.maintain.nope"):
        t.maintain({"icectl.maintain.nope": 1})
