"""`icectl write` through the CLI: file and stdin input, --format, --branch, --summary, JSON keys,
text output, exit codes of refusals."""

from __future__ import annotations

import json
from pathlib import Path

from clirun import icectl

from icectl.errors import InvalidInput, NotFound, ValidationError
from icectl.table.table import Table
from support.tables import empty_table



def make(tmp_path: Path, partition: str | None = "cat") -> str:
    return empty_table(tmp_path / "wh" / "db" / "t", "id long not null, cat string, ts timestamptz",
                       partition=partition).location


def test_write_csv_json_keys_and_summary(tmp_path: Path) -> None:
    loc = make(tmp_path)
    csv = tmp_path / "rows.csv"
    csv.write_text("id,cat,ts\n1,a,2024-01-01T00:00:00Z\n2,b,\n3,a,2024-01-02T00:00:00+02:00\n")
    r = icectl(*["write", loc, str(csv), "--summary", "run=7", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    for key in ("location", "branch", "snapshot-id", "parent-snapshot-id", "sequence-number", "operation",
                "added-files", "added-records", "added-files-size", "manifest-list", "manifests-written",
                "metadata-file", "version", "first-row-id", "added-rows", "attempts", "summary", "files",
                "rows-written", "input-format"):
        assert key in out, key
    assert out["rows-written"] == 3 and out["input-format"] == "csv" and out["operation"] == "append"
    assert out["added-files"] == 2 and out["summary"]["run"] == "7"
    assert sorted(f["partition"] for f in out["files"]) == ["cat=a", "cat=b"]
    assert Table.load(loc).metadata.current_snapshot().summary["total-records"] == "3"


def test_write_stdin_with_format_and_sniffing_text_output_and_branch(tmp_path: Path) -> None:
    loc = make(tmp_path, None)
    lines = '{"id": 1, "cat": "x"}\n{"id": 2}\n'
    r = icectl(*["write", loc, "-", "--format", "json", "--branch", "dev"], input=lines)
    assert r.exit_code == 0, r.output
    assert "rows-written" in r.stdout and "dev" in r.stdout
    t = Table.load(loc)
    assert "dev" in t.metadata.refs and t.metadata.current_snapshot_id is None
    # without --format, stdin is sniffed: JSON lines start with "{"
    r = icectl(*["write", loc, "-", "--json"], input=lines)
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["input-format"] == "json"
    r = icectl(*["write", loc, "-", "--json"], input="id,cat\n5,z\n")
    assert json.loads(r.stdout)["input-format"] == "csv"


def test_warehouse_identifier(tmp_path: Path) -> None:
    make(tmp_path)
    csv = tmp_path / "r.csv"
    csv.write_text("id,cat\n1,a\n")
    r = icectl(*["write", "db.t", str(csv), "-w", str(tmp_path / "wh"), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["added-records"] == 1


def test_refusals_exit_codes_and_nothing_written(tmp_path: Path) -> None:
    loc = make(tmp_path)
    before = sorted(p.name for p in Path(loc, "metadata").iterdir())
    cases = [
        ("a.csv", "cat\nx\n", [], ValidationError.exit_code, "required column id is missing"),
        ("b.csv", "id,other\n1,2\n", [], NotFound.exit_code,
         "input column other is not in the table (--ignore-extra-columns to drop it)"),
        ("c.csv", "id\n1\n", ["--summary", "operation=x"], InvalidInput.exit_code, "cannot set 'operation'"),
        ("d.data", "id\n1\n", [], InvalidInput.exit_code, "--format: cannot tell the format"),
        ("e.csv", "id\n1\n", ["--format", "xml"], InvalidInput.exit_code, "unknown input format"),
        ("f.csv", "id,ts\n1,2024-01-01\n2,soon\n", [], InvalidInput.exit_code,
         "f.csv: row 2, column ts: cannot convert 'soon' to timestamptz"),
    ]
    for name, text, extra, code, why in cases:
        p = tmp_path / name
        p.write_text(text)
        r = icectl(*["write", loc, str(p), *extra])
        assert r.exit_code == code, (name, r.output)
        assert why in r.stderr, (name, r.stderr)
    r = icectl(*["write", loc, str(tmp_path / "missing.csv")])
    assert r.exit_code != 0 and "not found" in r.stderr
    assert sorted(p.name for p in Path(loc, "metadata").iterdir()) == before
    assert not Path(loc, "data").exists() or not list(Path(loc, "data").rglob("*.parquet"))
    # --ignore-extra-columns lets the same input through
    r = icectl(*["write", loc, str(tmp_path / "b.csv"), "--ignore-extra-columns", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["files"][0]["partition"] == "cat=null"


# -- refusals end with their exit code, every time -------------------------------------------

CRASH_RUNS = 5  # per case; the abort this guards against came about once in 10-40 runs


def test_csv_refusals_exit_with_their_code_every_time(tmp_path: Path) -> None:
    """Each refused CSV exits with its documented code in every run, never 134 (SIGABRT at exit:
    an Arrow reader thread releasing a Python-owned input buffer while the interpreter ended)."""
    import os
    import subprocess
    import sys
    from concurrent.futures import ThreadPoolExecutor

    loc = str(tmp_path / "t")
    assert icectl(*["create", loc, "--schema", "id long not null, d date, name string"]).exit_code == 0
    cases = {
        "header-only.csv": ("id,d,name\n", InvalidInput.exit_code, "no rows"),
        "null-required.csv": ("id,d,name\n,2024-01-01,x\n", ValidationError.exit_code, "required"),
        "bad-date.csv": ("id,d,name\n1,2024-13-45,x\n", InvalidInput.exit_code, "row 1, column d"),
        "misspelt.csv": ("id,dd,name\n1,2024-01-01,x\n", NotFound.exit_code, "input column dd"),
    }
    for name, (text, _, _) in cases.items():
        (tmp_path / name).write_text(text)
    env = {k: v for k, v in os.environ.items() if k != "ICECTL_DEBUG"}

    def run(name: str) -> tuple[str, int, str]:
        r = subprocess.run([sys.executable, "-m", "icectl", "write", loc, str(tmp_path / name)],
                           capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=120)
        return name, r.returncode, r.stderr

    jobs = [name for name in cases for _ in range(CRASH_RUNS)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(run, jobs))
    bad = [(name, code, err) for name, code, err in results
           if code != cases[name][1] or cases[name][2] not in err or err.count("\n") != 1]
    assert not bad, bad[:3]
    assert not list(Path(loc).rglob("*.parquet"))


def _scan_lines(loc: str) -> list[str]:
    r = icectl(*["scan", loc, "--format", "jsonl"])
    assert r.exit_code == 0, r.output
    return sorted(r.stdout.splitlines(), key=lambda line: json.loads(line)["_rid"])


def test_scan_jsonl_written_back_is_the_same_rows_nan_infinities_and_negative_zero(tmp_path: Path) -> None:
    """What ``scan --format jsonl`` prints (NaN and infinities as the strings "NaN", "Infinity",
    "-Infinity") is accepted by ``write``, in columns mixing them with numbers, top-level and
    nested, with and without a decimal column (which reads every JSON number as text)."""
    import math

    import pyarrow as pa
    import pyarrow.parquet as pq

    nan, inf = math.nan, math.inf
    d = [nan, 1.5, -inf, inf, -0.0, 0.0, None, 2.5e-308, -1e308]
    f = [1.0, nan, inf, -0.0, -inf, 3.25, -1.5, None, 0.5]
    for extra in ("", ", amount decimal(10,2)"):
        schema = "_rid long, d double, f float, s struct<x: double>, l list<double>" + extra
        src, dst = (str(tmp_path / f"{name}{len(extra)}") for name in ("src", "dst"))
        for loc in (src, dst):
            assert icectl(*["create", loc, "--schema", schema]).exit_code == 0
        cols = {"_rid": pa.array(range(len(d)), pa.int64()), "d": pa.array(d, pa.float64()),
                "f": pa.array(f, pa.float32()),
                "s": pa.array([{"x": v} for v in reversed(d)], pa.struct([("x", pa.float64())])),
                "l": pa.array([[v, 1.0, -v if v is not None else None] for v in d], pa.list_(pa.float64()))}
        if extra:
            cols["amount"] = pa.array([None, "1.25", "-0.50", None, "3", None, None, "0.01", "-99999999.99"]).cast(
                pa.decimal128(10, 2))
        pq.write_table(pa.table(cols), str(tmp_path / "in.parquet"))
        assert icectl(*["write", src, str(tmp_path / "in.parquet")]).exit_code == 0
        printed = _scan_lines(src)
        text = "\n".join(printed) + "\n"
        assert '"NaN"' in text and '"Infinity"' in text and '"-Infinity"' in text and "-0.0" in text
        # the first line begins with a number in d: Arrow's reader meets the strings later
        assert json.loads(printed[0])["d"] == "NaN" and json.loads(printed[1])["d"] == 1.5
        r = icectl(*["write", dst, "-", "--format", "json"], input=text)
        assert r.exit_code == 0, r.output
        assert _scan_lines(dst) == printed
        from icectl.scan.reader import open_scan

        scan = open_scan(Table.load(dst))
        got = [v for _, v in sorted(r for b in scan.batches()
                                    for r in zip(b.column("_rid").to_pylist(), b.column("d").to_pylist()))]
        assert math.isnan(got[0]) and got[2] == -inf and got[3] == inf
        assert math.copysign(1.0, got[4]) == -1.0 and math.copysign(1.0, got[5]) == 1.0


def test_truncated_decimal_partition_value_beyond_the_precision_is_refused(tmp_path: Path) -> None:
    """truncate(2) of -9999999999999999999999999999.9999999999 in decimal(38,10) needs 39 digits:
    a one-line refusal naming the input, row and column, exit 2, nothing written (JSON and
    Parquet input, one or several files)."""
    from decimal import Decimal

    import pyarrow as pa
    import pyarrow.parquet as pq

    loc = str(tmp_path / "t")
    r = icectl(*["create", loc, "--schema", "_rid long, d decimal(38,10)", "-p", "truncate(2, d)"])
    assert r.exit_code == 0, r.output
    low = "-9999999999999999999999999999.9999999999"
    lines = f'{{"_rid": 1, "d": "1.5"}}\n{{"_rid": 2, "d": "{low}"}}\n'
    r = icectl(*["write", loc, "-"], input=lines)
    assert r.exit_code == 2, r.output
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in r.output
    assert err.startswith("icectl: error: stdin: row 2, column d: " + low) and "truncate[2]" in err
    good, bad = tmp_path / "good.parquet", tmp_path / "bad.parquet"
    for path, v in ((good, "1.5"), (bad, low)):
        pq.write_table(pa.table({"_rid": pa.array([1], pa.int64()),
                                 "d": pa.array([Decimal(v)], pa.decimal128(38, 10))}), str(path))
    for args in ([str(bad)], [str(good), str(bad)]):
        r = icectl(*["write", loc, *args])
        assert r.exit_code == 2, r.output
        assert f"{bad}: row 1, column d: {low}" in r.stderr
    t = Table.load(loc)
    assert t.metadata.current_snapshot_id is None
    assert not [p for p in (tmp_path / "t" / "data").rglob("*") if p.is_file()]
    # the largest value that truncates within the precision is written
    r = icectl(*["write", loc, "-"], input=f'{{"_rid": 3, "d": "{low[:-1]}8"}}\n')
    assert r.exit_code == 0, r.output
