"""`icectl schema ...`: evolve a table's schema, one commit per command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, List, Optional

import typer

from icectl.cli.common import DryRunOpt, JsonOpt, TableArg, WarehouseOpt, handle_errors, load_table, report_status
from icectl.cli.output import emit_json, emit_table, err
from icectl.errors import InvalidInput, NotFound, StorageError

app = typer.Typer(
    help="""Evolve a table's schema. Every change is one commit; --dry-run prints the new schema
without committing. Columns are dotted paths (loc.lat; list elements and map values as
tags.element / m.value, or points.x for a struct inside a list).

Examples:

  icectl schema add ./wh/db/events loc.alt float --doc "altitude in m"
  icectl schema add ./wh/db/events region string --after id
  icectl schema rename ./wh/db/events ts event_ts
  icectl schema promote ./wh/db/events id long
  icectl schema drop ./wh/db/events tmp --dry-run
  icectl schema apply ./wh/db/events changes.json
  icectl schema union ./wh/db/events new-data.parquet
""",
    no_args_is_help=True,
    rich_markup_mode=None,
)
ident_app = typer.Typer(
    help="""Set or clear the schema's identifier fields (row identity for upserts and equality deletes).

Examples:

  icectl schema identifier-fields set ./wh/db/events id
  icectl schema identifier-fields unset ./wh/db/events
""",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(ident_app, name="identifier-fields")

CaseSensitiveOpt = Annotated[bool, typer.Option(
    "--case-sensitive",
    help="Allow column names that differ only in case (id and ID); Spark resolves names "
         "case-insensitively by default and cannot query such a table.")]
ColumnArg = Annotated[str, typer.Argument(metavar="COLUMN", help="Column path, e.g. loc.lat.", show_default=False)]
TypeArg = Annotated[str, typer.Argument(metavar="TYPE", help='Iceberg type, e.g. long, "decimal(12,2)", "struct<a: int>".', show_default=False)]


def emit_schema_result(result: Any, json_out: bool) -> None:
    view = result.to_json()
    if json_out:
        emit_json(view)
        return
    report_status(result, "schema")
    s = view["schema"]
    title = f"schema {s['schema-id']}"
    if s["identifier-fields"]:
        title += f" (identifier fields: {', '.join(s['identifier-fields'])})"
    emit_table(["id", "name", "type", "required", "doc"],
               [[c["id"], c["name"], c["type"], c["required"], c["doc"]] for c in s["columns"]],
               title=title)


def _run(table: str, warehouse: Optional[str], build: Any, dry_run: bool, json_out: bool,
         case_sensitive: bool = False) -> None:
    from icectl.ops.metadata.schema import evolve_schema

    t = load_table(table, warehouse)
    emit_schema_result(evolve_schema(t, build, dry_run=dry_run, case_sensitive_names=case_sensitive), json_out)


@app.command("add", no_args_is_help=True, help="""Add a column (optional unless --required with --default, v3).

Examples:

  icectl schema add ./wh/db/t region string --after id
  icectl schema add ./wh/db/t loc.alt float --doc "altitude"
  icectl schema add ./wh/db/t points.element.z double
  icectl schema add ./wh/db/t flag boolean --required --default false   (v3 tables)
""")
@handle_errors(returns="icectl.ops.metadata.schema:SchemaChange")
def schema_add(
    table: TableArg,
    column: ColumnArg,
    type_: TypeArg,
    after: Annotated[Optional[str], typer.Option("--after", help="Place the column after this one (same struct).")] = None,
    before: Annotated[Optional[str], typer.Option("--before", help="Place the column before this one (same struct).")] = None,
    first: Annotated[bool, typer.Option("--first", help="Place the column first in its struct.")] = False,
    doc: Annotated[Optional[str], typer.Option("--doc", help="Column documentation.")] = None,
    required: Annotated[bool, typer.Option("--required", help="Make the column required (needs --default; v3).")] = False,
    default: Annotated[Optional[str], typer.Option("--default", help="Initial and write default value, e.g. 0, 'n/a', 2024-01-01 (v3).")] = None,
    case_sensitive: CaseSensitiveOpt = False,
    dry_run: DryRunOpt = False,
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    from icectl.ops.metadata.schema import add_column
    from icectl.spec.parse import parse_type

    t = parse_type(type_)
    _run(table, warehouse, lambda u: add_column(u, column, t, doc=doc, required=required, default=default,
                                                after=after, before=before, first=first),
         dry_run, json_out, case_sensitive)


@app.command("drop", no_args_is_help=True, help="""Drop columns (their data stays in old files but is no longer read).

