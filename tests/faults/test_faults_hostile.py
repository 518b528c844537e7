"""A table of mistakes, run through the CLI as a user runs it (subprocess, no TTY).

For each: the exit code is the documented one for its kind (never 1 nor 70), stderr has no
traceback, and every file of every table (and of the inputs) is byte-identical afterwards.

Cases that fail today because of a known bug fixed elsewhere are ``xfail(strict=True)`` naming
the issue item, so they turn into failures (to be unmarked) the day the fix lands.

One mistake, one code: an unknown column is 3 (not found) wherever it is named (a filter,
--columns, a partition or sort term, a schema change, a CSV header); a file that is not there is
3; a bad number (not a number, out of its range) is 2 whether the option parser or the command
finds it; every usage error is one line on stderr, with a JSON error object after it under --json.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from faults_support import (EXIT_CORRUPT, EXIT_INVALID, EXIT_NOT_FOUND, EXIT_OK, EXIT_VALIDATION,
                            age_tree, assert_clean_failure, create_table, json_out, run_icectl,
                            tree_digest)

# Known bugs, by the issue item that fixes them (none open).


@dataclass(frozen=True)
class Mistake:
    id: str
    args: tuple[str, ...]  # {t} good table, {c} corrupt metadata, {m} truncated manifest,
    codes: frozenset[int]  # {d} a directory that is not a table, {w} the work directory
    xfail: str | None = None


def m(id: str, *args: str, code: int | tuple[int, ...], xfail: str | None = None) -> Mistake:
    codes = frozenset(code if isinstance(code, tuple) else (code,))
    return Mistake(id, args, codes, xfail)


def _ors(n: int) -> str:
    return " or ".join(f"id = {i}" for i in range(n))


MISTAKES = [
    # filters
    m("filter-unknown-column", "plan", "{t}", "--filter", "nope = 1", code=EXIT_NOT_FOUND),
    m("filter-bad-literal", "plan", "{t}", "--filter", "id = 'abc'", code=EXIT_INVALID),
    m("filter-bad-date", "plan", "{t}", "--filter", "d = date '2024-99-01'", code=EXIT_INVALID),
    m("filter-open-paren", "plan", "{t}", "--filter", "(id = 1", code=EXIT_INVALID),
    m("filter-close-paren", "plan", "{t}", "--filter", "id = 1)", code=EXIT_INVALID),
    m("filter-null-compare", "plan", "{t}", "--filter", "name = null", code=EXIT_INVALID),
    m("filter-garbage", "plan", "{t}", "--filter", "\x01 ;; DROP TABLE", code=EXIT_INVALID),
    m("filter-empty", "plan", "{t}", "--filter", "", code=EXIT_INVALID),
    m("filter-huge-literal", "plan", "{t}", "--filter", "name = '" + "x" * 100_000 + "'", code=EXIT_OK),
    m("filter-400-ors", "plan", "{t}", "--filter", _ors(400), code=EXIT_OK),
    m("filter-250-parens", "plan", "{t}", "--filter", "(" * 250 + "id = 1" + ")" * 250,
      code=EXIT_OK),
    m("filter-1000-nots", "plan", "{t}", "--filter", "not " * 1000 + "id = 1", code=EXIT_OK),
    m("filter-non-ascii-column", "plan", "{t}", "--filter", "catégorie = 'x'", code=EXIT_OK),
    m("scan-filter-unknown-column", "scan", "{t}", "--filter", "nope = 1", code=EXIT_NOT_FOUND),
    m("delete-filter-unknown-column", "delete", "{t}", "--filter", "nope = 1", "--dry-run",
      code=EXIT_NOT_FOUND),
    m("plan-columns-unknown", "plan", "{t}", "--columns", "id,nope", code=EXIT_NOT_FOUND),
    m("scan-columns-unknown", "scan", "{t}", "--columns", "nope", code=EXIT_NOT_FOUND),
    # type strings and schema text
    m("type-unknown", "schema", "add", "{t}", "c", "lonk", code=EXIT_INVALID),
    m("type-decimal-precision", "schema", "add", "{t}", "c", "decimal(99,2)", code=EXIT_INVALID),
    m("schema-add-existing", "schema", "add", "{t}", "id", "string", code=EXIT_VALIDATION),
    m("schema-drop-unknown", "schema", "drop", "{t}", "nope", code=EXIT_NOT_FOUND),
    m("schema-text-bad-type", "create", "{w}/new", "--schema", "id lonk", code=EXIT_INVALID),
    m("schema-text-duplicate", "create", "{w}/new", "--schema", "id long, id long", code=EXIT_INVALID),
    m("schema-text-empty", "create", "{w}/new", "--schema", "", code=EXIT_INVALID),
    m("schema-file-missing", "create", "{w}/new", "--schema-file", "{w}/missing.json",
      code=EXIT_NOT_FOUND),
    # partition specs
    m("partition-bad-bucket", "create", "{w}/new", "--schema", "id long", "--partition",
      "bucket(x, id)", code=EXIT_INVALID),
    m("partition-unknown-column", "create", "{w}/new", "--schema", "id long", "--partition", "nope",
      code=EXIT_NOT_FOUND),
    m("partition-bad-transform", "create", "{w}/new", "--schema", "id long", "--partition",
      "days(id)", code=EXIT_VALIDATION),
    m("partition-add-unknown-column", "partition", "add", "{t}", "bucket(4, nope)", code=EXIT_NOT_FOUND),
    m("sort-order-unknown-column", "sort-order", "set", "{t}", "nope desc", code=EXIT_NOT_FOUND),
    m("create-sort-unknown-column", "create", "{w}/new", "--schema", "id long", "--sort-order", "nope",
      code=EXIT_NOT_FOUND),
    m("schema-rename-unknown", "schema", "rename", "{t}", "nope", "x", code=EXIT_NOT_FOUND),
    m("identifier-unknown", "schema", "identifier-fields", "set", "{t}", "nope", code=EXIT_NOT_FOUND),
    m("partition-add-bucket-double", "partition", "add", "{t}", "bucket(4, amount_f)",
      code=EXIT_VALIDATION),
    m("sort-order-bad", "sort-order", "set", "{t}", "id sideways", code=EXIT_INVALID),
    # property values
    m("property-no-equals", "properties", "set", "{t}", "noequals", code=EXIT_INVALID),
    m("property-reserved", "properties", "set", "{t}", "uuid=x", code=EXIT_VALIDATION),
    m("property-retries-abc", "properties", "set", "{t}", "commit.retry.num-retries=abc",
      code=EXIT_INVALID),
    m("property-format-nonsense", "properties", "set", "{t}", "write.format.default=nonsense",
      code=EXIT_INVALID),
    m("property-codec-unknown", "properties", "set", "{t}", "write.parquet.compression-codec=nope",
      code=EXIT_INVALID),
    m("property-format-version-9", "properties", "set", "{t}", "format-version=9",
      code=EXIT_INVALID),
    # input files
    m("append-missing-file", "append", "{t}", "{w}/missing.parquet", code=EXIT_NOT_FOUND),
    m("append-missing-list", "append", "{t}", "--from-list", "{w}/missing.txt", code=EXIT_NOT_FOUND),
    m("schema-apply-missing-file", "schema", "apply", "{t}", "{w}/missing.json", code=EXIT_NOT_FOUND),
    m("append-unknown-format", "append", "{t}", "{w}/ok.data", code=EXIT_INVALID),
    m("append-unknown-partition-field", "append", "{t}", "{w}/ok.parquet", "--partition", "nope=1",
      code=EXIT_NOT_FOUND),
    m("append-directory", "append", "{t}", "{d}", code=EXIT_INVALID),
    m("append-not-parquet", "append", "{t}", "{w}/garbage.parquet", code=EXIT_INVALID),
    m("append-wrong-types", "append", "{t}", "{w}/wrongtype.parquet", code=EXIT_VALIDATION),
    m("write-missing-file", "write", "{t}", "{w}/missing.csv", code=EXIT_NOT_FOUND),
    m("write-wrong-types", "write", "{t}", "{w}/wrongtype.parquet", code=EXIT_INVALID),  # a value: row, column
    m("write-not-parquet", "write", "{t}", "{w}/garbage.parquet", code=EXIT_INVALID),
    m("schema-union-not-parquet", "schema", "union", "{t}", "{w}/garbage.parquet", code=EXIT_INVALID),
    # snapshot ids
    m("snapshot-unknown", "inspect", "snapshot", "{t}", "12345", code=EXIT_NOT_FOUND),
    m("plan-snapshot-unknown", "plan", "{t}", "--snapshot", "12345", code=EXIT_NOT_FOUND),
    m("rollback-unknown", "snapshot", "rollback", "{t}", "12345", code=EXIT_NOT_FOUND),
    m("expire-snapshot-unknown", "expire", "{t}", "--snapshot-id", "12345", code=EXIT_NOT_FOUND),
    m("branch-snapshot-unknown", "branch", "create", "{t}", "b", "--snapshot-id", "12345",
      code=EXIT_NOT_FOUND),
    # numbers and options
    m("number-garbage", "expire", "{t}", "--retain-last", "abc", code=EXIT_INVALID),
    m("number-negative", "expire", "{t}", "--retain-last", "-1", code=EXIT_INVALID),
    m("number-workers-zero", "append", "{t}", "{w}/ok.parquet", "--workers", "0", code=EXIT_INVALID),
    m("number-snapshot-id-text", "inspect", "snapshot", "{t}", "abc", code=EXIT_INVALID),
    m("number-huge", "inspect", "snapshot", "{t}", "9" * 40, code=(EXIT_INVALID, EXIT_NOT_FOUND)),
    m("number-retain-zero", "expire", "{t}", "--retain-last", "0", "--dry-run", code=EXIT_INVALID),
    m("number-min-snapshots-zero", "branch", "create", "{t}", "b", "--min-snapshots-to-keep", "0",
      code=EXIT_INVALID),
    m("number-snapshot-id-list-text", "expire", "{t}", "--snapshot-id", "1", "--snapshot-id", "x",
      code=EXIT_INVALID),
    m("number-split-size-zero", "plan", "{t}", "--split-size", "0", code=EXIT_INVALID),
    m("number-limit-negative", "scan", "{t}", "--limit", "-1", code=EXIT_INVALID),
    m("number-lookback-text", "plan", "{t}", "--lookback", "ten", code=EXIT_INVALID),
    m("number-format-version-7", "create", "{w}/new", "--schema", "id long", "--format-version", "7",
      code=EXIT_INVALID),
    m("time-garbage", "expire", "{t}", "--older-than", "yesterday", code=EXIT_INVALID),
    m("unknown-option", "plan", "{t}", "--bogus", code=EXIT_INVALID),
    m("unknown-command", "frobnicate", "{t}", code=EXIT_INVALID),
    m("unknown-subcommand", "inspect", "frobnicate", "{t}", code=EXIT_INVALID),
    m("missing-option", "branch", "fast-forward", "{t}", "main", code=EXIT_INVALID),
    m("extra-argument", "inspect", "snapshot", "{t}", "1", "2", code=EXIT_INVALID),
    m("field-unknown", "inspect", "snapshots", "{t}", "--field", "nope", code=EXIT_INVALID),
    # not a table, corrupt metadata, truncated manifest
    m("not-a-table-inspect", "inspect", "files", "{d}", code=EXIT_NOT_FOUND),
    m("not-a-table-orphans-delete", "orphans", "{d}", "--delete", code=EXIT_NOT_FOUND),
    m("missing-location", "inspect", "table", "{w}/nowhere", code=EXIT_NOT_FOUND),
    m("corrupt-json-inspect", "inspect", "table", "{c}", code=EXIT_CORRUPT),
    m("corrupt-json-append", "append", "{c}", "{w}/ok.parquet", code=EXIT_CORRUPT),
    m("corrupt-json-orphans-delete", "orphans", "{c}", "--delete", code=EXIT_CORRUPT),
    m("truncated-manifest-files", "inspect", "files", "{m}", code=EXIT_CORRUPT),
    m("truncated-manifest-plan", "plan", "{m}", code=EXIT_CORRUPT),
    m("truncated-manifest-orphans-delete", "orphans", "{m}", "--delete", code=EXIT_CORRUPT),
]


@dataclass(frozen=True)
class Tables:
    work: Path
    pristine: Path
    good: Path
    corrupt: Path
    truncated: Path
    not_a_table: Path

    def fill(self, arg: str) -> str:
        return arg.format(t=self.good, c=self.corrupt, m=self.truncated, d=self.not_a_table,
                          w=self.work)

    def restore(self) -> None:
        """Put every file back (after a case that wrongly changed something)."""
        shutil.rmtree(self.work)
        shutil.copytree(self.pristine, self.work, symlinks=True)


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> Tables:
    import pyarrow as pa
    import pyarrow.parquet as pq

    w = tmp_path_factory.mktemp("hostile")
    good, corrupt, truncated = w / "good", w / "corrupt", w / "truncated"
    create_table(good, schema="id long not null, name string, d date, amount decimal(9,2), "
                              "amount_f double, catégorie string")
    (w / "ok.csv").write_text("id,name,d,amount\n1,a,2024-01-02,1.50\n", encoding="utf-8")
    json_out(run_icectl("write", good, w / "ok.csv", "--json"))
    for t in (corrupt, truncated):
        create_table(t, schema="id long")
        (w / f"{t.name}.csv").write_text("id\n1\n2\n", encoding="utf-8")
        json_out(run_icectl("write", t, w / f"{t.name}.csv", "--json"))
    newest = max((corrupt / "metadata").glob("v*.metadata.json"), key=lambda p: int(p.name[1:].split(".")[0]))
    newest.write_bytes(newest.read_bytes()[: len(newest.read_bytes()) // 2])
    manifest = max((truncated / "metadata").glob("*-m0.avro"), key=os.path.getmtime)
    manifest.write_bytes(manifest.read_bytes()[: manifest.stat().st_size // 2])
    age_tree(w)  # files old enough for orphan cleanup's cut-off
    not_a_table = w / "plain-dir"
    (not_a_table / "sub").mkdir(parents=True)
    (not_a_table / "sub" / "keep.txt").write_text("not table data\n")
    age_tree(not_a_table)
    pq.write_table(pa.table({"id": pa.array(["x"]), "name": pa.array(["y"])}), w / "wrongtype.parquet")
    pq.write_table(pa.table({"id": pa.array([7], pa.int64())}), w / "ok.parquet")
    (w / "garbage.parquet").write_bytes(b"PAR1 this is not parquet at all" * 10)
    (w / "ok.data").write_bytes((w / "ok.parquet").read_bytes())
    for name, (text, _code) in CSV_MISTAKES.items():
        (w / f"{name}.csv").write_text(text, encoding="utf-8")
    pristine = w.with_name(w.name + "-pristine")
    shutil.copytree(w, pristine, symlinks=True)
    return Tables(w, pristine, good, corrupt, truncated, not_a_table)


def _params() -> list:
    return [pytest.param(c, id=c.id, marks=[pytest.mark.xfail(strict=True, reason=c.xfail)]
                         if c.xfail else []) for c in MISTAKES]


def _changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    return sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))


@pytest.fixture(scope="module")
def outcomes(tables: Tables) -> dict[str, tuple[subprocess.CompletedProcess[str], list[str]]]:
    """Every case's run and the files it changed. The cases run side by side (they only read);
    if anything changed, each runs again alone, from restored files, to name the culprit."""
    before = tree_digest(tables.work)
    with ThreadPoolExecutor(min(4, os.cpu_count() or 2)) as pool:
        runs = list(pool.map(lambda c: run_icectl(*[tables.fill(a) for a in c.args]), MISTAKES))
    if tree_digest(tables.work) == before:
        return {c.id: (done, []) for c, done in zip(MISTAKES, runs)}
    tables.restore()
    out = {}
    for case in MISTAKES:
        before = tree_digest(tables.work)
        done = run_icectl(*[tables.fill(a) for a in case.args])
        changed = _changed(before, tree_digest(tables.work))
        if changed:
            tables.restore()
        out[case.id] = (done, changed)
    return out


@pytest.mark.parametrize("case", _params())
def test_mistake(outcomes: dict, case: Mistake) -> None:
    done, changed = outcomes[case.id]
    assert_clean_failure(done, case.id)
    assert done.returncode in case.codes, (
        f"{case.id}: exit {done.returncode}, expected {sorted(case.codes)}\n{done.stderr}")
    if done.returncode != EXIT_OK:
        assert done.stderr.strip(), "an error exit must say why"
    assert not changed, f"{case.id} changed files: {changed[:10]}"


# -- CSV mistakes: repeated, because the failure they catch comes 1 run in ~5 -------------------

CSV_MISTAKES = {
    "header-only": ("id,name,d,amount\n", EXIT_INVALID),
    "null-in-required": ("id,name,d,amount\n,a,2024-01-02,1.5\n", EXIT_VALIDATION),
    "bad-date": ("id,name,d,amount\n1,a,2024-13-45,1.5\n", EXIT_INVALID),
    "misspelt-column": ("id,nmae,d,amount\n1,a,2024-01-02,1.5\n", EXIT_NOT_FOUND),
    "decimal-digits-lost": ("id,name,d,amount\n1,a,2024-01-02,1.555\n", EXIT_INVALID),
}


def test_csv_mistakes(tables: Tables) -> None:
    before = tree_digest(tables.work)
    outcomes = []
    for _round in range(3):
        for name, (_text, code) in CSV_MISTAKES.items():
            done = run_icectl("write", tables.good, tables.work / f"{name}.csv")
            assert "Traceback" not in done.stderr, done.stderr
            outcomes.append((name, done.returncode, code))
    assert tree_digest(tables.work) == before
    wrong = [o for o in outcomes if o[1] != o[2]]
    assert not wrong, f"{len(wrong)} of {len(outcomes)} runs ended with another code: {wrong[:4]}"


# -- errors are one line ------------------------------------------------------------------------

ONE_LINE = [
    pytest.param(("plan", "{t}", "--filter", "(id = 1"), EXIT_INVALID, id="icectl-error"),
    pytest.param(("inspect", "files", "{d}"), EXIT_NOT_FOUND, id="not-a-table"),
    pytest.param(("plan", "{t}", "--bogus"), EXIT_INVALID, id="unknown-option"),
    pytest.param(("append", "{t}", "{w}/ok.parquet", "--workers", "0"), EXIT_INVALID, id="option-range"),
    pytest.param(("frobnicate",), EXIT_INVALID, id="unknown-command"),
    pytest.param(("inspect", "snapshot", "{t}", "abc"), EXIT_INVALID, id="argument-not-a-number"),
    pytest.param(("expire", "{t}", "--snapshot-id", "abc"), EXIT_INVALID, id="option-not-a-number"),
    pytest.param(("branch", "fast-forward", "{t}", "main"), EXIT_INVALID, id="missing-option"),
    pytest.param(("inspect", "snapshot", "{t}", "1", "2"), EXIT_INVALID, id="extra-argument"),
    pytest.param(("plan", "{t}", "--filter", "nope = 1"), EXIT_NOT_FOUND, id="unknown-column"),
    pytest.param(("inspect", "snapshots", "{t}", "--field", "nope"), EXIT_INVALID, id="unknown-field"),
]


@pytest.mark.parametrize("args, code", ONE_LINE)
def test_error_is_one_line(tables: Tables, args: tuple[str, ...], code: int) -> None:
    done = run_icectl(*[tables.fill(a) for a in args])
    assert done.returncode == code, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("icectl: error: "), done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize("args, code", ONE_LINE)
def test_error_with_json_adds_a_json_object(tables: Tables, args: tuple[str, ...], code: int) -> None:
    """Under --json the one line is followed by {"error": {"kind", "message", "exit-code"}}."""
    import json

    from icectl.errors import kind_of_exit_code

    done = run_icectl(*[tables.fill(a) for a in args], "--json")
    assert done.returncode == code, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("icectl: error: "), done.stderr
    obj = json.loads(lines[1])
    assert obj == {"error": {"kind": kind_of_exit_code(code), "message": lines[0][len("icectl: error: "):],
                             "exit-code": code}}
    assert obj["error"]["kind"] in ("invalid-input", "not-found")
