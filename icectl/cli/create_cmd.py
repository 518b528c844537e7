"""`icectl create`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, List, Optional

import typer

from icectl.cli.common import values, JsonOpt, TableArg, WarehouseOpt, handle_errors, parse_key_values, table_catalog, table_location
from icectl.cli.output import emit_json, emit_pairs, err
from icectl.errors import InvalidInput, NotFound, StorageError

CREATE_HELP = """Create a new table at TABLE (refused if a table already exists there).

Tables never nest: a TABLE inside another table's directory, or with a table somewhere below
it, is refused (exit 5) and nothing is written; a table already at TABLE is exit 4.

Examples:

  icectl create ./wh/db/events --schema "id long not null, ts timestamptz, tags list<string>"
  icectl create ./wh/db/events --schema "id long not null, ts timestamptz, cat string" --partition "days(ts), bucket(16, id)" --sort-order "id desc nulls last"
  icectl create db.events -w ./wh --schema-file schema.json --format-version 3 --property write.target-file-size-bytes=268435456

Column types: boolean, int, long, float, double, decimal(P,S), date, time, timestamp, timestamptz,
timestamp_ns, timestamptz_ns (v3), string, uuid, fixed[L], binary, list<T>, map<K, V>,
struct<name: T, ...>, unknown, variant, geometry, geography (v3). Add "not null" for required
columns. Partition transforms use Spark's syntax: identity(c) or c, bucket(N, c), truncate(W, c),
years(c), months(c), days(c), hours(c) (year/month/day/hour accepted too), void(c).
"""


def register(app: typer.Typer) -> None:
    app.command("create", help=CREATE_HELP, no_args_is_help=True)(create)


@handle_errors(returns="icectl.ops.metadata.create:CreateResult")
def create(
    table: TableArg,
    schema: Annotated[Optional[str], typer.Option("--schema", "-s", help='Columns, e.g. "id long not null, ts timestamptz".')] = None,
    schema_file: Annotated[Optional[Path], typer.Option("--schema-file", help="Iceberg schema JSON file.")] = None,
    partition: Annotated[Optional[str], typer.Option("--partition", "-p", help='Partition transforms, e.g. "days(ts), bucket(16, id)".')] = None,
    sort_order: Annotated[Optional[str], typer.Option("--sort-order", help='Sort order, e.g. "id desc nulls last, ts".')] = None,
    prop: Annotated[Optional[List[str]], typer.Option("--property", "-P", help="Table property KEY=VALUE (repeatable).")] = None,
    format_version: Annotated[int, typer.Option("--format-version", metavar="1|2|3", autocompletion=values("1", "2", "3"), help="Iceberg format version: 1, 2 or 3.")] = 2,
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    from icectl.ops.metadata.create import create_table

    schema_json = None
    if schema_file is not None:
        if schema is not None:
            raise InvalidInput("give either --schema or --schema-file, not both")
        try:
            schema_json = schema_file.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise NotFound(f"schema file not found: {schema_file}") from None
        except OSError as e:
            raise StorageError(f"cannot read schema file {schema_file}: {e.strerror or e}") from None
    elif schema is None:
        raise InvalidInput("a schema is required: --schema \"id long, ...\" or --schema-file FILE")
    if "format-version" in parse_key_values(prop):
        raise InvalidInput("set the format version with --format-version, not as a property")
    found = table_catalog(table, warehouse)
    result = create_table(
        table_location(table, warehouse) if found is None else None,
        catalog=found[0] if found else None,
        identifier=found[1] if found else None,
        schema_text=schema,
        schema_json=schema_json,
        partition_text=partition,
        sort_order_text=sort_order,
        properties=parse_key_values(prop),
        format_version=format_version,
    )
    summary = result.to_json()
    if json_out:
        emit_json(summary)
    else:
        err(f"created table at {result.location}")
        emit_pairs([(k, summary[k]) for k in ("location", "metadata-file", "table-uuid", "format-version")]
                   + [("schema", summary["schema-string"]), ("partition-spec", summary["partition-spec-string"]),
                      ("sort-order", summary["sort-order-string"])])
