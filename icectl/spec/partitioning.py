"""Partition specs and fields (spec "Partitioning", JSON form in Appendix C).

A spec is a list of partition fields, each deriving one partition value from a source column
through a transform. Partition field ids start at 1000 (``PARTITION_DATA_ID_START``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from icectl.errors import CorruptMetadata, IcectlError, InvalidInput, NotFound, ValidationError
from icectl.spec.parse import PartitionTerm
from icectl.spec.schema import Schema
from icectl.spec.transforms import Transform, parse_transform
from icectl.spec.types import (
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
)

__all__ = [
    "PartitionField", "PartitionSpec", "UNPARTITIONED_SPEC", "PARTITION_DATA_ID_START",
    "build_spec", "default_partition_name", "resolve_source_column", "check_term_transform",
    "unified_partition_type", "unified_partition_values",
]

PARTITION_DATA_ID_START = 1000


@dataclass(frozen=True)
class PartitionField:
    """One partition field. ``source_ids`` holds v3's multi-argument form when it was given."""

    source_id: int
    field_id: int
    name: str
    transform: Transform
    source_ids: tuple[int, ...] = field(default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "source_ids", tuple(self.source_ids))

    @property
    def all_source_ids(self) -> tuple[int, ...]:
        return self.source_ids or (self.source_id,)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "transform": str(self.transform)}
        if len(self.source_ids) > 1:
            out["source-ids"] = list(self.source_ids)
        else:
            out["source-id"] = self.source_id
        out["field-id"] = self.field_id
        return out

    @classmethod
    def from_json(cls, obj: Any, default_field_id: int | None = None) -> "PartitionField":
        if not isinstance(obj, dict):
            raise CorruptMetadata(f"invalid partition field JSON: {obj!r}")
        try:
            source_ids: tuple[int, ...] = ()
            if "source-ids" in obj:
                source_ids = tuple(int(i) for i in obj["source-ids"])
                if not source_ids:
                    raise CorruptMetadata("partition field has an empty source-ids list")
            if "source-id" in obj:
                source_id = int(obj["source-id"])
            elif source_ids:
                source_id = source_ids[0]
            else:
                raise CorruptMetadata(f"partition field has no source-id: {obj!r}")
            if "field-id" in obj:
                field_id = int(obj["field-id"])
            elif default_field_id is not None:
                field_id = default_field_id
            else:
                raise CorruptMetadata(f"partition field has no field-id: {obj!r}")
            return cls(source_id, field_id, str(obj["name"]), parse_transform(obj["transform"]),
                       source_ids if len(source_ids) > 1 else ())
        except KeyError as e:
            raise CorruptMetadata(
                f"partition field is missing required key {e.args[0]!r}") from None
        except (TypeError, ValueError) as e:
            raise CorruptMetadata(f"invalid partition field JSON {obj!r}: {e}") from None

    def __str__(self) -> str:
        return f"{self.field_id}: {self.name}: {self.transform}({self.source_id})"


