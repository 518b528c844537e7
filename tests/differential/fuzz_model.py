"""The fuzzer's model: column types, random values, schemas, partition specs and filters.

Everything here is plain Python and seeded by the caller's ``random.Random``; nothing touches
icectl or Spark. Values are kept as Python objects of one canonical kind per type:

========================  =====================================================
boolean                   bool
int, long                 int
float, double             float (float columns hold float32-representable values)
decimal(P,S)              decimal.Decimal with exactly S fraction digits
date / time               datetime.date / datetime.time
timestamp, timestamptz    naive datetime.datetime (timestamptz: in UTC)
string                    str
uuid                      uuid.UUID
binary, fixed[N]          bytes
struct                    dict name -> value
list / map                list / list of (key, value) pairs
========================  =====================================================

Types are strings for primitives (``"decimal(38,10)"``, ``"fixed[4]"``) and tuples for nested
ones: ``("struct", ((name, type), ...))``, ``("list", elem)``, ``("map", key, value)``.

A filter is a tree of tuples: ``("and", a, b)``, ``("or", a, b)``, ``("not", a)``,
``("true",)``, ``("false",)`` and ``("pred", op, path, type, literals, form)`` where ``path``
is a tuple of names (``("st", "a")`` for a struct field), ``literals`` a tuple of values and
``form`` how the icectl text spells it (``like`` for a prefix written as ``like 'p%'``,
``between`` for a pair written as ``between lo and hi``, ``flip`` for ``5 < x``).
"""

from __future__ import annotations

import datetime as dt
import math
import random
import re
import struct
import uuid
from dataclasses import dataclass, field
from decimal import Context, Decimal
from typing import Any

# -- types ----------------------------------------------------------------------------------------

PRIMITIVES = ("boolean", "int", "long", "float", "double", "decimal(9,2)", "decimal(18,6)",
              "decimal(38,10)", "decimal(38,0)", "date", "time", "timestamp", "timestamptz",
              "string", "uuid", "binary", "fixed[4]")
FLOATS = ("float", "double")
# Spark 3.5 has no TIME type: a table with a time column cannot be read by Spark at all.
NOT_IN_SPARK = ("time",)
# Spark DDL cannot declare these (the table is then created by icectl; Spark reads and writes it).
NOT_IN_SPARK_DDL = ("time", "uuid", "fixed[4]")

Type = Any  # str | tuple


def decimal_ps(t: str) -> tuple[int, int]:
    p, s = re.fullmatch(r"decimal\((\d+),(\d+)\)", t).groups()  # type: ignore[union-attr]
    return int(p), int(s)


def is_primitive(t: Type) -> bool:
    return isinstance(t, str)


def iter_types(t: Type):
    yield t
    if isinstance(t, tuple):
        if t[0] == "struct":
            for _, ft in t[1]:
                yield from iter_types(ft)
        elif t[0] == "list":
            yield from iter_types(t[1])
        else:
            yield from iter_types(t[1])
            yield from iter_types(t[2])


def icectl_type(t: Type) -> str:
    if isinstance(t, str):
        return t
    if t[0] == "struct":
        return "struct<" + ", ".join(f"{n}: {icectl_type(ft)}" for n, ft in t[1]) + ">"
    if t[0] == "list":
        return f"list<{icectl_type(t[1])}>"
    return f"map<{icectl_type(t[1])}, {icectl_type(t[2])}>"


def spark_type(t: Type) -> str:
    if isinstance(t, str):
        return {"long": "bigint", "timestamp": "timestamp_ntz", "timestamptz": "timestamp",
                "uuid": "string", "fixed[4]": "binary"}.get(t, t)
    if t[0] == "struct":
        return "struct<" + ", ".join(f"{n}: {spark_type(ft)}" for n, ft in t[1]) + ">"
    if t[0] == "list":
        return f"array<{spark_type(t[1])}>"
    return f"map<{spark_type(t[1])}, {spark_type(t[2])}>"


# -- values ---------------------------------------------------------------------------------------

_F32_MAX = struct.unpack("<f", struct.pack("<I", 0x7F7FFFFF))[0]
_F32_MIN_SUB = struct.unpack("<f", struct.pack("<I", 1))[0]


def f32(x: float) -> float:
    """x rounded to float32 (NaN and infinities kept)."""
    if math.isnan(x) or math.isinf(x):
        return x
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


