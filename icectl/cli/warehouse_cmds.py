"""`icectl list`, `icectl drop`, `icectl register`: commands on a warehouse's tables."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from icectl.cli.common import JsonOpt, TableArg, WarehouseOpt, handle_errors, load_table
from icectl.cli.output import emit_json, emit_pairs, emit_table, err
from icectl.errors import InvalidInput
from icectl.table.catalog_files import is_metadata_file
from icectl.table.table import Table

LIST_HELP = """List the tables and namespaces of a warehouse (or of one NAMESPACE of it).

A directory is a table when its metadata/ holds metadata files (*.metadata.json), as Spark's
Hadoop catalog decides; a namespace is a directory with tables below it (namespaces nest:
a.b.t lives at WAREHOUSE/a/b/t). Tables whose metadata files only carry catalog names
(NNNNN-uuid.metadata.json, written by another catalog) are listed with kind "catalog": icectl
reads them, and `icectl register` adopts them.

With --catalog NAME (or --catalog-uri URI) it lists that SQL catalog's namespaces and tables.

Examples:

\b
  icectl list --warehouse ./wh
  icectl list db --warehouse ./wh --json
  icectl list --catalog lake
"""

DROP_HELP = """Drop a table: without --purge, remove its metadata/ directory (no catalog finds the table any
more; its data files stay where they are); with --purge, also delete every file its metadata
reaches that lies inside the table location (data and delete files, manifests, manifest lists,
statistics), then the directories left empty.

Files recorded outside the table location are never deleted (they are listed as
kept-outside-location), nor are files inside another table's directory (listed as
skipped-in-other-tables). --purge is refused (exit 5) when gc.enabled=false, and (exit 8, nothing
deleted) when a manifest list or manifest is missing, since the files it named cannot be known;
--purge --force then deletes every file under the table location instead. Spark's Hadoop
catalog deletes the whole table directory on DROP TABLE, data included, even without PURGE;
here the data stays unless --purge is given. Run with --dry-run first: it lists what would go.
A SQL catalog's table (--catalog) is removed from its catalog: without --purge every file stays.

Examples:

\b
  icectl drop db.events -w ./wh --purge --dry-run
  icectl drop db.events -w ./wh --purge
  icectl drop ./wh/db/old_events --json
"""

REGISTER_HELP = """Adopt a table another catalog manages (e.g. pyiceberg's SqlCatalog, whose metadata files are
named NNNNN-uuid.metadata.json) as the filesystem table IDENT, so that icectl can change it and
Spark's Hadoop catalog finds it.

