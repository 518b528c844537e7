"""Memory of a process tree, read from /proc (Linux), shared by the benchmarks that measure
whole processes together with the processes they start (worker pools, a JVM)."""

from __future__ import annotations

import os
import subprocess
import threading
import time


def descendants(pid: int) -> list[int]:
    """Every process started, directly or not, by ``pid`` (not ``pid`` itself)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def status_kb(pid: int, key: str) -> int:
    """A KiB figure of /proc/PID/status (``VmRSS``: now, ``VmHWM``: peak); 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def run_measured(cmd: list[str], env: dict | None = None) -> tuple[float, float, str]:
    """(wall seconds, peak MiB of the process tree's summed RSS, stdout) of one process."""
    peak = [0]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            env=env, text=True)
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            tree = [proc.pid, *descendants(proc.pid)]
            peak[0] = max(peak[0], sum(status_kb(p, "VmRSS") for p in tree))
            done.wait(0.05)

    t0 = time.perf_counter()
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    wall = time.perf_counter() - t0
    done.set()
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:5])} ... exited {proc.returncode}\n{err[-3000:]}")
    return wall, peak[0] / 1024, out
