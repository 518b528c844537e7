"""Commits on a local filesystem racing Iceberg Java's Hadoop tables, whose rename can replace.

Java's HadoopTableOperations commits by writing the whole new metadata to
``metadata/<uuid>.metadata.json`` (``<uuid>.gz.metadata.json`` with gzip), checking that
``v<N>`` does not exist yet, and then renaming the temporary file to ``v<N>``. On HDFS that rename
refuses an existing target; Hadoop's local filesystem (``file:``, also what NFS mounts are used
through) renames with the platform's ``rename(2)``, which replaces it. So a Java writer that
checked just before icectl's rename and renamed just after it replaces icectl's version, and the
commit icectl acknowledged is silently gone (seen under load with Spark and icectl committing
to one table).

icectl's own rename never replaces (see :mod:`icectl.io.storage.files`), so the window is Java's alone,
and icectl closes it on its side. A Java writer's temporary file exists from before its check
until its rename (or its clean-up after a failed check), so a listing of ``metadata/`` shows every
Java writer that may still rename onto a name it found free; one whose file is not listed checks
after the listing. :func:`settle` waits until the Java temporary files listed are gone. A commit
settles twice:

* before its rename, then checks that its base still holds the bytes it was read with: so no
  icectl commit is built on a version a Java writer is about to replace (it would keep icectl's
  change and drop Java's); a replaced base is a lost race (re-read, re-validate, retry);
* after its rename, then checks that its own version still holds its bytes: a Java writer that
  checked between the first listing and the rename may have replaced it. The commit then counts
  as lost (retried) unless a later version holds it (a Java writer built on it first).

A temporary file that stays unchanged for :data:`ABANDONED_AFTER_S` is a crashed writer's
leftover, not a pending rename: it does not hold commits up. icectl names its own temporary
metadata files ``<uuid>.icectl.metadata.json`` so that they are never mistaken for Java's.

What this cannot close is Java's own window: a second Java writer that builds on a version
before a first one replaces it drops the first one's commit (Java writers in one JVM serialise
only per version name); only a rename that refuses to replace (HDFS) or a catalog prevents that.
"""

from __future__ import annotations

import re
import time
import uuid

from icectl.errors import NotFound
from icectl.io.storage.files import FileIO, join

__all__ = ["temp_metadata_name", "pending_java_renames", "settle", "ABANDONED_AFTER_S"]

# Java: UUID.randomUUID() + ".metadata.json" / ".gz.metadata.json" (lower-case hex, 8-4-4-4-12).
_JAVA_TEMP = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
                        r"(\.gz)?\.metadata\.json$")

ABANDONED_AFTER_S = 10.0  # a temporary file unchanged this long has no writer waiting to rename it
_FIRST_POLL_S = 0.001
_LONGEST_POLL_S = 0.05


def temp_metadata_name(ext: str) -> str:
    """The name of icectl's temporary metadata file (``ext``: ``.metadata.json`` or
    ``.gz.metadata.json``), never matching Java's."""
    return f"{uuid.uuid4()}.icectl{ext}"


def pending_java_renames(io: FileIO, metadata_dir: str) -> dict[str, int]:
    """Java temporary metadata files in ``metadata_dir`` that may still be renamed: name -> the
    modification time (ms) they were seen with; leftovers older than the threshold are left out."""
    now_ms = time.time() * 1000
    found: dict[str, int] = {}
    for name in io.list_names(metadata_dir):
        if not _JAVA_TEMP.match(name):
            continue
        try:
            mtime = io.info(join(metadata_dir, name)).mtime_ms
        except NotFound:
            continue  # renamed meanwhile
        if now_ms - mtime < ABANDONED_AFTER_S * 1000:
            found[name] = mtime
    return found


def settle(io: FileIO, metadata_dir: str) -> None:
    """Return once no Java writer that may have checked before this moment can still rename into
    ``metadata_dir``: every Java temporary file listed now is gone or abandoned (unchanged for
    :data:`ABANDONED_AFTER_S`). Returns at once when there is none (the usual case: one listing)."""
    pending = pending_java_renames(io, metadata_dir)
    pause = _FIRST_POLL_S
    while pending:
        time.sleep(pause)
        pause = min(pause * 2, _LONGEST_POLL_S)
        now_ms = time.time() * 1000
        for name, seen in list(pending.items()):
            try:
                mtime = io.info(join(metadata_dir, name)).mtime_ms
            except NotFound:
                del pending[name]
                continue
            if mtime != seen:
                pending[name] = mtime  # still being written: its writer is alive
            elif now_ms - mtime >= ABANDONED_AFTER_S * 1000:
                del pending[name]