Example: icectl schema drop ./wh/db/t tmp loc.alt
""")
@handle_errors(returns="icectl.ops.metadata.schema:SchemaChange")
def schema_drop(
    table: TableArg,
    columns: Annotated[List[str], typer.Argument(metavar="COLUMN...", help="Columns to drop.", show_default=False)],
    dry_run: DryRunOpt = False,
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    def build(u: Any) -> None:
        for c in columns:
            u.drop_column(c)

    _run(table, warehouse, build, dry_run, json_out)


@app.command("rename", no_args_is_help=True, help="""Rename a column; it keeps its id and its data.

Example: icectl schema rename ./wh/db/t loc.lat latitude
""")
@handle_errors(returns="icectl.ops.metadata.schema:SchemaChange")
def schema_rename(
    table: TableArg,
    column: ColumnArg,
    new_name: Annotated[str, typer.Argument(metavar="NEW_NAME", help="The new name (last path part only).", show_default=False)],
    case_sensitive: CaseSensitiveOpt = False,
    dry_run: DryRunOpt = False,
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    _run(table, warehouse, lambda u: u.rename_column(column, new_name), dry_run, json_out, case_sensitive)


@app.command("move", no_args_is_help=True, help="""Move a column within its struct.

Examples:

  icectl schema move ./wh/db/t region --after id
  icectl schema move ./wh/db/t id --first
""")
@handle_errors(returns="icectl.ops.metadata.schema:SchemaChange")
def schema_move(
    table: TableArg,
    column: ColumnArg,
    after: Annotated[Optional[str], typer.Option("--after", help="Move after this column.")] = None,
    before: Annotated[Optional[str], typer.Option("--before", help="Move before this column.")] = None,
    first: Annotated[bool, typer.Option("--first", help="Move to the first position.")] = False,
    dry_run: DryRunOpt = False,
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    if sum(bool(x) for x in (after, before, first)) != 1:
        raise InvalidInput("give exactly one of --after, --before and --first")

    def build(u: Any) -> None:
        if first:
            u.move_first(column)
        elif after:
            u.move_after(column, after)
        else:
            u.move_before(column, before)

    _run(table, warehouse, build, dry_run, json_out)


@app.command("promote", no_args_is_help=True, help="""Widen a column's type: int->long, float->double,
decimal(P,S)->decimal(P2,S) with P2 > P; v3: date->timestamp/timestamp_ns (not for columns that
identity- or bucket-partition the table).

Example: icectl schema promote ./wh/db/t id long
""")
@handle_errors(returns="icectl.ops.metadata.schema:SchemaChange")
def schema_promote(
    table: TableArg,
    column: ColumnArg,
    type_: TypeArg,
    dry_run: DryRunOpt = False,
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    from icectl.spec.parse import parse_type

    t = parse_type(type_)
    _run(table, warehouse, lambda u: u.update_column(column, t), dry_run, json_out)


@app.command("optional", no_args_is_help=True, help="""Make a required column optional.

Example: icectl schema optional ./wh/db/t name
""")
@handle_errors(returns="icectl.ops.metadata.schema:SchemaChange")
def schema_optional(
    table: TableArg,
    column: ColumnArg,
    dry_run: DryRunOpt = False,
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    _run(table, warehouse, lambda u: u.make_optional(column), dry_run, json_out)


@app.command("doc", no_args_is_help=True, help="""Set a column's documentation ("" removes it).

Example: icectl schema doc ./wh/db/t ts "event time, UTC"
""")
@handle_errors(returns="icectl.ops.metadata.schema:SchemaChange")
def schema_doc(
    table: TableArg,
    column: ColumnArg,
    doc: Annotated[str, typer.Argument(metavar="DOC", help="The documentation text.", show_default=False)],
    dry_run: DryRunOpt = False,
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    _run(table, warehouse, lambda u: u.update_doc(column, doc or None), dry_run, json_out)


@ident_app.command("set", no_args_is_help=True, help="""Make these columns the identifier fields (required, primitive, not float/double).

