"""The plan of ``icectl maintain``: which steps are due and what each is expected to gain.

For each step (in order) the plan asks health whether its threshold is crossed (a ``due``
verdict in the step's dimension whose command is the step's) and the step's own planner what it
would do now (expire's, orphans', compaction's and the manifest rewrite's dry runs: nothing is
written). A step is due when both say so. Where health does not judge a step's dimension (the
dimension is absent or skipped), the step's planner alone decides. The expected gains are the
planners' own figures, chained: a step's "before" is the state the earlier due steps leave.

Measures (the table's state, :func:`table_state`): ``snapshots``; ``data-files``,
``delete-files`` and ``manifests`` of the current snapshot (from its manifest list's counts);
``orphan-files`` (only the orphans step measures it); and ``bytes-freed`` by the deleting steps
(the sizes of the files they delete, taken before they delete them).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

from icectl.errors import ValidationError
from icectl.ops.maintain.maintain_policy import (
    COMPACT, COMPACT_DELETES, EXPIRE, ORPHANS, REWRITE_MANIFESTS, MaintainPolicy,
)
from icectl.spec.properties import (
    DELETE_TARGET_FILE_SIZE, MANIFEST_TARGET_SIZE, MAX_SNAPSHOT_AGE_MS, MIN_SNAPSHOTS_TO_KEEP, TARGET_FILE_SIZE,
)

if TYPE_CHECKING:
    from icectl.io.storage.files import FileIO
    from icectl.table.table import Table

__all__ = ["StepPlan", "plan_steps", "table_state", "COMMAND_OF", "DIMENSION_OF"]

# health's verdict codes that the delete files' compaction fixes
DELETE_FILE_CODES = {"dangling-deletes"}
# health's verdict codes the compaction fixes with options of its own (what the verdict's
# command asks for): every file with a delete file rewritten; the files sorted
COMPACT_CODE_OPTIONS = {"merge-on-read-cost": {"delete_file_threshold": 1},
                        "overlapping-files": {"strategy": "sort"}}

# the command each step stands for, and the health dimension that judges it
COMMAND_OF = {EXPIRE: "expire", ORPHANS: "orphans", COMPACT_DELETES: "compact", COMPACT: "compact",
              REWRITE_MANIFESTS: "rewrite-manifests"}
DIMENSION_OF = {EXPIRE: "snapshots", ORPHANS: "orphans", COMPACT_DELETES: "deletes", COMPACT: "data-files",
                REWRITE_MANIFESTS: "manifests"}


@dataclass(frozen=True)
class StepPlan:
    """One step of the plan: whether it is due and why (``reasons``, one sentence each), the
    health verdicts behind it, the command that does the same (its name, and its arguments by
    the command's parameter names; None or False: not given), its expected gains (measure
    -> {"before", "after"}; ``bytes-freed`` -> bytes) and what running it needs (``options``,
    and ``sizes`` of the files it deletes)."""

    step: str
    due: bool
    reasons: tuple[str, ...]
    arguments: dict[str, Any] = field(default_factory=dict)  # of the step's command, by parameter
    expected: dict[str, Any] = field(default_factory=dict)
    verdicts: tuple[dict[str, Any], ...] = ()
    options: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    sizes: dict[str, int] = field(default_factory=dict, compare=False, repr=False)

    def to_json(self) -> dict[str, Any]:
        return {"step": self.step, "due": self.due, "reasons": list(self.reasons),
                "command": COMMAND_OF[self.step], "arguments": dict(self.arguments),
                "expected": dict(self.expected),
                "verdicts": list(self.verdicts)}


def table_state(table: Table) -> dict[str, Any]:
    """The measures of ``table``'s current snapshot (module docs)."""
    from icectl.spec.manifests import MANIFEST_DATA
    from icectl.table.commit.snapshot_manifests import read_manifests

    md = table.metadata
    manifests = read_manifests(table.io, md, md.current_snapshot())

    def live(content_is_data: bool) -> int | None:
        total = 0
        for m in manifests:
            if (m.content == MANIFEST_DATA) != content_is_data:
                continue
            if m.added_files_count is None or m.existing_files_count is None:
                return None  # (v1 manifests listed inline carry no counts)
            total += m.added_files_count + m.existing_files_count
        return total

    return {"snapshots": len(md.snapshots), "data-files": live(True), "delete-files": live(False),
            "manifests": len(manifests)}


