"""`icectl properties set|unset` and `create --property`: known properties are validated (exit 2,
nothing written), and a broken property already in a table never blocks the command fixing it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from icectl.ops.metadata.create import create_table
from icectl.table.table import Table
from clirun import icectl

ICECTL = [sys.executable, "-m", "icectl"]


def run(*args: str) -> subprocess.CompletedProcess:
    return icectl(*args)



def listing(loc: str) -> dict[str, bytes]:
    d = Path(loc) / "metadata"
    return {p.name: p.read_bytes() for p in d.iterdir()}


@pytest.fixture()
def table(tmp_path: Path) -> str:
    loc = str(tmp_path / "t")
    create_table(loc, schema_text="id long, name string", format_version=2)
    return loc


BAD = ["commit.retry.num-retries=abc", "write.format.default=nonsense", "write.parquet.compression-codec=zip",
       "schema.name-mapping.default=garbage", "gc.enabled=yes", "write.delete.mode=cow",
       "history.expire.min-snapshots-to-keep=0", "format-version=x"]


@pytest.mark.parametrize("pair", BAD)
def test_invalid_values_are_refused_with_nothing_written(table: str, pair: str) -> None:
    before = listing(table)
    r = run("properties", "set", table, "ok.key=1", pair)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and pair.split("=")[0] in lines[0] and r.stdout == ""
    assert listing(table) == before


def test_create_with_an_invalid_property_creates_nothing(tmp_path: Path) -> None:
    loc = str(tmp_path / "t")
    r = run("create", loc, "--schema", "id long", "--property", "commit.retry.num-retries=abc")
    assert r.returncode == 2 and "commit.retry.num-retries" in r.stderr
    assert not os.path.exists(os.path.join(loc, "metadata", "v1.metadata.json"))


def test_valid_values_are_stored_as_given(table: str) -> None:
    r = run("properties", "set", table, "write.parquet.compression-codec=ZSTD",
            "write.metadata.metrics.column.name=truncate(8)", "my.tag=anything", "--json")
    assert r.returncode == 0, r.stderr
    props = json.loads(r.stdout)["properties"]
    assert props["write.parquet.compression-codec"] == "ZSTD" and props["my.tag"] == "anything"


def _hand_edit(loc: str, **props: str) -> None:
    """Break the table the way a hand edit of its newest metadata file would."""
    t = Table.load(loc)
    path = t.metadata_location
    obj = json.loads(Path(path).read_text())
    obj["properties"].update(props)
    Path(path).write_text(json.dumps(obj))


def test_a_broken_property_never_blocks_the_command_that_fixes_it(table: str) -> None:
    _hand_edit(table, **{"commit.retry.num-retries": "abc", "write.metadata.previous-versions-max": "x"})
    r = run("properties", "set", table, "other=1", "--json")
    assert r.returncode == 0, r.stderr
    warnings = json.loads(r.stdout)["warnings"]
    assert any("commit.retry.num-retries='abc'" in w and "default 4" in w for w in warnings)
    r = run("properties", "unset", table, "commit.retry.num-retries")
    assert r.returncode == 0, r.stderr
    assert "warning: table property commit.retry.num-retries='abc'" in r.stderr
    r = run("properties", "set", table, "write.metadata.previous-versions-max=5")
    assert r.returncode == 0, r.stderr
    props = Table.load(table).metadata.properties
    assert "commit.retry.num-retries" not in props and props["write.metadata.previous-versions-max"] == "5"
