"""``icectl maintain``: run the maintenance a table's health says is due, in the right order.

The steps, in order (each the library function of its own command, with that command's rules):

1. ``expire``: expire snapshots (:func:`icectl.ops.maintain.expire.expire_snapshots`);
2. ``orphans``: delete orphan files (:func:`icectl.ops.maintain.orphans.delete_orphan_files`,
   with its cut-off, its 24-hour rule and its refusal to touch another table's files);
3. ``compact-deletes``: rewrite delete files (:func:`icectl.ops.maintain.compact_deletes.compact_deletes`);
4. ``compact``: compact data files (:func:`icectl.ops.maintain.compact.compact_table`);
5. ``rewrite-manifests`` (:func:`icectl.ops.maintain.rewrite_manifests.rewrite_manifests`).

Expiring first keeps the later steps from reading snapshots about to go; orphans are listed
before new files are written; delete files are rewritten before the data files they apply to
are compacted (compaction then reads fewer of them); manifests are rewritten last, over the
files the earlier steps committed.

A step runs only when its threshold is crossed: health (:func:`icectl.ops.health.table_health`)
has a ``due`` verdict whose command is the step's, and the step's own planner (its dry run)
finds work. The orphans step, which lists the table's location, runs when the listing finds at
more orphan files than health's ``icectl.health.max-orphan-files``. ``gc.enabled=false`` skips the two
deleting steps (their own rule refuses them). Every step is planned from the table as it is
before the first one runs: its expected gains (measures before -> after, bytes freed) chain
from one step to the next, so the plan printed by a dry run is the one a real run follows.

A real run runs the due steps in order and measures each (the table's state before and after
it). A step that fails stops the later ones: the result says which step failed, with its error,
and what ran before it. Running again right after does nothing (every step's threshold is then
no longer crossed). Nothing here prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from icectl.errors import IcectlError
from icectl.ops.maintain.maintain_policy import (
    COMPACT, COMPACT_DELETES, EXPIRE, ORPHANS, REWRITE_MANIFESTS, STEPS, MaintainPolicy,
)
from icectl.ops.maintain.maintain_plan import StepPlan, plan_steps, table_state

if TYPE_CHECKING:
    from icectl.table.table import Table

__all__ = ["MaintainResult", "StepOutcome", "maintain_table", "STEPS"]

PLANNED, DONE, SKIPPED, FAILED, NOT_RUN = "planned", "done", "skipped", "failed", "not-run"


@dataclass(frozen=True)
class StepOutcome:
    """One step: its plan, what became of it (``status``), its operation's own result (its JSON
    view), the table's measured state before and after it, and the error that stopped it."""

    plan: StepPlan
    status: str
    result: dict[str, Any] | None = None
    measured_before: dict[str, Any] | None = None
    measured_after: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # measures only the step's result gives
    error: dict[str, Any] | None = None

    @property
    def bytes_freed(self) -> int:
        return int(self.extra.get("bytes-freed") or 0)

    def actual(self) -> dict[str, Any] | None:
        """The measures the plan expected, as they turned out (None for a step that did not run)."""
        if self.measured_before is None or self.measured_after is None:
            return None
        out: dict[str, Any] = {m: {"before": self.measured_before.get(m), "after": self.measured_after.get(m)}
                               for m in self.plan.expected if m not in self.extra}
        out.update(self.extra)
        return out

    def to_json(self) -> dict[str, Any]:
        return {**self.plan.to_json(), "status": self.status, "actual": self.actual(),
                "result": self.result, "error": self.error}


@dataclass(frozen=True)
class MaintainResult:
    location: str
    dry_run: bool
    policy: dict[str, Any]
    steps: tuple[StepOutcome, ...]
    before: dict[str, Any] = field(default_factory=dict)
    after: dict[str, Any] | None = None
    health_status: str | None = None

    @property
    def failed_step(self) -> StepOutcome | None:
        return next((s for s in self.steps if s.status == FAILED), None)

    @property
    def exit_code(self) -> int:
        failed = self.failed_step
        return int(failed.error["exit-code"]) if failed is not None and failed.error else 0

    def expected_after(self) -> dict[str, Any]:
        """The table's state the plan expects once every due step ran."""
        out = dict(self.before)
        for s in self.steps:
            if s.plan.due:
                out.update({m: v["after"] for m, v in s.plan.expected.items() if m in self.before})
        return out

    def to_json(self) -> dict[str, Any]:
        failed = self.failed_step
        bytes_expected = sum(s.plan.expected.get("bytes-freed") or 0 for s in self.steps if s.plan.due)
        ran = [s for s in self.steps if s.status in (DONE, FAILED)]
        return {
            "location": self.location,
            "dry-run": self.dry_run,
            "health-status": self.health_status,
            "due-steps": [s.plan.step for s in self.steps if s.plan.due],
            "ran-steps": [s.plan.step for s in ran if s.status == DONE],
            "failed-step": failed.plan.step if failed is not None else None,
            "exit-code": self.exit_code,
            "before": dict(self.before),
            "expected-after": self.expected_after(),
            "after": dict(self.after) if self.after is not None else None,
            "expected-bytes-freed": bytes_expected,
            "bytes-freed": None if self.dry_run else sum(s.bytes_freed for s in ran),
            "policy": dict(self.policy),
            "steps": [s.to_json() for s in self.steps],
        }


def _error_view(e: IcectlError, describe: Callable[[IcectlError], str] | None) -> dict[str, Any]:
    return {"kind": e.kind, "message": describe(e) if describe is not None else str(e),
            "exit-code": e.exit_code}


