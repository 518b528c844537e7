"""What ``icectl check`` reports: problems with a stable code, and the result of a run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ERROR", "WARNING", "Problem", "Problems", "CheckResult", "CHECKED_KEYS"]

ERROR = "error"
WARNING = "warning"

# The counters a run reports, in the order ``--json`` shows them.
CHECKED_KEYS = ("metadata-files", "schemas", "snapshots", "manifest-lists", "manifests",
                "manifest-entries", "data-files", "delete-files", "files-verified")


@dataclass(frozen=True)
class Problem:
    """One finding: ``code`` is stable (scripts may match on it), ``where`` names the thing."""

    severity: str
    code: str
    where: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"severity": self.severity, "code": self.code, "where": self.where, "message": self.message}


@dataclass
class Problems:
    """The problems found so far, each reported once, in the order found."""

    items: list[Problem] = field(default_factory=list)
    _seen: set[tuple[str, str, str]] = field(default_factory=set)

    def error(self, code: str, where: str, message: str) -> None:
        self._add(Problem(ERROR, code, where, message))

    def warning(self, code: str, where: str, message: str) -> None:
        self._add(Problem(WARNING, code, where, message))

    def _add(self, p: Problem) -> None:
        key = (p.code, p.where, p.message)
        if key not in self._seen:
            self._seen.add(key)
            self.items.append(p)


@dataclass(frozen=True)
class CheckResult:
    table: str
    metadata_file: str | None
    deep: bool
    problems: tuple[Problem, ...]
    checked: dict[str, int]

    @property
    def errors(self) -> int:
        return sum(1 for p in self.problems if p.severity == ERROR)

    @property
    def warnings(self) -> int:
        return sum(1 for p in self.problems if p.severity == WARNING)

    @property
    def clean(self) -> bool:
        """No error-severity problem (warnings allowed)."""
        return self.errors == 0

    def to_json(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "clean": self.clean,
            "errors": self.errors,
            "warnings": self.warnings,
            "problems": [p.to_json() for p in self.problems],
            "checked": {k: int(self.checked.get(k, 0)) for k in CHECKED_KEYS},
        }
