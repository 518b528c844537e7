"""Filters of any size and depth: long chains, deep parentheses, NOT chains, huge IN lists and
megabyte filters parse, bind, plan and print without recursion errors; non-ASCII column names
parse; an empty filter is an error. Run as a user runs icectl (subprocess, no TTY) where the
command line is concerned."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from icectl.errors import InvalidInput
from icectl.expr.binding import bind
from icectl.expr.evaluators import (
    MetricsEvaluator,
    ResidualEvaluator,
    StrictMetricsEvaluator,
    evaluate_row,
)
from icectl.expr.expressions import rewrite_not
from icectl.expr.parser import parse_filter
from icectl.expr.projection import inclusive_projection, strict_projection
from icectl.spec.manifests import DATA, DataFile
from icectl.spec.partitioning import PartitionField, PartitionSpec
from icectl.spec.schema import Schema
from icectl.spec.transforms import IDENTITY, BucketTransform
from icectl.spec.types import LONG, STRING, NestedField
from clirun import icectl as run
from support.tables import empty_table, write_text

SCHEMA = Schema((NestedField(1, "id", LONG, True), NestedField(2, "s", STRING, False)))
SPEC = PartitionSpec(0, (PartitionField(1, 1000, "id_bucket", BucketTransform(8)),
                         PartitionField(2, 1001, "s", IDENTITY)))


def icectl(*args: str) -> subprocess.CompletedProcess:
    return run(*args)



@pytest.fixture(scope="module")
def table(tmp_path_factory) -> str:
    root = tmp_path_factory.mktemp("big")
    t = empty_table(root / "t", "id long not null, s string, catégorie string, 类别 string",
                    partition="bucket(4, id)")
    write_text(t, "id,s,catégorie,类别\n1,a,x,甲\n2,b,y,乙\n3,c,x,丙\n")
    return t.location


BIG = {
    "or400": " or ".join(f"id = {i}" for i in range(400)),
    "or600": " or ".join(f"id = {i}" for i in range(600)),
    "paren250": "(" * 250 + "id = 1" + ")" * 250,
    "not1000": "not " * 1000 + "id = 1",
    "in20000": "id in (" + ", ".join(str(i) for i in range(20000)) + ")",
}


@pytest.mark.parametrize("name", list(BIG))
def test_big_filters_plan_through_the_cli(table: str, name: str) -> None:
    r = icectl("plan", table, "--filter", BIG[name], "--explain", "--json")
    assert r.returncode == 0, r.stderr[-500:]
    view = json.loads(r.stdout)
    assert view["summary"]["data-files-matched"] >= 1  # every filter selects id 1
    r = icectl("plan", table, "--filter", BIG[name])
    assert r.returncode == 0, r.stderr[-500:]


@pytest.mark.parametrize("text, rows", [("catégorie = 'x'", 2), ("类别 = '乙'", 1),
                                         ("CATÉGORIE in ('y') or 类别 = '甲'", 2)])
def test_non_ascii_column_names(table: str, text: str, rows: int) -> None:
    r = icectl("plan", table, "--filter", text, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["summary"]["data-files-matched"] >= 1
    e = parse_filter(text)
    assert parse_filter(str(e)) == e


@pytest.mark.parametrize("text", ["", "   ", "\t\n"])
def test_empty_filter_is_an_error(table: str, text: str) -> None:
    r = icectl("plan", table, "--filter", text)
    assert r.returncode == 2, (r.returncode, r.stdout)
    assert "--filter: invalid filter at position 1: empty filter" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert r.stdout == ""


def _every_pass(text: str) -> None:
    """Parse, bind, rewrite, project, evaluate and print ``text``."""
    e = parse_filter(text)
    b = rewrite_not(bind(e, SCHEMA))
    inc = inclusive_projection(b, SPEC, SCHEMA)
    strict = strict_projection(b, SPEC, SCHEMA)
    df = DataFile(DATA, "f", "PARQUET", (3, "a"), 10, 100, value_counts={1: 10},
                  null_value_counts={1: 0}, lower_bounds={1: (1).to_bytes(8, "little")},
                  upper_bounds={1: (9).to_bytes(8, "little")})
    MetricsEvaluator(b).eval(df)
    StrictMetricsEvaluator(b).eval(df)
    ResidualEvaluator(SPEC, b, SCHEMA).residual_for((3, "a"))
    evaluate_row(b, {1: 5, 2: "a"})
    for x in (e, b, inc, strict):
        assert str(x)
    assert b == rewrite_not(bind(parse_filter(text), SCHEMA))
    assert hash(b) == hash(rewrite_not(bind(parse_filter(text), SCHEMA)))


DEEP = {
    "parens": "(" * 5000 + "id = 1" + ")" * 5000,
    "nots": "not " * 5001 + "(id = 1 or s = 'a')",
    "nested": "".join(f"(id = {i} or (s = 'x' and " for i in range(3000)) + "id = 0"
              + "))" * 3000,
    "not-nested": "".join(f"not (id = {i} and " for i in range(3000)) + "s = 'b'" + ")" * 3000,
}


@pytest.mark.parametrize("name", list(DEEP))
def test_depth_does_not_use_the_call_stack(name: str) -> None:
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(250)  # every pass must work with a small stack, whatever the depth
    try:
        _every_pass(DEEP[name])
    finally:
        sys.setrecursionlimit(limit)


def _long_filter(terms: int) -> str:
    text = " or ".join(f"(id = {i} and s = 'v{i}')" for i in range(terms))
    return text + " or s in (" + ", ".join(f"'w{i}'" for i in range(terms // 2)) + ")"


def _check_long(terms: int) -> None:
    b = rewrite_not(bind(parse_filter(_long_filter(terms)), SCHEMA))
    assert str(b).count(" or ") == terms
    assert ResidualEvaluator(SPEC, b, SCHEMA).residuals_for([(1, "v7"), (2, "zz")])[1] is not None


def test_a_long_filter() -> None:
    _check_long(5000)  # about 150 kB, more than one command-line argument can hold


@pytest.mark.slow
def test_a_megabyte_filter() -> None:
    assert len(_long_filter(33000)) > 1_000_000
    _check_long(33000)


def test_errors_stay_one_line_invalid_input() -> None:
    for text in ("(" * 3000, "not " * 3000, "id = 1" + ")" * 3000, "id in (" + "1, " * 5000):
        with pytest.raises(InvalidInput) as info:
            parse_filter(text)
        assert "\n" not in str(info.value)
