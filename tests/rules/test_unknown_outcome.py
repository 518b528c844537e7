"""Rule: when a commit's outcome is unknown, nothing the command wrote is removed.

A commit whose outcome cannot be told (:class:`~icectl.errors.CommitStateUnknown`, exit 12) may
have put the new version in the table, so every file the command wrote - data and delete files,
copies of appended files, manifests, manifest lists, pending-cleanup records - and every file it
would have removed after the commit (the sources of ``append --move``, expired files) must still
be there, and the table must stay readable whichever way the commit went.

The matrix runs EVERY command of the CLI's command table (the typer app), as a user runs it, with
the commit primitive of directory tables (the no-replace rename of ``vN.metadata.json``) made to
end in an unknown outcome, in two ways:

- ``landed``: the rename happens, then the call fails (a lost answer); the store reports the
  outcome as unknown, and the new version is in the table;
- ``lost``: the call reports an unknown outcome without renaming; the table keeps its old version.

Every command is classified in ``CASES`` (the argument lists of a command that commits, one a
variant) or in ``NO_COMMIT`` (with the reason it never commits a version); a command added to the
CLI without a classification fails ``test_every_command_is_classified``, and a command classified
as not committing that does commit fails ``test_commands_that_never_commit_do_not``.
"""

from __future__ import annotations

import json
import re
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import typer

from clirun import icectl
from icectl.cli.app import app
from icectl.errors import CommitStateUnknown, StorageError
from icectl.io.storage.files import FileIO

EXIT_UNKNOWN = 12
_VERSION = re.compile(r"^v\d+(\.gz)?\.metadata\.json$")


def leaf_commands() -> list[str]:
    """Every runnable command of the CLI, as typed (``schema identifier-fields set``)."""
    out: list[str] = []

    def walk(cmd, path: list[str]) -> None:
        subs = getattr(cmd, "commands", None)
        if subs:
            for name in subs:
                walk(subs[name], path + [name])
        else:
            out.append(" ".join(path))

    walk(typer.main.get_command(app), [])
    return out


# -- the table every case starts from ------------------------------------------------------------------

@dataclass
class Work:
    root: Path  # warehouse: root/db/t is the table
    ids: list[int]  # main's snapshots, oldest first
    audit_head: int  # the head of branch 'audit' (one append ahead of main's head)

    @property
    def table(self) -> str:
        return str(self.root / "db" / "t")

    @property
    def table3(self) -> str:  # format version 3: deletion vectors
        return str(self.root / "db" / "t3")

    def file(self, name: str) -> str:
        return str(self.root / "in" / name)


def _ok(*args: object) -> str:
    r = icectl(*args)
    assert r.returncode == 0, (args, r.stderr)
    return r.stdout


