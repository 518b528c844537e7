"""The branch an operation commits to: one rule, one set of messages.

Every writing operation takes ``branch`` (default ``main``) and resolves it here: a tag is
refused (a snapshot cannot be added to a tag), and a branch that does not exist is "not found"
unless the operation may start it (a producer's commit starts a new branch from the table's
current snapshot; ``main`` of a table without snapshots has no ref yet).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from icectl.errors import IcectlError, NotFound, ValidationError
from icectl.spec.snapshots import MAIN_BRANCH, SnapshotRef

if TYPE_CHECKING:
    from icectl.spec.metadata import TableMetadata

__all__ = ["branch_to_commit", "missing_branch", "tag_refused"]


def missing_branch(branch: str) -> NotFound:
    return NotFound(f"no branch named {branch!r}", argument="branch")


def tag_refused(branch: str, kind: type[IcectlError] = ValidationError) -> IcectlError:
    return kind(f"{branch} is a tag, not a branch: snapshots cannot be added to tags")


def branch_to_commit(md: TableMetadata, branch: str | None, *, may_start: bool = False,
                     tag_error: type[IcectlError] = ValidationError) -> tuple[str, SnapshotRef | None]:
    """``branch`` (``main`` when None) and its ref, None for a branch without one yet: ``main``,
    or any branch when ``may_start``; otherwise a missing branch is :class:`NotFound`. A tag is
    refused with ``tag_error`` (the operation's error kind; the message is the same)."""
    branch = branch or MAIN_BRANCH
    ref = md.refs.get(branch)
    if ref is None:
        if branch != MAIN_BRANCH and not may_start:
            raise missing_branch(branch)
        return branch, None
    if not ref.is_branch:
        raise tag_refused(branch, tag_error)
    return branch, ref
