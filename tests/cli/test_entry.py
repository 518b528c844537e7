"""The direct path of `icectl plan` (icectl/cli/entry.py): its parser gives the command the values
typer's parser gives, on every command line it takes; a run through it prints, fails and exits as
the typer command does; and it loads neither typer nor Avro nor Arrow code on a warm cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icectl.cli.app import _base_type, load_module_commands
from icectl.cli.entry import PLAN_OPTIONS, PLAN_SHORT, WAREHOUSE_ENV, parse_plan_args

from tests.cli.plan_support import append, make

_PLAN = load_module_commands("plan_cmd")["plan"]


def typer_values(args: list[str]) -> dict | None:
    """What typer's parser hands the plan command (None: it refuses the command line)."""
    try:
        ctx = _PLAN.make_context("plan", list(args))
    except Exception:  # noqa: BLE001 - usage errors and --help
        return None
    params = dict(ctx.params)
    assert params.pop("fields") in ((), None, [])
    return params


def test_the_option_table_is_the_commands() -> None:
    longs = {}
    shorts = {}
    for p in _PLAN.params:
        if p.param_type_name != "option" or p.name == "fields":
            continue
        opts = [o for o in p.opts if o.startswith("--")]
        assert len(opts) == 1, p.opts
        base, many = _base_type(p.type_descriptor.annotation)
        kind = "texts" if many and base is str else {bool: "flag", int: "int", str: "text"}[base]
        longs[opts[0]] = (p.name, kind)
        shorts.update({o: opts[0] for o in p.opts if not o.startswith("--")})
    assert PLAN_OPTIONS == longs
    assert PLAN_SHORT == shorts


def test_the_plan_body_takes_the_commands_options() -> None:
    """plan_run.run_plan (run by both paths) has the command's parameters, with its defaults."""
    import inspect

    from icectl.cli.plan_run import run_plan

    body = {n: p.default for n, p in inspect.signature(run_plan).parameters.items()}
    body["table"] = None  # required in both
    command = {p.name: p.default for p in _PLAN.params
               if p.name not in ("fields", "storage_options", "catalog", "catalog_uri")}
    assert body == command


TAKEN = [
    ["t"],
    ["t", "--json"],
    ["--json", "t", "--filter", "id > 5"],
    ["t", "-f", "ts >= '2024-01-01'", "--json", "--json"],
    ["t", "--filter=id between 1 and 3", "--format", "jsonl"],
    ["t", "--filter=", "--summary"],
    ["t", "--snapshot", "12", "--split-size=  7 ", "--lookback", "+3", "--workers=-1"],
    ["t", "--from-snapshot", "1", "--to-snapshot", "2", "--open-file-cost", "007"],
    ["t", "-w", "wh", "--ref", "main", "--as-of", "36h", "--columns", "a,b"],
    ["t", "--warehouse=", "--tasks", "--explain", "--case-sensitive", "--no-cache"],
    ["-", "--filter", "x = 'a b'"],
    ["t", "--filter", "id > 1", "--filter", "id > 2"],
    ["db.t", "--warehouse", "/w"],
    ["t", "--storage-option", "anon=true", "--storage-option=endpoint_url=http://h:9000"],
    ["t", "--storage-option", "client_kwargs={\"region_name\": \"x\"}", "--json"],
]
# lines the direct path leaves to typer
LEFT = [
    [], ["t", "u"], ["t", "--help"], ["t", "-h"], ["t", "--field", "summary"], ["t", "--"],
    ["t", "--snapshot", "x"], ["t", "--snapshot", "1.5"], ["t", "--snapshot"], ["t", "--filter"],
    ["t", "--json=1"], ["t", "-fid > 1"], ["t", "--filter", "-x"], ["t", "--nope"], ["--json"],
    ["t", "--snapshot", "١٢"], ["t", "--workers", "1_000"], ["t", "--workers", "-1"],
]


@pytest.mark.parametrize("args", TAKEN, ids=[" ".join(c) for c in TAKEN])
def test_the_direct_parser_gives_what_typer_gives(args, monkeypatch) -> None:
    monkeypatch.delenv(WAREHOUSE_ENV, raising=False)
    got = parse_plan_args(args)
    assert got is not None and got == typer_values(args)


@pytest.mark.parametrize("args", LEFT, ids=[" ".join(c) or "(none)" for c in LEFT])
def test_other_lines_are_left_to_typer(args) -> None:
    assert parse_plan_args(args) is None