def _parquet(path: Path, ids: list[int], p: str, extra: bool = False) -> None:
    fields = [pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string()),
              pa.field("p", pa.string()), pa.field("n", pa.int32()), pa.field("q", pa.int64(), nullable=False)]
    cols = [pa.array(ids, pa.int64()), pa.array([f"v{i}" for i in ids]), pa.array([p] * len(ids)),
            pa.array([7] * len(ids), pa.int32()), pa.array(ids, pa.int64())]
    if extra:
        fields.append(pa.field("w", pa.float64()))
        cols.append(pa.array([1.5] * len(ids)))
    pq.write_table(pa.Table.from_arrays(cols, schema=pa.schema(fields)), path)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Work:
    root = tmp_path_factory.mktemp("unknown-outcome") / "wh"
    inputs = root / "in"
    inputs.mkdir(parents=True)
    t = str(root / "db" / "t")
    _ok("create", t, "--schema", "id long not null, v string, p string, n int, q long not null", "--partition", "p")
    _ok("schema", "identifier-fields", "set", t, "id")
    _ok("sort-order", "set", t, "id")
    _ok("properties", "set", t, "k0=v0")
    for i in range(3):
        (inputs / f"w{i}.csv").write_text("id,v,p,q\n" + "".join(f"{10 * i + k},x,a,1\n" for k in range(3)))
        _ok("write", t, inputs / f"w{i}.csv")
    _ok("delete", t, "--filter", "id = 1", "--mode", "merge-on-read")
    _ok("delete", t, "--filter", "id = 11", "--mode", "merge-on-read")
    _ok("tag", "create", t, "rel")
    _ok("branch", "create", t, "audit")
    (inputs / "audit.csv").write_text("id,v,p,q\n90,a,a,1\n")
    _ok("write", t, inputs / "audit.csv", "--branch", "audit")
    snaps = json.loads(_ok("inspect", "snapshots", t, "--json"))
    rows = snaps if isinstance(snaps, list) else snaps.get("snapshots", snaps)
    refs = json.loads(_ok("inspect", "refs", t, "--json"))
    ref_rows = refs if isinstance(refs, list) else refs.get("refs", refs)
    audit = next(r for r in ref_rows if r["name"] == "audit")["snapshot-id"]
    main = [r["snapshot-id"] for r in rows if r["snapshot-id"] != audit]
    # inputs of the cases
    _parquet(inputs / "a.parquet", [100, 101], "a")
    _parquet(inputs / "union.parquet", [1], "a", extra=True)
    (inputs / "hive" / "p=a").mkdir(parents=True)  # a Hive-style directory (migrate, snapshot-table)
    _parquet(inputs / "hive" / "p=a" / "part-0.parquet", [400], "a")
    (inputs / "rows.csv").write_text("id,v,p,q\n200,n,a,1\n201,n,b,1\n")
    (inputs / "upsert.csv").write_text("id,v,p,q\n2,changed,a,1\n300,new,a,1\n")
    (inputs / "keys.csv").write_text("id\n12\n")
    (inputs / "changes.json").write_text(json.dumps([{"op": "add", "column": "z", "type": "int"},
                                                     {"op": "doc", "column": "v", "doc": "a value"}]))
    t3 = str(root / "db" / "t3")
    _ok("create", t3, "--schema", "id long", "--format-version", "3")
    for i in range(2):
        (inputs / f"v3-{i}.csv").write_text("id\n" + "".join(f"{10 * i + k}\n" for k in range(3)))
        _ok("write", t3, inputs / f"v3-{i}.csv")
    _ok("delete", t3, "--filter", "id = 1", "--mode", "merge-on-read")
    # a table another catalog manages: only NNNNN-uuid.metadata.json files
    reg = root / "db" / "reg"
    _ok("create", reg, "--schema", "id long")
    meta = reg / "metadata"
    (meta / "v1.metadata.json").rename(meta / f"00000-{uuid.uuid4()}.metadata.json")
    for hint in meta.glob("*version-hint*"):
        hint.unlink()
    return Work(root, main, audit)


@pytest.fixture
def work(template: Work) -> Work:
    """The template, as it was built (tables record their absolute location: it is put back in
    place rather than copied elsewhere)."""
    pristine = template.root.with_name("pristine")
    if not pristine.exists():
        shutil.copytree(template.root, pristine, symlinks=True)
    shutil.rmtree(template.root)
    shutil.copytree(pristine, template.root, symlinks=True)
    return template


def _maintain_policy(w: Work) -> str:
    """A policy whose expiry cut-off is in 2100: maintain's first commit is its expire step's."""
    path = w.root / "in" / "maintain.json"
    path.write_text(json.dumps({"icectl.maintain.expire.older-than": "4102444800000"}))
    return str(path)


def _wap_enabled(w: Work, args: list[object]) -> list[object]:
    """``args``, run on the table once it enables write-audit-publish."""
    _ok("properties", "set", w.table, "write.wap.enabled=true")
    return args


def _staged(w: Work, cherry_pick: bool) -> list[object]:
    """Stage a write under WAP id w1 (main then moves on, with ``cherry_pick``, so publishing
    picks it as a new snapshot instead of fast-forwarding): the publish is the case's commit."""
    _ok("properties", "set", w.table, "write.wap.enabled=true")
    _ok("write", w.table, w.file("rows.csv"), "--wap-id", "w1")
    if cherry_pick:
        _ok("append", w.table, w.file("a.parquet"))
    return ["snapshot", "publish", w.table, "w1"]


def _catalog_file(w: Work) -> str:
    return str(next((w.root / "db" / "reg" / "metadata").glob("00000-*.metadata.json")))


# -- the classification ---------------------------------------------------------------------------------

Args = Callable[[Work], list[object]]

