"""Parsers for the CLI's small text languages: types, column lists, partition terms, sort orders.

Term values produced here (:class:`PartitionTerm`, :class:`SortTerm`) are unbound: they name a
column and carry a transform. :func:`icectl.spec.partitioning.build_spec` and
:func:`icectl.spec.sorting.build_sort_order` bind them to a schema.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from icectl.errors import InvalidInput
from icectl.spec.schema import Schema, assign_fresh_ids
from icectl.spec.token_cursor import TokenCursor
from icectl.spec.transforms import (
    DAY,
    HOUR,
    IDENTITY,
    MONTH,
    VOID,
    YEAR,
    BucketTransform,
    Transform,
    TruncateTransform,
)
from icectl.spec.types import (
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMP_NS,
    TIMESTAMPTZ,
    TIMESTAMPTZ_NS,
    UNKNOWN,
    UUID,
    VARIANT,
    DecimalType,
    FixedType,
    GeographyType,
    GeometryType,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    primitive_from_string,
)

__all__ = [
    "PartitionTerm", "SortTerm", "parse_type", "parse_schema", "parse_partition_terms",
    "parse_sort_order",
]


@dataclass(frozen=True)
class PartitionTerm:
    """``transform(column) [AS name]`` before binding. ``column`` is a dotted column path."""

    column: str
    transform: Transform
    name: str | None = None


@dataclass(frozen=True)
class SortTerm:
    """``transform(column) [ASC|DESC] [NULLS FIRST|LAST]`` before binding.

    ``direction`` is ``"asc"``/``"desc"`` and ``null_order`` ``"nulls-first"``/``"nulls-last"``;
    None means the default (ascending; nulls first when ascending, last when descending).
    """

    column: str
    transform: Transform
    direction: str | None = None
    null_order: str | None = None


# ----------------------------------------------------------------------------------------------
# Tokens


@dataclass(frozen=True)
class _Tok:
    kind: str  # "ident", "qident" (backticks), "num", "str", "punct", "end"
    text: str  # identifier/number/string value, or the punctuation character
    pos: int  # 0-based offset in the input


_PUNCT = set("<>()[],:.")


def _fail(src: str, pos: int, msg: str) -> InvalidInput:
    near = src[pos:pos + 20] if pos < len(src) else "end of input"
    return InvalidInput(f"{msg} at position {pos + 1} (near {near!r}) in {src!r}")


def _tokenize(src: str) -> list[_Tok]:
    toks: list[_Tok] = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c.isspace():
            i += 1
        elif c == "`":
            j, buf = i + 1, []
            while True:
                if j >= n:
                    raise _fail(src, i, "unterminated quoted identifier")
                if src[j] == "`":
                    if j + 1 < n and src[j + 1] == "`":
                        buf.append("`")
                        j += 2
                        continue
                    break
                buf.append(src[j])
                j += 1
            if not buf:
                raise _fail(src, i, "empty quoted identifier")
            toks.append(_Tok("qident", "".join(buf), i))
            i = j + 1
        elif c == "'":
            j, buf = i + 1, []
            while True:
                if j >= n:
                    raise _fail(src, i, "unterminated string")
                if src[j] == "\\" and j + 1 < n:
                    buf.append(src[j + 1])
                    j += 2
                    continue
                if src[j] == "'":
                    if j + 1 < n and src[j + 1] == "'":
                        buf.append("'")
                        j += 2
                        continue
                    break
                buf.append(src[j])
                j += 1
            toks.append(_Tok("str", "".join(buf), i))
            i = j + 1
        elif c.isdigit() or (c == "-" and i + 1 < n and src[i + 1].isdigit()):
            j = i + 1
            while j < n and src[j].isdigit():
                j += 1
            toks.append(_Tok("num", src[i:j], i))
            i = j
        elif c.isalpha() or c == "_":
            j = i + 1
            while j < n and (src[j].isalnum() or src[j] in "_$"):
                j += 1
            toks.append(_Tok("ident", src[i:j], i))
            i = j
        elif c in _PUNCT:
            toks.append(_Tok("punct", c, i))
            i += 1
        else:
            raise _fail(src, i, f"unexpected character {c!r}")
    toks.append(_Tok("end", "", n))
    return toks


class _Parser(TokenCursor[_Tok]):
    def __init__(self, src: str):
        if not isinstance(src, str):
            raise InvalidInput(f"expected text, got {type(src).__name__}")
        super().__init__(src, _tokenize(src), _fail)

    # -- primitives ----------------------------------------------------------------------------

    def at_punct(self, ch: str) -> bool:
        return self.tok.kind == "punct" and self.tok.text == ch

    def at_word(self, *words: str) -> bool:
        return self.tok.kind == "ident" and self.tok.text.lower() in words

    def expect_punct(self, ch: str) -> _Tok:
        if not self.at_punct(ch):
            raise self.error(f"expected {ch!r}")
        return self.advance()

    def expect_word(self, *words: str) -> _Tok:
        if not self.at_word(*words):
            raise self.error(f"expected {' or '.join(w.upper() for w in words)}")
        return self.advance()

    def expect_int(self, what: str) -> int:
        if self.tok.kind != "num":
            raise self.error(f"expected {what} (an integer)")
        return int(self.advance().text)

    def expect_end(self) -> None:
        if self.tok.kind != "end":
            raise self.error("unexpected text")

    def name(self, what: str = "a name") -> str:
        if self.tok.kind not in ("ident", "qident"):
            raise self.error(f"expected {what}")
        return self.advance().text

    def column_path(self) -> str:
        parts = [self.name("a column name")]
        while self.at_punct("."):
            self.advance()
            parts.append(self.name("a column name after '.'"))
        return ".".join(parts)

    # -- types ---------------------------------------------------------------------------------

    def type_(self) -> IcebergType:
        tok = self.tok
        if tok.kind != "ident":
            raise self.error("expected a type")
        word = tok.text.lower()
        if word in ("list", "array"):
            self.advance()
            self.expect_punct("<")
            elem = self.type_()
            required = self.nullability(default=False)
            self.expect_punct(">")
            return ListType(0, elem, required)
        if word == "map":
            self.advance()
            self.expect_punct("<")
            key = self.type_()
            if self.at_word("not", "required", "null", "optional"):
                # keys are always required; accept a redundant NOT NULL, refuse NULL
                if not self.nullability(default=True):
                    raise self.error("map keys cannot be optional")
            self.expect_punct(",")
            value = self.type_()
            required = self.nullability(default=False)
            self.expect_punct(">")
            return MapType(0, key, 0, value, required)
        if word == "struct":
            self.advance()
            self.expect_punct("<")
            fields: list[NestedField] = []
            seen: set[str] = set()
            if not self.at_punct(">"):
                while True:
                    name_tok = self.tok
                    f = self.field(require_colon=False)
                    if f.name.lower() in seen:
                        raise self.error(f"duplicate field name {f.name!r}", name_tok)
                    seen.add(f.name.lower())
                    fields.append(f)
                    if self.at_punct(","):
                        self.advance()
                        continue
                    break
            self.expect_punct(">")
            return StructType(fields)
        return self.primitive()

    def primitive(self) -> PrimitiveType:
        tok = self.advance()
        word = tok.text.lower()
        if word == "timestamp" and self.at_word("with", "without"):
            # SQL's `timestamp with time zone` / `timestamp without time zone`
            with_zone = self.advance().text.lower() == "with"
            for expected in ("time", "zone"):
                if not self.at_word(expected):
                    raise self.error(f"expected {expected!r} (timestamp with[out] time zone)")
                self.advance()
            return TIMESTAMPTZ if with_zone else TIMESTAMP
        if word in _ALIASES:
            return _ALIASES[word]
        if word == "decimal" or word == "numeric":
            self.expect_punct("(")
            p = self.expect_int("a precision")
            self.expect_punct(",")
            s = self.expect_int("a scale")
            self.expect_punct(")")
            if not 1 <= p <= 38:
                raise self.error(f"decimal precision must be between 1 and 38, not {p}", tok)
            if not 0 <= s <= p:
                raise self.error(
                    f"decimal scale must be between 0 and the precision ({p}), not {s}", tok)
            return DecimalType(p, s)
        if word == "fixed":
            close = "]" if self.at_punct("[") else ")"
            if not (self.at_punct("[") or self.at_punct("(")):
                raise self.error("expected fixed[L]")
            self.advance()
            length = self.expect_int("a length")
            self.expect_punct(close)
            if length <= 0:
                raise self.error(f"fixed length must be positive, not {length}", tok)
            return FixedType(length)
        if word in ("geometry", "geography"):
            if not self.at_punct("("):
                return GeometryType() if word == "geometry" else GeographyType()
            start = self.advance().pos + 1
            while not self.at_punct(")"):
                if self.tok.kind == "end":
                    raise self.error("expected ')'")
                self.advance()
            end = self.advance().pos
            t = primitive_from_string(f"{word}({self.src[start:end].strip()})")
            if t is None:
                raise self.error(f"invalid {word} parameters", tok)
            return t
        if word in _REFUSED:
            raise self.error(f"unsupported type {tok.text!r}: {_REFUSED[word]}", tok)
        raise self.error(f"unknown type {tok.text!r}", tok)

    def nullability(self, default: bool) -> bool:
        """Parse an optional NOT NULL / REQUIRED / NULL / OPTIONAL; return whether required."""
        if self.at_word("not"):
            self.advance()
            self.expect_word("null")
            return True
        if self.at_word("required"):
            self.advance()
            return True
        if self.at_word("null", "optional"):
            self.advance()
            return False
        return default

    def field(self, require_colon: bool) -> NestedField:
        name = self.name("a field name")
        if self.at_punct(":"):
            self.advance()
        elif require_colon:
            raise self.error("expected ':'")
        ftype = self.type_()
        required = self.nullability(default=False)
        doc = None
        if self.at_word("comment"):
            self.advance()
            if self.tok.kind != "str":
                raise self.error("expected a quoted comment")
            doc = self.advance().text
            if not required:
                required = self.nullability(default=False)
        return NestedField(0, name, ftype, required, doc)

    # -- transform terms -----------------------------------------------------------------------

    def transform_term(self) -> tuple[str, Transform]:
        """``column`` or ``func(args)``; returns (column path, transform)."""
        tok = self.tok
        if tok.kind == "ident" and self.peek().kind == "punct" and self.peek().text == "(":
            func = tok.text.lower()
            if func not in _TRANSFORM_FUNCS:
                raise self.error(f"unknown transform {tok.text!r}")
            self.advance()
            self.expect_punct("(")
            args: list[tuple[str, object, _Tok]] = []
            while True:
                at = self.tok
                if at.kind == "num":
                    args.append(("num", int(self.advance().text), at))
                else:
                    args.append(("col", self.column_path(), at))
                if self.at_punct(","):
                    self.advance()
                    continue
                break
            self.expect_punct(")")
            return self._bind_call(func, tok, args)
        return self.column_path(), IDENTITY

    def _bind_call(self, func: str, tok: _Tok, args: list) -> tuple[str, Transform]:
        kind = _TRANSFORM_FUNCS[func]
        cols = [a for a in args if a[0] == "col"]
        nums = [a for a in args if a[0] == "num"]
        if kind in ("bucket", "truncate"):
            if len(args) != 2 or len(cols) != 1 or len(nums) != 1:
                raise self.error(f"{func} takes a number and a column: {func}(N, column)", tok)
            n = nums[0][1]
            if n <= 0 or n > 2**31 - 1:
                raise self.error(f"{func} parameter must be a positive int, not {n}", nums[0][2])
            t: Transform = BucketTransform(n) if kind == "bucket" else TruncateTransform(n)
            return cols[0][1], t
        if len(args) != 1 or len(cols) != 1:
            raise self.error(f"{func} takes one column: {func}(column)", tok)
        return cols[0][1], _SIMPLE_TRANSFORMS[kind]


_ALIASES: dict[str, PrimitiveType] = {
    "boolean": BOOLEAN, "bool": BOOLEAN,
    "int": INT, "integer": INT,
    "long": LONG, "bigint": LONG,
    "float": FLOAT, "double": DOUBLE,
    "date": DATE, "time": TIME,
    "timestamp": TIMESTAMP, "timestamptz": TIMESTAMPTZ,
    # Spark's unambiguous names (Spark's plain `timestamp` is Iceberg's timestamptz, but here
    # `timestamp` keeps Iceberg's meaning, so only these are aliases)
    "timestamp_ntz": TIMESTAMP,
    "timestamp_ns": TIMESTAMP_NS, "timestamptz_ns": TIMESTAMPTZ_NS,
    "string": STRING, "uuid": UUID, "binary": BINARY,
    "unknown": UNKNOWN, "variant": VARIANT,
}

# Names users may try that have no faithful Iceberg type; refused with a hint instead of
# silently widening.
_REFUSED: dict[str, str] = {
    "tinyint": "Iceberg has no 8-bit integer; use int",
    "byte": "Iceberg has no 8-bit integer; use int",
    "smallint": "Iceberg has no 16-bit integer; use int",
    "short": "Iceberg has no 16-bit integer; use int",
    "real": "use float (32-bit) or double (64-bit)",
    "varchar": "use string",
    "char": "use string",
    "text": "use string",
    "timestamp_ltz": "use timestamptz",
}

_TRANSFORM_FUNCS: dict[str, str] = {
    "identity": "identity",
    "bucket": "bucket", "truncate": "truncate",
    "year": "year", "years": "year",
    "month": "month", "months": "month",
    "day": "day", "days": "day", "date": "day",
    "hour": "hour", "hours": "hour", "date_hour": "hour",
    "void": "void",
}
_SIMPLE_TRANSFORMS: dict[str, Transform] = {
    "identity": IDENTITY, "year": YEAR, "month": MONTH, "day": DAY, "hour": HOUR, "void": VOID,
}


def _renumber(t: IcebergType) -> IcebergType:
    """Give a parsed nested type ids 1, 2, ... in the reference's fresh-id order."""
    if not isinstance(t, (StructType, ListType, MapType)):
        return t
    counter = itertools.count(0)
    holder = assign_fresh_ids(Schema((NestedField(0, "t", t),)), lambda: next(counter))
    return holder.fields[0].type


