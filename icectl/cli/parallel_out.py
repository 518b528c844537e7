"""Writing a long document on every core: the same text, rendered by several processes.

A plan of 200,000 files is an 80 MB ``--json`` document, and rendering it is most of a warm
plan's time. The document is a head, pieces (one per manifest's planned files) and a tail;
:func:`write_document` writes the head, then the pieces in order, then the tail. With more than
one worker and enough to render, the pieces are cut into contiguous slices by weight: the
process renders the first slice itself, and a forked child renders each other slice into memory
and, when its turn comes, writes it to the same file descriptor. The bytes written are the ones
a single process writes (tests compare them), and nothing else changes:

* children are forked only from a process with one thread, when the stream has a file
  descriptor, after everything before them is flushed;
* a child that fails before its turn writes nothing, and its slice is rendered here instead;
* a child takes its turn only when told (a byte on a pipe) and ends without running any exit
  handler; a closed pipe (this process failed or was interrupted) ends it without writing;
* a child's failed write is this process's error: a reader that went away is BrokenPipeError
  (not an error for icectl), any other the OSError of the write.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Callable, Sequence

__all__ = ["MIN_PARALLEL_WEIGHT", "write_document"]

MIN_PARALLEL_WEIGHT = 20_000  # planned files: fewer render faster than a fork starts

_READY, _FAILED = b"R", b"F"
_EXIT_OK, _EXIT_EPIPE, _EXIT_OSERROR, _EXIT_ABORTED = 0, 3, 4, 5


def write_document(stream: Any, head: str, pieces: Sequence[tuple[int, Callable[[], str]]],
                   tail: str, workers: int, min_weight: int = MIN_PARALLEL_WEIGHT) -> None:
    """Write ``head``, the text of every piece (``(weight, render)``) in order and ``tail`` to
    ``stream``, rendering the pieces in up to ``workers`` processes."""
    stream.write(head)
    slices = _slices(pieces, workers) if sum(w for w, _ in pieces) >= min_weight else []
    fd = _fileno(stream) if len(slices) > 1 and threading.active_count() == 1 else None
    if fd is None or not hasattr(os, "fork"):
        for _, render in pieces:
            stream.write(render())
        stream.write(tail)
        return
    stream.flush()
    children = [_Child(s, fd, stream.encoding, stream.errors) for s in slices[1:]]
    try:
        for _, render in slices[0]:
            stream.write(render())
        stream.flush()
        for child in children:
            child.take_turn(stream)
    finally:
        for child in children:
            child.end()
    stream.write(tail)


def _slices(pieces: Sequence[tuple[int, Callable[[], str]]],
            workers: int) -> list[list[tuple[int, Callable[[], str]]]]:
    """The pieces cut into at most ``workers`` contiguous slices of about equal weight."""
    total = sum(w for w, _ in pieces)
    n = max(1, min(workers, len(pieces)))
    out: list[list[tuple[int, Callable[[], str]]]] = [[]]
    done = 0
    for piece in pieces:
        if out[-1] and len(out) < n and done >= total * len(out) / n:
            out.append([])
        out[-1].append(piece)
        done += piece[0]
    return out


def _fileno(stream: Any) -> int | None:
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):
        return None


class _Child:
    """A forked process rendering one slice, which writes it to ``fd`` when told to."""

    def __init__(self, pieces: list[tuple[int, Callable[[], str]]], fd: int, encoding: str,
                 errors: str):
        self.pieces = pieces
        status_r, status_w = os.pipe()
        go_r, go_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(status_r)
            os.close(go_w)
            _child_main(pieces, fd, encoding, errors, status_w, go_r)
        os.close(status_w)
        os.close(go_r)
        self.pid: int | None = pid
        self.status_r: int | None = status_r
        self.go_w: int | None = go_w

    def take_turn(self, stream: Any) -> None:
        """Let the child write its slice (or render it here if it could not)."""
        assert self.status_r is not None and self.go_w is not None
        ready = os.read(self.status_r, 1) == _READY
        if not ready:  # it failed before writing anything: the slice is rendered here
            self.end()
            for _, render in self.pieces:
                stream.write(render())
            stream.flush()
            return
        os.write(self.go_w, b"g")
        code = self._wait()
        if code == _EXIT_OK:
            return
        err = os.read(self.status_r, 64).decode("ascii", "replace")
        if code == _EXIT_EPIPE:
            raise BrokenPipeError("the reader of the output went away")
        errno_ = int(err) if err.isdigit() else 0
        raise OSError(errno_, os.strerror(errno_) if errno_ else "writing the output failed")

    def _wait(self) -> int:
        assert self.pid is not None
        _, status = os.waitpid(self.pid, 0)
        self.pid = None
        return os.waitstatus_to_exitcode(status)

    def end(self) -> None:
        """Close the pipes (a child still waiting ends without writing) and reap the child."""
        for name in ("go_w", "status_r"):
            fd = getattr(self, name)
            if fd is not None:
                os.close(fd)
                setattr(self, name, None)
        if self.pid is not None:
            self._wait()


def _child_main(pieces: list[tuple[int, Callable[[], str]]], fd: int, encoding: str,
                errors: str, status_w: int, go_r: int) -> None:
    code = _EXIT_ABORTED
    try:
        try:  # (encoded piece by piece: no second copy of the slice as one string)
            chunks = [render().encode(encoding, errors) for _, render in pieces]
        except BaseException:  # noqa: BLE001 - the parent renders the slice instead
            os.write(status_w, _FAILED)
            os._exit(_EXIT_ABORTED)
        os.write(status_w, _READY)
        if os.read(go_r, 1) != b"g":  # the parent is gone or gave up
            os._exit(_EXIT_ABORTED)
        try:
            for data in chunks:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            code = _EXIT_OK
        except BrokenPipeError:
            code = _EXIT_EPIPE
        except OSError as e:
            os.write(status_w, str(e.errno or 0).encode())
            code = _EXIT_OSERROR
    finally:
        os._exit(code)