# command -> {variant: arguments}: every command that commits a table version
CASES: dict[str, dict[str, Args]] = {
    "create": {"": lambda w: ["create", str(w.root / "db" / "new"), "--schema", "id long"]},
    "append": {
        "": lambda w: ["append", w.table, w.file("a.parquet")],
        "--copy": lambda w: ["append", w.table, w.file("a.parquet"), "--copy"],
        "--move": lambda w: ["append", w.table, w.file("a.parquet"), "--move"],
    },
    "write": {"": lambda w: ["write", w.table, w.file("rows.csv")],
              "--wap-id": lambda w: _wap_enabled(w, ["write", w.table, w.file("rows.csv"), "--wap-id", "w2"])},
    "upgrade": {"": lambda w: ["upgrade", w.table, "--format-version", "3"]},
    "expire": {"": lambda w: ["expire", w.table, "--older-than", "0s", "--retain-last", "1"]},
    "delete": {
        "copy-on-write": lambda w: ["delete", w.table, "--filter", "id = 2", "--mode", "copy-on-write"],
        "merge-on-read": lambda w: ["delete", w.table, "--filter", "id = 2", "--mode", "merge-on-read"],
        "equality": lambda w: ["delete", w.table, "--equality", "id", "--from", w.file("keys.csv")],
        "merge-on-read v3": lambda w: ["delete", w.table3, "--filter", "id in (0, 2)", "--mode", "merge-on-read"],
    },
    "upsert": {"": lambda w: ["upsert", w.table, w.file("upsert.csv"), "--key", "id"]},
    "compact": {
        "": lambda w: ["compact", w.table, "--min-input-files", "2", "--workers", "1"],
        "--deletes": lambda w: ["compact", w.table, "--deletes", "--min-input-files", "2", "--workers", "1"],
        "v3": lambda w: ["compact", w.table3, "--min-input-files", "2", "--workers", "1"],
    },
    "rewrite-manifests": {"": lambda w: ["rewrite-manifests", w.table]},
    "stats compute": {"": lambda w: ["stats", "compute", w.table]},
    "maintain": {"": lambda w: ["maintain", w.table, "--policy", _maintain_policy(w)]},
    "schema add": {"": lambda w: ["schema", "add", w.table, "z", "int"]},
    "schema drop": {"": lambda w: ["schema", "drop", w.table, "v"]},
    "schema rename": {"": lambda w: ["schema", "rename", w.table, "v", "value"]},
    "schema move": {"": lambda w: ["schema", "move", w.table, "v", "--first"]},
    "schema promote": {"": lambda w: ["schema", "promote", w.table, "n", "long"]},
    "schema optional": {"": lambda w: ["schema", "optional", w.table, "q"]},
    "schema doc": {"": lambda w: ["schema", "doc", w.table, "v", "a value"]},
    "schema apply": {"": lambda w: ["schema", "apply", w.table, w.file("changes.json")]},
    "schema union": {"": lambda w: ["schema", "union", w.table, w.file("union.parquet")]},
    "schema identifier-fields set": {"": lambda w: ["schema", "identifier-fields", "set", w.table, "q"]},
    "schema identifier-fields unset": {"": lambda w: ["schema", "identifier-fields", "unset", w.table]},
    "partition add": {"": lambda w: ["partition", "add", w.table, "bucket(4, id)"]},
    "partition drop": {"": lambda w: ["partition", "drop", w.table, "p"]},
    "partition rename": {"": lambda w: ["partition", "rename", w.table, "p", "part"]},
    "partition replace": {"": lambda w: ["partition", "replace", w.table, "p", "truncate(1, p)"]},
    "sort-order set": {"": lambda w: ["sort-order", "set", w.table, "id desc"]},
    "sort-order unset": {"": lambda w: ["sort-order", "unset", w.table]},
    "properties set": {"": lambda w: ["properties", "set", w.table, "k=v"]},
    "properties unset": {"": lambda w: ["properties", "unset", w.table, "k0"]},
    "snapshot rollback": {"": lambda w: ["snapshot", "rollback", w.table, w.ids[-2]]},
    "snapshot set-current": {"": lambda w: ["snapshot", "set-current", w.table, w.ids[0]]},
    "snapshot cherry-pick": {"": lambda w: ["snapshot", "cherry-pick", w.table, w.audit_head]},
    "snapshot publish": {"fast-forward": lambda w: _staged(w, False), "cherry-pick": lambda w: _staged(w, True)},
    "branch create": {"": lambda w: ["branch", "create", w.table, "b2"]},
    "branch drop": {"": lambda w: ["branch", "drop", w.table, "audit"]},
    "branch replace": {"": lambda w: ["branch", "replace", w.table, "audit", "--to", "main"]},
    "branch fast-forward": {"": lambda w: ["branch", "fast-forward", w.table, "main", "--to", "audit"]},
    "tag create": {"": lambda w: ["tag", "create", w.table, "t2"]},
    "tag drop": {"": lambda w: ["tag", "drop", w.table, "rel"]},
    "tag replace": {"": lambda w: ["tag", "replace", w.table, "rel", "--snapshot-id", w.ids[0]]},
    "register": {"": lambda w: ["register", "db.reg", "--metadata", _catalog_file(w), "-w", w.root]},
    "migrate": {"": lambda w: ["migrate", w.file("hive")]},
    "snapshot-table": {"": lambda w: ["snapshot-table", w.file("hive"), str(w.root / "db" / "snap")]},
    "stats partitions": {"": lambda w: ["stats", "partitions", w.table]},
}

