"""Schema evolution operations: one commit per change set, re-validated on every retry.

Each operation builds a :class:`~icectl.spec.schema_update.SchemaUpdate` on the table's current
metadata and commits the result. A retry after a lost race re-runs the change on the winner's
metadata, but only if the winner left the schema the change was based on in place (same current
schema id and last column id, the spec's ``assert-current-schema-id`` and
``assert-last-assigned-field-id`` requirements); otherwise it stops with CommitConflict.
With ``dry_run`` the new metadata is computed and returned but nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Callable, Iterable, Mapping

from icectl.errors import CommitConflict, InvalidInput, ValidationError
from icectl.spec.metadata import TableMetadata
from icectl.spec.parse import parse_type
from icectl.spec.result_json import JsonResult, derived, json_field, pairs
from icectl.spec.schema_metadata import update_table_schema
from icectl.spec.schema import Schema, walk_fields
from icectl.spec.schema_update import SchemaUpdate
from icectl.spec.types import IcebergType, PrimitiveType
from icectl.spec.values import parse_literal, to_json_value
from icectl.table.commit.producer import unreadable_current_snapshot
from icectl.table.table import Table

__all__ = [
    "EvolveResult", "SchemaChange", "as_result", "run_change", "evolve_schema", "split_column_path",
    "default_json", "apply_change", "apply_changes", "union_with_parquet", "UnionChange", "CHANGE_OPS",
]


@dataclass(frozen=True)
class EvolveResult(JsonResult):
    """The table's metadata before and after a change, and whether it was committed; its JSON
    view holds what every metadata change reports (kinds of change add their fields)."""

    location: str
    before: TableMetadata = json_field(omit=True)
    after: TableMetadata = json_field(omit=True)
    committed: bool
    dry_run: bool
    metadata_location: str | None = json_field(default=None, omit=True)
    metadata_file: str | None = derived(lambda r: r.metadata_location if r.committed else None)
    warnings: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return self.after is not self.before and self.after != self.before


def _schema_view(md: TableMetadata) -> Any:
    from icectl.spec.views import schema_view

    return schema_view(md)


@dataclass(frozen=True)
class SchemaChange(EvolveResult):
    """A schema change; its JSON view adds the new current schema."""

    previous_schema_id: int = derived(lambda r: r.before.current_schema_id)
    last_column_id: int = derived(lambda r: r.after.last_column_id)
    schema: dict[str, Any] = derived(lambda r: _schema_view(r.after))


def as_result(cls: type, result: EvolveResult) -> Any:
    """``result`` as the EvolveResult subclass ``cls`` (same fields), for its JSON view."""
    return cls(**{f.name: getattr(result, f.name) for f in fields(result) if f.init})


def run_change(
    table: Table,
    change: Callable[[TableMetadata], TableMetadata],
    requirements: Callable[[TableMetadata], tuple],
    what: str,
    dry_run: bool = False,
    result: type = EvolveResult,
) -> Any:
    """Commit ``change`` (or only compute it, with ``dry_run``); returns a ``result`` (an
    EvolveResult subclass whose ``to_json`` adds what that kind of change reports).

    ``requirements(md)`` names the parts of the metadata the change depends on; a retry on a
    base where they differ stops with CommitConflict rather than applying the change to a
    table that moved under it.
    """
    before = table.metadata
    expected = requirements(before)
    problem = unreadable_current_snapshot(table.io, before)
    if problem is not None:
        # A metadata-only change stays possible, so the table can still be repaired; say so.
        table.warn(f"{problem}; the {what} change does not touch data and is "
                   f"{'computed' if dry_run else 'committed'} anyway")
    if dry_run:
        after = change(before)
        return result(table.location, before, after, False, True, table.metadata_location,
                      tuple(table.warnings))

    def update(base: TableMetadata) -> TableMetadata:
        if requirements(base) != expected:
            raise CommitConflict(
                f"the table's {what} changed while this change was being committed; "
                f"nothing was changed, run the command again")
        return change(base)

    version = table.version
    table.commit(update)
    after = table.metadata
    return result(table.location, before, after, table.version != version, False,
                  table.metadata_location, tuple(table.warnings))


def schema_requirements(md: TableMetadata) -> tuple:
    return (md.current_schema_id, md.last_column_id)


def evolve_schema(table: Table, build: Callable[[SchemaUpdate], Any], *, dry_run: bool = False,
                  case_sensitive: bool = True, case_sensitive_names: bool = False) -> SchemaChange:
    """Apply the changes ``build`` makes to a SchemaUpdate of the current schema, in one commit.

    Names that differ only in case from another in the same struct are refused (exit 5) unless
    ``case_sensitive_names``."""

    def change(base: TableMetadata) -> TableMetadata:
        update = SchemaUpdate(base.schema, base.last_column_id, base.format_version, case_sensitive,
                              case_sensitive_names=case_sensitive_names)
        build(update)
        return update_table_schema(base, update)

    return run_change(table, change, schema_requirements, "schema", dry_run, SchemaChange)


# -- building changes from user text -----------------------------------------------------------


def split_column_path(path: str) -> tuple[str | None, str]:
    """``"loc.alt"`` -> ``("loc", "alt")``; backticks quote parts containing dots."""
    parts: list[str] = []
    buf: list[str] = []
    i, quoted = 0, False
    while i < len(path):
        c = path[i]
        if c == "`":
            if quoted and i + 1 < len(path) and path[i + 1] == "`":
                buf.append("`")
                i += 2
                continue
            quoted = not quoted
        elif c == "." and not quoted:
            parts.append("".join(buf))
            buf = []
        else:
            buf.append(c)
        i += 1
    if quoted:
        raise InvalidInput(f"unterminated backtick in column {path!r}")
    parts.append("".join(buf))
    if any(not p for p in parts):
        raise InvalidInput(f"invalid column path {path!r}")
    if len(parts) == 1:
        return None, parts[0]
    return ".".join(parts[:-1]), parts[-1]


def default_json(t: IcebergType, text: str | None) -> Any:
    """The JSON single-value form of a default given as command-line text."""
    if text is None:
        return None
    if not isinstance(t, PrimitiveType):
        raise InvalidInput(f"a default value is only supported for primitive types, not {t}")
    return to_json_value(t, parse_literal(t, text))


def _type(text: Any) -> IcebergType:
    if not isinstance(text, str):
        raise InvalidInput(f"a type must be text, not {text!r}")
    return parse_type(text)


def _need(change: Mapping[str, Any], key: str) -> Any:
    if key not in change:
        raise InvalidInput(f"schema change {dict(change)!r} needs {key!r}")
    return change[key]


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def add_column(update: SchemaUpdate, column: str, type_: IcebergType, *, doc: str | None = None,
               required: bool = False, default: str | None = None, after: str | None = None,
               before: str | None = None, first: bool = False) -> SchemaUpdate:
    if sum(bool(x) for x in (after, before, first)) > 1:
        raise InvalidInput("give at most one position: after, before or first")
    parent, name = split_column_path(column)
    update.add_column(parent, name, type_, doc, required, default_json(type_, default))
    if first:
        update.move_first(column if parent is None else f"{parent}.{name}")
    elif after:
        update.move_after(column, after)
    elif before:
        update.move_before(column, before)
    return update


def apply_change(update: SchemaUpdate, change: Mapping[str, Any]) -> None:
    """One change from the ``schema apply`` file format (see README)."""
    if not isinstance(change, Mapping):
        raise InvalidInput(f"each schema change must be an object, not {change!r}")
    op = change.get("op")
    if op == "add":
        default = change.get("default")
        add_column(update, _need(change, "column"), _type(_need(change, "type")),
                   doc=change.get("doc"), required=bool(change.get("required", False)),
                   default=None if default is None else _text(default),
                   after=change.get("after"), before=change.get("before"),
                   first=bool(change.get("first", False)))
    elif op == "drop":
        update.drop_column(_need(change, "column"))
    elif op == "rename":
        update.rename_column(_need(change, "column"), _need(change, "to"))
    elif op == "move":
        column = _need(change, "column")
        if change.get("first"):
            update.move_first(column)
        elif change.get("after") is not None:
            update.move_after(column, change["after"])
        elif change.get("before") is not None:
            update.move_before(column, change["before"])
        else:
            raise InvalidInput(f"move of {column!r} needs first, after or before")
    elif op == "promote":
        update.update_column(_need(change, "column"), _type(_need(change, "type")))
    elif op == "optional":
        update.make_optional(_need(change, "column"))
    elif op == "doc":
        update.update_doc(_need(change, "column"), change.get("doc"))
    elif op == "identifier-fields":
        cols = _need(change, "columns")
        if not isinstance(cols, list) or not all(isinstance(c, str) for c in cols):
            raise InvalidInput("identifier-fields needs a list of column names")
        update.set_identifier_fields(cols)
    else:
        raise InvalidInput(f"unknown schema change op {op!r} (expected one of {', '.join(CHANGE_OPS)})")


CHANGE_OPS = ("add", "drop", "rename", "move", "promote", "optional", "doc", "identifier-fields")


def apply_changes(update: SchemaUpdate, changes: Iterable[Mapping[str, Any]]) -> None:
    for c in changes:
        apply_change(update, c)


@dataclass(frozen=True)
class UnionChange(SchemaChange):
    """A union with a file's schema; its JSON view adds what the union changed in existing
    columns: ``made-optional`` (required columns the file holds as optional) and ``widened``
    (``{column, from, to}`` type promotions)."""

    made_optional: tuple[str, ...] = ()
    widened: tuple[tuple[str, str, str], ...] = json_field(default=(), value=pairs("column", "from", "to"))


def relaxed_columns(before: Schema, after: Schema) -> tuple[tuple[str, ...], tuple[tuple[str, str, str], ...]]:
    """The columns of ``before`` that ``after`` makes optional, and those whose type it widens
    (``(name, old type, new type)``), by field id, in schema order."""
    new = {f.field_id: f for _, f, _ in walk_fields(after.struct)}
    optional, widened = [], []
    for name, f, _ in walk_fields(before.struct):
        g = new.get(f.field_id)
        if g is None:
            continue
        if f.required and not g.required:
            optional.append(name)
        if isinstance(f.type, PrimitiveType) and f.type != g.type:
            widened.append((name, str(f.type), str(g.type)))
    return tuple(optional), tuple(widened)


def union_with_parquet(table: Table, path: str, *, dry_run: bool = False,
                       case_sensitive_names: bool = False, allow_optional: bool = False) -> UnionChange:
    """Add the columns of a Parquet file's schema that the table lacks (union by name), widening
    types where the file's are wider.

    A required column the file holds as optional would become optional: a silent loosening of
    the table's contract, so it is refused (ValidationError, naming the columns) unless
    ``allow_optional``. The result lists the columns made optional and the types widened."""
    from icectl.io.formats.parquet_schema import read_parquet_schema

    struct = read_parquet_schema(table.io, path)

    def build(u: SchemaUpdate) -> None:
        base = u.schema
        u.union_by_name(struct)
        optional, _ = relaxed_columns(base, u.apply())
        if optional and not allow_optional:
            raise ValidationError(
                f"{path} holds required column(s) {', '.join(optional)} as optional: the union would "
                "make them optional", override="allow_optional", effect="to make them optional")

    result = evolve_schema(table, build, dry_run=dry_run, case_sensitive_names=case_sensitive_names)
    optional, widened = relaxed_columns(result.before.schema, result.after.schema)
    return UnionChange(**{f.name: getattr(result, f.name) for f in fields(result) if f.init},
                       made_optional=optional, widened=widened)