@pytest.mark.parametrize("env", ["", "/env-wh"])
def test_the_warehouse_variable_as_typer_reads_it(env, monkeypatch) -> None:
    monkeypatch.setenv(WAREHOUSE_ENV, env)
    for args in (["db.t"], ["db.t", "-w", "/given"], ["db.t", "--warehouse="]):
        got = parse_plan_args(args)
        assert got is not None and got == typer_values(args)


_words = st.sampled_from(sorted(PLAN_OPTIONS) + sorted(PLAN_SHORT) + [
    "t", "db.t", "-", "--", "--help", "--field", "--filter=", "--workers=2", "--snapshot= 9",
    "id > 1", "12", " 12 ", "+4", "-4", "x", "1.0", "", "--json=yes"])


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.lists(_words, max_size=7))
def test_the_direct_parser_agrees_with_typer_on_any_line(args) -> None:
    saved = os.environ.pop(WAREHOUSE_ENV, None)
    try:
        got = parse_plan_args(args)
        if got is not None:
            assert got == typer_values(args), args
    finally:
        if saved is not None:
            os.environ[WAREHOUSE_ENV] = saved


def _run(cwd, direct: bool, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    code = ("import sys; sys.argv[0] = 'icectl'; from icectl.cli.entry import main; main()" if direct
            else "import sys; sys.argv[0] = 'icectl'; from icectl.cli.app import main; main()")
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd, env=env)


def test_a_plan_run_directly_is_the_typer_commands_run(tmp_path) -> None:
    loc = make(tmp_path)
    for k, cat in enumerate(["a", "b", "a"]):
        append(tmp_path, loc, f"f{k}.parquet", [k * 10 + 1, k * 10 + 2], cat)
    lines = [
        ["plan", loc, "--json"],
        ["plan", loc, "--filter", "cat = 'a' and id > 1", "--json"],
        ["plan", loc, "-f", "id < 15"],
        ["plan", loc, "--format", "jsonl", "--filter", "id > 1"],
        ["plan", loc, "--summary", "--json"],
        ["plan", loc, "--tasks", "--explain", "--filter", "cat = 'b'"],
        ["plan", loc, "--filter", "nope > 1", "--json"],  # unknown column: exit 3
        ["plan", loc, "--filter", "id >"],  # bad filter
        ["plan", loc, "--workers", "0"],  # bad value: exit 2
        ["plan", loc, "--format", "xml"],
        ["plan", loc, "--to-snapshot", "5"],
        ["plan", str(tmp_path / "missing"), "--json"],
        ["plan", "db.t", "--json"],  # a DB.TABLE name without a warehouse
    ]
    for args in lines:
        assert parse_plan_args(args[1:]) is not None, args
        a = _run(tmp_path, True, *args)
        b = _run(tmp_path, False, *args)
        assert (a.returncode, a.stdout, a.stderr) == (b.returncode, b.stdout, b.stderr), args
    assert json.loads(_run(tmp_path, True, "plan", loc, "--json").stdout)["summary"][
        "data-files-matched"] == 3
    codes = [_run(tmp_path, True, *args).returncode for args in lines[-7:]]
    assert codes[0] == 3 and codes[2] == 2 and 0 not in codes


def test_a_warm_plan_loads_no_typer_avro_or_arrow_code(tmp_path) -> None:
    loc = make(tmp_path)
    append(tmp_path, loc, "f.parquet", [1, 2], "a")
    env = dict(os.environ, ICECTL_CACHE_DIR=str(tmp_path / "cache"))
    first = subprocess.run([sys.executable, "-m", "icectl", "plan", loc, "--json"],
                           capture_output=True, text=True, timeout=120, env=env)
    assert first.returncode == 0, first.stderr
    r = subprocess.run([sys.executable, "-X", "importtime", "-m", "icectl", "plan", loc,
                        "--filter", "id > 0", "--json"], capture_output=True, text=True,
                       timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    assert len(json.loads(r.stdout)["files"]) == len(json.loads(first.stdout)["files"]) == 1
    modules = {line.split("|")[-1].strip().split(".")[0] for line in r.stderr.splitlines()
               if line.startswith("import time:")}
    assert "icectl" in modules
    assert not modules & {"typer", "click", "rich", "fastavro", "pyarrow", "pydantic"}, modules
