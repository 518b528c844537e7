"""Memory of a process tree, read from /proc (Linux), shared by the benchmarks that measure
whole processes together with the processes they start (worker pools, a JVM)."""

from __future__ import annotations

import os


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