def _sizes(io: FileIO, paths: Sequence[str], workers: int | None) -> dict[str, int]:
    def size(p: str) -> tuple[str, int]:
        return p, io.info(p).size

    with ThreadPoolExecutor(max_workers=max(1, min(workers or 8, 32))) as pool:
        return dict(pool.map(size, paths))


def _change(state: dict[str, Any], measure: str, after: Any) -> dict[str, Any]:
    before = state.get(measure)
    return {"before": before, "after": after}


def _minus(state: dict[str, Any], measure: str, removed: int, added: int = 0) -> dict[str, Any]:
    before = state.get(measure)
    return _change(state, measure, None if before is None else max(0, before - removed + added))


# -- each step's planner: (work found, reasons, expected gains, options, sizes, command) ---------------


def _expire_cutoff(policy: MaintainPolicy, now: int) -> int | None:
    from icectl.spec.timetext import parse_time_ms

    text = policy["expire.older-than"]
    if text is not None:
        return parse_time_ms(text, "time", now=now)
    age = policy.overrides.get(MAX_SNAPSHOT_AGE_MS)
    return now - int(age) if age is not None else None


def _plan_expire(table: Table, policy: MaintainPolicy, state: dict, now: int, workers: int | None,
                 allow_recent: bool, verdicts: Sequence[Any], health: Any) -> tuple:
    from icectl.ops.maintain.expire import KINDS, expire_snapshots

    cutoff = _expire_cutoff(policy, now)
    keep = policy.overrides.get(MIN_SNAPSHOTS_TO_KEEP)
    options = {"older_than_ms": cutoff, "retain_last": int(keep) if keep is not None else None}
    r = expire_snapshots(table, dry_run=True, max_workers=workers, now=now, **options)
    paths = [p for k in KINDS for p in r.files.get(k, ())]
    sizes = _sizes(table.io, paths, workers)
    n = len(r.expired_snapshot_ids)
    expected = {"snapshots": _minus(state, "snapshots", n), "bytes-freed": sum(sizes.values())}
    command = {"older_than": cutoff, "retain_last": options["retain_last"]}
    found = f"{n} snapshot(s) would expire, deleting {len(paths)} file(s) of {sum(sizes.values())} bytes"
    limit = health.policy["max-expirable-snapshots"]
    if _expiry_set(policy):
        found += f" (more than icectl.health.max-expirable-snapshots, {limit}, make the step due)"
        return n > limit, found, expected, options, sizes, command
    return n > 0, found, expected, options, sizes, command


def _expiry_set(policy: MaintainPolicy) -> bool:
    """Whether the policy sets the expiry itself (health judges the table's own properties)."""
    return (policy["expire.older-than"] is not None
            or any(k in policy.overrides for k in (MAX_SNAPSHOT_AGE_MS, MIN_SNAPSHOTS_TO_KEEP)))


def _plan_orphans(table: Table, policy: MaintainPolicy, state: dict, now: int, workers: int | None,
                  allow_recent: bool, verdicts: Sequence[Any], health: Any) -> tuple:
    from icectl.ops.maintain.file_removal import default_workers
    from icectl.ops.maintain.orphans import find_orphan_files, require_old_enough
    from icectl.spec.timetext import parse_time_ms

    cutoff = parse_time_ms(policy["orphans.older-than"], "time", now=now)
    require_old_enough(cutoff, now, allow_recent)
    r = find_orphan_files(table, older_than_ms=cutoff, workers=workers or default_workers(table))
    sizes = _sizes(table.io, r.orphan_files, workers)
    n, limit = len(r.orphan_files), health.policy["max-orphan-files"]
    expected = {"orphan-files": {"before": n, "after": 0}, "bytes-freed": sum(sizes.values())}
    command = {"older_than": cutoff, "delete": True, "allow_recent": allow_recent}
    found = (f"{n} orphan file(s) of {sum(sizes.values())} bytes older than the cut-off "
             f"(more than icectl.health.max-orphan-files, {limit}, make the step due)")
    return n > limit, found, expected, {"older_than_ms": cutoff}, sizes, command


