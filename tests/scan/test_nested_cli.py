"""Nested columns through `icectl scan`, `plan` and `delete`, run as a user runs them (a child
process): struct fields shown by their current names in every output format, dotted --columns,
filters on struct fields, ``is [not] null`` on struct, list and map columns, and files written
before the structs evolved (a nested field added, one renamed, one promoted int -> long).

Expected rows come from a small model of the table (plain Python over the rows written), not
from icectl."""

from __future__ import annotations

import csv
import io
import json
import subprocess
from pathlib import Path
from typing import Any, Callable

import pyarrow.parquet as pq
import pytest
from clirun import icectl as run
from support.tables import empty_table

SCHEMA = ("id long, info struct<a: int, b: string>, tags list<string>, m map<string, int>, "
          "pts list<struct<x: int, y: int>>")

# written before the evolution (names of the first schema)
OLD = [
    {"id": 1, "info": {"a": 5, "b": "x"}, "tags": ["a", "b"], "m": {"k": 1},
     "pts": [{"x": 1, "y": 2}]},
    {"id": 2, "info": None, "tags": None, "m": None, "pts": None},
    {"id": 3, "info": {"a": None, "b": "z"}, "tags": [], "m": {}, "pts": [None, {"x": 3, "y": None}]},
    {"id": 4, "info": {"a": 50, "b": None}, "tags": [None], "m": {"q": 7}, "pts": []},
    {"id": 5, "info": {"a": -41, "b": "w"}, "tags": ["c"], "m": {"a": 1, "b": 2},
     "pts": [{"x": -1, "y": -2}]},
]
# written after: info.a renamed to aa and promoted to long, info.c added; pts.x renamed to xx,
# pts.y promoted to long, pts.z added
NEW = [
    {"id": 6, "info": {"aa": 7_000_000_000, "b": "n", "c": 9}, "tags": ["z"], "m": {"a": 2},
     "pts": [{"xx": 1, "y": 8_000_000_000, "z": "q"}]},
    {"id": 7, "info": {"aa": 40, "b": None, "c": None}, "tags": None, "m": None, "pts": None},
    {"id": 8, "info": None, "tags": ["n"], "m": {"z": 0}, "pts": [{"xx": None, "y": None, "z": None}]},
]


def _current(row: dict[str, Any]) -> dict[str, Any]:
    """A row as the evolved schema shows it (the model: renamed fields, missing ones null)."""
    info = row["info"]
    if info is not None and "a" in info:
        info = {"aa": info["a"], "b": info["b"], "c": None}
    pts = row["pts"]
    if pts is not None:
        pts = [None if p is None else
               {"xx": p.get("xx", p.get("x")), "y": p["y"], "z": p.get("z")} for p in pts]
    m = row["m"]
    return {"id": row["id"], "info": info, "tags": row["tags"],
            "m": None if m is None else {"keys": list(m), "values": list(m.values())},
            "pts": pts}


EXPECTED = [_current(r) for r in OLD + NEW]


