"""The one error hierarchy of icectl.

Library code raises these; only the CLI turns them into a message and an exit code. Every kind
has its own exit code, documented in README.md and man/icectl.1 (a test keeps them in step).
"""

from __future__ import annotations


class IcectlError(Exception):
    """Base of every error icectl raises on purpose.

    Messages name things (the partition value, the input format), never command-line flags. An
    error about one argument of a library call says which in ``argument`` (the keyword, e.g.
    ``columns``); a refusal that a keyword argument lifts names it in ``override`` and what it
    then does in ``effect``. The CLI turns both into its option names.
    """

    exit_code = 1
    kind = "error"
    argument: str | None = None
    override: str | None = None
    effect: str | None = None

    def __init__(self, *args: object, argument: str | None = None, override: str | None = None,
                 effect: str | None = None) -> None:
        super().__init__(*args)
        if argument is not None:
            self.argument = argument
        if override is not None:
            self.override = override
            self.effect = effect


class InvalidInput(IcectlError):
    """Bad user input: a type string, a filter, an option value, a schema file."""

    exit_code = 2
    kind = "invalid-input"


class NotFound(IcectlError):
    """A table, snapshot, ref, column or file that does not exist."""

    exit_code = 3
    kind = "not-found"


class AlreadyExists(IcectlError):
    """Something that must not exist yet already does (a table at the location)."""

    exit_code = 4
    kind = "already-exists"


class ValidationError(IcectlError):
    """A change the spec forbids or that conflicts with the table's current state."""

    exit_code = 5
    kind = "validation"


class CommitConflict(IcectlError):
    """Another writer won every retry; nothing of this attempt is left behind."""

    exit_code = 6
    kind = "commit-conflict"


class StorageError(IcectlError):
    """The filesystem failed: permissions, missing directories, I/O errors."""

    exit_code = 7
    kind = "storage"


class CorruptMetadata(IcectlError):
    """Metadata that cannot be read: bad JSON, bad Avro, missing required fields."""

    exit_code = 8
    kind = "corrupt-metadata"


class UnsupportedFeature(IcectlError):
    """Valid Iceberg that this version of icectl cannot handle (e.g. format version > 3)."""

    exit_code = 9
    kind = "unsupported"


class UnsafeStorage(IcectlError):
    """An object store that does not honour create-if-absent (a conditional PUT): concurrent
    commits there could overwrite each other, so icectl refuses to write to it (unless the
    storage option ``icectl.unsafe-commits`` is true)."""

    exit_code = 11
    kind = "unsafe-storage"
class CommitStateUnknown(IcectlError):
    """A commit's new metadata version was written (or its rename may have happened), but
    whether it is, or will become, part of the table cannot be told for certain: another writer
    moved the table on in a way that hides it, or the commit was interrupted while in flight.
    Like the reference's CommitStateUnknownException, every file the commit wrote is kept (it may
    be referenced); check the table before retrying."""

    exit_code = 12
    kind = "commit-state-unknown"


class WorkerLost(IcectlError):
    """A worker process of the command died (killed, e.g. by the out-of-memory killer) before
    its task finished; the files the command wrote are removed and nothing is committed."""

    exit_code = 13
    kind = "worker-lost"


class DuplicateWapCommit(ValidationError):
    """A write-audit-publish id that main's history already carries (staged and fast-forwarded
    to, or published by a cherry-pick): publishing it again is refused, as the reference's
    DuplicateWAPCommitException refuses it. Its own code, so a pipeline re-running a publish can
    tell "already done" from a failure."""

    exit_code = 16
    kind = "duplicate-wap-commit"


class Interrupted(KeyboardInterrupt):
    """The command was stopped by a signal (SIGINT, SIGTERM or SIGHUP): it ends as Ctrl-C does,
    removing the files of its unfinished work, with exit code 128 + the signal's number."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


# Exit codes not tied to an IcectlError kind.
EXIT_OK = 0
EXIT_USAGE = 2  # Typer/click usage errors share the invalid-input code
EXIT_CHECK_FAILED = 10  # `icectl check` found at least one error-severity problem
EXIT_MAINTENANCE_DUE = 14  # `icectl health` found maintenance due (a verdict of severity due)
EXIT_PARTIAL = 15  # partly done: some inputs were set aside (quarantined), the rest committed
EXIT_INTERNAL = 70  # an unexpected exception: a bug in icectl
EXIT_INTERRUPTED = 130  # SIGINT (Ctrl-C): 128 + 2, as shells report it
EXIT_HANGUP = 129  # SIGHUP: 128 + 1
EXIT_TERMINATED = 143  # SIGTERM (kill, timeout, systemd, cron): 128 + 15

# The exit-code table: code, kind (the "kind" of the JSON error object; "" for codes that are
# not errors) and meaning. `icectl --help`, README.md and man/icectl.1 show exactly these rows
# (tests/test_docs.py compares them).
EXIT_CODES: tuple[tuple[int, str, str], ...] = (
    (EXIT_OK, "", "success"),
    (1, "error", "other icectl error"),
    (2, "invalid-input", "invalid input or usage: a bad value, number, filter, option or command"),
    (3, "not-found", "not found: a table, snapshot, ref, column or file"),
    (4, "already-exists", "already exists: a table at the location given to create"),
    (5, "validation", "validation failed: a change the spec or the table's state forbids"),
    (6, "commit-conflict", "commit conflict: other writers won every retry; nothing was left"),
    (7, "storage", "storage error: permissions, I/O"),
    (8, "corrupt-metadata", "corrupt metadata: unreadable JSON or Avro, missing fields"),
    (9, "unsupported", "unsupported feature, such as a format version above 3"),
    (EXIT_CHECK_FAILED, "", "check found problems (at least one of error severity)"),
    (11, "unsafe-storage", "unsafe storage: an object store that ignores conditional creates; nothing written"),
    (12, "commit-state-unknown", "commit state unknown: the new version may be in the table; "
                                 "every file it wrote is kept"),
    (13, "worker-lost", "a worker process died (e.g. out of memory); the command's files were removed"),
    (EXIT_MAINTENANCE_DUE, "", "health found maintenance due (at least one verdict of severity due)"),
    (EXIT_PARTIAL, "", "partly done: some input files were quarantined (see the result), the rest committed"),
    (16, "duplicate-wap-commit", "already published: the WAP id is in main's history (snapshot publish)"),
    (EXIT_INTERNAL, "internal", "internal error: a bug (report it with ICECTL_DEBUG=1 output)"),
    (EXIT_HANGUP, "interrupted", "hung up (SIGHUP); the unfinished command's files were removed"),
    (EXIT_INTERRUPTED, "interrupted", "interrupted (SIGINT, Ctrl-C); the unfinished command's files were removed"),
    (EXIT_TERMINATED, "interrupted", "terminated (SIGTERM); the unfinished command's files were removed"),
)


def kind_of_exit_code(code: int) -> str:
    """The JSON error kind of an exit code ("error" for codes outside the table)."""
    for c, kind, _ in EXIT_CODES:
        if c == code and kind:
            return kind
    return "error"


ERROR_KINDS: tuple[type[IcectlError], ...] = (
    IcectlError,
    InvalidInput,
    NotFound,
    AlreadyExists,
    ValidationError,
    CommitConflict,
    StorageError,
    CorruptMetadata,
    UnsupportedFeature,
    UnsafeStorage,
    CommitStateUnknown,
    WorkerLost,
    DuplicateWapCommit,
)