--metadata names the catalog's current metadata file; it becomes the next version
v<N+1>.metadata.json (N the file's number) with version-hint.text, next to the catalog's
files. Manifests name data files by absolute path and a Hadoop catalog finds a table only at
WAREHOUSE/namespace/name, so the table's location must already be that directory: otherwise
the registration is refused with the reason; so is a location inside another table's
directory or with a table below it (tables never nest). After registering, commit through one catalog
only (drop the table from the other one without purging it).

With --catalog NAME (or --catalog-uri URI), IDENT is namespace.table in that SQL catalog: its row
points at FILE as it is (any metadata file, or a filesystem table's location for its current
version), nothing is copied. Without it, the current metadata file of a catalog's table exports
it as a filesystem table at its location.

Examples:

\b
  icectl register db.events --catalog lake --metadata ./wh/db/events
  icectl register db.events --warehouse ./wh --metadata ./wh/db/events/metadata/00003-5d1c0a6e-8b36-4f4c-9a53-0b2e8c3f1e11.metadata.json
  icectl register ./wh/db/events --metadata ./wh/db/events/metadata/00001-0d6ab1cf-7d1e-4c55-8f0e-1a2b3c4d5e6f.metadata.json --json
"""


def register(app: typer.Typer) -> None:
    app.command("list", help=LIST_HELP)(list_cmd)
    app.command("drop", help=DROP_HELP, no_args_is_help=True)(drop)
    app.command("register", help=REGISTER_HELP, no_args_is_help=True)(register_cmd)


@handle_errors(returns="icectl.ops.metadata.warehouse:ListResult")
def list_cmd(
    namespace: Annotated[Optional[str], typer.Argument(
        metavar="NAMESPACE", help="List only this namespace (a or a.b).", show_default=False)] = None,
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    from icectl.catalog.base import parse_namespace
    from icectl.catalog.resolve import list_catalog
    from icectl.cli.runner import catalog_choice
    from icectl.ops.metadata.warehouse import ListResult

    catalog = list_catalog(catalog_choice(), warehouse)
    if catalog is None:
        raise InvalidInput("list needs the warehouse: --warehouse DIR (or ICECTL_WAREHOUSE), or a catalog (--catalog)")
    levels = parse_namespace(namespace)
    result = ListResult(warehouse=catalog.warehouse or "", namespace=namespace,
                        namespaces=tuple(catalog.list_namespaces(levels)),
                        tables=tuple(catalog.list_tables(levels)),
                        catalog=catalog.name if catalog.kind != "filesystem" else None)
    if json_out:
        emit_json(result.to_json())
        return
    where = result.warehouse if catalog.kind == "filesystem" else catalog.describe()
    err(f"{len(result.tables)} table(s), {len(result.namespaces)} namespace(s) in {where}")
    rows = [("namespace", ns, "") for ns in result.namespaces]
    rows += [("table (catalog)" if t.kind == "catalog" else "table", t.identifier, t.location)
             for t in result.tables]
    emit_table(["type", "name", "location"], rows)


@handle_errors(returns="icectl.ops.metadata.warehouse:DropResult")
def drop(
    table: TableArg,
    purge: Annotated[bool, typer.Option(
        "--purge", help="Also delete the files the metadata reaches inside the table location.")] = False,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Delete nothing; list what would be deleted.")] = False,
    force: Annotated[bool, typer.Option(
        "--force", help="With --purge: delete every file under the table location, also when a "
                        "manifest list or manifest is missing.")] = False,
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    from icectl.cli.expire_cmd import note_skipped
    from icectl.ops.metadata.warehouse import drop_table

    if force and not purge:
        raise InvalidInput("--force only goes with --purge (it purges every file under the table location)")
    result = drop_table(load_table(table, warehouse), purge=purge, dry_run=dry_run, force=force)
    for path, error in result.failed:
        err(f"icectl: warning: could not delete {path}: {error}")
    for path, reason in result.refused:
        err(f"icectl: warning: not deleting {path}: {reason}")
    for path in result.kept_outside_location:
        err(f"icectl: note: kept {path}: outside the table location")
    note_skipped(result.skipped_other_tables)
    if json_out:
        emit_json(result.to_json())
    else:
        verb = "would delete" if dry_run else "deleted"
        purged = " and purge" if dry_run else " and purged"
        purged += " every file under its location" if force else " its files"
        err(f"{'dry run: would drop' if dry_run else 'dropped'} the table at {result.location}"
            + (purged if purge else " (data files kept)"))
        emit_pairs([(f"{verb.replace(' ', '-')}-files", len(result.deleted_files)),
                    ("metadata-files", len(result.metadata_files)),
                    ("kept-outside-location", len(result.kept_outside_location))])
        if dry_run:
            for p in result.deleted_files:
                print(f"file\t{p}")
            for p in result.metadata_files:
                print(f"metadata\t{p}")
    if result.failed:
        raise typer.Exit(7)
    if result.refused:
        raise typer.Exit(5)


@handle_errors(returns="icectl.ops.metadata.warehouse:RegisterResult")
def register_cmd(
    ident: Annotated[str, typer.Argument(
        metavar="IDENT", help="The table: DB.TABLE with --warehouse (or in --catalog), or its location.",
        show_default=False)],
    metadata: Annotated[str, typer.Option(
        "--metadata", metavar="FILE", help="The metadata file to adopt (the catalog's current one); into a "
                                           "--catalog also a filesystem table's location.",
        show_default=False)],
    warehouse: WarehouseOpt = None,
    json_out: JsonOpt = False,
) -> None:
    from icectl.cli.runner import table_catalog
    from icectl.ops.metadata.warehouse import RegisterResult, register_table

    found = table_catalog(ident, warehouse)
    if found is None:
        result = register_table(ident, metadata, warehouse)
        said = f"registered {result.location} as a filesystem table (from {result.registered_from})"
    else:
        catalog, name = found
        # a filesystem table's location stands for its current metadata file
        source = metadata if is_metadata_file(metadata) else Table.load(metadata).metadata_location
        t = catalog.register(name, source)
        result = RegisterResult(str(name), t.location, t.metadata_location, t.version, source)
        said = f"registered {result.location} as {name} in {catalog.describe()} (from {source})"
    if json_out:
        emit_json(result.to_json())
        return
    err(said)
    emit_pairs([("identifier", result.identifier), ("location", result.location),
                ("version", result.version), ("metadata-file", result.metadata_location)])
