"""Shared pieces of the fault suites: run icectl as a user does, and judge a table afterwards.

icectl runs in a child process (``python -m icectl``) with no terminal on any stream. The table is
judged independently of icectl's own code where that matters: the newest metadata version is
found by listing ``metadata/``, and live files, row counts and every referenced path come from
pyiceberg (a test-only peer reader).

Scale: the suites run small fixed-seed counts by default; ``--runslow`` enables the big cases and
``ICECTL_FAULTS_SCALE=N`` multiplies their counts.
"""

from __future__ import annotations

import hashlib
import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

from clirun import icectl_argv  # the child icectl of these tests
from support.tables import empty_table

# Exit codes (icectl/errors.py); a fault suite must never see 1 or 70.
EXIT_OK = 0
EXIT_INVALID = 2
EXIT_NOT_FOUND = 3
EXIT_VALIDATION = 5
EXIT_CONFLICT = 6
EXIT_STORAGE = 7
EXIT_CORRUPT = 8
EXIT_INTERNAL = 70

_VERSION_FILE = re.compile(r"^v(\d+)(\.gz)?\.metadata\.json$")


def scale() -> int:
    """The multiplier for the big (``--runslow``) cases, from ``ICECTL_FAULTS_SCALE``."""
    value = os.environ.get("ICECTL_FAULTS_SCALE", "1")
    return max(1, int(value)) if value.isdigit() else 1


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ICECTL_")}
    env["NO_COLOR"] = "1"
    env.update(extra)
    return env


def run_icectl(*args: Any, timeout: float = 60, stdin: bytes | None = None,
               env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``icectl ARGS`` with no TTY; never raises on a non-zero exit (TimeoutExpired on a hang)."""
    return subprocess.run(
        icectl_argv(*args),
        input=stdin.decode("utf-8", "surrogateescape") if stdin is not None else None,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True, text=True, timeout=timeout, env=env or child_env(),
    )


def start_icectl(*args: Any, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(icectl_argv(*args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env or child_env())


def wait_stopped_or_exited(proc: subprocess.Popen[str], timeout: float = 60) -> bool:
    """True once ``proc`` is stopped (SIGSTOP), False when it exited first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            state = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            state = ""
        if state in ("T", "t"):
            return True
        time.sleep(0.02)
    proc.kill()
    raise AssertionError(f"process {proc.args} neither stopped nor exited in {timeout}s")


def kill(proc: subprocess.Popen[str]) -> None:
    try:
        proc.send_signal(signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.communicate()


def assert_clean_failure(done: subprocess.CompletedProcess[str] | Any, what: str) -> None:
    """No traceback and an exit code from the documented kinds (never 1 nor 70)."""
    assert "Traceback" not in done.stderr, f"{what}: traceback on stderr\n{done.stderr}"
    assert done.returncode not in (1, EXIT_INTERNAL), (
        f"{what}: exit {done.returncode}\nstderr:\n{done.stderr}")


# -- data ----------------------------------------------------------------------------------------

def write_parquet(path: Path, ids: Iterable[int], src: str) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    ids = list(ids)
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "src": pa.array([src] * len(ids))}),
                   str(path))
    return path


def write_csv(path: Path, ids: Iterable[int], src: str) -> Path:
    path.write_text("id,src\n" + "".join(f"{i},{src}\n" for i in ids), encoding="utf-8")
    return path


# -- the table, judged from outside ----------------------------------------------------------

def plain(path: str) -> str:
    """``file:/x``, ``file:///x`` and ``/x`` as one spelling."""
    if path.startswith("file://"):
        return path[len("file://"):]
    if path.startswith("file:"):
        return path[len("file:"):]
    return path


def metadata_versions(location: Path) -> list[int]:
    out = []
    for p in (location / "metadata").iterdir():
        m = _VERSION_FILE.match(p.name)
        if m:
            out.append(int(m.group(1)))
    return sorted(out)


def version_hint(location: Path) -> int | None:
    try:
        return int((location / "metadata" / "version-hint.text").read_text().strip())
    except (OSError, ValueError):
        return None