_EPOCH = dt.datetime(1970, 1, 1)
_EXACT = Context(prec=100)
_STRINGS = ("", "a", "ab", "abc", "abd", "b", "B", "ba", "é", "éa", "日本", "日本語", "a%b", "a_b",
            "it's", "zzz", "\u00ff", "😀x", "a ", "A")
_BINARIES = (b"", b"\x00", b"\x00\x01", b"\x01", b"\xff", b"\x7f\x80", b"ab", b"\xff\xff\x00")
_FIXED = (b"\x00\x00\x00\x00", b"\x00\x00\x00\x01", b"\x7f\xff\xff\xff", b"\x80\x00\x00\x00",
          b"\xff\xff\xff\xff", b"abcd", b"abce")
_UUIDS = tuple(uuid.UUID(u) for u in (
    "00000000-0000-0000-0000-000000000000", "00000000-0000-0000-0000-000000000001",
    "7fffffff-ffff-ffff-ffff-ffffffffffff", "80000000-0000-0000-0000-000000000000",
    "ffffffff-ffff-ffff-ffff-ffffffffffff", "f79c3e09-677c-4bbd-a479-3f349cb785e7",
    "00000000-0000-0000-8000-000000000000"))
_DATES = (dt.date(1970, 1, 1), dt.date(1969, 12, 31), dt.date(1900, 1, 1), dt.date(1899, 12, 31),
          dt.date(2024, 2, 29), dt.date(1600, 3, 1), dt.date(2262, 4, 11), dt.date(1970, 1, 2))
_TIMESTAMPS = (_EPOCH, _EPOCH - dt.timedelta(microseconds=1), _EPOCH + dt.timedelta(microseconds=1),
               dt.datetime(1969, 12, 31, 23, 0), dt.datetime(1900, 1, 1), dt.datetime(1969, 1, 1),
               dt.datetime(2024, 3, 1, 1, 0), dt.datetime(2024, 3, 1, 13, 30, 0, 500000),
               dt.datetime(1700, 6, 15, 12, 0))


def random_value(rng: random.Random, t: Type, pool: list | None = None) -> Any:
    """A random non-null value of type t (edge values often, a value of ``pool`` sometimes)."""
    if pool and rng.random() < 0.3:
        return rng.choice(pool)
    if isinstance(t, tuple):
        if t[0] == "struct":
            return {n: maybe_null(rng, ft) for n, ft in t[1]}
        if t[0] == "list":
            return [maybe_null(rng, t[1]) for _ in range(rng.randrange(0, 4))]
        keys: list = []
        for _ in range(rng.randrange(0, 4)):
            k = random_value(rng, t[1])
            if k not in keys:
                keys.append(k)
        return [(k, maybe_null(rng, t[2])) for k in keys]
    edge = rng.random() < 0.4
    if t == "boolean":
        return rng.random() < 0.5
    if t in ("int", "long"):
        bits = 31 if t == "int" else 63
        if edge:
            return rng.choice((0, 1, -1, 2**bits - 1, -2**bits, 7, -7, 100, -100))
        return rng.choice((rng.randrange(-1000, 1000), rng.randrange(-2**bits, 2**bits)))
    if t in FLOATS:
        if edge:
            big = _F32_MAX if t == "float" else 1.7976931348623157e308
            tiny = _F32_MIN_SUB if t == "float" else 5e-324
            v = rng.choice((0.0, -0.0, math.nan, math.inf, -math.inf, 1.5, -1.5, big, -big, tiny,
                            0.1, -2.25, 100.0))
        else:
            v = rng.choice((rng.uniform(-1000, 1000), round(rng.uniform(-100, 100), 1),
                            float(rng.randrange(-50, 50))))
        return f32(v) if t == "float" else v
    if t.startswith("decimal"):
        p, s = decimal_ps(t)
        top = 10**p - 1
        if edge:
            unscaled = rng.choice((0, 1, -1, top, -top, 10**s, -(10**s), 5 * 10**max(s - 1, 0)))
        else:
            unscaled = rng.choice((rng.randrange(-top, top + 1), rng.randrange(-10**(s + 3), 10**(s + 3))))
            unscaled = max(-top, min(top, unscaled))
        return Decimal(unscaled).scaleb(-s, context=_EXACT)  # exact: 38 digits
    if t == "date":
        if edge:
            return rng.choice(_DATES)
        return dt.date(1970, 1, 1) + dt.timedelta(days=rng.randrange(-100000, 100000))
    if t == "time":
        if edge:
            return rng.choice((dt.time(0), dt.time(23, 59, 59, 999999), dt.time(12, 0)))
        return (dt.datetime(2000, 1, 1) + dt.timedelta(microseconds=rng.randrange(86400 * 10**6))).time()
    if t in ("timestamp", "timestamptz"):
        if edge:
            return rng.choice(_TIMESTAMPS)
        micros = rng.choice((rng.randrange(-5 * 10**15, 10**16), rng.randrange(-10**10, 10**10)))
        return _EPOCH + dt.timedelta(microseconds=micros)
    if t == "string":
        if edge or rng.random() < 0.5:
            return rng.choice(_STRINGS)
        return "".join(rng.choice("abcé日_%") for _ in range(rng.randrange(0, 6)))
    if t == "uuid":
        return rng.choice(_UUIDS) if edge else uuid.UUID(int=rng.getrandbits(128))
    if t == "binary":
        return rng.choice(_BINARIES) if edge else bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 4)))
    if t == "fixed[4]":
        return rng.choice(_FIXED) if edge else bytes(rng.getrandbits(8) for _ in range(4))
    raise AssertionError(t)