# ----------------------------------------------------------------------------------------------
# Public parsers


def parse_type(text: str) -> IcebergType:
    """A type from the compact syntax.

    Primitives by their spec names, plus the aliases ``integer`` (int), ``bigint`` (long) and
    ``bool`` (boolean); ``decimal(P, S)``, ``fixed[L]`` (or ``fixed(L)``), ``geometry(crs)``,
    ``geography(crs, algorithm)``; ``list<T>``, ``map<K, V>``, ``struct<a: T, b: T not null>``.
    List elements and map values are optional unless followed by ``not null``. Nested field
    ids are placeholders numbered 1, 2, ... (a schema assigns real ones).
    """
    p = _Parser(text)
    t = p.type_()
    p.expect_end()
    return _renumber(t)


def parse_schema(text: str) -> Schema:
    """A schema from a column list: ``"id long not null, ts timestamptz, tags list<string>"``.

    Each column is ``name [:] type [not null | required | null | optional] [comment '...']``.
    Names may be quoted with backticks. Duplicate names (ignoring case) are refused. Field ids
    are assigned the way the reference does for a new table.
    """
    p = _Parser(text)
    fields: list[NestedField] = []
    seen: dict[str, str] = {}
    if p.tok.kind == "end":
        raise p.error("expected at least one column")
    while True:
        name_tok = p.tok
        f = p.field(require_colon=False)
        if f.name.lower() in seen:
            raise p.error(f"duplicate column name {f.name!r}", name_tok)
        seen[f.name.lower()] = f.name
        fields.append(f)
        if p.at_punct(","):
            p.advance()
            continue
        break
    p.expect_end()
    return assign_fresh_ids(Schema(tuple(fields)))


