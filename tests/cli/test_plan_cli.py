"""`icectl plan` through the CLI: text and JSON output, --tasks, --explain, time travel,
incremental scans, option errors and exit codes."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from icectl.cli.app import app
from clirun import icectl as run
from tests.cli.plan_support import append, make

runner = CliRunner()


def test_plan_text_json_tasks_explain(tmp_path) -> None:
    loc = make(tmp_path)
    s1 = append(tmp_path, loc, "a.parquet", [1, 2, 3], "a")
    s2 = append(tmp_path, loc, "b.parquet", [10, 11], "b")

    r = runner.invoke(app, ["plan", loc, "--filter", "cat = 'b' and id > 10"])
    assert r.exit_code == 0, r.output
    assert "b.parquet" not in r.stdout or "cat=b" in r.stdout
    assert "manifests     2 total, 1 scanned, 1 skipped" in r.stdout
    assert "data files    1 of 2" in r.stdout
    assert "id > 10" in r.stdout  # the residual

    r = runner.invoke(app, ["plan", loc, "--filter", "ID >= 2", "--json", "--columns", "id"])
    out = json.loads(r.stdout)
    for key in ("table", "snapshot-id", "schema-id", "filter", "case-sensitive", "columns",
                "incremental", "split-size", "open-file-cost", "lookback", "summary", "files"):
        assert key in out
    assert out["snapshot-id"] == s2 and out["columns"] == ["id"]
    assert out["summary"]["data-files-matched"] == 2 and out["filter"] == "id >= 2"
    f = out["files"][0]
    for key in ("path", "file-format", "spec-id", "partition", "partition-path", "record-count",
                "file-size-in-bytes", "data-sequence-number", "residual", "delete-files"):
        assert key in f
    assert {x["partition"]["cat"] for x in out["files"]} == {"a", "b"}

    r = runner.invoke(app, ["plan", loc, "--tasks", "--json", "--split-size", "1000000", "--open-file-cost", "1", "--lookback", "3"])
    out = json.loads(r.stdout)
    assert out["summary"]["tasks"] == len(out["tasks"]) == 1
    assert sorted(s["path"].rsplit("/", 1)[-1] for s in out["tasks"][0]["splits"]) == [
        "a.parquet", "b.parquet"]
    r = runner.invoke(app, ["plan", loc, "--tasks"])
    assert r.exit_code == 0 and "task" in r.stdout

    r = runner.invoke(app, ["plan", loc, "--filter", "id > 100", "--explain"])
    assert r.exit_code == 0
    assert "skipped" in r.stdout and "upper bound" in r.stdout
    out = json.loads(runner.invoke(app, ["plan", loc, "--filter", "cat = 'a'", "--explain",
                                         "--json"]).stdout)
    kept = {m["kept"] for m in out["explain"]["manifests"]}
    assert kept == {True, False}

    # time travel and incremental
    out = json.loads(runner.invoke(app, ["plan", loc, "--snapshot", str(s1), "--json"]).stdout)
    assert out["summary"]["data-files-matched"] == 1
    out = json.loads(runner.invoke(app, ["plan", loc, "--ref", "main", "--json"]).stdout)
    assert out["summary"]["data-files-matched"] == 2
    out = json.loads(runner.invoke(app, ["plan", loc, "--from-snapshot", str(s1), "--json"]).stdout)
    assert out["incremental"] == {"from-snapshot-id": s1, "to-snapshot-id": s2}
    assert [f["partition"]["cat"] for f in out["files"]] == ["b"]


def test_plan_errors(tmp_path) -> None:
    loc = make(tmp_path)
    append(tmp_path, loc, "a.parquet", [1], "a")
    r = runner.invoke(app, ["plan", loc, "--filter", "id >"])
    assert r.exit_code == 2 and "position" in r.stderr
    r = runner.invoke(app, ["plan", loc, "--filter", "nope = 1"])
    assert r.exit_code == 3  # an unknown column is not found, in every command
    r = runner.invoke(app, ["plan", loc, "--snapshot", "42"])
    assert r.exit_code == 3
    r = runner.invoke(app, ["plan", loc, "--to-snapshot", "42"])
    assert r.exit_code == 2
    r = runner.invoke(app, ["plan", loc, "--as-of", "yesterday-ish"])
    assert r.exit_code == 2
    r = runner.invoke(app, ["plan", str(tmp_path / "missing")])
    assert r.exit_code == 3
    r = runner.invoke(app, ["plan", "--help"])
    assert r.exit_code == 0 and "starts with" in r.stdout and "--explain" in r.stdout


def test_plan_finds_a_38_digit_decimal_partition_value(tmp_path) -> None:
    """Regression: an identity-partitioned decimal(38,2) value with 38 digits was rounded to 28
    by the planner's manifest decoder, so an equality filter planned 0 files."""
    import subprocess
    import sys

    def icectl(*args: str) -> subprocess.CompletedProcess:
        return run(*args, cwd=tmp_path)

    loc = str(tmp_path / "t")
    big = "123456789012345678901234567890123456.78"
    assert icectl("create", loc, "--schema", "id long, x decimal(38,2)",
                  "--partition", "x").returncode == 0
    rows = tmp_path / "rows.csv"
    rows.write_text(f"id,x\n1,{big}\n2,-{big}\n3,-5.00\n")
    r = icectl("write", loc, str(rows))
    assert r.returncode == 0, r.stderr
    for text, expected in ((f"x = {big}", [big]), (f"x = -{big}", [f"-{big}"]),
                           ("x > 123456789012345678901234567890123456.77", [big]),
                           (f"x < -{big[:-1]}7", [f"-{big}"])):
        r = icectl("plan", loc, "--filter", text, "--json")
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        assert [str(f["partition"]["x"]) for f in out["files"]] == expected, text
    # planning reads Avro only: pyarrow stays out of the process (it costs start-up time)
    r = subprocess.run([sys.executable, "-X", "importtime", "-m", "icectl", "plan", loc,
                        "--filter", "x > 0", "--explain"], capture_output=True, text=True,
                       timeout=120, cwd=tmp_path)
    assert r.returncode == 0 and "import time" in r.stderr
    assert "pyarrow" not in r.stderr


