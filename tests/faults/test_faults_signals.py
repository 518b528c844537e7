"""Signals and dead workers: an interrupted command leaves nothing behind.

The command runs as a user runs it (``python -m icectl ...``, a process group of its own, as a
shell job is). At a random moment (fixed seeds) the group gets SIGINT (Ctrl-C in a terminal),
SIGTERM (kill, timeout, systemd, cron) or SIGHUP (a closed terminal), or one of the command's
worker processes is SIGKILLed (the out-of-memory killer), or the driver itself is SIGKILLed.
Afterwards:

* the exit code is the documented one: 0 when the command finished first, 128 + the signal's
  number (130, 143, 129; or death by the signal when it came while the interpreter was still
  starting, before anything was written), 13 for a dead worker (never 1 nor 70; 12, commit state unknown, is
  accepted only with its files kept);
* no process of the group is alive (workers die with their driver);
* ``icectl orphans TABLE --older-than 0s`` lists no file (not after SIGKILL of the driver: it
  cannot clean up, but its workers must be gone);
* the table reads, and its rows are the rows before the command or the rows after it.

Normal suite: six (command, signal) runs covering every command and signal, two worker kills
and one SIGKILL (seeded); ``--runslow`` runs every command with every signal and worker kills of
write, compact and delete, ``ICECTL_SIGNAL_RUNS`` (default 10) seeds each.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import run_figures
from faults_support import child_env, icectl_argv, run_icectl, write_csv
from clirun import icectl


SIGNALS = {"SIGINT": signal.SIGINT, "SIGTERM": signal.SIGTERM, "SIGHUP": signal.SIGHUP}
EXIT_UNKNOWN = 12
EXIT_WORKER_LOST = 13
DELETED = tuple(range(1, 240, 20))  # one row in each of the 12 data files


@dataclass
class Figures:
    runs: int = 0
    signals: int = 0
    worker_kills: int = 0
    completed_first: int = 0
    files_left: int = 0
    processes_left: int = 0
    codes: dict[int, int] = field(default_factory=dict)


FIGURES = Figures()


def _cli(*args: Any) -> Any:
    return icectl(*args)


# -- the table before the command ---------------------------------------------------------------

def prepare(tmp: Path, command: str) -> tuple[Path, list[str]]:
    """A table with 12 small data files (ids 0..239) and the faulted command's argv."""
    t = tmp / "wh" / "db" / "t"
    done = _cli("create", t, "--schema", "id long, src string", "--format-version", "2")
    assert done.exit_code == 0, done.output
    inputs = []
    for i in range(12):
        inputs.append(write_csv(tmp / f"in{i}.csv", range(i * 20, i * 20 + 20), f"s{i}"))
    done = _cli("write", t, *inputs, "--workers", "1")
    assert done.exit_code == 0, done.output
    if command == "write":
        more = [write_csv(tmp / f"more{i}.csv", range(1000 + i * 500, 1500 + i * 500), f"m{i}")
                for i in range(8)]
        argv = ["write", str(t), *map(str, more), "--workers", "2"]
    elif command == "compact":
        argv = ["compact", str(t), "--workers", "2", "--min-input-files", "2"]
    elif command == "delete":
        argv = ["delete", str(t), "--filter", f"id in ({', '.join(map(str, DELETED))})",
                "--mode", "copy-on-write"]
    elif command == "upsert":
        data = write_csv(tmp / "up.csv", range(100, 3100), "up")
        argv = ["upsert", str(t), str(data), "--key", "id"]
    else:
        raise AssertionError(command)
    return t, argv


def rows_after(command: str, before: list[tuple]) -> list[tuple]:
    """The rows once the command of :func:`prepare` has run to the end."""
    if command == "write":
        return sorted(before + [(i, f"m{k}") for k in range(8) for i in range(1000 + k * 500, 1500 + k * 500)])
    if command == "compact":
        return before
    if command == "delete":
        return [r for r in before if r[0] not in DELETED]
    if command == "upsert":
        return sorted([r for r in before if r[0] < 100] + [(i, "up") for i in range(100, 3100)])
    raise AssertionError(command)


def rows(t: Path) -> list[tuple]:
    done = _cli("scan", t, "--format", "jsonl")
    assert done.exit_code == 0, f"the table does not read: {done.output}"
    return sorted((r["id"], r["src"]) for r in map(json.loads, done.stdout.splitlines()) if r)


