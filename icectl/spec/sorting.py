"""Sort orders (spec "Sorting", JSON form in Appendix C). Order id 0 is the unsorted order."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Iterable, Sequence

from icectl.errors import CorruptMetadata, InvalidInput
from icectl.spec.parse import SortTerm
from icectl.spec.partitioning import check_term_transform, resolve_source_column
from icectl.spec.schema import Schema
from icectl.spec.transforms import Transform, parse_transform

__all__ = [
    "SortDirection", "NullOrder", "SortField", "SortOrder", "UNSORTED_ORDER", "build_sort_order",
    "default_null_order",
]


class SortDirection(str, Enum):
    ASC = "asc"
    DESC = "desc"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def parse(cls, text: Any) -> "SortDirection":
        if isinstance(text, SortDirection):
            return text
        try:
            return cls(str(text).strip().lower())
        except ValueError:
            raise InvalidInput(f"invalid sort direction {text!r} (use asc or desc)") from None


class NullOrder(str, Enum):
    NULLS_FIRST = "nulls-first"
    NULLS_LAST = "nulls-last"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def parse(cls, text: Any) -> "NullOrder":
        """Accepts ``nulls-first``, ``NULLS_FIRST``, ``nulls first`` and the like."""
        if isinstance(text, NullOrder):
            return text
        norm = "-".join(str(text).strip().lower().replace("_", " ").replace("-", " ").split())
        try:
            return cls(norm)
        except ValueError:
            raise InvalidInput(
                f"invalid null order {text!r} (use nulls-first or nulls-last)") from None


def default_null_order(direction: SortDirection | str) -> NullOrder:
    """The reference's default: nulls first when ascending, last when descending."""
    return NullOrder.NULLS_FIRST if SortDirection.parse(direction) == SortDirection.ASC \
        else NullOrder.NULLS_LAST


@dataclass(frozen=True)
class SortField:
    source_id: int
    transform: Transform
    direction: SortDirection = SortDirection.ASC
    null_order: NullOrder = NullOrder.NULLS_FIRST
    source_ids: tuple[int, ...] = field(default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "direction", SortDirection.parse(self.direction))
        object.__setattr__(self, "null_order", NullOrder.parse(self.null_order))
        object.__setattr__(self, "source_ids", tuple(self.source_ids))

    @property
    def all_source_ids(self) -> tuple[int, ...]:
        return self.source_ids or (self.source_id,)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"transform": str(self.transform)}
        if len(self.source_ids) > 1:
            out["source-ids"] = list(self.source_ids)
        else:
            out["source-id"] = self.source_id
        out["direction"] = self.direction.value
        out["null-order"] = self.null_order.value
        return out

    @classmethod
    def from_json(cls, obj: Any) -> "SortField":
        if not isinstance(obj, dict):
            raise CorruptMetadata(f"invalid sort field JSON: {obj!r}")
        try:
            source_ids: tuple[int, ...] = tuple(int(i) for i in obj.get("source-ids") or ())
            if "source-id" in obj:
                source_id = int(obj["source-id"])
            elif source_ids:
                source_id = source_ids[0]
            else:
                raise CorruptMetadata(f"sort field has no source-id: {obj!r}")
            return cls(source_id, parse_transform(obj["transform"]),
                       SortDirection.parse(obj["direction"]), NullOrder.parse(obj["null-order"]),
                       source_ids if len(source_ids) > 1 else ())
        except KeyError as e:
            raise CorruptMetadata(f"sort field is missing required key {e.args[0]!r}") from None
        except InvalidInput as e:
            raise CorruptMetadata(f"invalid sort field JSON {obj!r}: {e}") from None
        except (TypeError, ValueError) as e:
            raise CorruptMetadata(f"invalid sort field JSON {obj!r}: {e}") from None

    def __str__(self) -> str:
        return f"{self.transform}({self.source_id}) {self.direction.value} {self.null_order.value}"


@dataclass(frozen=True)
class SortOrder:
    order_id: int = 0
    fields: tuple[SortField, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))

    def is_unsorted(self) -> bool:
        return not self.fields

    def is_sorted(self) -> bool:
        return bool(self.fields)

    def same_order(self, other: "SortOrder") -> bool:
        """Equal fields, order ids aside (the reference reuses an existing equal order)."""
        return self.fields == other.fields

    def satisfies(self, other: "SortOrder") -> bool:
        """Whether data sorted by this order is also sorted by ``other``."""
        if other.is_unsorted():
            return True
        if len(other.fields) > len(self.fields):
            return False
        for mine, theirs in zip(self.fields, other.fields):
            if (mine.all_source_ids != theirs.all_source_ids or mine.direction != theirs.direction
                    or mine.null_order != theirs.null_order
                    or not mine.transform.satisfies_order_of(theirs.transform)):
                return False
        return True

    def to_json(self) -> dict[str, Any]:
        return {"order-id": self.order_id, "fields": [f.to_json() for f in self.fields]}

    @classmethod
    def from_json(cls, obj: Any) -> "SortOrder":
        if not isinstance(obj, dict) or "fields" not in obj or not isinstance(obj["fields"], list):
            raise CorruptMetadata(f"invalid sort order JSON: {str(obj)[:200]}")
        try:
            order_id = int(obj.get("order-id", 0))
        except (TypeError, ValueError):
            raise CorruptMetadata(f"invalid order-id: {obj.get('order-id')!r}") from None
        return cls(order_id, tuple(SortField.from_json(f) for f in obj["fields"]))

    def with_order_id(self, order_id: int) -> "SortOrder":
        return SortOrder(order_id, self.fields)

    def __str__(self) -> str:
        if not self.fields:
            return "[]"
        return "[\n" + "\n".join(f"  {f}" for f in self.fields) + "\n]"


UNSORTED_ORDER = SortOrder(0, ())


def build_sort_order(
    schema: Schema,
    terms: Sequence[SortTerm] | Iterable[SortTerm] | str,
    order_id: int = 1,
) -> SortOrder:
    """Bind sort terms to a schema. No terms give the unsorted order (id 0).

    ``terms`` may also be text (see :func:`icectl.spec.parse.parse_sort_order`).
    """
    if isinstance(terms, str):
        from icectl.spec.parse import parse_sort_order

        terms = parse_sort_order(terms)
    fields: list[SortField] = []
    for term in terms:
        source_id, column, src = resolve_source_column(schema, term.column, "sort")
        check_term_transform(column, src.type, term.transform, "sort")
        direction = SortDirection.parse(term.direction or "asc")
        null_order = NullOrder.parse(term.null_order) if term.null_order else \
            default_null_order(direction)
        fields.append(SortField(source_id, term.transform, direction, null_order))
    if not fields:
        return UNSORTED_ORDER
    if order_id == 0:
        raise InvalidInput("sort order id 0 is reserved for the unsorted order")
    return SortOrder(order_id, tuple(fields))