@dataclass(frozen=True)
class PartitionSpec:
    spec_id: int = 0
    fields: tuple[PartitionField, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))

    # -- properties ----------------------------------------------------------------------------

    def is_unpartitioned(self) -> bool:
        """No fields, or only void fields (the reference treats both as unpartitioned)."""
        return all(f.transform.is_void for f in self.fields)

    def is_partitioned(self) -> bool:
        return not self.is_unpartitioned()

    def last_assigned_field_id(self) -> int:
        return max((f.field_id for f in self.fields), default=PARTITION_DATA_ID_START - 1)

    def field_by_id(self, field_id: int) -> PartitionField | None:
        for f in self.fields:
            if f.field_id == field_id:
                return f
        return None

    def fields_by_source_id(self, source_id: int) -> list[PartitionField]:
        return [f for f in self.fields if source_id in f.all_source_ids]

    def identity_source_ids(self) -> set[int]:
        return {f.source_id for f in self.fields if f.transform.is_identity}

    def has_unknown_transforms(self) -> bool:
        return any(not f.transform.is_known for f in self.fields)

    def partition_type(self, schema: Schema) -> StructType:
        """The struct of partition values: partition field ids, result types, all optional.

        A source column that no longer exists (a dropped column behind a void field) gives
        the type the transform produces regardless of its input, or ``unknown``.
        """
        out = []
        for f in self.fields:
            src = schema.find_field_or_none(f.source_id)
            if src is not None:
                rtype = f.transform.result_type(src.type)
            else:
                rtype = f.transform.result_type_without_source()
            out.append(NestedField(f.field_id, f.name, rtype, False))
        return StructType(out)

    # -- comparison ----------------------------------------------------------------------------

    def compatible_with(self, other: "PartitionSpec") -> bool:
        """Equivalent per the spec: same source ids, transforms and names, in order."""
        if len(self.fields) != len(other.fields):
            return False
        return all(
            a.all_source_ids == b.all_source_ids and str(a.transform) == str(b.transform)
            and a.name == b.name
            for a, b in zip(self.fields, other.fields)
        )

    def same_fields(self, other: "PartitionSpec") -> bool:
        """Equal fields including partition field ids, spec ids aside."""
        return self.fields == other.fields

    # -- JSON ----------------------------------------------------------------------------------

    def fields_json(self) -> list[dict[str, Any]]:
        """The bare field list (v1's ``partition-spec`` and manifests' ``partition-spec`` key)."""
        return [f.to_json() for f in self.fields]

    def to_json(self) -> dict[str, Any]:
        return {"spec-id": self.spec_id, "fields": self.fields_json()}

    @classmethod
    def from_json(cls, obj: Any) -> "PartitionSpec":
        if not isinstance(obj, dict) or "fields" not in obj:
            raise CorruptMetadata(f"invalid partition spec JSON: {str(obj)[:200]}")
        try:
            spec_id = int(obj.get("spec-id", 0))
        except (TypeError, ValueError):
            raise CorruptMetadata(f"invalid spec-id: {obj.get('spec-id')!r}") from None
        return cls.from_fields_json(obj["fields"], spec_id)

    @classmethod
    def from_fields_json(cls, fields: Any, spec_id: int = 0) -> "PartitionSpec":
        """From a bare field list; fields without ``field-id`` (v1) get 1000, 1001, ..."""
        if not isinstance(fields, list):
            raise CorruptMetadata(f"partition fields must be a list, not {fields!r}")
        return cls(spec_id, tuple(
            PartitionField.from_json(f, PARTITION_DATA_ID_START + i) for i, f in enumerate(fields)
        ))

    def with_spec_id(self, spec_id: int) -> "PartitionSpec":
        return PartitionSpec(spec_id, self.fields)

    def __str__(self) -> str:
        if not self.fields:
            return "[]"
        return "[\n" + "\n".join(f"  {f}" for f in self.fields) + "\n]"


UNPARTITIONED_SPEC = PartitionSpec(0, ())


# ----------------------------------------------------------------------------------------------
# Binding terms to a schema


def default_partition_name(column: str, transform: Transform) -> str:
    """The name Spark's ``CREATE TABLE ... PARTITIONED BY`` gives a field (the Java builder's)."""
    return transform.partition_name(column)


def resolve_source_column(
    schema: Schema, column: str, what: str = "partition"
) -> tuple[int, str, NestedField]:
    """Find a column for a partition or sort term: (field id, canonical full name, field).

    Names match case-insensitively, as Spark resolves them. Refuses nested types and columns
    inside lists or maps.
    """
    f = schema.find_field_or_none(column, case_sensitive=True)
    if f is None:
        f = schema.find_field_or_none(column, case_sensitive=False)
    if f is None:
        raise NotFound(f"cannot find source column for {what} term: {column!r}{schema.suggest(column)}")
    name = schema.column_name(f.field_id)
    parent = schema.parent_id(f.field_id)
    while parent is not None:
        pf = schema.find_field(parent)
        if isinstance(pf.type, (ListType, MapType)):
            kind = "list" if isinstance(pf.type, ListType) else "map"
            raise ValidationError(
                f"cannot {what} by column {name!r}: it is inside a {kind}"
                f" ({schema.column_name(parent)!r})")
        parent = schema.parent_id(parent)
    return f.field_id, name, f