def orphans(t: Path) -> list[str]:
    done = run_icectl("orphans", t, "--older-than", "0s", "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["orphan-files"]


# -- processes -----------------------------------------------------------------------------------

def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes whose process group is ``pgid``, from /proc."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = Path(f"/proc/{d}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z" and int(fields[2]) == pgid:
            out.append(int(d))
    return out


def children_of(pid: int) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                fields = Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                out.append(int(d))
    return out


def wait_group_gone(pgid: int, timeout: float = 15) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = group_members(pgid)
        if not left:
            return []
        time.sleep(0.05)
    return group_members(pgid)


def start(argv: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(icectl_argv(*argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=child_env(),
                            start_new_session=True)


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


# -- one faulted run -----------------------------------------------------------------------------

def judge(t: Path, before: list[tuple], done_rows: list[tuple], proc: subprocess.Popen[str],
          stderr: str, expected: set[int], clean: bool = True) -> None:
    FIGURES.runs += 1
    code = proc.returncode
    FIGURES.codes[code] = FIGURES.codes.get(code, 0) + 1
    left = wait_group_gone(proc.pid)
    FIGURES.processes_left += len(left)
    kill_group(proc.pid)
    assert not left, f"processes left alive after the command ended: {left}"
    assert "Traceback" not in stderr, stderr
    assert code in expected | {0, EXIT_UNKNOWN}, f"exit {code}\n{stderr}"
    after = rows(t)
    if code == 0:
        FIGURES.completed_first += 1
    if code == 0:
        assert after == done_rows
    if code == 0 or code == EXIT_UNKNOWN:
        return  # finished (or maybe landed): its files are the table's or kept on purpose
    # a signal after the commit landed (its files are then the table's) ends the command with
    # the signal's code too: the rows are those before the command or after it, never half
    assert after in (before, done_rows), "half a command's rows"
    if clean:
        found = orphans(t)
        FIGURES.files_left += len(found)
        assert not found, f"files left by the interrupted command: {found}"


def run_signalled(tmp: Path, command: str, signame: str, seed: int) -> None:
    t, argv = prepare(tmp, command)
    before = rows(t)
    delay = random.Random(f"{command}-{signame}-{seed}").uniform(0.4, 1.6)
    proc = start(argv)
    try:
        time.sleep(delay)
        if proc.poll() is None:
            os.killpg(proc.pid, SIGNALS[signame])
            FIGURES.signals += 1
        _, stderr = proc.communicate(timeout=120)
    finally:
        kill_group(proc.pid)
    # killed by the signal itself (-signum; a shell reports it as 128 + signum too) only when it
    # came before the interpreter installed icectl's handlers: nothing was written by then
    judge(t, before, rows_after(command, before), proc, stderr,
          {128 + SIGNALS[signame], -SIGNALS[signame]})


def run_worker_killed(tmp: Path, command: str, seed: int) -> None:
    """SIGKILL one worker process while the driver lives: exit 13, nothing left."""
    t, argv = prepare(tmp, command)
    before = rows(t)
    rnd = random.Random(f"{command}-worker-{seed}")
    proc = start(argv)
    try:
        deadline = time.monotonic() + 60
        victim = None
        while time.monotonic() < deadline and proc.poll() is None:
            kids = [k for k in children_of(proc.pid) if _is_pool_worker(k)]
            if kids:
                time.sleep(rnd.uniform(0.0, 0.5))
                victim = rnd.choice(kids)
                try:
                    os.kill(victim, signal.SIGKILL)
                    FIGURES.worker_kills += 1
                except ProcessLookupError:
                    victim = None
                break
            time.sleep(0.02)
        _, stderr = proc.communicate(timeout=120)
    finally:
        kill_group(proc.pid)
    judge(t, before, rows_after(command, before), proc, stderr, {EXIT_WORKER_LOST})
    if victim is not None and proc.returncode == EXIT_WORKER_LOST:
        assert "worker process died" in stderr


def _is_pool_worker(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return any(b"spawn_main" in part for part in cmdline)


# -- the cases -----------------------------------------------------------------------------------

COMMANDS = ["write", "compact", "delete", "upsert"]


# the normal suite: every command and every signal at least once (the whole matrix: --runslow)
QUICK = [("write", "SIGTERM"), ("write", "SIGHUP"), ("compact", "SIGINT"), ("compact", "SIGTERM"),
         ("delete", "SIGHUP"), ("upsert", "SIGTERM")]


@pytest.mark.parametrize("command, signame", QUICK)
def test_signal_removes_the_unfinished_commands_files(tmp_path: Path, command: str, signame: str) -> None:
    run_signalled(tmp_path, command, signame, seed=0)


@pytest.mark.parametrize("command", ["write", "compact"])
def test_dead_worker_removes_every_file_and_exits_13(tmp_path: Path, command: str) -> None:
    run_worker_killed(tmp_path, command, seed=0)


def test_sigkilled_driver_leaves_no_worker_alive(tmp_path: Path) -> None:
    """SIGKILL (no clean-up possible) of `compact` while its workers run: the workers die with
    it (PR_SET_PDEATHSIG), and the table still reads its rows from before or after."""
    t, argv = prepare(tmp_path, "compact")
    before = rows(t)
    proc = start(argv)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if any(_is_pool_worker(k) for k in children_of(proc.pid)):
                break
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)  # only the driver, as the OOM killer would
        proc.communicate(timeout=60)
        left = wait_group_gone(proc.pid, timeout=10)
    finally:
        kill_group(proc.pid)
    FIGURES.processes_left += len(left)
    assert not left, f"workers outlived their SIGKILLed driver: {left}"
    assert sorted(set(rows(t))) == sorted(set(before))  # compaction keeps the rows either way


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("signame", list(SIGNALS))
def test_many_signals(tmp_path: Path, command: str, signame: str) -> None:
    for seed in range(1, 1 + int(os.environ.get("ICECTL_SIGNAL_RUNS", "10"))):
        run_signalled(tmp_path / str(seed), command, signame, seed)


@pytest.mark.slow
@pytest.mark.parametrize("command", ["write", "compact", "delete"])
def test_many_worker_kills(tmp_path: Path, command: str) -> None:
    for seed in range(1, 1 + int(os.environ.get("ICECTL_SIGNAL_RUNS", "10"))):
        run_worker_killed(tmp_path / str(seed), command, seed)

run_figures.report("signals", lambda: str(FIGURES))
