"""Racing writers on one object-store table (s3://, gs://, abfs://): P processes, each running C
icectl commands in turn (write, append, delete, compact, or only appends), then an account of
what was acknowledged against what the table holds. A command that exits 12 (its commit's
outcome unknown) is settled by reading the table back: its rows are there or not, whole.

Used by test_commit_race.py and test_faults.py and, for figures, from the command line against
a running S3 server (moto's or another)::

    python tests/objectstore/race_harness.py --endpoint http://127.0.0.1:PORT \
        --processes 8 --commits 10 --runs 3 [--ops append] [--pythonpath /tmp/old-icectl]

``--pythonpath`` runs another checkout's icectl (e.g. main before this change, which reaches
the server through AWS_ENDPOINT_URL only).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

MIXED = ("write", "append", "delete", "compact")


@dataclass
class Outcome:
    acknowledged: list[int] = field(default_factory=list)  # snapshot ids of commands that exited 0
    commands_ok: int = 0
    commands_failed: list[str] = field(default_factory=list)  # "op: exit code: message"
    added_ids: set[int] = field(default_factory=set)
    deleted_ids: set[int] = field(default_factory=set)
    retries: int = 0  # attempts - 1 summed over the commands that report attempts
    unknown: list[tuple[str, list[int]]] = field(default_factory=list)  # exit 12: (op, its ids)


@dataclass
class Report:
    acknowledged: int
    snapshots: int
    missing: list[int]
    extra: list[int]
    rows_expected: int
    rows_found: int
    rows_ok: bool
    commands_ok: int
    failed: list[str]
    retries: int
    unknown: int = 0  # commands that exited 12
    unknown_present: int = 0  # of those, the ones whose commit the table holds

    @property
    def lost(self) -> int:
        return len(self.missing)


def _icectl(args: list[str], env: dict[str, str], timeout: float = 1800) -> subprocess.CompletedProcess:
    # (not run from the checkout: ``python -m`` puts the working directory first on sys.path,
    # which would shadow a PYTHONPATH naming another checkout)
    return subprocess.run([sys.executable, "-m", "icectl", *args], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=tempfile.gettempdir())


def _write_parquet(options: dict, url: str, ids: list[int]) -> None:
    import fsspec
    import pyarrow as pa
    import pyarrow.parquet as pq

    scheme, rest = url.split("://", 1)
    fs = fsspec.filesystem(scheme, **options)
    table = pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array([f"v{i}" for i in ids])})
    with fs.open(rest, "wb") as f:
        pq.write_table(table, f)


def _worker(table: str, options: dict, env: dict[str, str], w: int, commits: int, ops: tuple[str, ...],
            scratch: str) -> Outcome:
    out = Outcome()
    live: list[int] = []
    for i in range(commits):
        op = ops[(w + i) % len(ops)]
        if op == "delete" and not live:
            op = "write"
        ids = [w * 100000 + i * 100 + k for k in range(3)]
        if op == "write":
            path = os.path.join(scratch, f"w{w}-{i}.csv")
            with open(path, "w") as f:
                f.write("id,v\n" + "".join(f"{x},v{x}\n" for x in ids))
            args = ["write", table, path, "--json"]
        elif op == "append":
            url = f"{table.rsplit('/', 2)[0]}/incoming/w{w}-{i}-{uuid.uuid4().hex[:6]}.parquet"
            _write_parquet(options, url, ids)
            args = ["append", table, url, "--json"]
        elif op == "delete":
            victim = live[0]
            args = ["delete", table, "--filter", f"id = {victim}", "--json"]
        else:
            args = ["compact", table, "--min-input-files", "2", "--workers", "1", "--json"]
        r = _icectl(args, env)
        if r.returncode == 12:  # settled by reading back, at the end
            out.unknown.append((op, ids if op in ("write", "append") else [live.pop(0)] if op == "delete" else []))
            continue
        if r.returncode != 0:
            out.commands_failed.append(f"{op}: exit {r.returncode}: {r.stderr.strip().splitlines()[-1:]}")
            continue
        out.commands_ok += 1
        result = json.loads(r.stdout)
        out.retries += max(0, int(result.get("attempts") or 1) - 1)
        if op == "compact":
            out.acknowledged += [int(s) for s in result.get("snapshot-ids", [])]
        elif result.get("committed", True) and result.get("snapshot-id") is not None:
            out.acknowledged.append(int(result["snapshot-id"]))
        if op in ("write", "append"):
            out.added_ids.update(ids)
            live += ids
        elif op == "delete":
            out.deleted_ids.add(live.pop(0))
    return out


def race(table: str, options: dict, env: dict[str, str], processes: int, commits: int,
         ops: tuple[str, ...] = MIXED, create: bool = True) -> Report:
    """Create ``table``, race ``processes`` writers of ``commits`` commands each, and account."""
    if create:
        r = _icectl(["create", table, "--schema", "id long, v string",
                     "--property", "commit.retry.num-retries=100",
                     "--property", "commit.retry.min-wait-ms=20",
                     "--property", "commit.retry.max-wait-ms=2000"], env)
        assert r.returncode == 0, r.stderr
    with tempfile.TemporaryDirectory() as scratch, ThreadPoolExecutor(processes) as pool:
        outcomes = list(pool.map(lambda w: _worker(table, options, env, w, commits, ops, scratch),
                                 range(processes)))
    md = json.loads(_icectl(["inspect", "snapshots", table, "--json"], env).stdout or "[]")
    snaps = {int(s["snapshot-id"]) for s in (md if isinstance(md, list) else md.get("snapshots", []))}
    acked = [s for o in outcomes for s in o.acknowledged]
    scan = _icectl(["scan", table, "--format", "jsonl", "--columns", "id"], env)
    assert scan.returncode == 0, scan.stderr
    found = sorted(json.loads(line)["id"] for line in scan.stdout.splitlines() if line.strip())
    added = set().union(*(o.added_ids for o in outcomes))
    deleted = set().union(*(o.deleted_ids for o in outcomes))
    present = set(found)
    unknown = [u for o in outcomes for u in o.unknown]
    landed = 0
    for op, ids in unknown:  # an unknown outcome is read back: all of its rows, or none
        if op in ("write", "append") and ids and set(ids) <= present:
            added |= set(ids)
            landed += 1
        elif op == "delete" and ids and not set(ids) & present:
            deleted |= set(ids)
            landed += 1
    expected = sorted(added - deleted)
    return Report(unknown=len(unknown), unknown_present=landed,acknowledged=len(acked), snapshots=len(snaps),
                  missing=sorted(set(acked) - snaps), extra=sorted(snaps - set(acked)),
                  rows_expected=len(expected), rows_found=len(found), rows_ok=found == expected,
                  commands_ok=sum(o.commands_ok for o in outcomes),
                  failed=[f for o in outcomes for f in o.commands_failed],
                  retries=sum(o.retries for o in outcomes))


def check_race(rep, allowed=(": exit 6:", ": exit 5:")) -> None:
    assert rep.missing == [], f"acknowledged but lost: {rep.missing}"
    assert len(rep.extra) <= rep.unknown_present, f"snapshots nobody acknowledged: {rep.extra}"
    assert rep.acknowledged + len(rep.extra) == rep.snapshots
    assert rep.rows_ok, (rep.rows_expected, rep.rows_found)
    # a failure is only ever a clean refusal (a conflict that re-validation found), never a crash
    assert all(any(a in f for a in allowed) for f in rep.failed), rep.failed


def figures(store, rep, processes: int, commits: int) -> str:
    """One line of figures (printed; `pytest -s` shows them)."""
    line = json.dumps({"store": store.kind, "writers": processes, "commands": processes * commits,
                       "commands-ok": rep.commands_ok, "acknowledged": rep.acknowledged,
                       "present": rep.acknowledged - len(rep.missing), "lost": rep.lost,
                       "exit-12": rep.unknown, "exit-12-present": rep.unknown_present,
                       "rows-exact": rep.rows_ok, "failed": len(rep.failed)})
    print(line)
    return line


def main(argv: list[str]) -> int:
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--processes", type=int, default=8)
    ap.add_argument("--commits", type=int, default=10)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--ops", default=",".join(MIXED))
    ap.add_argument("--pythonpath", default="")
    a = ap.parse_args(argv)
    import boto3

    env = {k: v for k, v in os.environ.items() if not k.startswith("ICECTL_STORAGE")}
    env.update({"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": a.endpoint,
                "ICECTL_STORAGE_OPTIONS": json.dumps({"endpoint_url": a.endpoint})})
    if a.pythonpath:
        env["PYTHONPATH"] = a.pythonpath
    client = boto3.client("s3", endpoint_url=a.endpoint, aws_access_key_id="testing",
                          aws_secret_access_key="testing", region_name="us-east-1")
    for run in range(a.runs):
        bucket = f"race-{uuid.uuid4().hex[:10]}"
        client.create_bucket(Bucket=bucket)
        rep = race(f"s3://{bucket}/db/events", {"endpoint_url": a.endpoint}, env, a.processes, a.commits,
                   tuple(a.ops.split(",")))
        print(json.dumps({"run": run + 1, "processes": a.processes, "commits-per-process": a.commits,
                          "commands-ok": rep.commands_ok, "acknowledged-snapshots": rep.acknowledged,
                          "snapshots-in-metadata": rep.snapshots, "lost": rep.lost,
                          "unacknowledged-extra": len(rep.extra), "rows-expected": rep.rows_expected,
                          "rows-found": rep.rows_found, "rows-exact": rep.rows_ok,
                          "retries-after-lost-races": rep.retries, "failed": rep.failed}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