def maintain_table(table: Table, policy: MaintainPolicy, *, dry_run: bool = False, engine: Any = None,
                   workers: int | None = None, allow_recent: bool = False,
                   describe_error: Callable[[IcectlError], str] | None = None,
                   now: int | None = None) -> MaintainResult:
    """Plan the maintenance of ``table`` under ``policy`` and (unless ``dry_run``) run the due
    steps (module docs). ``engine`` runs compaction tasks (default: the local engine with
    ``workers`` processes); ``allow_recent`` lets the orphans step use a cut-off less than 24
    hours ago; ``describe_error`` words a step's error for the result (the command line names
    its options there)."""
    from icectl.spec.timetext import now_ms

    now = now if now is not None else now_ms()
    before = table_state(table)
    health_status, plans = plan_steps(table, policy, before, now=now, workers=workers,
                                      allow_recent=allow_recent)
    if dry_run:
        steps = tuple(StepOutcome(p, PLANNED if p.due else SKIPPED) for p in plans)
        return MaintainResult(table.location, True, policy.to_json(), steps, before, None, health_status)
    outcomes: list[StepOutcome] = []
    stopped = False
    for plan in plans:
        if stopped or not plan.due:
            outcomes.append(StepOutcome(plan, NOT_RUN if stopped and plan.due else SKIPPED))
            continue
        table = table.refresh()
        measured = table_state(table)
        try:
            result, extra = _RUNNERS[plan.step](table, plan, engine, workers, allow_recent, now)
        except IcectlError as e:
            outcomes.append(StepOutcome(plan, FAILED, measured_before=measured,
                                        error=_error_view(e, describe_error)))
            stopped = True
            continue
        table = table.refresh()
        outcome = StepOutcome(plan, DONE, result.to_json(), measured, table_state(table), extra)
        problem = _partial_failure(plan.step, result)
        if problem is not None:
            outcome = StepOutcome(plan, FAILED, outcome.result, measured, outcome.measured_after, extra,
                                  _error_view(problem, describe_error))
            stopped = True
        outcomes.append(outcome)
    return MaintainResult(table.location, False, policy.to_json(), tuple(outcomes), before,
                          table_state(table.refresh()), health_status)


def _partial_failure(step: str, result: Any) -> IcectlError | None:
    """A deleting step that reports files it could not delete (exit 7) or refused to (exit 5),
    as its own command ends then."""
    from icectl.errors import StorageError, ValidationError

    failed = getattr(result, "failed", ())
    if failed:
        path, error = failed[0]
        return StorageError(f"the {step} step could not delete {len(failed)} file(s), the first "
                            f"{path}: {error}")
    refused = getattr(result, "refused", ())
    if refused:
        path, reason = refused[0]
        return ValidationError(f"the {step} step refused to delete {len(refused)} file(s), the first "
                               f"{path}: {reason}")
    return None


# -- running each step: (the operation's result, the measures only that result gives) ---------------


def _freed(plan: StepPlan, deleted: list[str]) -> int:
    return sum(plan.sizes.get(p, 0) for p in deleted)


def _run_expire(table: Table, plan: StepPlan, engine: Any, workers: int | None, allow_recent: bool,
                now: int) -> tuple[Any, dict[str, Any]]:
    from icectl.ops.maintain.expire import KINDS, expire_snapshots

    r = expire_snapshots(table, max_workers=workers, now=now, **plan.options)
    return r, {"bytes-freed": _freed(plan, [p for k in KINDS for p in r.files.get(k, ())])}


def _run_orphans(table: Table, plan: StepPlan, engine: Any, workers: int | None, allow_recent: bool,
                 now: int) -> tuple[Any, dict[str, Any]]:
    from icectl.ops.maintain.file_removal import default_workers
    from icectl.ops.maintain.orphans import delete_orphan_files

    r = delete_orphan_files(table, older_than_ms=plan.options["older_than_ms"],
                            workers=workers or default_workers(table), allow_recent=allow_recent, now=now)
    kept = {p for p, _ in r.failed} | {p for p, _ in r.refused}
    deleted = [p for p in r.orphan_files if p not in kept]
    return r, {"orphan-files": {"before": len(r.orphan_files), "after": len(kept)},
               "bytes-freed": _freed(plan, deleted)}


def _run_compact_deletes(table: Table, plan: StepPlan, engine: Any, workers: int | None, allow_recent: bool,
                         now: int) -> tuple[Any, dict[str, Any]]:
    from icectl.ops.maintain.compact_deletes import compact_deletes

    return compact_deletes(table, engine=_engine(engine, workers), **plan.options), {}


def _run_compact(table: Table, plan: StepPlan, engine: Any, workers: int | None, allow_recent: bool,
                 now: int) -> tuple[Any, dict[str, Any]]:
    from icectl.ops.maintain.compact import compact_table

    return compact_table(table, None, plan.options["compact_options"], engine=_engine(engine, workers)), {}


def _run_rewrite_manifests(table: Table, plan: StepPlan, engine: Any, workers: int | None, allow_recent: bool,
                           now: int) -> tuple[Any, dict[str, Any]]:
    from icectl.ops.maintain.rewrite_manifests import rewrite_manifests

    return rewrite_manifests(table, **plan.options), {}


def _engine(engine: Any, workers: int | None) -> Any:
    if engine is not None:
        return engine
    from icectl.engines import get_engine

    return get_engine("local", **({"workers": workers} if workers else {}))


_RUNNERS = {EXPIRE: _run_expire, ORPHANS: _run_orphans, COMPACT_DELETES: _run_compact_deletes,
            COMPACT: _run_compact, REWRITE_MANIFESTS: _run_rewrite_manifests}
assert tuple(_RUNNERS) == STEPS