def newest_metadata(location: Path) -> Path:
    versions = metadata_versions(location)
    assert versions, f"no metadata version in {location}"
    return location / "metadata" / f"v{versions[-1]}.metadata.json"


def check_versions(location: Path, *, delete_after_commit: bool) -> list[int]:
    """Versions are contiguous up to the newest, and the hint names no version beyond it."""
    versions = metadata_versions(location)
    assert versions == list(range(versions[0], versions[-1] + 1)), f"gaps in versions {versions}"
    if not delete_after_commit:
        assert versions[0] == 1, f"versions start at {versions[0]}"
    hint = version_hint(location)
    assert hint is None or hint <= versions[-1], f"hint {hint} beyond newest v{versions[-1]}"
    return versions


def static_table(location: Path) -> Any:
    from pyiceberg.table import StaticTable

    return StaticTable.from_metadata(str(newest_metadata(location)))


@dataclass
class TableView:
    """What the newest metadata version says, read by pyiceberg."""

    live_data_files: set[str]
    columns: set[str]
    properties: dict[str, str]
    snapshot_ids: set[int]
    referenced: set[str]  # every file any metadata still points at

    @classmethod
    def read(cls, location: Path) -> "TableView":
        tbl = static_table(location)
        md = tbl.metadata
        io = tbl.io
        live = {plain(t.file.file_path) for t in tbl.scan().plan_files()}
        referenced = {plain(str(newest_metadata(location)))}
        referenced |= {plain(e.metadata_file) for e in md.metadata_log}
        for snap in md.snapshots:
            referenced.add(plain(snap.manifest_list))
            for m in snap.manifests(io):
                referenced.add(plain(m.manifest_path))
                for entry in m.fetch_manifest_entry(io, discard_deleted=False):
                    referenced.add(plain(entry.data_file.file_path))
        for stats in list(md.statistics) + list(md.partition_statistics):
            referenced.add(plain(stats.statistics_path))
        return cls(
            live_data_files=live,
            columns={f.name for f in md.schema().fields},
            properties=dict(md.properties),
            snapshot_ids={s.snapshot_id for s in md.snapshots},
            referenced=referenced,
        )


def table_files(location: Path) -> set[str]:
    """Every visible file under the table (names starting with ``.`` are checksums and records)."""
    out = set()
    for root, dirs, files in os.walk(location):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            if not name.startswith(".") and name != "version-hint.text":
                out.add(os.path.join(root, name))
    return out


def unreferenced_files(location: Path, view: TableView | None = None) -> set[str]:
    view = view or TableView.read(location)
    return table_files(location) - view.referenced


def row_count(location: Path) -> int:
    return static_table(location).scan().to_arrow().num_rows


def tree_digest(root: Path) -> dict[str, str]:
    """Path -> sha256 of every file and directory under ``root`` (links not followed)."""
    out: dict[str, str] = {}
    for dirpath, dirs, files in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        out[rel + "/"] = "dir"
        for name in files:
            p = os.path.join(dirpath, name)
            with open(p, "rb") as f:
                out[os.path.join(rel, name)] = hashlib.sha256(f.read()).hexdigest()
    return out


def age_tree(root: Path, days: float = 10) -> None:
    """Make every file look ``days`` old, so orphan listing with its default cut-off sees them."""
    then = time.time() - days * 86400
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            os.utime(os.path.join(dirpath, name), (then, then))


def json_out(done: subprocess.CompletedProcess[str]) -> Any:
    import json

    assert done.returncode == 0, f"exit {done.returncode}\nstderr:\n{done.stderr}"
    return json.loads(done.stdout)


def create_table(location: Path, *props: str, schema: str = "id long, src string") -> None:
    """The faults tests' table (``props``: ``KEY=VALUE`` texts), made by support.tables."""
    empty_table(location, schema, properties=dict(p.split("=", 1) for p in props))


def run_many(argvs: Sequence[Sequence[Any]], workers: int) -> list[subprocess.CompletedProcess[str]]:
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(lambda a: run_icectl(*a), argvs))
