"""The health report's data model: dimensions with figures, verdicts with their fix and effect.

Plain frozen dataclasses with ``to_json`` (the contract is in :mod:`icectl.ops.health`).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any, Sequence

from icectl.ops.health.policy import Policy

__all__ = ["Effect", "Verdict", "Dimension", "HealthReport", "DUE", "WARN", "INFO", "SEVERITIES",
           "OK", "MAINTENANCE_DUE", "SKIPPED", "command_text"]

DUE = "due"      # a threshold is crossed; the command fixes it (maintenance due: exit code 14)
WARN = "warn"    # worth a look; not counted as maintenance due
INFO = "info"    # a fact about the table's shape with a suggestion
SEVERITIES = (DUE, WARN, INFO)
_RANK = {DUE: 0, WARN: 1, INFO: 2}

OK = "ok"
MAINTENANCE_DUE = "maintenance-due"
SKIPPED = "skipped"


def command_text(argv: Sequence[str]) -> str:
    """An argv list as one shell line (quoted where needed)."""
    return " ".join(shlex.quote(a) for a in argv)


@dataclass(frozen=True)
class Effect:
    """An expected effect of a fix: ``measure`` goes from ``before`` to ``after`` (``unit``)."""

    measure: str
    unit: str
    before: Any
    after: Any

    def to_json(self) -> dict[str, Any]:
        return {"measure": self.measure, "unit": self.unit, "before": self.before, "after": self.after}


@dataclass(frozen=True)
class Verdict:
    """One problem found: in which dimension, how bad, what it is, which threshold it crossed
    (its name in the report's thresholds, or None), the command that fixes it (an argv list, or
    None when no command does) and the expected effects of running it."""

    dimension: str
    code: str
    severity: str
    problem: str
    threshold: str | None = None
    command: tuple[str, ...] | None = None
    effects: tuple[Effect, ...] = ()

    @property
    def rank(self) -> int:
        return _RANK[self.severity]

    def to_json(self) -> dict[str, Any]:
        return {
            "dimension": self.dimension,
            "code": self.code,
            "severity": self.severity,
            "problem": self.problem,
            "threshold": self.threshold,
            "command": list(self.command) if self.command is not None else None,
            "command-text": command_text(self.command) if self.command is not None else None,
            "effects": [e.to_json() for e in self.effects],
        }


@dataclass(frozen=True)
class Dimension:
    """One dimension of health: its figures (JSON-ready values, kebab-case keys) and verdicts;
    ``skipped`` holds why it was not judged (None when it was)."""

    name: str
    figures: dict[str, Any]
    verdicts: tuple[Verdict, ...] = ()
    skipped: str | None = None

    @property
    def status(self) -> str:
        if self.skipped is not None:
            return SKIPPED
        return MAINTENANCE_DUE if any(v.severity == DUE for v in self.verdicts) else OK

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "skipped": self.skipped,
                "figures": self.figures, "verdicts": [v.to_json() for v in self.verdicts]}


@dataclass(frozen=True)
class HealthReport:
    """The health of one table at one snapshot."""

    table: str
    metadata_file: str | None
    format_version: int
    snapshot_id: int | None
    generated_at_ms: int
    policy: Policy
    dimensions: tuple[Dimension, ...]
    identifier: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def verdicts(self) -> list[Verdict]:
        """Every verdict, the worst first (then in dimension order)."""
        out = [v for d in self.dimensions for v in d.verdicts]
        return sorted(out, key=lambda v: v.rank)

    @property
    def due(self) -> bool:
        return any(v.severity == DUE for v in self.verdicts)

    @property
    def status(self) -> str:
        return MAINTENANCE_DUE if self.due else OK

    def dimension(self, name: str) -> Dimension | None:
        return next((d for d in self.dimensions if d.name == name), None)

    def counts(self) -> dict[str, int]:
        vs = self.verdicts
        return {s: sum(1 for v in vs if v.severity == s) for s in SEVERITIES}

    def to_json(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "identifier": self.identifier,
            "metadata-file": self.metadata_file,
            "format-version": self.format_version,
            "snapshot-id": self.snapshot_id,
            "generated-at-ms": self.generated_at_ms,
            "status": self.status,
            "verdict-counts": self.counts(),
            "thresholds": self.policy.to_json(),
            "policy-problems": list(self.policy.problems),
            "dimensions": [d.to_json() for d in self.dimensions],
            "verdicts": [v.to_json() for v in self.verdicts],
        }