def _plan_compact_deletes(table: Table, policy: MaintainPolicy, state: dict, now: int, workers: int | None,
                          allow_recent: bool, verdicts: Sequence[Any], health: Any) -> tuple:
    from icectl.ops.maintain.compact_deletes import compact_deletes

    target = policy.overrides.get(DELETE_TARGET_FILE_SIZE)
    options = {"min_input_files": policy["compact-deletes.min-input-files"],
               "target_file_size": int(target) if target is not None else None}
    r = compact_deletes(table, dry_run=True, **options)
    rewritten, dangling = len(r.rewritten_delete_files), len(r.dangling_delete_files)
    added = max(r.groups, -(-r.rewritten_bytes // r.target_file_size)) if r.groups else 0
    expected = {"delete-files": _minus(state, "delete-files", rewritten + dangling, added)}
    command = {"deletes": True, **options}
    found = (f"{dangling} dangling delete file(s) to remove, {rewritten} position delete file(s) "
             f"in {r.groups} group(s) to rewrite")
    return bool(rewritten or dangling), found, expected, options, {}, command


def _compact_removes_deletes(table: Table, groups: Sequence[Any]) -> tuple[int, int]:
    """(delete files that apply only to files the compaction rewrites, delete files that apply
    to any live data file): the share compaction is expected to remove."""
    from icectl.scan.planner import plan_scan

    rewritten = {f.path for g in groups for f in g.files}
    by_delete: dict[str, bool] = {}
    for f in plan_scan(table).files:
        mine = f.path in rewritten
        for d in f.deletes:
            by_delete[d.path] = by_delete.get(d.path, True) and mine
    return sum(by_delete.values()), len(by_delete)


def _plan_compact(table: Table, policy: MaintainPolicy, state: dict, now: int, workers: int | None,
                  allow_recent: bool, verdicts: Sequence[Any], health: Any) -> tuple:
    from icectl.ops.maintain.compact import CompactOptions, plan_compaction

    target = policy.overrides.get(TARGET_FILE_SIZE)
    asked: dict[str, Any] = {}
    for v in verdicts:
        asked.update(COMPACT_CODE_OPTIONS.get(v.code, {}))
    opts = CompactOptions(min_input_files=policy["compact.min-input-files"],
                          target_file_size=int(target) if target is not None else None, **asked)
    _start, _target, groups = plan_compaction(table, None, opts)
    inputs = sum(len(g.input_files) for g in groups)
    outputs = sum(g.expected_output_files for g in groups)
    expected = {"data-files": _minus(state, "data-files", inputs, outputs),
                "manifests": _minus(state, "manifests", 0, 1)}  # (one manifest of the new files)
    removable, applying = _compact_removes_deletes(table, groups) if groups else (0, 0)
    if applying and state.get("delete-files") is not None:
        before = state["delete-files"]
        expected["delete-files"] = _change(state, "delete-files", round(before * (1 - removable / applying)))
    command = {"min_input_files": opts.min_input_files, "target_file_size": opts.target_file_size, **asked}
    found = f"{inputs} data file(s) in {len(groups)} group(s) to rewrite into about {outputs}"
    return bool(groups), found, expected, {"compact_options": opts}, {}, command


def _plan_rewrite_manifests(table: Table, policy: MaintainPolicy, state: dict, now: int,
                            workers: int | None, allow_recent: bool, verdicts: Sequence[Any], health: Any) -> tuple:
    from icectl.ops.maintain.rewrite_manifests import rewrite_manifests

    target = policy.overrides.get(MANIFEST_TARGET_SIZE)
    options = {"target_size": int(target) if target is not None else None}
    r = rewrite_manifests(table, dry_run=True, **options)
    totals: dict[str, int] = {}
    for m in r.rewritten_manifests:
        totals[m["content"]] = totals.get(m["content"], 0) + m["length"]
    if state.get("delete-files") == 0:  # (earlier steps leave no delete file: no delete manifest)
        totals = {c: t for c, t in totals.items() if c == "data"}
    created = sum(-(-t // r.target_size) for t in totals.values())
    # the manifests of other specs stay; those of earlier steps are of the current spec: rewritten too
    expected = {"manifests": _change(state, "manifests", r.kept_manifests + created)}
    command = dict(options)
    found = f"{len(r.rewritten_manifests)} manifest(s) to rewrite into about {created}"
    return bool(r.rewritten_manifests), found, expected, options, {}, command


_PLANNERS = {EXPIRE: _plan_expire, ORPHANS: _plan_orphans, COMPACT_DELETES: _plan_compact_deletes,
             COMPACT: _plan_compact, REWRITE_MANIFESTS: _plan_rewrite_manifests}
_DELETING = (EXPIRE, ORPHANS)


# -- the plan --------------------------------------------------------------------------------------


def _health(table: Table, policy: MaintainPolicy, now: int, workers: int | None) -> Any:
    from icectl.ops.health import table_health

    overrides = dict(policy.overrides)
    cutoff = _expire_cutoff(policy, now)
    if cutoff is not None:  # health judges expiry by the age the expire step will use
        overrides[MAX_SNAPSHOT_AGE_MS] = str(max(0, now - cutoff))
    return table_health(table, policy=overrides, now_ms=now, workers=workers)


def _step_of(verdict: Any) -> str | None:
    """The step a verdict's command stands for: by the command's name, and for ``compact`` by
    the verdict's code (the delete files' compaction fixes dangling deletes)."""
    words = [w for w in verdict.command or () if w != "icectl"]
    if not words or words[0] not in COMMAND_OF.values():
        return None
    if words[0] == COMMAND_OF[COMPACT]:
        return COMPACT_DELETES if verdict.code in DELETE_FILE_CODES else COMPACT
    return next(step for step, name in COMMAND_OF.items() if name == words[0])


def _judgement(report: Any, step: str) -> tuple[bool | None, list[Any]]:
    """(whether health finds the step's threshold crossed, None where it does not judge it; the
    due verdicts whose command is the step's)."""
    from icectl.ops.health import DUE

    due = [v for v in report.verdicts if v.severity == DUE and _step_of(v) == step]
    dim = report.dimension(DIMENSION_OF[step])
    if not due and (dim is None or dim.skipped is not None):
        return None, []
    return bool(due), due


def plan_steps(table: Table, policy: MaintainPolicy, state: dict[str, Any], *, now: int,
               workers: int | None = None, allow_recent: bool = False) -> tuple[str, list[StepPlan]]:
    """(health's status of the table, the plan of every step in order); nothing is written."""
    from icectl.ops.maintain.file_removal import require_gc_enabled

    report = _health(table, policy, now, workers)
    chained = dict(state)
    plans: list[StepPlan] = []
    for step, planner in _PLANNERS.items():
        if not policy.enabled(step):
            plans.append(StepPlan(step, False, (f"disabled by icectl.maintain.{step}.enabled=false",)))
            continue
        if step in _DELETING:
            try:
                require_gc_enabled(table.metadata.properties, f"run the {step} step")
            except ValidationError as e:
                plans.append(StepPlan(step, False, (str(e),)))
                continue
        crossed, verdicts = _judgement(report, step)
        if step == EXPIRE and _expiry_set(policy):
            # health's count follows the table's own history.expire.*: expire's plan with the
            # policy's settings counts instead, against health's threshold
            crossed, verdicts = None, []
        if crossed is False:
            plans.append(StepPlan(step, False, ("health finds no threshold of this step crossed",)))
            continue
        work, found, expected, options, sizes, command = planner(table, policy, chained, now, workers, allow_recent,
                                                                 verdicts, report)
        reasons = [v.problem for v in verdicts] or ([] if crossed else [
            "the policy sets the expiry: expire's own plan decides" if step == EXPIRE else
            f"health does not judge the {DIMENSION_OF[step]} dimension: the step's own planner decides"])
        reasons.append(found if work else f"nothing to do: {found}")
        plan = StepPlan(step, work, tuple(reasons), command, expected if work else {},
                        tuple(v.to_json() for v in verdicts), options, sizes)
        if work:
            chained.update({m: v["after"] for m, v in expected.items() if isinstance(v, dict)})
            if step != EXPIRE and chained.get("snapshots") is not None and step != ORPHANS:
                chained["snapshots"] += 1  # (the step commits one snapshot)
                plan.expected.setdefault("snapshots", {"before": chained["snapshots"] - 1,
                                                       "after": chained["snapshots"]})
        plans.append(plan)
    return report.status, plans
