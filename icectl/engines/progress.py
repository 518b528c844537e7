"""Progress of an engine's map, shared by every engine: :class:`TaskProgress` (what the
callback receives), :class:`Tracker` (counts finished tasks) and :func:`task_sizes` (input bytes
per task). Engines import it; it imports nothing of icectl (see :mod:`icectl.engines`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

__all__ = ["TaskProgress", "ProgressCallback", "Tracker", "task_sizes"]


@dataclass(frozen=True)
class TaskProgress:
    """Where a ``map`` stands: tasks finished of all, and their input bytes (0 when unknown)."""

    done: int
    total: int
    bytes_done: int = 0
    bytes_total: int = 0


ProgressCallback = Callable[[TaskProgress], None]


def task_sizes(tasks: Sequence[Any], sizes: Sequence[int] | None) -> list[int]:
    """Input bytes per task: ``sizes`` when given, else each task's ``input_bytes`` (attribute or
    mapping key), else 0."""
    if sizes is not None:
        if len(sizes) != len(tasks):
            raise ValueError(f"{len(sizes)} sizes for {len(tasks)} tasks")
        return [int(s) for s in sizes]
    out = []
    for t in tasks:
        v = t.get("input_bytes") if isinstance(t, dict) else getattr(t, "input_bytes", None)
        out.append(int(v) if isinstance(v, (int, float)) else 0)
    return out


class Tracker:
    """Counts finished tasks and reports them to a progress callback."""

    def __init__(self, sizes: list[int], callback: ProgressCallback | None) -> None:
        self.sizes = sizes
        self.callback = callback
        self.done = 0
        self.bytes_done = 0
        self.bytes_total = sum(sizes)

    def start(self) -> None:
        self._report()

    def finished(self, index: int) -> None:
        self.done += 1
        self.bytes_done += self.sizes[index]
        self._report()

    def set(self, done: int, bytes_done: int) -> None:
        if (done, bytes_done) != (self.done, self.bytes_done):
            self.done, self.bytes_done = done, bytes_done
            self._report()

    def _report(self) -> None:
        if self.callback is not None:
            self.callback(TaskProgress(self.done, len(self.sizes), self.bytes_done, self.bytes_total))
