"""Evolution commits re-validate on retry: a lost race re-applies the change only when the
schema/spec it was based on is still current."""

from __future__ import annotations

from pathlib import Path

import pytest

from icectl.errors import CommitConflict
from icectl.ops.metadata.create import create_table
from icectl.ops.metadata.schema import evolve_schema
from icectl.ops.metadata.partition_spec import add_partition_field
from icectl.ops.metadata.properties import set_properties
from icectl.spec.types import LONG
from icectl.table.table import Table


@pytest.fixture()
def loc(tmp_path: Path) -> str:
    loc = str(tmp_path / "t")
    create_table(loc, schema_text="id int not null, name string, ts timestamptz", format_version=2)
    return loc


def test_retry_reapplies_when_only_properties_changed(loc: str) -> None:
    stale = Table.load(loc)
    set_properties(Table.load(loc), {"a": "1"})  # another writer wins v2
    r = evolve_schema(stale, lambda u: u.add_column(None, "x", LONG))
    assert r.committed and stale.version == 3
    assert stale.metadata.properties["a"] == "1"
    assert stale.metadata.schema.find_field("x").field_id == 4


def test_retry_refuses_when_schema_changed(loc: str) -> None:
    stale = Table.load(loc)
    evolve_schema(Table.load(loc), lambda u: u.add_column(None, "y", LONG))
    files = sorted(p.name for p in (Path(loc) / "metadata").iterdir())
    with pytest.raises(CommitConflict, match="schema changed"):
        evolve_schema(stale, lambda u: u.add_column(None, "x", LONG))
    assert sorted(p.name for p in (Path(loc) / "metadata").iterdir()) == files
    assert Table.load(loc).version == 2


def test_retry_refuses_when_spec_changed(loc: str) -> None:
    stale = Table.load(loc)
    add_partition_field(Table.load(loc), "days(ts)")
    with pytest.raises(CommitConflict, match="partition spec changed"):
        add_partition_field(stale, "bucket(4, id)")


def test_unchanged_result_commits_nothing(loc: str) -> None:
    t = Table.load(loc)
    r = evolve_schema(t, lambda u: u.update_column("name", t.metadata.schema.find_field("name").type))
    assert not r.committed and t.version == 1
