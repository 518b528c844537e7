"""`icectl check` run as a user runs it: text lines, JSON, exit codes 0 / 10 / 3."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from clirun import icectl
from support.tables import empty_table


def run(*args: str) -> subprocess.CompletedProcess:
    return icectl(*args, env={"NO_COLOR": "1", "ICECTL_WAREHOUSE": None})



def make(wh: Path) -> Path:
    loc = wh / "db" / "t"
    empty_table(loc, "id long, cat string", partition="cat")
    data = wh / "rows.csv"
    data.write_text("id,cat\n1,a\n2,b\n3,a\n")
    assert run("write", str(loc), str(data)).returncode == 0
    return loc


def test_clean_table_text_and_json(tmp_path: Path) -> None:
    loc = make(tmp_path)
    r = run("check", "db.t", "--warehouse", str(tmp_path), "--deep")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith("clean: 0 error(s), 0 warning(s) in ")
    assert "1 snapshot(s)" in lines[0] and "2 data file(s)" in lines[0] and "2 file(s) verified" in lines[0]
    r = run("check", str(loc), "--json")
    out = json.loads(r.stdout)
    assert r.returncode == 0 and list(out) == ["table", "clean", "errors", "warnings", "problems", "checked"]
    assert out["clean"] is True and out["checked"]["files-verified"] == 0


def test_problems_print_one_a_line_and_exit_10(tmp_path: Path) -> None:
    loc = make(tmp_path)
    meta = sorted((loc / "metadata").glob("v*.metadata.json"))[-1]
    obj = json.loads(meta.read_text())
    obj["last-column-id"] = 1
    obj["properties"]["commit.retry.num-retries"] = "often"
    meta.write_text(json.dumps(obj))
    data = next((loc / "data").rglob("*.parquet"))
    data.unlink()
    r = run("check", str(loc), "--deep")
    assert r.returncode == 10, r.stderr
    *problems, summary = r.stdout.splitlines()
    fields = [line.split("\t") for line in problems]
    assert all(len(f) == 4 and f[0] == "error" for f in fields), problems
    assert {f[1] for f in fields} == {"last-column-id-too-low", "invalid-property", "file-missing"}
    assert ["error", "file-missing", str(data)] == fields[-1][:3]
    assert summary.startswith("problems found: 3 error(s), 0 warning(s)")
    r = run("check", str(loc), "--json")
    out = json.loads(r.stdout)
    assert r.returncode == 10 and out["errors"] == 2 and out["clean"] is False
    assert {p["code"] for p in out["problems"]} == {"last-column-id-too-low", "invalid-property"}


def test_no_table_is_exit_3(tmp_path: Path) -> None:
    r = run("check", str(tmp_path / "missing"))
    assert r.returncode == 3 and r.stdout == ""
    assert r.stderr.startswith("icectl: error: no Iceberg table at")