# command -> why it never commits a table version (and, for those that write, what it is run with
# to show that it does not)
NO_COMMIT: dict[str, tuple[str, Args | None]] = {
    "orphans": ("deletes files no version references; commits nothing",
                lambda w: ["orphans", w.table, "--older-than", "0s", "--allow-recent", "--delete"]),
    "drop": ("removes the metadata directory (with --purge the files it reaches); commits nothing",
             lambda w: ["drop", w.table]),
    "cache clear": ("empties icectl's own manifest cache, no table file", lambda w: ["cache", "clear"]),
    **{name: ("reads only", None) for name in (
        "plan", "check", "health", "scan", "changes", "cache info", "list", "properties list", "inspect table",
        "inspect schema", "inspect partitions", "inspect spec", "inspect entries", "inspect all-files",
        "inspect position-deletes", "inspect snapshots", "inspect snapshot", "inspect history",
        "inspect refs", "inspect manifests", "inspect files", "inspect metadata-log",
        "inspect all-manifests", "inspect all-entries", "inspect ancestors",
        "inspect partition-statistics", "inspect statistics")},
}
NO_COMMIT["relocate"] = ("commits no version of TABLE; the new table it creates elsewhere keeps every file "
                         "on an unknown outcome (tests/cli/test_relocate_cli.py)", None)
NO_COMMIT["drop --purge"] = ("deletes what the metadata reaches, then the metadata; commits nothing",
                             lambda w: ["drop", w.table, "--purge"])


def test_every_command_is_classified() -> None:
    commands = set(leaf_commands())
    classified = set(CASES) | {c for c in NO_COMMIT if c != "drop --purge"}
    assert not set(CASES) & set(NO_COMMIT)
    assert commands - classified == set(), "commands not classified for the unknown-outcome rule"
    assert classified - commands == set(), "classified commands the CLI does not have"


# -- the injected outcome ---------------------------------------------------------------------------------

@dataclass
class Injected:
    calls: int = 0
    at_commit: frozenset[str] = frozenset()  # every file under the warehouse when the commit ran
    temp: str = ""  # the commit's own temporary file (renamed away, or removed by the store)


def _files_under(root: Path) -> frozenset[str]:
    return frozenset(str(p) for p in root.rglob("*") if p.is_file())


@pytest.fixture
def inject(monkeypatch: pytest.MonkeyPatch, work: Work) -> Callable[[str], Injected]:
    def arm(how: str) -> Injected:
        seen = Injected()
        real = FileIO.rename_no_replace

        def rename_no_replace(self, src, dst, durable=False):
            if not _VERSION.match(str(dst).rsplit("/", 1)[-1]):
                return real(self, src, dst, durable)
            seen.calls += 1
            seen.at_commit = _files_under(work.root)
            seen.temp = str(src)
            if how == "landed":
                real(self, src, dst, durable)
                raise StorageError(f"cannot rename {src} to {dst}: connection reset (injected)")
            raise CommitStateUnknown(f"cannot tell whether {dst} was created (injected)")

        monkeypatch.setattr(FileIO, "rename_no_replace", rename_no_replace)
        return seen

    return arm


def _variants() -> Iterator[object]:
    for name, variants in CASES.items():
        for variant in variants:
            for how in ("landed", "lost"):
                label = f"{name} {variant}".strip()
                yield pytest.param(name, variant, how, id=f"{label}-{how}")