def maybe_null(rng: random.Random, t: Type, pool: list | None = None, p_null: float = 0.2) -> Any:
    return None if rng.random() < p_null else random_value(rng, t, pool)


# -- schemas and specs ----------------------------------------------------------------------------

RID = "_rid"  # every table has it: a unique, never-null long naming the row


@dataclass
class Column:
    name: str
    type: Type


@dataclass
class Step:
    """One change of a table's history: ``write`` (by ``spark`` or ``icectl``), ``add-column``,
    ``add-partition``, ``drop-partition``, ``spark-delete`` (a Spark DELETE filter in SQL)."""

    kind: str
    by: str = ""
    rows: list = field(default_factory=list)  # dicts name -> value (write)
    column: Column | None = None
    transform: str = ""
    sql: str = ""


@dataclass
class TableCase:
    name: str
    seed: int
    creator: str  # spark | icectl
    columns: list[Column]  # the schema the table is created with
    spec: list[str]  # partition transforms at creation, e.g. "bucket(4, l)"
    steps: list[Step]
    format_version: int = 2
    mode: str = "copy-on-write"  # write.delete.mode (Spark's DELETE / MERGE)
    float_keys: tuple = ()  # float partition sources (float_partition_table): equality deletes by them

    def spec_at(self, step: int) -> list[str]:
        """The partition transforms in force when step ``step`` runs."""
        spec = list(self.spec)
        for s in self.steps[:step]:
            if s.kind == "add-partition":
                spec.append(s.transform)
            elif s.kind == "drop-partition":
                spec.remove(s.transform)
        return spec

    @property
    def spark_readable(self) -> bool:
        return not any(x in NOT_IN_SPARK for c in self.final_columns for x in iter_types(c.type))

    @property
    def final_columns(self) -> list[Column]:
        cols = list(self.columns)
        for s in self.steps:
            if s.kind == "add-column":
                cols.append(s.column)  # type: ignore[arg-type]
        return cols

    @property
    def final_spec(self) -> list[str]:
        spec = list(self.spec)
        for s in self.steps:
            if s.kind == "add-partition":
                spec.append(s.transform)
            elif s.kind == "drop-partition":
                spec.remove(s.transform)
        return spec

    def live_rows(self) -> dict[int, dict]:
        """rid -> row (every final column; columns added later read as null) after all steps."""
        names = [c.name for c in self.final_columns]
        out: dict[int, dict] = {}
        for s in self.steps:
            if s.kind == "write":
                for r in s.rows:
                    out[r[RID]] = {n: r.get(n) for n in names}
            elif s.kind == "delete-rids":
                for rid in s.rows:
                    out.pop(rid, None)
        return out


def transforms_for(t: Type) -> list[str]:
    """Partition transforms Spark accepts on a column of type t (REFERENCE.md "Rejected: ...")."""
    if not isinstance(t, str):
        return []
    out = ["identity"]
    if t in ("int", "long", "date", "timestamp", "timestamptz", "string", "uuid", "binary",
             "fixed[4]", "time") or t.startswith("decimal"):
        out.append("bucket")
    if t in ("int", "long", "string", "binary") or t.startswith("decimal"):
        out.append("truncate")
    if t in ("date", "timestamp", "timestamptz"):
        out += ["years", "months", "days"]
    if t in ("timestamp", "timestamptz"):
        out.append("hours")
    out.append("void")
    return out


