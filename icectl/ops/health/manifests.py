"""The manifests dimension: counts and sizes, and how many manifests a one-partition filter opens.

A filter selecting one partition (equality on every partition field) opens each manifest of the
partition's spec whose partition summaries may hold that partition: for every field, a null
value needs ``contains_null``, NaN needs ``contains_nan`` (unknown counts as may), any other
value must lie within the field's lower and upper bounds -- the rule of the planner's manifest
evaluator for ``=`` (:mod:`icectl.expr.eval_manifest`) applied to one value per field. Averaged
over the partitions holding data files (an evenly spaced sample of ``MAX_PARTITIONS_PROBED``
when there are more). After ``rewrite-manifests`` the entries are clustered by partition into
``ceil(total size / target size)`` manifests with a partition never split, so such a filter
opens one manifest.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from icectl.ops.health.collect import TableFacts
from icectl.ops.health.files import median
from icectl.ops.health import fixes
from icectl.ops.health.model import DUE, Dimension, Effect, Verdict
from icectl.ops.health.policy import Policy
from icectl.spec.manifests import MANIFEST_DELETES, ManifestFile
from icectl.spec.values import from_bytes

__all__ = ["manifests_dimension", "manifests_opened", "MAX_PARTITIONS_PROBED"]

MAX_PARTITIONS_PROBED = 2000
_MISSING = object()


def _bounds(m: ManifestFile, types: Sequence[Any]) -> list[tuple] | None:
    if m.partitions is None:
        return None
    out = []
    for s, t in zip(m.partitions, types):
        try:
            lo = from_bytes(t, s.lower_bound) if s.lower_bound is not None else None
            hi = from_bytes(t, s.upper_bound) if s.upper_bound is not None else None
        except Exception:  # noqa: BLE001 - an unreadable bound may hold anything
            lo = hi = _MISSING
        out.append((s.contains_null, s.contains_nan, lo, hi))
    return out


def _may_hold(bounds: list[tuple] | None, values: tuple) -> bool:
    if bounds is None:
        return True
    for (has_null, has_nan, lo, hi), v in zip(bounds, values):
        if lo is _MISSING:
            continue
        if v is None:
            if not has_null:
                return False
        elif isinstance(v, float) and v != v:
            if has_nan is False:
                return False
        elif lo is None or hi is None:
            return False
        else:
            try:
                if v < lo or v > hi:
                    return False
            except TypeError:
                continue
    return True


def manifests_opened(facts: TableFacts) -> tuple[float | None, int | None, int]:
    """(average, maximum, partitions probed) of the data manifests a one-partition filter opens."""
    md = facts.md
    specs = md.specs_by_id()
    by_spec: dict[int, list[list[tuple] | None]] = {}
    for m, _ in facts.data:
        spec = specs.get(m.partition_spec_id)
        if spec is None:
            continue
        types = [f.type for f in spec.partition_type(md.schema).fields()]
        by_spec.setdefault(m.partition_spec_id, []).append(_bounds(m, types))
    parts = [p for p in facts.partitions.values() if p.data_files and specs.get(p.spec_id) is not None
             and specs[p.spec_id].fields]
    if not parts:
        return None, None, 0
    if len(parts) > MAX_PARTITIONS_PROBED:
        step = len(parts) / MAX_PARTITIONS_PROBED
        parts = [parts[int(i * step)] for i in range(MAX_PARTITIONS_PROBED)]
    counts = [sum(1 for b in by_spec.get(p.spec_id, ()) if _may_hold(b, p.values)) for p in parts]
    return round(sum(counts) / len(counts), 6), max(counts), len(counts)


def manifests_dimension(facts: TableFacts, policy: Policy, location: str) -> Dimension:
    ms = facts.manifests
    data = [m for m in ms if m.content != MANIFEST_DELETES]
    deletes = [m for m in ms if m.content == MANIFEST_DELETES]
    target = policy["manifest-target-size"]
    lengths = [m.manifest_length for m in ms]
    data_bytes = sum(m.manifest_length for m in data)
    delete_bytes = sum(m.manifest_length for m in deletes)
    ideal_data = math.ceil(data_bytes / target) if data else 0
    ideal_deletes = math.ceil(delete_bytes / target) if deletes else 0
    avg_opened, max_opened, probed = manifests_opened(facts)

    def total(attr: str, group: list[ManifestFile]) -> int:
        return sum(getattr(m, attr) or 0 for m in group)

    figures: dict[str, Any] = {
        "manifests": len(ms),
        "data-manifests": len(data),
        "delete-manifests": len(deletes),
        "manifest-bytes": data_bytes + delete_bytes,
        "data-manifest-bytes": data_bytes,
        "delete-manifest-bytes": delete_bytes,
        "target-size-bytes": target,
        "median-manifest-bytes": median(lengths),
        "min-manifest-bytes": min(lengths) if lengths else None,
        "max-manifest-bytes": max(lengths) if lengths else None,
        "manifest-sizes": sorted(lengths),
        "added-files": total("added_files_count", ms),
        "existing-files": total("existing_files_count", ms),
        "deleted-files": total("deleted_files_count", ms),
        "data-manifests-after-rewrite": ideal_data,
        "delete-manifests-after-rewrite": ideal_deletes,
        "manifests-per-partition-average": avg_opened,
        "manifests-per-partition-max": max_opened,
        "partitions-probed": probed,
    }
    verdicts = []
    ratio = len(data) / ideal_data if ideal_data else 0.0
    opened_over = avg_opened is not None and avg_opened > policy["max-manifests-per-partition"]
    count_over = len(data) > 1 and ratio > policy["max-manifest-count-ratio"]
    if opened_over or count_over:
        why = []
        if count_over:
            why.append(f"{len(data)} data manifests where {ideal_data} of the target size "
                       f"({target} bytes) would hold their entries")
        if opened_over:
            why.append(f"a one-partition filter opens {avg_opened:.1f} manifests on average "
                       f"(at most {max_opened})")
        effects = [Effect("data-manifests", "manifests", len(data), ideal_data)]
        if avg_opened is not None:
            effects.append(Effect("manifests-per-partition-average", "manifests", avg_opened, 1))
        verdicts.append(Verdict("manifests", "scattered-manifests", DUE, "; ".join(why),
                                "max-manifests-per-partition" if opened_over else "max-manifest-count-ratio",
                                fixes.rewrite_manifests(location), tuple(effects)))
    return Dimension("manifests", figures, tuple(verdicts))
