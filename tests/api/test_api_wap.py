"""Write-audit-publish in the Python API: ``table.stage(wap_id)`` and ``table.publish(wap_id)``
do what ``--wap-id`` and ``icectl snapshot publish`` do."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from clirun import icectl

import icectl as api


def test_stage_then_publish(tmp_path):
    loc = tmp_path / "t"
    r = icectl("create", str(loc), "--schema", "id long, p string", "--property", "write.wap.enabled=true")
    assert r.exit_code == 0, r.output
    t = api.load_table(str(loc))
    t.write(pa.table({"id": pa.array([1], pa.int64()), "p": ["a"]}))
    head = t.current_snapshot_id
    staged = t.stage("w1").write(pa.table({"id": pa.array([2], pa.int64()), "p": ["b"]})).append.snapshot_id
    assert t.current_snapshot_id == head  # main did not move
    assert t.scan().count() == 1 and t.scan(snapshot_id=staged).count() == 2
    t.stage(None).write(pa.table({"id": pa.array([3], pa.int64()), "p": ["c"]}))  # not staged
    assert t.current_snapshot_id not in (head, staged)
    published = t.publish("w1")
    assert published.source_snapshot_id == staged and published.created_snapshot
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == [1, 2, 3]
    shown = json.loads(icectl("inspect", "snapshot", str(loc), "--json").stdout)
    assert shown["summary"]["published-wap-id"] == "w1"
    with pytest.raises(api.DuplicateWapCommit):
        t.publish("w1")
    t.refresh()
    icectl("properties", "set", str(loc), "write.wap.enabled=false")
    with pytest.raises(api.ValidationError, match="write.wap.enabled"):
        api.load_table(str(loc)).stage("w2")