def render_transform(tr: str, col: str, rng: random.Random) -> str:
    if tr == "bucket":
        return f"bucket({rng.choice((1, 2, 3, 4, 16))}, {col})"
    if tr == "truncate":
        return f"truncate({rng.choice((1, 2, 3, 10))}, {col})"
    return f"{tr}({col})"


def random_table(rng: random.Random, name: str, seed: int, *, rows: int, spark: bool = True,
                 allow_time: bool = False) -> TableCase:
    """A random table: schema, spec, and a history of writes by Spark and icectl with schema and
    partition evolution in between."""
    prims = [t for t in PRIMITIVES if allow_time or t not in NOT_IN_SPARK]
    if spark and rng.random() < 0.5:  # half of the tables can be created by Spark's DDL
        prims = [t for t in prims if t not in NOT_IN_SPARK_DDL]
    ncols = rng.randrange(3, 8)
    chosen = rng.sample(prims, min(ncols, len(prims)))
    cols = [Column(RID, "long")]
    for i, t in enumerate(chosen):
        cols.append(Column(f"c{i}_{re.sub(r'[^a-z0-9]', '', t)}", t))
    if rng.random() < 0.6:
        sub = rng.sample([t for t in prims if t != "time"], 2)
        cols.append(Column("st", ("struct", (("a", sub[0]), ("b", sub[1])))))
    if rng.random() < 0.4:
        cols.append(Column("li", ("list", rng.choice(("int", "string", "double")))))
    if rng.random() < 0.4:
        cols.append(Column("mp", ("map", "string", rng.choice(("long", "date")))))
    uses_ddl_less = any(x in NOT_IN_SPARK_DDL for c in cols for x in iter_types(c.type))
    creator = "icectl" if (uses_ddl_less or not spark or rng.random() < 0.4) else "spark"
    spec = _random_spec(rng, cols, rng.randrange(0, 3))
    case = TableCase(name, seed, creator, cols, spec, [],
                     mode=rng.choice(("copy-on-write", "merge-on-read")))
    pools: dict[str, list] = {}
    next_rid = [1]

    def batch(n: int) -> list[dict]:
        out = []
        for _ in range(n):
            r = {RID: next_rid[0]}
            next_rid[0] += 1
            for c in case.final_columns[1:]:
                pool = pools.setdefault(c.name, [])
                v = maybe_null(rng, c.type, pool)
                if v is not None and isinstance(c.type, str) and len(pool) < 6:
                    pool.append(v)
                r[c.name] = v
            out.append(r)
        return out

    writers = ["spark", "icectl"] if spark else ["icectl"]
    nwrites = rng.randrange(1, 4)
    per = max(1, rows // nwrites)
    for w in range(nwrites):
        if w > 0 and rng.random() < 0.35:
            t = rng.choice([x for x in prims if x not in NOT_IN_SPARK_DDL])
            case.steps.append(Step("add-column", column=Column(f"e{w}_{re.sub(r'[^a-z0-9]', '', t)}", t)))
        if w > 0 and rng.random() < 0.35:
            current = case.final_spec
            if current and rng.random() < 0.3:
                case.steps.append(Step("drop-partition", transform=rng.choice(current)))
            else:
                extra = _random_spec(rng, case.final_columns, 1, taken=current)
                if extra:
                    case.steps.append(Step("add-partition", transform=extra[0]))
        case.steps.append(Step("write", by=rng.choice(writers), rows=batch(per)))
    return case


def _random_spec(rng: random.Random, cols: list[Column], n: int, taken: list[str] = ()) -> list[str]:
    spec: list[str] = []
    used_time: set[str] = set()
    names = {t.split("(")[-1].rstrip(")").split(", ")[-1] + ":" + t.split("(")[0] for t in taken}
    for _ in range(n * 3):
        if len(spec) >= n:
            break
        c = rng.choice(cols[1:])  # not _rid (keep it free for upsert keys elsewhere)
        trs = transforms_for(c.type)
        if not trs:
            continue
        tr = rng.choice(trs)
        if tr in ("years", "months", "days", "hours"):
            if c.name in used_time:
                continue  # Spark rejects two time transforms of one column ("days+hours")
            used_time.add(c.name)
        key = c.name + ":" + tr
        if key in names:
            continue
        names.add(key)
        spec.append(render_transform(tr, c.name, rng))
    return spec


# -- filters --------------------------------------------------------------------------------------

CMP = ("lt", "le", "gt", "ge", "eq", "ne")
ORDERED_OK = True


def filter_columns(columns: list[Column]) -> list[tuple[tuple[str, ...], str]]:
    """(path, type) of every primitive column and struct field a filter can name."""
    out = []
    for c in columns:
        if isinstance(c.type, str):
            out.append(((c.name,), c.type))
        elif c.type[0] == "struct":
            for n, ft in c.type[1]:
                if isinstance(ft, str):
                    out.append(((c.name, n), ft))
    return out


def column_values(rows: list[dict], path: tuple[str, ...]) -> list:
    vals = []
    for r in rows:
        v = r.get(path[0])
        for p in path[1:]:
            v = None if v is None else v.get(p)
        if v is not None:
            vals.append(v)
    return vals


def random_literal(rng: random.Random, t: str, seen: list) -> Any:
    for _ in range(10):
        if seen and rng.random() < 0.6:
            v = rng.choice(seen)
        else:
            v = random_value(rng, t)
        if t in FLOATS and isinstance(v, float) and math.isnan(v):
            continue  # comparisons with NaN are refused by the grammar
        if t in FLOATS and rng.random() < 0.05:
            v = rng.choice((0.0, -0.0))
        return v
    return random_value(rng, "int") if t in ("int", "long") else (1.0 if t in FLOATS else seen[0] if seen else random_value(rng, t))


def random_predicate(rng: random.Random, cols: list[tuple[tuple[str, ...], str]], rows: list[dict]):
    path, t = rng.choice(cols)
    seen = column_values(rows, path)
    if t in FLOATS:
        seen = [v for v in seen if not math.isnan(v)]
    ops = ["is_null", "not_null"] + list(CMP) + ["in", "not_in", "between", "not_between"]
    if t in FLOATS:
        ops += ["is_nan", "not_nan", "lt", "gt", "eq"]
    if t == "string":
        ops += ["starts_with", "not_starts_with", "starts_with"]
    op = rng.choice(ops)
    if op in ("is_null", "not_null", "is_nan", "not_nan"):
        return ("pred", op, path, t, (), "")
    if op in ("in", "not_in"):
        lits = []
        for _ in range(rng.randrange(1, 4)):
            v = random_literal(rng, t, seen)
            if v not in lits or (t in FLOATS and not any(_same(v, x) for x in lits)):
                lits.append(v)
        return ("pred", op, path, t, tuple(lits), "")
    if op in ("between", "not_between"):
        a, b = random_literal(rng, t, seen), random_literal(rng, t, seen)
        if _sortkey(t, a) > _sortkey(t, b):
            a, b = b, a
        e = ("and", ("pred", "ge", path, t, (a,), "between"), ("pred", "le", path, t, (b,), "between"))
        return ("not", e) if op == "not_between" else e
    if op in ("starts_with", "not_starts_with"):
        base = rng.choice(seen) if seen and rng.random() < 0.7 else rng.choice(_STRINGS)
        prefix = base[: rng.randrange(0, len(base) + 1)] if base else ""
        return ("pred", op, path, t, (prefix,), rng.choice(("", "like")))
    return ("pred", op, path, t, (random_literal(rng, t, seen),), rng.choice(("", "", "", "flip")))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return a == b


def _sortkey(t: str, v: Any) -> Any:
    if t in FLOATS:
        return (v, math.copysign(1, v))
    if t == "uuid":
        return v.bytes
    return v


def random_filter(rng: random.Random, columns: list[Column], rows: list[dict], depth: int = 0):
    cols = filter_columns(columns)
    r = rng.random()
    if depth >= 3 or r < 0.45:
        if rng.random() < 0.02:
            return (rng.choice(("true", "false")),)
        return random_predicate(rng, cols, rows)
    if r < 0.7:
        return ("and", random_filter(rng, columns, rows, depth + 1), random_filter(rng, columns, rows, depth + 1))
    if r < 0.9:
        return ("or", random_filter(rng, columns, rows, depth + 1), random_filter(rng, columns, rows, depth + 1))
    return ("not", random_filter(rng, columns, rows, depth + 1))


def filter_paths(e) -> set[tuple[str, ...]]:
    if e[0] == "pred":
        return {e[2]}
    out: set = set()
    for x in e[1:]:
        if isinstance(x, tuple):
            out |= filter_paths(x)
    return out


# -- float partitions: NaN and signed zeros as partition values -----------------------------------

def _f64_bits(n: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", n))[0]


def _f32_bits(n: int) -> float:
    return struct.unpack("<f", struct.pack("<I", n))[0]


# partition values of a float source: every NaN is ONE partition (any sign or payload) and -0.0
# and 0.0 are two (Iceberg Java's StructLikeWrapper: Double.compare, Double.hashCode). Values are
# exactly representable as float32, so their partition text is the same for float and double.
FLOAT_PARTITION_VALUES = (math.nan, -math.nan, -0.0, 0.0, 1.5, -2.25, 100.0, math.inf, -math.inf)
# NaNs of other bit patterns (written only through Parquet, which keeps the bits)
OTHER_NANS = {"double": (_f64_bits(0x7FF8000000000001), _f64_bits(0xFFF8000000000ABC)),
               "float": (_f32_bits(0x7FC00001), _f32_bits(0xFFC00ABC))}


def float_partition_value(rng: random.Random, t: str, p_null: float = 0.1) -> float | None:
    """A value of a float partition source: mostly NaN, -0.0 and 0.0."""
    r = rng.random()
    if r < p_null:
        return None
    if r < 0.35:
        return rng.choice((math.nan, -math.nan) + OTHER_NANS[t])
    if r < 0.7:
        return rng.choice((-0.0, 0.0))
    return rng.choice(FLOAT_PARTITION_VALUES)


def partition_text(v: Any) -> str:
    """A float partition value as partition-path text (Java's Double.toString)."""
    if v is None:
        return "null"
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return repr(float(v))


def same_value(t: Any, a: Any, b: Any) -> bool:
    """Whether a and b are the same value for Iceberg (equality deletes, partition identity):
    every NaN equals every NaN, -0.0 differs from 0.0, null equals nothing."""
    if a is None or b is None:
        return False
    if t in FLOATS:
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return a == b


def partition_group(v: Any) -> Any:
    """A hashable key of a float partition value with Iceberg's identity."""
    if v is None:
        return ("null",)
    if math.isnan(v):
        return ("nan",)
    return (v, math.copysign(1.0, v))


def float_partition_table(rng: random.Random, name: str, seed: int, *, rows: int) -> TableCase:
    """A table partitioned by identity of a float or double column (sometimes two, sometimes
    with an int identity field, sometimes added by partition evolution so that compaction
    rewrites unpartitioned files into float partitions) whose values are mostly NaN (of several
    bit patterns), -0.0 and 0.0; written by Spark's INSERT, icectl write and icectl append (one
    Parquet file per partition, the partition given in the path or as a value)."""
    x_t = rng.choice(FLOATS)
    cols = [Column(RID, "long"), Column("x", x_t)]
    spec = ["identity(x)"]
    if rng.random() < 0.3:
        cols.append(Column("y", rng.choice(FLOATS)))
        spec.append("identity(y)")
    elif rng.random() < 0.3:
        cols.append(Column("k", "int"))
        spec.append("identity(k)")
    others = rng.sample([t for t in PRIMITIVES if t not in NOT_IN_SPARK_DDL and t not in FLOATS], 2)
    for i, t in enumerate(others):
        cols.append(Column(f"c{i}_{re.sub(r'[^a-z0-9]', '', t)}", t))
    evolve = rng.random() < 0.25  # created unpartitioned, the float field added after a write
    case = TableCase(name, seed, rng.choice(("spark", "icectl")), cols, [] if evolve else spec, [],
                     mode=rng.choice(("copy-on-write", "merge-on-read")))
    case.float_keys = tuple(c.name for c in cols if c.type in FLOATS)
    case.format_version = rng.choice((2, 2, 3))  # v3: deletion vectors
    next_rid = [1]

    def batch(n: int) -> list[dict]:
        out = []
        for _ in range(n):
            r: dict = {RID: next_rid[0]}
            next_rid[0] += 1
            for c in cols[1:]:
                if c.type in FLOATS:
                    r[c.name] = float_partition_value(rng, c.type)
                elif c.name == "k":
                    r[c.name] = rng.choice((None, 0, 1, -1))
                else:
                    r[c.name] = maybe_null(rng, c.type)
            out.append(r)
        return out

    nwrites = rng.randrange(2, 4)
    for w in range(nwrites):
        if evolve and w == 1:
            for tr in spec:
                case.steps.append(Step("add-partition", transform=tr))
        by = rng.choice(("spark", "icectl", "icectl append"))
        case.steps.append(Step("write", by=by, rows=batch(max(2, rows // nwrites))))
    return case