def check_term_transform(
    column: str, source_type: IcebergType, transform: Transform, what: str
) -> None:
    """Refuse a transform that is unknown or invalid for the column's type (void is always ok)."""
    if not transform.is_known:
        raise ValidationError(
            f"cannot {what} by unknown transform {transform} on column {column!r}")
    if transform.is_void:
        return
    if not isinstance(source_type, PrimitiveType):
        raise ValidationError(
            f"cannot {what} by non-primitive column {column!r} of type {source_type}")
    if not transform.can_transform(source_type):
        raise ValidationError(
            f"invalid transform {transform} for column {column!r} of type {source_type}")


def build_spec(
    schema: Schema,
    terms: Sequence[PartitionTerm] | Iterable[PartitionTerm] | str,
    spec_id: int = 0,
    last_partition_id: int = PARTITION_DATA_ID_START - 1,
) -> PartitionSpec:
    """Bind partition terms to a schema, as ``CREATE TABLE ... PARTITIONED BY`` does.

    ``terms`` may also be the text form (see :func:`icectl.spec.parse.parse_partition_terms`).
    Field ids count up from ``last_partition_id + 1``. Default names follow the reference
    (:func:`default_partition_name`) applied to the column's name as the schema spells it.
    """
    if isinstance(terms, str):
        from icectl.spec.parse import parse_partition_terms

        terms = parse_partition_terms(terms)
    fields: list[PartitionField] = []
    names: set[str] = set()
    dedup: dict[tuple[int, str], PartitionField] = {}
    next_id = last_partition_id
    for term in terms:
        source_id, column, src = resolve_source_column(schema, term.column, "partition")
        transform = term.transform
        check_term_transform(column, src.type, transform, "partition")
        name = term.name if term.name is not None else default_partition_name(column, transform)
        if not name:
            raise InvalidInput(f"empty partition field name for column {column!r}")
        # A partition name may equal a column name only when it is that column's identity
        # (or void) field; otherwise readers could not tell them apart.
        clash = schema.find_field_or_none(name)
        if clash is not None and not (
            clash.field_id == source_id and (transform.is_identity or transform.is_void)
        ):
            if transform.is_identity or transform.is_void:
                raise ValidationError(
                    f"cannot name the partition field of column {column!r} {name!r}: "
                    f"{name!r} is a different column of the schema")
            raise ValidationError(
                f"cannot create partition field {name!r} from column {column!r}: "
                f"the name is a column of the schema")
        if name in names:
            raise ValidationError(f"cannot use partition name more than once: {name!r}")
        key = (source_id, transform.dedup_name)
        if not transform.is_void and key in dedup:
            raise ValidationError(
                f"cannot add redundant partition field {transform}({column}): it conflicts with "
                f"{dedup[key].name!r} ({dedup[key].transform})")
        next_id += 1
        pf = PartitionField(source_id, next_id, name, transform)
        names.add(name)
        dedup[key] = pf
        fields.append(pf)
    return PartitionSpec(spec_id, tuple(fields))


def unified_partition_type(specs: Iterable[PartitionSpec], schema: Schema) -> StructType:
    """Every partition field of every spec, ordered by field id, all optional: the reference's
    unified partition type (the ``_partition`` column, the ``partitions``/``entries`` tables).

    A field's name and type come from the newest spec (highest id) that has it, as the
    reference picks the most recent name of a renamed field; a spec that cannot be bound to
    ``schema`` is skipped."""
    fields: dict[int, NestedField] = {}
    for spec in sorted(specs, key=lambda s: s.spec_id, reverse=True):
        try:
            ptype = spec.partition_type(schema)
        except IcectlError:
            continue
        for f in ptype.fields():
            fields.setdefault(f.field_id, NestedField(f.field_id, f.name, f.type, required=False))
    return StructType(tuple(fields[k] for k in sorted(fields)))


def unified_partition_values(spec: PartitionSpec | None, values: tuple,
                             unified: StructType | None = None) -> dict[int, Any]:
    """A file's partition tuple (in the order of its ``spec``'s fields) placed in the unified
    partition type, as the reference coerces it: the non-null values by partition field id,
    a field of the unified type the spec lacks (or an unknown spec, None) reading null; with
    ``unified``, only the fields it has."""
    if spec is None:
        return {}
    wanted = None if unified is None else {f.field_id for f in unified.fields()}
    return {pf.field_id: v for pf, v in zip(spec.fields, values)
            if v is not None and (wanted is None or pf.field_id in wanted)}
