"""`icectl schema|partition|sort-order|properties|upgrade`: results, --dry-run, refusals that
leave the table's metadata directory byte for byte as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import icectl

from icectl.ops.metadata.create import create_table

SCHEMA = "id int not null, name string, loc struct<lat: float, lon: float>, tags list<string>, ts timestamptz, d date"


def invoke(*args: str):
    return icectl(*args)


def ok_json(*args: str) -> dict:
    r = invoke(*args, "--json")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def snapshot_dir(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.fixture()
def table(tmp_path: Path) -> str:
    loc = str(tmp_path / "db" / "t")
    create_table(loc, schema_text=SCHEMA, partition_text="days(ts), bucket(4, id)", format_version=2)
    return loc


def columns(view: dict) -> dict[str, dict]:
    return {c["name"]: c for c in view["schema"]["columns"]}


def test_schema_changes_and_json(table: str) -> None:
    v = ok_json("schema", "add", table, "loc.alt", "double", "--doc", "altitude")
    assert v["committed"] and v["metadata-file"].endswith("v2.metadata.json")
    assert columns(v)["loc.alt"] == {"id": 10, "name": "loc.alt", "type": "double", "required": False,
                                     "doc": "altitude"}
    assert v["last-column-id"] == 10 and v["schema"]["schema-id"] == 1
    v = ok_json("schema", "add", table, "region", "string", "--after", "id")
    assert [c["name"] for c in v["schema"]["columns"] if "." not in c["name"]][:3] == ["id", "region", "name"]
    v = ok_json("schema", "rename", table, "name", "full_name")
    assert columns(v)["full_name"]["id"] == 2
    v = ok_json("schema", "promote", table, "loc.lat", "double")
    assert columns(v)["loc.lat"]["type"] == "double"
    v = ok_json("schema", "optional", table, "id")
    assert columns(v)["id"]["required"] is False
    v = ok_json("schema", "doc", table, "ts", "event time")
    assert columns(v)["ts"]["doc"] == "event time"
    v = ok_json("schema", "move", table, "ts", "--first")
    assert v["schema"]["columns"][0]["name"] == "ts"
    v = ok_json("schema", "drop", table, "tags", "loc.lon")
    assert "tags" not in columns(v) and "loc.lon" not in columns(v)


def test_identifier_fields(table: str) -> None:
    v = ok_json("schema", "identifier-fields", "set", table, "id")
    assert v["schema"]["identifier-fields"] == ["id"]
    v = ok_json("schema", "identifier-fields", "unset", table)
    assert v["schema"]["identifier-fields"] == []


def test_apply_file_is_one_commit(table: str, tmp_path: Path) -> None:
    f = tmp_path / "changes.json"
    f.write_text(json.dumps([
        {"op": "add", "column": "region", "type": "string", "first": True},
        {"op": "rename", "column": "name", "to": "nm"},
        {"op": "promote", "column": "id", "type": "long"},
        {"op": "drop", "column": "tags"},
        {"op": "identifier-fields", "columns": ["id"]},
    ]))
    v = ok_json("schema", "apply", table, str(f))
    assert v["metadata-file"].endswith("v2.metadata.json")
    cols = columns(v)
    assert v["schema"]["columns"][0]["name"] == "region"
    assert cols["id"]["type"] == "long" and "nm" in cols and "tags" not in cols
    assert v["schema"]["identifier-fields"] == ["id"]


def test_dry_run_prints_but_writes_nothing(table: str) -> None:
    meta = Path(table) / "metadata"
    before = snapshot_dir(meta)
    v = ok_json("schema", "add", table, "x", "long", "--dry-run")
    assert v["dry-run"] and not v["committed"] and v["metadata-file"] is None
    assert "x" in columns(v)
    v = ok_json("partition", "add", table, "truncate(4, name)", "--dry-run")
    assert v["spec"]["fields"][-1]["name"] == "name_trunc_4"
    r = invoke("sort-order", "set", table, "id desc", "--dry-run")
    assert r.exit_code == 0 and "id desc nulls last" in r.stdout
    assert snapshot_dir(meta) == before


def test_partition_commands(table: str) -> None:
    v = ok_json("partition", "add", table, "truncate(4, name)")
    assert v["spec"]["fields"][-1] == {"field-id": 1002, "name": "name_trunc_4", "source-id": 2,
                                       "source-column": "name", "transform": "truncate[4]"}
    v = ok_json("partition", "rename", table, "name_trunc_4", "prefix")
    assert v["spec"]["fields"][-1]["name"] == "prefix"
    v = ok_json("partition", "replace", table, "ts_day", "hours(ts)")
    assert [f["name"] for f in v["spec"]["fields"]] == ["id_bucket", "prefix", "ts_hour"]
    v = ok_json("partition", "drop", table, "prefix")
    assert [f["field-id"] for f in v["spec"]["fields"]] == [1001, 1003]
    assert v["last-partition-id"] == 1003


def test_sort_order_and_properties_and_upgrade(table: str) -> None:
    v = ok_json("sort-order", "set", table, "id desc nulls last, bucket(4, name)")
    assert v["sort-order"]["order-id"] == 1
    assert v["sort-order"]["string"] == "id desc nulls last, bucket(4, name) asc nulls first"
    v = ok_json("sort-order", "unset", table)
    assert v["sort-order"]["order-id"] == 0 and v["sort-order"]["fields"] == []
    v = ok_json("properties", "set", table, "a=1", "b=2")
    assert v["properties"]["a"] == "1"
    v = ok_json("properties", "unset", table, "a")
    assert "a" not in v["properties"]
    v = ok_json("properties", "list", table)
    assert v["properties"]["b"] == "2"
    v = ok_json("upgrade", table, "--format-version", "3")
    assert v["format-version"] == 3 and v["previous-format-version"] == 2
    md = json.loads((Path(table) / "metadata" / "v6.metadata.json").read_text())
    assert md["format-version"] == 3 and md["next-row-id"] == 0
    v = ok_json("schema", "add", table, "flag", "boolean", "--required", "--default", "true")
    flag = v["schema"]["json"]["fields"][-1]
    assert flag["required"] and flag["initial-default"] is True and flag["write-default"] is True


def test_properties_format_version_upgrades(table: str) -> None:
    v = ok_json("properties", "set", table, "format-version=3")
    assert v["format-version"] == 3 and "format-version" not in v["properties"]


REFUSALS = [
    (("schema", "promote", "{t}", "name", "int"), 5),
    (("schema", "promote", "{t}", "id", "string"), 5),
    (("schema", "drop", "{t}", "id"), 5),                       # bucket source in the current spec
    (("schema", "drop", "{t}", "nope"), 3),
    (("schema", "rename", "{t}", "nope", "x"), 3),
    (("schema", "rename", "{t}", "name", "id"), 5),             # name clash
    (("schema", "add", "{t}", "name", "long"), 5),              # name clash
    (("schema", "add", "{t}", "flag", "boolean", "--required"), 5),
    (("schema", "add", "{t}", "flag", "boolean", "--required", "--default", "true"), 5),  # v2
    (("schema", "add", "{t}", "x", "varchar"), 2),
    (("schema", "add", "{t}", "x", "int", "--default", "abc"), 2),
    (("schema", "add", "{t}", "loc.x", "int", "--after", "id"), 5),   # across structs
    (("schema", "move", "{t}", "loc.lat", "--after", "id"), 5),
    (("schema", "identifier-fields", "set", "{t}", "name"), 5),  # optional
    (("schema", "union", "{t}", "{bad_parquet}"), 2),                # not Parquet: bad input
    (("partition", "add", "{t}", "bucket(4, loc.lat)"), 5),      # bucket on float
    (("partition", "add", "{t}", "hours(d)"), 5),
    (("partition", "add", "{t}", "tags"), 5),                    # inside a list
    (("partition", "add", "{t}", "days(ts)"), 5),                # duplicate
    (("partition", "add", "{t}", "bucket(2, name)", "--name", "ts_day"), 5),
    (("partition", "add", "{t}", "bucket(2,"), 2),
    (("partition", "rename", "{t}", "nope", "x"), 3),
    (("sort-order", "set", "{t}", "bucket(4, loc.lat)"), 5),
    (("properties", "set", "{t}", "uuid=x"), 5),
    (("properties", "set", "{t}", "novalue"), 2),
    (("upgrade", "{t}", "--format-version", "1"), 5),
]


@pytest.mark.parametrize("args,code", REFUSALS, ids=[" ".join(a[:2] + a[3:]) for a, _ in REFUSALS])
def test_refusals_leave_the_table_unchanged(table: str, tmp_path: Path, args, code: int) -> None:
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet")
    meta = Path(table) / "metadata"
    before = snapshot_dir(meta)
    r = invoke(*[a.format(t=table, bad_parquet=bad) for a in args])
    assert r.exit_code == code, r.output
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("icectl: error: "), r.stderr
    assert r.stdout == ""
    assert snapshot_dir(meta) == before


def test_union_with_parquet(table: str, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    f = tmp_path / "new.parquet"
    pq.write_table(pa.table({
        "id": pa.array([1], pa.int64()),
        "name": pa.array(["a"]),
        "score": pa.array([1.5]),
        "loc": pa.array([{"lat": 1.0, "alt": 2}], pa.struct([("lat", pa.float64()), ("alt", pa.int32())])),
    }, schema=pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()),
                         ("score", pa.float64()),
                         ("loc", pa.struct([("lat", pa.float64()), ("alt", pa.int32())]))])), f)
    v = ok_json("schema", "union", table, str(f))
    cols = columns(v)
    assert cols["id"]["type"] == "long" and cols["id"]["required"]  # promoted, still required
    assert cols["loc.lat"]["type"] == "double"
    assert cols["score"] == {"id": 10, "name": "score", "type": "double", "required": False, "doc": None}
    assert cols["loc.alt"]["id"] == 11
    assert v["made-optional"] == []
    assert v["widened"] == [{"column": "id", "from": "int", "to": "long"},
                            {"column": "loc.lat", "from": "float", "to": "double"}]


def test_union_refuses_to_make_a_required_column_optional_unless_asked(table: str, tmp_path: Path) -> None:
    """A file whose column is nullable once turned the table's `not null` column optional without
    a word: refused (exit 5, nothing written) unless --allow-optional, which says what it did."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    f = tmp_path / "nullable.parquet"
    pq.write_table(pa.table({"id": pa.array([1], pa.int32()), "more": pa.array(["x"])}), f)
    meta = Path(table) / "metadata"
    before = snapshot_dir(meta)
    for extra in ([], ["--dry-run"], ["--json"]):
        r = invoke("schema", "union", table, str(f), *extra)
        assert r.exit_code == 5, r.output
        assert r.stdout == ""
        msg = (f"{f} holds required column(s) id as optional: the union would make them "
               "optional (--allow-optional to make them optional)")
        lines = r.stderr.splitlines()
        assert lines[0] == f"icectl: error: {msg}", r.stderr
        if extra == ["--json"]:  # followed by the error as a JSON object
            assert json.loads(lines[1])["error"]["message"] == msg
        else:
            assert len(lines) == 1, r.stderr
    assert snapshot_dir(meta) == before
    r = invoke("schema", "union", table, str(f), "--allow-optional")
    assert r.exit_code == 0, r.output
    assert "made optional: id" in r.stderr.splitlines()
    v = ok_json("schema", "union", table, str(f), "--allow-optional")  # again: nothing left to relax
    assert v["made-optional"] == [] and not columns(v)["id"]["required"]
    assert columns(v)["more"]["required"] is False
    f2 = tmp_path / "nested.parquet"
    (tmp_path / "t2").mkdir()
    loc2 = str(tmp_path / "t2" / "t")
    create_table(loc2, schema_text="id long not null, s struct<k: int not null, v: string>", format_version=2)
    pq.write_table(pa.table({"s": pa.array([{"k": 1}], pa.struct([("k", pa.int32())]))},
                            schema=pa.schema([pa.field("s", pa.struct([("k", pa.int32())]), nullable=False)])), f2)
    r = invoke("schema", "union", loc2, str(f2), "--json")
    assert r.exit_code == 5 and "required column(s) s.k as optional" in r.stderr, r.output
    v = ok_json("schema", "union", loc2, str(f2), "--allow-optional", "--dry-run")
    assert v["made-optional"] == ["s.k"] and v["committed"] is False


def test_text_output(table: str) -> None:
    r = invoke("schema", "add", table, "x", "long")
    assert r.exit_code == 0
    assert "committed schema" in r.stderr
    assert "x" in r.stdout and "long" in r.stdout
