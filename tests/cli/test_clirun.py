"""tests/clirun.py: an in-process run is what a real process gives, and leaves nothing behind."""

from __future__ import annotations

import gc
import json
import os
import signal
from pathlib import Path

from clirun import icectl, icectl_process

from icectl.io.manifest import cache as manifest_cache
from support.tables import empty_table, write_text


def _table(tmp_path: Path) -> str:
    t = empty_table(tmp_path / "wh" / "db" / "t", "id long, cat string", partition="cat")
    write_text(t, "id,cat\n1,a\n2,b\n3,\n")
    return t.location


def test_in_process_and_a_real_process_agree(tmp_path: Path) -> None:
    loc = _table(tmp_path)
    for args in (["plan", loc, "--json"],                       # cli/entry.py's fast path
                 ["plan", loc, "--filter", "id >", "--json"],   # its failure
                 ["plan", str(tmp_path / "nothing")],           # not found, exit 3
                 ["scan", loc, "--format", "jsonl"],            # typer's path
                 ["nosuch"]):                                   # typer's usage error
        here, child = icectl(*args), icectl_process(*args)
        assert (here.returncode, here.stderr) == (child.returncode, child.stderr), args
        if args[0] == "plan" and here.returncode == 0:  # the plan's timings differ, not its files
            assert json.loads(here.stdout)["files"] == json.loads(child.stdout)["files"]
        else:
            assert here.stdout == child.stdout, args
    assert icectl("plan", str(tmp_path / "nothing")).returncode == 3


def test_a_run_leaves_the_process_as_it_found_it(tmp_path: Path) -> None:
    loc = _table(tmp_path)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    cwd, env = os.getcwd(), dict(os.environ)
    r = icectl("plan", loc, "--no-cache", "--json")  # the fast path turns the collector off
    assert r.returncode == 0, r.stderr
    assert gc.isenabled() and manifest_cache.enabled()
    r = icectl("inspect", "table", loc, "--field", "location")
    assert r.returncode == 0 and r.stdout.strip() == loc, r.stderr
    r = icectl("inspect", "table", loc, "--json")  # --field was this run's only
    assert json.loads(r.stdout)["location"] == loc
    r = icectl("list", "--json", env={"ICECTL_WAREHOUSE": str(tmp_path / "wh")},
               cwd=tmp_path / "wh")
    assert r.returncode == 0 and "db.t" in r.stdout, r.stderr
    assert os.getcwd() == cwd and dict(os.environ) == env
    assert {s: signal.getsignal(s) for s in handlers} == handlers


def test_cwd_and_input_reach_the_command(tmp_path: Path) -> None:
    loc = _table(tmp_path)
    r = icectl("write", loc, "-", "--format", "csv", "--json", input="id,cat\n9,z\n")
    assert r.returncode == 0 and json.loads(r.stdout)["added-records"] == 1, r.stderr
    r = icectl("create", "rel/t", "--schema", "id long", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "rel" / "t" / "metadata").is_dir()
