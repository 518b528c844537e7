"""`icectl maintain`."""

from __future__ import annotations

import shlex
from typing import Annotated, Any, Optional

import typer

from icectl.cli.common import (EngineOpt, EngineProgress, JsonOpt, SparkMasterOpt, TableArg, WarehouseOpt, WorkersOpt,
                               cli_message, handle_errors, load_table, make_engine, report_error)
from icectl.cli.output import emit_json, emit_pairs, emit_table

MAINTAIN_HELP = """Run the maintenance TABLE's health says is due, in order: expire snapshots, remove orphan files, rewrite delete files (compact --deletes), compact data files, rewrite manifests.

Each step runs only when its threshold is crossed: `icectl health` has a due verdict for it
(thresholds from the table's properties: Iceberg's own keys and icectl.health.*) and the step's
own planner finds work; the orphans step runs when more orphan files older than
icectl.maintain.orphans.older-than (default 3d, as `icectl orphans`) are found than
icectl.health.max-orphan-files (0). Each step is the command of its name with its own rules: expiry follows
history.expire.*, orphan removal keeps the 24-hour rule (--allow-recent lifts it) and never
deletes inside another table, and gc.enabled=false skips both deleting steps.

--dry-run prints the plan and each step's expected gains (snapshots, data files, delete files,
manifests before -> after, bytes freed) and writes nothing. A real run prints, per step, what
was expected and what happened; --json also holds each step's own result (the JSON of the
command it stands for). Safe in cron: a second run right after finds nothing due and exits 0.
A failing step stops the later ones, and the exit code is that step's (the JSON names the
failed step and the steps that ran before it).

The policy: the table's properties, and over them --policy FILE, a JSON object of property
keys to values (icectl.maintain.*, icectl.health.* and the Iceberg properties the thresholds
read, e.g. {"icectl.maintain.orphans.older-than": "7d", "write.target-file-size-bytes":
134217728}). Every key and value is checked before anything runs: an unknown key or a bad value
is refused (exit 2) naming it.

Examples:

\b
  icectl maintain ./wh/db/events --dry-run
  icectl maintain db.events -w ./wh --json
  icectl maintain ./wh/db/events --policy nightly.json --workers 4
"""


def register(app: typer.Typer) -> None:
    app.command("maintain", help=MAINTAIN_HELP, no_args_is_help=True)(maintain)


def read_policy_file(path: str) -> dict[str, str]:
    """The policy mapping of a --policy FILE (JSON)."""
    import json

    from icectl.errors import InvalidInput, NotFound
    from icectl.ops.maintain.maintain_policy import policy_from_json

    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise NotFound(f"--policy: no such file {path}") from None
    except OSError as e:
        raise InvalidInput(f"--policy: cannot read {path}: {e.strerror or e}") from None
    try:
        data = json.loads(text)
    except ValueError as e:
        raise InvalidInput(f"--policy: {path} is not JSON: {e}") from None
    return policy_from_json(data, path)


@handle_errors(returns="icectl.ops.maintain.maintain:MaintainResult")
def maintain(
    table: TableArg,
    policy: Annotated[Optional[str], typer.Option(
        "--policy", metavar="FILE", help="A JSON object of policy keys to values, over the table's "
        "properties (icectl.maintain.*, icectl.health.*, Iceberg's threshold properties).",
        show_default=False)] = None,
    allow_recent: Annotated[bool, typer.Option(
        "--allow-recent", help="Let the orphans step use a cut-off less than 24 hours ago. Files a "
        "concurrent writer has not committed yet can be deleted, losing its commit.")] = False,
    engine: EngineOpt = "local",
    workers: WorkersOpt = None,
    spark_master: SparkMasterOpt = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Print the plan and its expected gains; write nothing.")] = False,
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    from icectl.ops.maintain.maintain import maintain_table
    from icectl.ops.maintain.maintain_policy import read_maintain_policy

    overrides = read_policy_file(policy) if policy is not None else None
    tbl = load_table(table, warehouse)
    resolved = read_maintain_policy(tbl.metadata.properties, overrides, origin=policy or "the policy")
    with EngineProgress("maintenance tasks") as progress, make_engine(engine, workers, spark_master, progress) as eng:
        result = maintain_table(tbl, resolved, dry_run=dry_run, engine=eng, workers=workers,
                                allow_recent=allow_recent, describe_error=cli_message)
    view = result.to_json()
    for step in view["steps"]:
        step["command-line"] = command_line(step["command"], step["arguments"], view["location"]) \
            if step["due"] else None
    if json_out:
        emit_json(view)
    else:
        _print_text(result, view)
    failed = result.failed_step
    if failed is not None:
        report_error(f"the {failed.plan.step} step failed: {failed.error['message']}", result.exit_code,
                     json_out)
        raise typer.Exit(result.exit_code)


def command_line(name: str, arguments: dict[str, Any], location: str) -> list[str]:
    """The command line of ``icectl NAME LOCATION`` with these arguments (by the command's
    parameter names; None or False: not given), its options named by the command itself."""
    from icectl.cli.app import COMMANDS, load_module_commands

    cmd = load_module_commands(COMMANDS[name][0])[name]
    options = {p.name: next(o for o in p.opts if o.startswith("--")) for p in cmd.params
               if getattr(p, "param_type_name", "") == "option"}
    argv = ["icectl", name, location]
    for key, value in arguments.items():
        if value is True:
            argv.append(options[key])
        elif value is not None and value is not False:
            argv += [options[key], str(value)]
    return argv


def _gains(gains: Optional[dict[str, Any]]) -> str:
    if not gains:
        return "-"
    parts = []
    for measure, v in gains.items():
        if isinstance(v, dict):
            parts.append(f"{measure} {v.get('before')} -> {v.get('after')}")
        else:
            parts.append(f"{measure} {v}")
    return "; ".join(parts)


def _print_text(result: Any, j: dict[str, Any]) -> None:
    rows = []
    for s in j["steps"]:
        row = [s["step"], s["status"], _gains(s["expected"])]
        if not result.dry_run:
            row.append(_gains(s["actual"]))
        row.append("; ".join(s["reasons"]))
        rows.append(row)
    headers = ["step", "status", "expected"] + ([] if result.dry_run else ["actual"]) + ["why"]
    emit_table(headers, rows)
    pairs = [("location", j["location"]), ("health", j["health-status"]),
             ("due steps", ", ".join(j["due-steps"]) or "-")]
    if result.dry_run:
        pairs += [("expected after", _gains({k: {"before": j["before"][k], "after": v}
                                              for k, v in j["expected-after"].items()})),
                  ("expected bytes freed", j["expected-bytes-freed"])]
    else:
        pairs += [("ran steps", ", ".join(j["ran-steps"]) or "-"),
                  ("before -> after", _gains({k: {"before": j["before"][k], "after": j["after"].get(k)}
                                              for k in j["before"]})),
                  ("bytes freed", j["bytes-freed"])]
    pairs += [(f"{s['step']} command", shlex.join(s["command-line"])) for s in j["steps"] if s["due"]]
    emit_pairs(pairs, title="dry run: nothing written" if result.dry_run else None)
