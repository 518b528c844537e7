"""Decoding manifests on every core (cold planning).

A plan first looks every selected manifest up in the decoded-manifest caches
(:func:`icectl.io.manifest.columns.cached_manifest_columns`); when more than a few must be
decoded, they are decoded in worker processes and come back in manifest order as each one is
ready, so the planner filters the first while the others are still being decoded. A worker
reads the manifest, decodes it and returns the pickled columns in their cached form
(:func:`icectl.io.manifest.columns.pack`: columns the pruning does not read are unpickled only
when used); the planning process stores that same pickle as the persistent cache entry (it
decides what is cached).

The pool is a ``fork`` pool (:func:`icectl.command_files.forked_imap`), not
:class:`icectl.engines.LocalEngine`'s ``spawn`` one: a spawned worker starts a fresh interpreter
and imports icectl again (about 0.5-0.6 s on the 2-core development machine, measured), which is
the whole budget of a warm plan, while a forked worker starts in a few milliseconds with the
decoder modules already imported. Forking is only done from a process with a single thread (a
thread holding a lock at fork time could deadlock the child); otherwise, on platforms without
``fork``, for remote manifests or with one worker, decoding stays in the planning process.
"""

from __future__ import annotations

import pickle
from typing import Any, Iterator, Sequence

from icectl.errors import InvalidInput
from icectl import command_files
from icectl.command_files import usable_cores
from icectl.io.storage.files import FileIO
from icectl.io.manifest.columns import (
    ManifestColumns,
    ManifestRequest,
    cached_manifest_columns,
    disk_entry_key,
    in_memory,
    keep_decoded,
    pack,
    unpack,
)

__all__ = ["default_workers", "load_in_order", "PARALLEL_MIN_MISSES"]

PARALLEL_MIN_MISSES = 4  # fewer cache misses than this are decoded in the planning process


def default_workers() -> int:
    """The cores this process may use (:func:`icectl.command_files.usable_cores`)."""
    return usable_cores()


def check_workers(workers: int | None) -> int:
    if workers is None:
        return default_workers()
    if workers < 1:
        raise InvalidInput(f"the number of workers must be at least 1 (got {workers})", argument="workers")
    return workers


def _decode_local(req: ManifestRequest) -> bytes:
    """Worker: the pickled columns of one local manifest."""
    cols = req.decode(FileIO().read(req.path))
    return pickle.dumps(pack(cols), protocol=5)


class _Later:
    """A request whose persistent-cache entry is read when its turn comes (:func:`load_in_order`)."""

    __slots__ = ("req", "disk_key")

    def __init__(self, req: ManifestRequest, disk_key: bytes):
        self.req = req
        self.disk_key = disk_key


def _look_up(file_io: FileIO, requests: Sequence[ManifestRequest]
             ) -> tuple[list[Any], list[tuple[int, ManifestRequest, bytes | None]]]:
    """Per request: its cached columns (in memory), a :class:`_Later` (an entry on disk, read
    in turn so a plan never holds every manifest of a large table at once), or None (to
    decode: in ``todo`` with the widened request and the disk key). The first entry found on
    disk is read at once: when it lacks statistics the plan wants (a plan with a new filter),
    the others are presumed alike and looked up now, so they are decoded in parallel."""
    found: list[Any] = []
    todo: list[tuple[int, ManifestRequest, bytes | None]] = []
    defer: bool | None = None  # None: not known yet
    for i, req in enumerate(requests):
        hit = in_memory(req)
        if hit is not None:
            found.append(hit)
            continue
        key = disk_entry_key(file_io, req) if defer is not False else None
        if key is not None and defer:
            found.append(_Later(req, key))
            continue
        hit, widened, disk_key = cached_manifest_columns(file_io, req, key)
        if key is not None:
            defer = hit is not None
        found.append(hit)
        if hit is None:
            todo.append((i, widened, disk_key))
    return found, todo


def _in_turn(file_io: FileIO, got: Any) -> ManifestColumns:
    """The columns of a :class:`_Later` (decoded here when the entry no longer serves)."""
    hit, widened, disk_key = cached_manifest_columns(file_io, got.req, got.disk_key)
    if hit is None:
        hit = widened.decode(file_io.read(widened.path))
        keep_decoded(widened, disk_key, hit)
    return hit


def load_in_order(file_io: FileIO, requests: Sequence[ManifestRequest],
                  workers: int | None = None) -> Iterator[ManifestColumns]:
    """The decoded columns of each request, in order: cached ones as they are, the others
    decoded (in ``workers`` forked processes when more than a few miss) and cached."""
    n = check_workers(workers)
    found, todo = _look_up(file_io, requests)
    parallel = (n > 1 and len(todo) >= PARALLEL_MIN_MISSES
                and all(file_io.os_path(r.path) is not None for _, r, _ in todo) and command_files.can_fork())
    if not parallel:
        pending = iter(todo)
        for got in found:
            if got is None:
                _, widened, disk_key = next(pending)
                got = widened.decode(file_io.read(widened.path))
                keep_decoded(widened, disk_key, got)
            elif type(got) is _Later:
                got = _in_turn(file_io, got)
            yield got
        return
    yield from _parallel(file_io, found, todo, n)


def _parallel(file_io: FileIO, found: list[Any],
              todo: list[tuple[int, ManifestRequest, bytes | None]],
              workers: int) -> Iterator[ManifestColumns]:
    results = command_files.forked_imap(_decode_local, [r for _, r, _ in todo], workers)
    try:
        pending = iter(todo)
        for i, got in enumerate(found):
            found[i] = None  # held by the caller from now on, not by this list
            if got is None:
                _, req, disk_key = next(pending)
                payload = next(results)
                got = unpack(pickle.loads(payload))
                assert got is not None
                keep_decoded(req, disk_key, got, payload)
            elif type(got) is _Later:
                got = _in_turn(file_io, got)
            yield got
    finally:
        results.close()