Example: icectl schema identifier-fields set ./wh/db/t id region
""")
@handle_errors(returns="icectl.ops.metadata.schema:SchemaChange")
def ident_set(
    table: TableArg,
    columns: Annotated[List[str], typer.Argument(metavar="COLUMN...", help="Identifier columns.", show_default=False)],
    dry_run: DryRunOpt = False,
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    _run(table, warehouse, lambda u: u.set_identifier_fields(columns), dry_run, json_out)


@ident_app.command("unset", no_args_is_help=True, help="""Clear the identifier fields.

Example: icectl schema identifier-fields unset ./wh/db/t
""")
@handle_errors(returns="icectl.ops.metadata.schema:SchemaChange")
def ident_unset(
    table: TableArg,
    dry_run: DryRunOpt = False,
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    _run(table, warehouse, lambda u: u.set_identifier_fields([]), dry_run, json_out)


@app.command("apply", no_args_is_help=True, help="""Apply several changes from a JSON file in one commit.

FILE holds a JSON list of changes, applied in order:

  [{"op": "add", "column": "region", "type": "string", "after": "id"},
   {"op": "rename", "column": "ts", "to": "event_ts"},
   {"op": "promote", "column": "n", "type": "long"},
   {"op": "drop", "column": "tmp"},
   {"op": "move", "column": "region", "first": true},
   {"op": "optional", "column": "name"},
   {"op": "doc", "column": "n", "doc": "a count"},
   {"op": "identifier-fields", "columns": ["id"]}]

"add" also takes "doc", "before", "first", "required" and "default". Use - for stdin.

Example: icectl schema apply ./wh/db/t changes.json --dry-run
""")
@handle_errors(returns="icectl.ops.metadata.schema:SchemaChange")
def schema_apply(
    table: TableArg,
    file: Annotated[str, typer.Argument(metavar="FILE", help="JSON list of changes (- for stdin).", show_default=False)],
    case_sensitive: CaseSensitiveOpt = False,
    dry_run: DryRunOpt = False,
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    import sys

    from icectl.ops.metadata.schema import apply_changes

    try:
        text = sys.stdin.read() if file == "-" else Path(file).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise NotFound(f"changes file not found: {file}") from None
    except OSError as e:
        raise StorageError(f"cannot read changes file {file}: {e.strerror or e}") from None
    try:
        changes = json.loads(text)
    except json.JSONDecodeError as e:
        raise InvalidInput(f"{file} is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    if not isinstance(changes, list):
        raise InvalidInput(f"{file} must hold a JSON list of changes")
    _run(table, warehouse, lambda u: apply_changes(u, changes), dry_run, json_out, case_sensitive)


@app.command("union", no_args_is_help=True, help="""Add the columns a Parquet file has and the table lacks
(matched by name; only the file's footer is read). Types are widened where the file's are wider;
incompatible types are refused. A required column that the file holds as optional is refused
(exit code 5) unless --allow-optional, which makes it optional. The columns made optional and
the types widened are listed on stderr (made-optional and widened in --json).

Example: icectl schema union ./wh/db/t new-data.parquet
""")
@handle_errors(returns="icectl.ops.metadata.schema:UnionChange")
def schema_union(
    table: TableArg,
    file: Annotated[str, typer.Argument(metavar="FILE.parquet", help="A Parquet file (path or URL).", show_default=False)],
    allow_optional: Annotated[bool, typer.Option(
        "--allow-optional", help="Make required columns optional where the file's are optional "
        "(refused without it).")] = False,
    case_sensitive: CaseSensitiveOpt = False,
    dry_run: DryRunOpt = False,
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    from icectl.ops.metadata.schema import union_with_parquet

    t = load_table(table, warehouse)
    result = union_with_parquet(t, file, dry_run=dry_run, case_sensitive_names=case_sensitive,
                                allow_optional=allow_optional)
    if not json_out:
        if result.made_optional:
            err(f"made optional: {', '.join(result.made_optional)}")
        for column, old, new in result.widened:
            err(f"widened: {column} {old} -> {new}")
    emit_schema_result(result, json_out)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="schema")
