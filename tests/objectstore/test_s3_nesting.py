"""Tables never nest, on S3 (moto's server): create and register refuse a location at, above or
below a table, writing no key; orphans --delete, expire and drop --purge on a table with another
table nested in its location keep every key of that table."""

from __future__ import annotations

import json

import pytest

from icectl.io.storage.files import FileIO
from icectl.ops.metadata.create import build_create_metadata
from icectl.table.table import Table

SCHEMA = "id long, v string"
UUID = "5d1c0a6e-8b36-4f4c-9a53-0b2e8c3f1e11"
FUTURE = "2100-01-01T00:00:00Z"


def _csv(tmp_path, name: str, ids: list[int]):
    p = tmp_path / name
    p.write_text("id,v\n" + "".join(f"{i},v{i}\n" for i in ids))
    return str(p)


def _outer_around(s3, loc: str) -> None:
    """A table at ``loc`` around another one (create refuses it: made as another tool would)."""
    Table.create(loc, build_create_metadata(loc, schema_text=SCHEMA), FileIO(s3.options()))


def test_create_refuses_at_above_and_below_a_table(s3) -> None:
    b = s3.new_bucket()
    s3.run("create", f"s3://{b}/w/db/inner", "--schema", SCHEMA)
    before = s3.keys(b)
    for loc, code, says in [
        (f"s3://{b}/w/db/inner", 4, "a table already exists at"),
        (f"s3://{b}/w", 5, f"the table at s3://{b}/w/db/inner is inside it"),
        (f"s3://{b}/w/db", 5, f"the table at s3://{b}/w/db/inner is inside it"),
        (f"s3://{b}", 5, f"the table at s3://{b}/w/db/inner is inside it"),
        (f"s3://{b}/w/db/inner/x", 5, f"it is inside the table at s3://{b}/w/db/inner"),
        (f"s3://{b}/w/db/inner/data/y", 5, f"it is inside the table at s3://{b}/w/db/inner"),
    ]:
        r = s3.run("create", loc, "--schema", SCHEMA, check=False)
        assert r.returncode == code, (loc, r.stderr)
        [line] = r.stderr.strip().splitlines()
        assert says in line, line
    assert s3.keys(b) == before  # no key written
    s3.run("create", f"s3://{b}/w/db/inner2", "--schema", SCHEMA)  # beside (a name starting alike)


@pytest.mark.parametrize("form", [f"00001-{UUID}.metadata.json", "v1.gz.metadata.json"])
def test_a_table_above_is_found_by_any_metadata_name(s3, form: str) -> None:
    b = s3.new_bucket()
    s3.put(b, f"w/metadata/{form}", b"{}")
    r = s3.run("create", f"s3://{b}/w/db/t", "--schema", SCHEMA, check=False)
    assert r.returncode == 5 and f"inside the table at s3://{b}/w" in r.stderr
    assert s3.keys(b) == [f"w/metadata/{form}"]


def test_register_below_a_table_is_refused(s3) -> None:
    b = s3.new_bucket()
    loc = f"s3://{b}/db/t"
    s3.run("create", loc, "--schema", SCHEMA)
    fs = s3.fs()
    catalog_key = f"db/t/metadata/00001-{UUID}.metadata.json"  # as a catalog names its files
    s3.put(b, catalog_key, fs.cat_file(f"{b}/db/t/metadata/v1.metadata.json"))
    for k in ("db/t/metadata/v1.metadata.json", "db/t/metadata/version-hint.text"):
        fs.rm_file(f"{b}/{k}")
    _outer_around(s3, f"{loc}/nested")
    before = s3.keys(b)
    r = s3.run("register", loc, "--metadata", f"s3://{b}/{catalog_key}", check=False)
    assert r.returncode == 5 and f"the table at {loc}/nested is inside it" in r.stderr
    assert s3.keys(b) == before


def test_deleting_commands_keep_a_nested_tables_keys(s3, tmp_path) -> None:
    b = s3.new_bucket()
    outer, inner = f"s3://{b}/w", f"s3://{b}/w/db/inner"
    s3.run("create", inner, "--schema", SCHEMA)
    s3.run("write", inner, _csv(tmp_path, "i.csv", [1, 2]))
    _outer_around(s3, outer)
    s3.run("write", outer, _csv(tmp_path, "o.csv", [100]))
    inner_data = [k for k in s3.keys(b, "w/db/inner/data/")]
    s3.run("append", outer, f"s3://{b}/{inner_data[0]}")  # registered in place, then unneeded
    s3.run("delete", outer, "--filter", "id < 100")
    s3.put(b, "w/data/stray.parquet", b"orphan")
    inner_keys = s3.keys(b, "w/db/inner/")
    rows = s3.run("scan", inner, "--format", "csv").stdout

    out = json.loads(s3.run("orphans", outer, "--older-than", FUTURE, "--delete", "--allow-recent",
                            "--json").stdout)
    assert f"s3://{b}/w/data/stray.parquet" in out["orphan-files"]
    assert "w/data/stray.parquet" not in s3.keys(b)
    assert s3.keys(b, "w/db/inner/") == inner_keys
    assert {s["table"] for s in out["skipped-in-other-tables"]} == {inner}

    out = json.loads(s3.run("expire", outer, "--older-than", FUTURE, "--retain-last", "1", "--json").stdout)
    assert out["expired-snapshots-count"] >= 1
    assert s3.keys(b, "w/db/inner/") == inner_keys
    assert out["skipped-in-other-tables"] == [{"path": f"s3://{b}/{inner_data[0]}", "table": inner}]

    s3.run("drop", outer, "--purge")
    assert s3.keys(b, "w/metadata/") == []
    assert s3.keys(b, "w/db/inner/") == inner_keys
    assert s3.run("scan", inner, "--format", "csv").stdout == rows
