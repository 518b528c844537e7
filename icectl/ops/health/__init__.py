"""Table health (``icectl health``): figures, thresholds and verdicts from a table's metadata.

Nothing here reads a data file or prints. :func:`table_health` reads the current snapshot's
manifests through the planner's columnar path and caches (:mod:`icectl.ops.health.collect`),
judges each dimension against the thresholds of :mod:`icectl.ops.health.policy` and returns a
:class:`HealthReport`.

The JSON contract (``HealthReport.to_json()``; keys are stable, new keys may be added)::

    {
      "table": "<location>", "identifier": "db.t" | null, "metadata-file": "<path>",
      "format-version": 2, "snapshot-id": 123 | null, "generated-at-ms": 1700000000000,
      "status": "ok" | "maintenance-due",        # maintenance-due: a "due" verdict (exit code 14)
      "verdict-counts": {"due": 1, "warn": 0, "info": 2},
      "thresholds": {                               # every threshold by name
        "<name>": {"value": 536870912, "unit": "bytes",
                   "source": "table-property" | "policy" | "default" | "derived",
                   "property": "write.target-file-size-bytes" | null}
      },
      "policy-problems": ["<text>"],                # unparsable threshold properties (defaults used)
      "dimensions": [                               # in this order: data-files, deletes, manifests,
        {                                           # snapshots, partitions, layout, orphans
          "name": "data-files",
          "status": "ok" | "maintenance-due" | "skipped",
          "skipped": null | "<why not judged>",
          "figures": {"<kebab-case name>": <number | text | list | object>},
          "verdicts": [<verdict>]
        }
      ],
      "verdicts": [<verdict>]                       # all of them, worst first
    }

A verdict::

    {
      "dimension": "data-files", "code": "small-files",
      "severity": "due" | "warn" | "info",        # due: a threshold crossed, the command fixes it
      "problem": "<one sentence with the numbers>",
      "threshold": "<name in thresholds>" | null,
      "command": ["icectl", "compact", "<location>"] | null,   # null: no icectl command fixes it
      "command-text": "icectl compact <location>" | null,     # the same, one shell line
      "effects": [{"measure": "data-files", "unit": "files", "before": 120, "after": 4}]
    }

``after`` is the expected value once the command ran (null when it cannot be told in advance).
Units: ``bytes``, ``files``, ``manifests``, ``snapshots``, ``partitions``, ``rows``, ``ms``,
``share`` (0..1), ``ratio``.

Figures per dimension (counts and byte totals equal Spark's metadata tables on the same
snapshot; the tests in tests/interop check it):

* ``data-files``: data-files, data-bytes, records (``files`` where content = 0), the sizes against
  the target (small-files, small-bytes, small-file-share, average/median/min/max-file-bytes),
  ``size-histogram`` (buckets of ``lower-bytes`` inclusive, ``upper-bytes`` exclusive or null,
  ``files``, ``bytes``; edges at 1/1024, 1/256, 1/64, 1/16, 1/4, 0.75 and 1.8 x the target) and
  ``partitions``: one row per partition (``partitions`` table: spec-id, partition,
  partition-path, data-files, data-bytes, records, small-files, small-bytes,
  position-delete-files/-records, equality-delete-files/-records, delete-bytes), biggest first;
* ``manifests``: manifests, data-manifests, delete-manifests, manifest-bytes (sum of lengths),
  data-/delete-manifest-bytes, median/min/max-manifest-bytes, manifest-sizes (sorted), added-,
  existing-, deleted-files (sums of the manifest list counts), data-/delete-manifests-after-rewrite,
  manifests-per-partition-average/-max (what a one-partition filter opens) and partitions-probed;
* ``deletes``: delete-files, delete-bytes, position-delete-files, deletion-vectors,
  equality-delete-files, position-/equality-delete-records, data-files-with-deletes,
  delete-files-per-data-file, max-delete-files-per-data-file, deleted-rows, deleted-row-share,
  read-amplification, bytes-read-by-full-scan, dangling-delete-files, dangling-delete-bytes;
* ``snapshots``: snapshots, oldest-/newest-snapshot-ms, oldest-snapshot-age-ms, refs, branches,
  tags, snapshot-log-entries, metadata-log-entries, metadata-file-bytes, schemas,
  partition-specs, gc-enabled, expirable-snapshots, expirable-refs, bytes-/files-/manifests-
  held-by-expirable-snapshots (file- and manifest-bytes apart), all-manifests, all-files,
  all-files-bytes (``all_files``), reachable-files, reachable-file-bytes and ``timeline``: one row
  per snapshot, oldest first (snapshot-id, parent-snapshot-id, sequence-number, timestamp-ms,
  operation and the summary's counts: added-/deleted-records, added-/deleted-data-files, added-/removed-delete-files,
  added-/removed-files-size, total-records, total-data-files, total-delete-files,
  total-files-size, total-position-deletes, total-equality-deletes; null where absent);
* ``layout``: chosen (columns given, not the sort order's) and ``columns``: per column, column,
  field-id, files-with-bounds, files-without-bounds, overlap-depth-average, overlap-depth-max;
* ``orphans`` (with the listing only): older-than-ms, listed-files, referenced-files,
  orphan-files, orphan-bytes;
* ``partitions``: partitioned, partitions, partitions-with-data, largest-/median-partition-bytes,
  skew (largest / median), gini, tiny-partition-bytes, tiny-partitions, empty-partitions.
"""

from icectl.ops.health.engine import DIMENSIONS, table_health
from icectl.ops.health.model import (DUE, INFO, MAINTENANCE_DUE, OK, SEVERITIES, WARN, Dimension, Effect,
                                     HealthReport, Verdict)
from icectl.ops.health.policy import Policy, Threshold, read_policy

__all__ = ["table_health", "DIMENSIONS", "HealthReport", "Dimension", "Verdict", "Effect", "Policy",
           "Threshold", "read_policy", "DUE", "WARN", "INFO", "SEVERITIES", "OK", "MAINTENANCE_DUE"]