def _table_of(args: list[object], w: Work) -> str:
    if args[0] in ("create", "migrate"):
        return str(args[1])
    if args[0] == "snapshot-table":
        return str(args[2])
    if args[0] == "register":
        return str(w.root / "db" / "reg")
    return w.table3 if w.table3 in args else w.table


def _assert_readable(table: str) -> None:
    scanned = icectl("scan", table, "--format", "jsonl")
    assert scanned.returncode == 0, scanned.stderr
    checked = icectl("check", table, "--deep")
    assert "file-missing" not in checked.stdout, checked.stdout
    assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.mark.parametrize("name,variant,how", list(_variants()))
def test_an_unknown_commit_outcome_keeps_every_file(work: Work, inject, name: str, variant: str,
                                                    how: str) -> None:
    args = CASES[name][variant](work)
    seen = inject(how)
    r = icectl(*args)
    assert seen.calls == 1, (r.returncode, r.stderr)
    assert r.returncode == EXIT_UNKNOWN, r.stdout + r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    gone = sorted(p for p in seen.at_commit - _files_under(work.root) if p != seen.temp)
    assert gone == [], f"removed although the commit may have landed: {gone}"
    table = _table_of(args, work)
    landed = Path(table, "metadata").exists() and any(
        _VERSION.match(p.name) for p in Path(table, "metadata").iterdir())
    if how == "landed" or name not in ("create", "register", "migrate", "snapshot-table"):
        assert landed
        _assert_readable(table)


@pytest.mark.parametrize("name", [n for n, (_, args) in NO_COMMIT.items() if args is not None])
def test_commands_that_never_commit_do_not(work: Work, inject, name: str) -> None:
    seen = inject("lost")
    r = icectl(*NO_COMMIT[name][1](work))
    assert r.returncode == 0, r.stderr
    assert seen.calls == 0


# -- one home for the clean-up ----------------------------------------------------------------------------

_ROOT = Path(__file__).resolve().parents[2] / "icectl"
_DELETES = {"delete_quietly", "delete", "delete_many", "rm", "rm_file", "unlink", "remove", "rmtree"}
# (module, function) -> why its failure path may delete directly: files no version can reference
_OWN_TEMPORARIES = {
    ("table/store.py", "write_version_hint"): "the hint's temporary file, never part of a version",
    ("table/store.py", "_rename_version"): "the commit's temporary metadata file, before it is renamed",
    ("ops/maintain/expire_records.py", "pending_records"): "an earlier run's record cut short while being written",
    ("io/storage/objectstore.py", "_probe"): "the probe object of the conditional-create check, no table file",
    ("catalog/sql.py", "create"): "a new table's first metadata file after the database refused its INSERT",
    ("catalog/sql.py", "commit"): "the new metadata file after the database refused the pointer's UPDATE",
}


def _failure_path_deletes() -> Iterator[tuple[str, str, int]]:
    """(module, function, line) of every delete called in an ``except`` or ``finally`` block of
    the code that writes tables (icectl/cli's own temporary output files and icectl/io's cache
    apart)."""
    import ast

    for path in sorted(_ROOT.rglob("*.py")):
        module = path.relative_to(_ROOT).as_posix()
        if module.startswith(("cli/", "io/manifest/cache.py")) or module == "command_files.py":
            continue
        tree = ast.parse(path.read_text())
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                blocks = node.body if isinstance(node, ast.ExceptHandler) else \
                    node.finalbody if isinstance(node, ast.Try) else []
                for stmt in blocks:
                    for call in ast.walk(stmt):
                        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) \
                                and call.func.attr in _DELETES:
                            yield module, fn.name, call.lineno


def test_failure_paths_clean_up_through_command_files() -> None:
    """Every clean-up on a failure path goes through icectl.command_files (``discard``,
    ``discard_operation``, ``abort``), the one place that knows an unknown outcome keeps every
    file; only a commit's own temporary files, which no version can name, are removed directly."""
    found = sorted(set(_failure_path_deletes()))
    direct = [f for f in found if (f[0], f[1]) not in _OWN_TEMPORARIES]
    assert direct == [], "failure paths deleting files themselves instead of command_files.discard"
    assert {(m, f) for m, f, _ in found} == set(_OWN_TEMPORARIES), "stale allowances"