def parse_partition_terms(text: str) -> list[PartitionTerm]:
    """Partition terms in Spark's syntax: ``"days(ts), bucket(16, id), truncate(4, name), cat"``.

    Transforms: ``identity``, ``bucket(N, col)``, ``truncate(W, col)`` (the column may also come
    first), ``year``/``years``, ``month``/``months``, ``day``/``days``/``date``,
    ``hour``/``hours``/``date_hour``, ``void``. A bare column means identity. Columns may be
    dotted paths into structs and quoted with backticks. ``... AS name`` names the field.
    An empty text gives no terms (unpartitioned).
    """
    p = _Parser(text)
    terms: list[PartitionTerm] = []
    if p.tok.kind == "end":
        return terms
    while True:
        column, transform = p.transform_term()
        name = None
        if p.at_word("as"):
            p.advance()
            name = p.name("a partition field name")
        terms.append(PartitionTerm(column, transform, name))
        if p.at_punct(","):
            p.advance()
            continue
        break
    p.expect_end()
    return terms


def parse_sort_order(text: str) -> list[SortTerm]:
    """Sort terms: ``"id desc nulls last, ts, bucket(4, cat) asc"``. Empty text: no terms."""
    p = _Parser(text)
    terms: list[SortTerm] = []
    if p.tok.kind == "end":
        return terms
    while True:
        column, transform = p.transform_term()
        direction = None
        null_order = None
        if p.at_word("asc", "desc"):
            direction = p.advance().text.lower()
        if p.at_word("nulls"):
            p.advance()
            null_order = "nulls-" + p.expect_word("first", "last").text.lower()
        terms.append(SortTerm(column, transform, direction, null_order))
        if p.at_punct(","):
            p.advance()
            continue
        break
    p.expect_end()
    return terms
