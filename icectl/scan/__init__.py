"""Scan planning: pruning, delete matching, residuals, splits (see :mod:`icectl.scan.planner`)."""

from icectl.scan.planner import (
    FileDecision,
    ManifestDecision,
    PlannedFile,
    PlanResult,
    ScanTask,
    plan_scan,
)

__all__ = ["plan_scan", "PlanResult", "PlannedFile", "ScanTask", "ManifestDecision",
           "FileDecision"]
