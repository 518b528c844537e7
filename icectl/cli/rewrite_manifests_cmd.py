"""`icectl rewrite-manifests`."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from icectl.cli.common import (DryRunOpt, EngineOpt, JsonOpt, SparkMasterOpt, TableArg, WarehouseOpt,
                               handle_errors, load_table)
from icectl.cli.expire_cmd import maintenance_engine
from icectl.cli.output import emit_json, emit_pairs, err

REWRITE_MANIFESTS_HELP = """Rewrite TABLE's manifests so each holds the entries of neighbouring partitions, at the target size.

As Spark's rewrite_manifests procedure: the data manifests, then the delete manifests, of the
current snapshot written for one partition spec (--spec-id, default the table's current spec)
are read, their live entries sorted by partition and written into ceil(total size / target)
groups of manifests of about --target-size bytes (default the table property
commit.manifest.target-size-bytes, 8 MB), a partition never split between groups. No data or
delete file changes. Committed as one `replace` snapshot whose summary counts
manifests-created, manifests-kept and manifests-replaced (and entries-processed 0, as Spark's
procedure records it). A single manifest
that already fits is left alone: then nothing is committed.

With --engine spark the entries of the manifests to rewrite are read in Spark tasks on the
session (the active one, or one started with --spark-master); clustering them and writing the
new manifests stay with the commit, in this process, so the result is the local engine's.

Examples:

\b
  icectl rewrite-manifests ./wh/db/events
  icectl rewrite-manifests db.events -w ./wh --target-size 1048576 --json
  icectl rewrite-manifests ./wh/db/events --spec-id 0 --dry-run
  icectl rewrite-manifests ./wh/db/events --engine spark
"""


def register(app: typer.Typer) -> None:
    app.command("rewrite-manifests", help=REWRITE_MANIFESTS_HELP, no_args_is_help=True)(rewrite_manifests_cmd)


@handle_errors(returns="icectl.ops.maintain.rewrite_manifests:RewriteManifestsResult")
def rewrite_manifests_cmd(
    table: TableArg,
    spec_id: Annotated[Optional[int], typer.Option(
        "--spec-id", min=0, help="Rewrite the manifests of this partition spec (default: the current spec).")] = None,
    target_size: Annotated[Optional[int], typer.Option(
        "--target-size", min=1, metavar="BYTES",
        help="Target manifest size in bytes (default: commit.manifest.target-size-bytes, 8 MB).")] = None,
    branch: Annotated[str, typer.Option("--branch", "-b", help="Rewrite this branch's head (default: main).")] = "main",
    dry_run: DryRunOpt = False,
    engine: EngineOpt = "local",
    spark_master: SparkMasterOpt = None,
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    from icectl.ops.maintain.rewrite_manifests import rewrite_manifests

    tbl = load_table(table, warehouse)
    with maintenance_engine(engine, spark_master) as eng:
        r = rewrite_manifests(tbl, spec_id=spec_id, target_size=target_size, branch=branch,
                              dry_run=dry_run, engine=eng)
    if json_out:
        emit_json(r.to_json())
        return
    if not r.committed and not r.dry_run:
        err("nothing to rewrite: no manifests of this spec, or one that already fits the target size")
    emit_pairs([
        ("committed", r.committed),
        ("snapshot-id", r.snapshot_id),
        ("branch", r.branch),
        ("spec-id", r.spec_id),
        ("target-size-bytes", r.target_size),
        ("manifests-replaced", len(r.rewritten_manifests)),
        ("manifests-created", len(r.added_manifests)),
        ("manifests-kept", r.kept_manifests),
        ("entries-rewritten", r.entries_processed),
        ("metadata-file", r.metadata_location),
    ], title="dry run: nothing written" if r.dry_run else None)
