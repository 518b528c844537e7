"""What ``icectl check`` reports: problems with a stable code, and the result of a run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from icectl.spec.result_json import JsonResult, derived, json_field

__all__ = ["ERROR", "WARNING", "Problem", "Problems", "CheckResult", "CHECKED_KEYS"]

ERROR = "error"
WARNING = "warning"

# The counters a run reports, in the order ``--json`` shows them.
CHECKED_KEYS = ("metadata-files", "schemas", "snapshots", "manifest-lists", "manifests",
                "manifest-entries", "data-files", "delete-files", "files-verified")


@dataclass(frozen=True)
class Problem(JsonResult):
    """One finding: ``code`` is stable (scripts may match on it), ``where`` names the thing."""

    severity: str
    code: str
    where: str
    message: str


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


def _count(severity: str) -> Any:
    return derived(lambda r: sum(1 for p in r.problems if p.severity == severity))


@dataclass(frozen=True)
class CheckResult(JsonResult):
    """A run's findings; ``clean``: no error-severity problem (warnings allowed)."""

    table: str
    metadata_file: str | None = json_field(omit=True)
    deep: bool = json_field(omit=True)
    clean: bool = derived(lambda r: not any(p.severity == ERROR for p in r.problems))
    errors: int = _count(ERROR)
    warnings: int = _count(WARNING)
    problems: tuple[Problem, ...]
    checked: dict[str, int] = json_field(
        value=lambda checked: {k: int(checked.get(k, 0)) for k in CHECKED_KEYS})
