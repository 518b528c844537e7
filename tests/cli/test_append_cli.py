"""`icectl append` through the CLI: inputs (args, stdin, --from-list), JSON keys, exit codes."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
from clirun import icectl as run
from support.tables import empty_table




def make(tmp_path, partition: str | None = None) -> str:
    return empty_table(tmp_path / "t", "id long not null, cat string", partition=partition).location


def parquet(tmp_path, name: str, ids, cat="a") -> str:
    p = tmp_path / "in" / name
    p.parent.mkdir(parents=True, exist_ok=True)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("cat", pa.string())])
    pq.write_table(pa.table([pa.array(ids, pa.int64()), pa.array([cat] * len(ids))], schema=schema), str(p))
    return str(p)


def test_append_args_and_json(tmp_path) -> None:
    loc = make(tmp_path, "cat")
    a, b = parquet(tmp_path, "a.parquet", [1, 2]), parquet(tmp_path, "b.parquet", [3], "b")
    r = run(*["append", loc, a, b, "--summary", "run=1", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    for key in ("location", "branch", "snapshot-id", "parent-snapshot-id", "sequence-number",
                "operation", "added-files", "added-records", "added-files-size", "manifest-list",
                "manifests-written", "metadata-file", "version", "first-row-id", "added-rows",
                "attempts", "name-mapping-created", "summary", "files"):
        assert key in out, key
    assert (out["added-files"], out["added-records"], out["sequence-number"]) == (2, 3, 1)
    assert out["summary"]["run"] == "1" and out["summary"]["changed-partition-count"] == "2"
    assert [f["partition"] for f in out["files"]] == ["cat=a", "cat=b"]
    snaps = json.loads(run(*["inspect", "snapshots", loc, "--json"]).stdout)
    assert [s["snapshot-id"] for s in snaps] == [out["snapshot-id"]]


def test_paths_from_stdin_and_from_a_list(tmp_path) -> None:
    loc = make(tmp_path)
    a, b, c = (parquet(tmp_path, f"{n}.parquet", [i]) for i, n in enumerate("abc"))
    r = run(*["append", loc, "-"], input=f"{a}\n\n{b}\n")
    assert r.exit_code == 0, r.output
    assert "appended 2 file(s)" in r.stderr
    assert "snapshot-id" in r.stdout and "total-records" in r.stdout
    lst = tmp_path / "list.txt"
    lst.write_text(f"# one more\n{c}\n")
    r = run(*["append", loc, "--from-list", str(lst), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["summary"]["total-data-files"] == "3"


def test_exit_codes_and_one_line_errors(tmp_path) -> None:
    loc = make(tmp_path, "cat")
    a = parquet(tmp_path, "a.parquet", [1])
    assert run(*["append", loc, a]).exit_code == 0
    before = sorted(os.listdir(os.path.join(loc, "metadata")))
    cases = [
        (["append", loc, a], 5, "already in the table"),
        (["append", loc, str(tmp_path / "missing.parquet")], 3, "not found"),
        (["append", loc, parquet(tmp_path, "z.parquet", [1]), "--partition", "cat"], 2, "KEY=VALUE"),
        (["append", loc, parquet(tmp_path, "y.parquet", [1]), "--summary", "operation=x"], 2, "operation"),
        (["append", loc, "--from-list", str(tmp_path / "none.txt")], 3, "not found"),
        (["append", str(tmp_path / "no-table"), a], 3, "no Iceberg table"),
        (["append", loc, parquet(tmp_path, "x.parquet", [1], "q"), "-p", "cat=r"], 5, "cat=r"),
    ]
    for args, code, text in cases:
        r = run(*args)
        assert r.exit_code == code, (args, r.output)
        assert text in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert sorted(os.listdir(os.path.join(loc, "metadata"))) == before


# -- idempotent ingestion, run as a script runs it -------------------------------------------------


def icectl(*args: str, stdin: str = ""):  # -> subprocess.CompletedProcess[str]
    return run(*args, input=stdin, env={"ICECTL_DEBUG": None})



def test_skip_existing_names_every_skipped_file_and_a_rerun_is_a_no_op(tmp_path) -> None:
    loc = make(tmp_path, "cat")
    a, b, c = (parquet(tmp_path, f"{n}.parquet", [i], n) for i, n in enumerate("abc"))
    assert icectl("append", loc, a, b).returncode == 0
    # without the flag, a file already in the table is refused
    r = icectl("append", loc, a, c)
    assert r.returncode == 5 and "already in the table" in r.stderr
    # with it, a and b are named as skipped (no "and 1 more"), c is appended
    r = icectl("append", loc, a, b, c, "--skip-existing", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["committed"] is True and out["added-files"] == 1
    assert out["skipped-files"] == [a, b] and [f["file-path"] for f in out["files"]] == [c]
    assert out["summary"]["total-data-files"] == "3"
    # the same nightly run again: nothing to do, exit 0, every file named, nothing committed
    before = sorted(os.listdir(os.path.join(loc, "metadata")))
    r = icectl("append", loc, "-", "--skip-existing", "--json", stdin=f"{a}\n{b}\n{c}\n")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["committed"] is False and out["snapshot-id"] is None and out["added-files"] == 0
    assert out["skipped-files"] == [a, b, c]
    assert sorted(os.listdir(os.path.join(loc, "metadata"))) == before
    # text output names each skipped file on stdout
    r = icectl("append", loc, a, c, "--skip-existing")
    assert r.returncode == 0, r.stderr
    assert [ln.split()[-1] for ln in r.stdout.splitlines() if ln.startswith("skipped ")] == [a, c]
    assert "committed" in r.stdout and "nothing appended" in r.stderr


def test_allow_empty_makes_no_files_a_no_op(tmp_path) -> None:
    loc = make(tmp_path)
    r = icectl("append", loc, "-")
    assert r.returncode == 2 and "no data files given" in r.stderr and r.stderr.count("\n") == 1
    before = sorted(os.listdir(os.path.join(loc, "metadata")))
    r = icectl("append", loc, "-", "--allow-empty", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["committed"] is False and out["files"] == [] and out["skipped-files"] == []
    assert sorted(os.listdir(os.path.join(loc, "metadata"))) == before
    # a table that does not exist is still an error
    r = icectl("append", str(tmp_path / "nope"), "-", "--allow-empty")
    assert r.returncode == 3


def test_optional_file_column_for_a_required_table_column(tmp_path) -> None:
    loc = make(tmp_path)
    def optional_id(name: str, ids, **kw) -> str:
        p = tmp_path / "in" / name
        p.parent.mkdir(parents=True, exist_ok=True)
        schema = pa.schema([pa.field("id", pa.int64()), pa.field("cat", pa.string())])
        pq.write_table(pa.table([pa.array(ids, pa.int64()), pa.array(["x"] * len(ids))], schema=schema),
                       str(p), row_group_size=2, **kw)
        return str(p)
    proven = optional_id("proven.parquet", [1, 2, 3])  # two row groups, no null in either
    nulls = optional_id("nulls.parquet", [1, None, 3])
    no_stats = optional_id("nostats.parquet", [1, 2, 3], write_statistics=False)
    r = icectl("append", loc, proven, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["added-records"] == 3
    for path, why in ((nulls, "has 1 null(s)"), (no_stats, "has no statistics")):
        r = icectl("append", loc, path)
        assert r.returncode == 5, r.stderr
        assert f"column 'id' is optional in the file and {why}" in r.stderr and path in r.stderr
        assert r.stderr.count("\n") == 1
