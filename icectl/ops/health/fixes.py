"""The commands that fix what health finds, as argument lists: the one place the health engine
names the command line (a verdict's ``command`` is part of its JSON contract, what a user or a
maintenance run executes as it is)."""

from __future__ import annotations

from typing import Sequence

__all__ = ["Argv", "compact", "compact_deletes_applied", "compact_delete_files", "compact_sorted",
           "rewrite_manifests", "expire", "expire_with_metadata", "delete_orphans"]

Argv = tuple[str, ...]


def compact(location: str) -> Argv:
    """Compaction with its defaults (small files, too big files, many deletes)."""
    return ("icectl", "compact", location)


def compact_deletes_applied(location: str) -> Argv:
    """Compaction rewriting every data file a delete file applies to."""
    return ("icectl", "compact", location, "--delete-file-threshold", "1")


def compact_delete_files(location: str) -> Argv:
    """Delete-file compaction: dangling delete files removed, small position deletes merged."""
    return ("icectl", "compact", location, "--deletes")


def compact_sorted(location: str, columns: Sequence[str] | None = None) -> Argv:
    """A sort compaction (by the table's sort order, or by ``columns``)."""
    cmd: Argv = ("icectl", "compact", location, "--strategy", "sort")
    return cmd + ("--sort-order", ", ".join(columns)) if columns else cmd


def rewrite_manifests(location: str) -> Argv:
    return ("icectl", "rewrite-manifests", location)


def expire(location: str) -> Argv:
    """Expiry by the table's retention properties."""
    return ("icectl", "expire", location)


def expire_with_metadata(location: str) -> Argv:
    """Expiry that also drops the schemas and specs no snapshot uses any more."""
    return ("icectl", "expire", location, "--clean-expired-metadata")


def delete_orphans(location: str) -> Argv:
    """Orphan files (older than the default 3 days) deleted."""
    return ("icectl", "orphans", location, "--delete")