def icectl(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    r = run(*args)
    if check:
        assert r.returncode == 0, r.stderr
    return r



def _write(loc: str, tmp: Path, rows: list[dict], name: str) -> None:
    src = tmp / f"{name}.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    icectl("write", loc, str(src))


def build(tmp: Path) -> str:
    loc = empty_table(tmp / "t", SCHEMA, partition="bucket(2, id)").location
    _write(loc, tmp, OLD[:3], "old1")
    _write(loc, tmp, OLD[3:], "old2")
    for change in (["add", loc, "info.c", "long"], ["rename", loc, "info.a", "aa"],
                   ["promote", loc, "info.aa", "long"], ["add", loc, "pts.z", "string"],
                   ["rename", loc, "pts.x", "xx"], ["promote", loc, "pts.y", "long"]):
        icectl("schema", *change)
    _write(loc, tmp, NEW, "new")
    return loc


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> str:
    return build(tmp_path_factory.mktemp("nested"))


def jsonl(loc: str, *args: str) -> list[dict]:
    out = icectl("scan", loc, "--format", "jsonl", *args).stdout.splitlines()
    return sorted((json.loads(line) for line in out), key=lambda r: r["id"])


def test_jsonl_shows_struct_fields_by_current_name_in_lists_and_maps_too(table):
    assert jsonl(table) == EXPECTED


def test_csv_and_table_formats_show_names(table, tmp_path):
    out = icectl("scan", table, "--format", "csv", "--filter", "id = 6").stdout
    rows = list(csv.DictReader(io.StringIO(out)))
    assert json.loads(rows[0]["info"]) == {"aa": 7_000_000_000, "b": "n", "c": 9}
    assert json.loads(rows[0]["pts"]) == [{"xx": 1, "y": 8_000_000_000, "z": "q"}]
    text = icectl("scan", table, "--filter", "id = 1").stdout
    assert '"aa": 5' in text and '"xx": 1' in text and '"6"' not in text
    # the table format written to a file: tab-separated
    target = tmp_path / "rows.tsv"
    icectl("scan", table, "--filter", "id = 5", "--output", str(target))
    header, line = target.read_text().splitlines()
    assert json.loads(dict(zip(header.split("\t"), line.split("\t")))["info"]) == \
        {"aa": -41, "b": "w", "c": None}


def test_parquet_output_has_current_names_and_old_files_values(table, tmp_path):
    target = tmp_path / "out.parquet"
    icectl("scan", table, "--format", "parquet", "--output", str(target))
    t = pq.read_table(target)
    assert t.schema.field("info").type.names == ["aa", "b", "c"]
    got = sorted(t.to_pylist(), key=lambda r: r["id"])
    for row, want in zip(got, EXPECTED):
        m = want["m"]
        want = dict(want, m=None if m is None else list(zip(m["keys"], m["values"])))
        assert row == want


def test_partition_metadata_column_by_partition_field_name(table):
    rows = jsonl(table, "--with-metadata", "--columns", "id")
    assert all(set(r["_partition"]) == {"id_bucket"} for r in rows)
    assert {r["_partition"]["id_bucket"] for r in rows} <= {0, 1}


def _model(pred: Callable[[dict], Any]) -> list[dict]:
    return [r for r in EXPECTED if pred(r)]


def _aa(r: dict) -> Any:
    return None if r["info"] is None else r["info"]["aa"]


FILTERS = [
    ("info.aa >= 40", lambda r: _aa(r) is not None and _aa(r) >= 40),
    ("info.aa < 0 or info.b = 'z'", lambda r: (_aa(r) is not None and _aa(r) < 0)
     or (r["info"] is not None and r["info"]["b"] == "z")),
    ("info.b is null", lambda r: r["info"] is None or r["info"]["b"] is None),
    ("info.c is null", lambda r: r["info"] is None or r["info"]["c"] is None),
    ("info.c = 9", lambda r: r["info"] is not None and r["info"]["c"] == 9),
    ("not (info.aa > 10)", lambda r: _aa(r) is not None and not _aa(r) > 10),
    ("info is null", lambda r: r["info"] is None),
    ("info is not null and tags is not null", lambda r: r["info"] is not None
     and r["tags"] is not None),
    ("tags is null", lambda r: r["tags"] is None),
    ("m is not null", lambda r: r["m"] is not None),
    ("pts is null or m is null", lambda r: r["pts"] is None or r["m"] is None),
    ("INFO.AA in (5, 50)", lambda r: _aa(r) in (5, 50)),
]


@pytest.mark.parametrize("text, pred", FILTERS, ids=[f for f, _ in FILTERS])
def test_filters_on_nested_fields_and_nested_nullness(table, text, pred):
    assert jsonl(table, "--filter", text) == _model(pred)


def test_plan_prunes_by_nested_field_metrics_but_never_on_struct_nullness(table):
    def planned(f: str) -> int:
        return len(json.loads(icectl("plan", table, "--filter", f, "--json").stdout)["files"])

    every = planned("true")
    assert planned("info.aa > 100000") < every  # only the file holding 7e9
    assert planned("info.aa > 9000000000") == 0
    # nullness of a struct, list or map is not decided by its fields' metrics: never pruned
    for f in ("info is null", "info is not null", "tags is null", "m is not null", "pts is null"):
        assert planned(f) == every


def test_dotted_columns_keep_the_struct_with_the_named_fields(table):
    got = jsonl(table, "--columns", "id,info.aa,pts.z", "--filter", "id in (1, 6)")
    assert got == [{"id": 1, "info": {"aa": 5}, "pts": [{"z": None}]},
                   {"id": 6, "info": {"aa": 7_000_000_000}, "pts": [{"z": "q"}]}]
    # order of first mention; two fields of one struct in one column; a whole struct wins
    got = jsonl(table, "--columns", "info.c,id,info.b", "--filter", "id = 6")
    assert got == [{"info": {"b": "n", "c": 9}, "id": 6}]
    assert list(got[0]) == ["info", "id"]
    got = jsonl(table, "--columns", "info.b,info,id", "--filter", "id = 1")
    assert got == [{"info": {"aa": 5, "b": "x", "c": None}, "id": 1}]
    got = jsonl(table, "--columns", "id,m.value,tags.element", "--filter", "id = 5")
    assert got == [{"id": 5, "m": {"keys": ["a", "b"], "values": [1, 2]}, "tags": ["c"]}]


@pytest.mark.parametrize("args, code, words", [
    (["--filter", "info = 3"], 2, "takes only 'is null'"),
    (["--filter", "tags.element = 'a'"], 2, "inside a list or map"),
    (["--filter", "pts.xx > 0"], 2, "inside a list or map"),
    (["--filter", "info.nope = 1"], 3, "info.nope"),
    (["--columns", "info.nope"], 3, "info.nope"),
])
def test_bad_nested_names_are_one_line_errors(table, args, code, words):
    r = icectl("scan", table, *args, check=False)
    assert r.returncode == code, r.stderr
    assert words in r.stderr and "Traceback" not in r.stderr and r.stdout == ""


@pytest.mark.parametrize("mode", ["merge-on-read", "copy-on-write"])
@pytest.mark.parametrize("text, pred", [FILTERS[0], ("info is null or m is null",
                                         lambda r: r["info"] is None or r["m"] is None)],
                         ids=["aa>=40", "struct-or-map-null"])
def test_delete_by_nested_filter_leaves_the_rest(tmp_path, mode, text, pred):
    loc = build(tmp_path)
    icectl("delete", loc, "--filter", text, "--mode", mode)
    assert jsonl(loc) == [r for r in EXPECTED if not pred(r)]
