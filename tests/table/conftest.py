from __future__ import annotations

import pytest

from icectl.spec.metadata import new_table_metadata
from icectl.spec.schema import Schema

FAST_RETRY = {
    "commit.retry.num-retries": "4",
    "commit.retry.min-wait-ms": "1",
    "commit.retry.max-wait-ms": "5",
}


def make_metadata(location: str, version: int = 2, **props: str):
    schema = Schema.from_json({"type": "struct", "fields": [
        {"id": 1, "name": "id", "required": True, "type": "long"},
        {"id": 2, "name": "data", "required": False, "type": "string"}]})
    properties = {"format-version": str(version), **FAST_RETRY, **props}
    return new_table_metadata(schema, location=location, properties=properties)


@pytest.fixture
def location(tmp_path):
    return str(tmp_path / "wh" / "db" / "t")


@pytest.fixture
def make_md():
    return make_metadata
