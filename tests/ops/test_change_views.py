"""Metadata changes return result objects that know their JSON view (the CLI only prints it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from icectl.ops.metadata.create import create_table
from icectl.ops.metadata.schema import SchemaChange, evolve_schema
from icectl.ops.metadata.properties import (
    FormatVersionChange,
    PropertiesChange,
    set_properties,
    show_properties,
    unset_properties,
    upgrade_table,
)
from icectl.spec.types import LONG
from icectl.table.table import Table

BASE_KEYS = ["location", "committed", "dry-run", "metadata-file", "warnings"]


@pytest.fixture()
def loc(tmp_path: Path) -> str:
    loc = str(tmp_path / "t")
    create_table(loc, schema_text="id int not null, name string", format_version=1)
    return loc


def test_properties_views(loc: str) -> None:
    r = set_properties(Table.load(loc), {"b": "2", "a": "1"})
    assert isinstance(r, PropertiesChange)
    view = r.to_json()
    assert list(view) == BASE_KEYS + ["format-version", "properties"]
    assert view["committed"] and view["metadata-file"].endswith("v2.metadata.json")
    assert list(view["properties"])[-2:] == ["b", "a"]  # the table's order
    dry = unset_properties(Table.load(loc), ["a"], dry_run=True).to_json()
    assert dry["committed"] is False and dry["metadata-file"] is None and "a" not in dry["properties"]
    listed = show_properties(Table.load(loc)).to_json()
    assert listed == {"location": loc, "format-version": 1, "properties": view["properties"]}
    json.dumps(listed)


def test_upgrade_view(loc: str) -> None:
    r = upgrade_table(Table.load(loc), 2)
    assert isinstance(r, FormatVersionChange)
    view = r.to_json()
    assert list(view) == BASE_KEYS + ["previous-format-version", "format-version"]
    assert (view["previous-format-version"], view["format-version"]) == (1, 2)


def test_schema_change_view(loc: str) -> None:
    r = evolve_schema(Table.load(loc), lambda u: u.add_column(None, "x", LONG), dry_run=True)
    assert isinstance(r, SchemaChange)
    view = r.to_json()
    assert list(view) == BASE_KEYS + ["previous-schema-id", "last-column-id", "schema"]
    assert view["previous-schema-id"] == 0 and view["last-column-id"] == 3
    assert [c["name"] for c in view["schema"]["columns"]] == ["id", "name", "x"]
    json.dumps(view)