def _icectl(cwd, *args: str):  # -> subprocess.CompletedProcess
    return run(*args, cwd=cwd)



def test_plan_jsonl_and_summary_agree_with_the_json_document(tmp_path) -> None:
    loc = make(tmp_path)
    for k, cat in enumerate(["a", "b", "a", "c", "b"]):
        append(tmp_path, loc, f"f{k}.parquet", [k * 10 + 1, k * 10 + 2], cat)
    for flt in ([], ["--filter", "cat = 'a' or id > 40"], ["--filter", "id < 0"]):
        r = _icectl(tmp_path, "plan", loc, *flt, "--json")
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        assert r.stdout.endswith("}\n")
        # --format json is --json, and N workers plan what one does
        assert _icectl(tmp_path, "plan", loc, *flt, "--format", "json").stdout == r.stdout
        assert _icectl(tmp_path, "plan", loc, *flt, "--json", "--workers", "1",
                       "--no-cache").stdout == r.stdout
        assert _icectl(tmp_path, "plan", loc, *flt, "--json", "--workers", "2",
                       "--no-cache").stdout == r.stdout

        lines = _icectl(tmp_path, "plan", loc, *flt, "--format", "jsonl")
        assert lines.returncode == 0, lines.stderr
        assert [json.loads(x) for x in lines.stdout.splitlines()] == doc["files"]
        assert lines.stdout == "".join(json.dumps(f, ensure_ascii=False) + "\n" for f in doc["files"])

        s = _icectl(tmp_path, "plan", loc, *flt, "--summary", "--json")
        assert s.returncode == 0, s.stderr
        summary = json.loads(s.stdout)
        assert "files" not in summary and "tasks" not in summary
        tasks = json.loads(_icectl(tmp_path, "plan", loc, *flt, "--tasks", "--json").stdout)
        assert summary["summary"] == tasks["summary"]  # the counts, with the task count
        assert summary["summary"]["tasks"] == len(tasks["tasks"])
        assert {k: v for k, v in summary.items() if k != "summary"} == \
            {k: v for k, v in doc.items() if k not in ("summary", "files")}
        matched = doc["summary"]["data-files-matched"]
        assert summary["summary"]["data-files-matched"] == matched == len(doc["files"])
        assert summary["summary"]["records"] == sum(f["record-count"] for f in doc["files"])
        assert summary["summary"]["bytes"] == sum(f["file-size-in-bytes"] for f in doc["files"])

        text = _icectl(tmp_path, "plan", loc, *flt, "--summary")
        assert text.returncode == 0, text.stderr
        assert f"data files    {matched} of 5" in text.stdout
        assert f"tasks         {summary['summary']['tasks']}" in text.stdout
        assert ".parquet" not in text.stdout  # no per-file output


def test_plan_output_option_errors(tmp_path) -> None:
    loc = make(tmp_path)
    append(tmp_path, loc, "a.parquet", [1], "a")
    for args, needle in ((["--format", "xml"], "--format must be"),
                         (["--format", "jsonl", "--tasks"], "--tasks"),
                         (["--format", "jsonl", "--summary"], "--summary"),
                         (["--summary", "--explain"], "--explain"),
                         (["--json", "--format", "text"], "--json cannot"),
                         (["--workers", "0"], "--workers: the number of workers must be at least 1")):
        r = _icectl(tmp_path, "plan", loc, *args)
        assert r.returncode == 2, (args, r.stderr)
        assert needle in r.stderr and "Traceback" not in r.stderr and r.stdout == ""
        lines = r.stderr.strip().splitlines()
        # one line; with --json it is followed by the error as a JSON object
        assert len(lines) == (2 if "--json" in args else 1), r.stderr
        if "--json" in args:
            assert json.loads(lines[1])["error"]["exit-code"] == 2


def test_plan_text_table_rows_are_the_json_files(tmp_path) -> None:
    loc = make(tmp_path)
    for k, cat in enumerate(["a", "b", "a"]):
        append(tmp_path, loc, f"f{k}.parquet", [k * 10 + 1, k * 10 + 2], cat)
    doc = json.loads(_icectl(tmp_path, "plan", loc, "--filter", "id > 5", "--json").stdout)
    text = _icectl(tmp_path, "plan", loc, "--filter", "id > 5")
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0].split() == ["path", "partition", "records", "bytes", "residual", "delete-files"]
    rows = [line.split(None, 4) for line in lines[1:1 + len(doc["files"])]]
    assert [(r[0], r[1], int(r[2]), int(r[3]), r[4].strip()) for r in rows] == [
        (f["path"], f["partition-path"], f["record-count"], f["file-size-in-bytes"], f["residual"])
        for f in doc["files"]]
    assert lines[1 + len(doc["files"])].startswith("snapshot ")
