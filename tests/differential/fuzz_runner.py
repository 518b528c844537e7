"""Build the random tables, run icectl and the reference on them, record every difference.

icectl runs in-process through its CLI (typer's CliRunner on ``icectl.cli.app.app``), as a user
runs it; a share of the cases goes through the real program (``python -m icectl``) in a child
process. The reference is the shared Spark session (catalog ``ice``) and Iceberg Java through
py4j. A table's twin for DELETE and MERGE is a branch of the same table: icectl and Spark each
work on their own branch created at the same snapshot, so both start from identical files.
"""

from __future__ import annotations

import collections
import datetime as dt
import json
import math
import os
import random
import re
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from decimal import Context, Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from typer.testing import CliRunner

from fuzz_model import (
    FLOATS,
    RID,
    Column,
    TableCase,
    decimal_ps,
    icectl_type,
    spark_type,
)
from fuzz_translate import spark_literal

KINDS = ("plan", "scan", "delete", "spark-delete", "upsert", "compact", "metamorphic", "values", "write",
         "append")

# -- running icectl -------------------------------------------------------------------------------

_runner = CliRunner()
_EXACT = Context(prec=100)
TIMERS: collections.Counter = collections.Counter()  # seconds spent, by tool and command


@dataclass
class Done:
    code: int
    out: str
    err: str


def icectl(*args: str) -> Done:
    """icectl ARGS in this process (typer's CliRunner), stdout and stderr apart."""
    from icectl.cli.app import app

    began = time.perf_counter()
    r = _runner.invoke(app, [str(a) for a in args])
    TIMERS["icectl " + str(args[0])] += time.perf_counter() - began
    err = r.stderr if r.stderr else ""
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        import traceback

        err += "".join(traceback.format_exception(r.exception))[-1500:]
    return Done(r.exit_code, r.stdout, err)


def icectl_process(*args: str) -> Done:
    """The real program in a child process (``python -m icectl``)."""
    env = dict(os.environ, NO_COLOR="1")
    env.pop("ICECTL_WAREHOUSE", None)
    began = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "icectl", *map(str, args)], capture_output=True,
                       text=True, timeout=300, env=env)
    TIMERS["icectl process"] += time.perf_counter() - began
    return Done(p.returncode, p.stdout, p.stderr)


def must(d: Done, what: str) -> Done:
    if d.code != 0:
        raise RuntimeError(f"icectl {what} failed ({d.code}): {d.err.strip()[-800:]}")
    return d


# -- values: Arrow input for icectl write, canonical forms for comparing ----------------------------


def arrow_type(t: Any) -> pa.DataType:
    if isinstance(t, tuple):
        if t[0] == "struct":
            return pa.struct([(n, arrow_type(ft)) for n, ft in t[1]])
        if t[0] == "list":
            return pa.list_(arrow_type(t[1]))
        return pa.map_(arrow_type(t[1]), arrow_type(t[2]))
    if t.startswith("decimal"):
        return pa.decimal128(*decimal_ps(t))
    return {"boolean": pa.bool_(), "int": pa.int32(), "long": pa.int64(), "float": pa.float32(),
            "double": pa.float64(), "date": pa.date32(), "time": pa.time64("us"),
            "timestamp": pa.timestamp("us"), "timestamptz": pa.timestamp("us", tz="UTC"),
            "string": pa.string(), "uuid": pa.string(), "binary": pa.binary(),
            "fixed[4]": pa.binary(4)}[t]


def arrow_value(t: Any, v: Any) -> Any:
    if v is None:
        return None
    if isinstance(t, tuple):
        if t[0] == "struct":
            return {n: arrow_value(ft, v.get(n)) for n, ft in t[1]}
        if t[0] == "list":
            return [arrow_value(t[1], x) for x in v]
        return [(arrow_value(t[1], k), arrow_value(t[2], x)) for k, x in v]
    if t == "uuid":
        return str(v)
    if t == "timestamptz":
        return v.replace(tzinfo=dt.timezone.utc)
    return v


def write_parquet(path: Path, columns: list[Column], rows: list[dict]) -> None:
    schema = pa.schema([pa.field(c.name, arrow_type(c.type)) for c in columns])
    data = [{c.name: arrow_value(c.type, r.get(c.name)) for c in columns} for r in rows]
    pq.write_table(pa.Table.from_pylist(data, schema=schema), str(path))


def json_value(t: Any, v: Any) -> Any:
    """v in the JSON lines icectl write reads (and icectl scan prints)."""
    if v is None:
        return None
    if isinstance(t, tuple):
        if t[0] == "struct":
            return {n: json_value(ft, v.get(n)) for n, ft in t[1]}
        if t[0] == "list":
            return [json_value(t[1], x) for x in v]
        return {str(k): json_value(t[2], x) for k, x in v}
    if t in FLOATS:
        return v if math.isfinite(v) else repr(v).replace("inf", "Infinity").replace("nan", "NaN")
    if t.startswith("decimal"):
        return str(v)
    if t in ("date", "time"):
        return v.isoformat()
    if t == "timestamp":
        return v.isoformat(timespec="microseconds")
    if t == "timestamptz":
        return v.isoformat(timespec="microseconds") + "+00:00"
    if t == "uuid":
        return str(v)
    return v


def canon(t: Any, v: Any) -> Any:
    """One comparable form of a Python value of Iceberg type t (NaN and -0.0 kept apart)."""
    if v is None:
        return None
    if isinstance(t, tuple):
        if t[0] == "struct":
            if not isinstance(v, dict):
                v = v.asDict()
            return tuple(canon(ft, v.get(n)) for n, ft in t[1])
        if t[0] == "list":
            return tuple(canon(t[1], x) for x in v)
        items = v.items() if isinstance(v, dict) else v
        return tuple(sorted(((canon(t[1], k), canon(t[2], x)) for k, x in items), key=repr))
    if t in FLOATS:
        return "f:" + repr(float(v))
    if t.startswith("decimal"):
        return "d:" + format(Decimal(v).normalize(_EXACT), "f")  # the value, whatever its exponent
    if t in ("date", "time"):
        return v.isoformat()
    if t in ("timestamp", "timestamptz"):
        if v.tzinfo is not None:
            v = v.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return v.isoformat()
    if t == "uuid":
        return str(uuid.UUID(str(v)))
    if t in ("binary", "fixed[4]"):
        return bytes(v).hex()
    return v


def from_json(t: Any, v: Any) -> Any:
    """A value of icectl's JSON lines (Iceberg JSON single-value form) as a Python value."""
    if v is None:
        return None
    if isinstance(t, tuple):
        if t[0] == "struct":
            if not isinstance(v, dict) or any(n not in v for n, _ in t[1]):
                return {"<keys>": sorted(v) if isinstance(v, dict) else repr(v)}
            return {n: from_json(ft, v[n]) for n, ft in t[1]}
        if t[0] == "list":
            return [from_json(t[1], x) for x in v]
        return list(zip([from_json(t[1], k) for k in v["keys"]], [from_json(t[2], x) for x in v["values"]]))
    if t in FLOATS:
        return float(v)
    if t.startswith("decimal"):
        return Decimal(v)
    if t == "date":
        return dt.date.fromisoformat(v)
    if t == "time":
        return dt.time.fromisoformat(v)
    if t in ("timestamp", "timestamptz"):
        x = dt.datetime.fromisoformat(v)
        return x.astimezone(dt.timezone.utc).replace(tzinfo=None) if x.tzinfo else x
    if t == "uuid":
        return uuid.UUID(v)
    if t in ("binary", "fixed[4]"):
        return bytes.fromhex(v)
    return v


def canon_row(columns: list[Column], row: dict) -> tuple:
    out = []
    for c in columns:
        v = row.get(c.name)
        if isinstance(c.type, tuple) and c.type[0] == "struct" and isinstance(v, dict) and "<keys>" in v:
            out.append(("struct keyed by", tuple(v["<keys>"])))
        else:
            out.append(canon(c.type, v))
    return tuple(out)


# -- differences ----------------------------------------------------------------------------------


@dataclass
class Diff:
    kind: str
    category: str
    table: str
    seed: int
    filter: str
    detail: str
    repro: str = ""


@dataclass
class Stats:
    cases: collections.Counter = field(default_factory=collections.Counter)
    diffs: list[Diff] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)
    tables: int = 0
    float_partition_tables: int = 0  # tables of fuzz_model.float_partition_table
    real_cli: int = 0
    started: float = field(default_factory=time.perf_counter)

    def add(self, d: Diff) -> None:
        self.diffs.append(d)

    def summary(self) -> str:
        lines = [f"differential fuzzer: seeds {self.seeds}, {self.tables} tables "
                 f"({self.float_partition_tables} partitioned by NaN/-0.0 float values), "
                 f"{sum(self.cases.values())} cases in {time.perf_counter() - self.started:.1f}s "
                 f"({self.real_cli} through the real CLI process)"]
        lines.append("  cases per kind: " + ", ".join(f"{k} {self.cases[k]}" for k in KINDS if self.cases[k]))
        by_cat = collections.Counter(d.category for d in self.diffs)
        lines.append("  seconds spent: " + ", ".join(f"{k} {v:.1f}" for k, v in TIMERS.most_common(12)))
        lines.append(f"  differences: {len(self.diffs)} in {len(by_cat)} categories")
        for cat, n in sorted(by_cat.items(), key=lambda x: (-x[1], x[0])):
            lines.append(f"    {n:4d}  {cat}")
        return "\n".join(lines)

    def report(self, max_per_category: int = 1) -> str:
        """Every category with its first difference(s) and reproduction."""
        seen: collections.Counter = collections.Counter()
        out = []
        for d in self.diffs:
            if seen[d.category] >= max_per_category:
                continue
            seen[d.category] += 1
            out.append(f"=== [{d.category}] table {d.table} (seed {d.seed})\n"
                       f"filter: {d.filter}\n{d.detail}\n{d.repro}")
        return "\n".join(out)


# -- the context ----------------------------------------------------------------------------------


@dataclass
class Ctx:
    spark: Any
    warehouse: Path
    namespace: str
    scratch: Path
    stats: Stats
    real_cli_every: int = 25  # every Nth scan case runs through the real program
    shrink_seconds_left: float = 90.0  # time the shrinker may spend in this run
    _n: int = 0

    @property
    def jvm(self) -> Any:
        return self.spark._jvm

    def sql(self, q: str) -> list:
        """Run q on the shared session, after refreshing the tables it names: Spark's catalog
        caches tables, and icectl changes them behind its back."""
        began = time.perf_counter()
        if not q.startswith("CREATE TABLE"):
            for ident in sorted(set(re.findall(r"\bice\.\w+\.\w+", q))):
                self.spark.sql(f"REFRESH TABLE {ident}")
        try:
            return self.spark.sql(q).collect()
        finally:
            TIMERS["spark " + q.split(" ", 1)[0].lower()] += time.perf_counter() - began

    def next(self) -> int:
        self._n += 1
        return self._n


@dataclass
class Built:
    case: TableCase
    location: str
    ident: str
    spark_rows: dict[int, tuple] | None = None  # rid -> canonical row (Spark's read)
    rows: dict[int, dict] = field(default_factory=dict)  # rid -> python row (what was written)


def _spark_partition(tr: str) -> str:
    m = re.fullmatch(r"identity\((\w+)\)", tr)
    return m.group(1) if m else tr


def build(ctx: Ctx, case: TableCase, rng: random.Random) -> Built:
    ident = f"ice.{ctx.namespace}.{case.name}"
    loc = str(ctx.warehouse / ctx.namespace / case.name)
    mor = case.mode
    props = {"format-version": str(case.format_version), "write.delete.mode": mor,
             "write.update.mode": mor, "write.merge.mode": mor}
    if case.creator == "spark" and not any(t.startswith("void") for t in case.spec):
        cols = ", ".join(f"`{c.name}` {spark_type(c.type)}" + (" NOT NULL" if c.name == RID else "")
                         for c in case.columns)
        part = f" PARTITIONED BY ({', '.join(_spark_partition(t) for t in case.spec)})" if case.spec else ""
        tp = ", ".join(f"'{k}'='{v}'" for k, v in props.items())
        ctx.sql(f"CREATE TABLE {ident} ({cols}) USING iceberg{part} TBLPROPERTIES ({tp})")
    else:
        case.creator = "icectl"
        args = ["create", loc, "--schema", ", ".join(f"{c.name} {icectl_type(c.type)}" + (" not null" if c.name == RID else "")
                                                   for c in case.columns)]
        if case.spec:
            args += ["--partition", ", ".join(case.spec)]
        for k, v in props.items():
            if k != "format-version":
                args += ["-P", f"{k}={v}"]
        args += ["--format-version", str(case.format_version)]
        must(icectl(*args), "create")
    cols = list(case.columns)
    for step_no, s in enumerate(case.steps):
        by_spark = case.spark_readable and rng.random() < 0.5
        if s.kind == "add-column":
            cols.append(s.column)
            if by_spark:
                ctx.sql(f"ALTER TABLE {ident} ADD COLUMN `{s.column.name}` {spark_type(s.column.type)}")
            else:
                must(icectl("schema", "add", loc, s.column.name, icectl_type(s.column.type)), "schema add")
        elif s.kind == "add-partition":
            if by_spark and not s.transform.startswith("void"):
                ctx.sql(f"ALTER TABLE {ident} ADD PARTITION FIELD {_spark_partition(s.transform)}")
            else:
                must(icectl("partition", "add", loc, s.transform), "partition add")
        elif s.kind == "drop-partition":
            if by_spark and not s.transform.startswith("void"):
                ctx.sql(f"ALTER TABLE {ident} DROP PARTITION FIELD {_spark_partition(s.transform)}")
            else:
                must(icectl("partition", "drop", loc, s.transform.replace("identity(", "").rstrip(")")
                            if s.transform.startswith("identity(") else s.transform), "partition drop")
        elif s.kind == "write" and s.by == "icectl append":
            append_rows(ctx, case, loc, cols, s.rows, case.spec_at(step_no), rng)
        elif s.kind == "write":
            if s.by == "spark" and case.spark_readable:
                values = ", ".join("(" + ", ".join(spark_literal(c.type, r.get(c.name)) for c in cols) + ")"
                                   for r in s.rows)
                try:
                    ctx.sql(f"INSERT INTO {ident} VALUES {values}")
                except Exception as exc:  # noqa: BLE001 - e.g. Java refusing a value (REFERENCE.md)
                    _build_failed(ctx, case, loc, "reference: Spark's INSERT failed", str(exc), s.rows)
            else:
                s.by = "icectl"
                if rng.random() < 0.4 and _json_ok(cols, s.rows):  # JSON lines: the text path
                    f = ctx.scratch / f"w{ctx.next()}.jsonl"
                    f.write_text("".join(json.dumps({c.name: json_value(c.type, r.get(c.name)) for c in cols})
                                         + "\n" for r in s.rows), encoding="utf-8")
                    s.by = "icectl (JSON lines)"
                else:
                    f = ctx.scratch / f"w{ctx.next()}.parquet"
                    write_parquet(f, cols, s.rows)
                d = icectl("write", loc, str(f))
                if d.code != 0:
                    # a truncation that overflows its decimal is refused by the reference too
                    agreed = d.code == 2 and "truncates to" in d.err and "more digits than" in d.err
                    _build_failed(ctx, case, loc, "reference: refused as Iceberg Java refuses it (a "
                                  "decimal truncation that overflows its precision)" if agreed else None,
                                  d.err, s.rows, how=s.by)
    b = Built(case, loc, ident, rows=case.live_rows())
    if case.spark_readable:
        try:
            b.spark_rows = spark_read(ctx, b, ident)
        except Exception as exc:  # noqa: BLE001 - Spark cannot read what was built: a finding
            from fuzz_shrink import category, table_script

            msg = (str(exc).strip().splitlines() or ["?"])[0][:300]
            ctx.stats.add(Diff("values", category("values", None, err=f"Spark fails to read the table: {msg}"),
                               case.name, case.seed, "", msg, table_script(b)))
            ctx.stats.cases["values"] += 1
    return b


def append_rows(ctx: Ctx, case: TableCase, loc: str, cols: list[Column], rows: list[dict],
                spec: list[str], rng: random.Random) -> None:
    """``icectl append`` of ``rows`` as Parquet files, one per partition of ``spec`` (identity
    fields only: float_partition_table), each partition given in a Hive-style directory, as a
    ``--partition`` value, or (for a value the footer proves: an int, an all-null column) not at
    all. A file holding NaN and another value of a float source must be refused first: its
    footer cannot tell NaN rows apart (nothing may be committed)."""
    from fuzz_model import partition_group, partition_text

    names = [re.fullmatch(r"identity\((\w+)\)", t).group(1) for t in spec]  # type: ignore[union-attr]
    types = {c.name: c.type for c in cols}
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        key = tuple(partition_group(r.get(n)) if types[n] in FLOATS else (r.get(n),) for n in names)
        groups.setdefault(key, []).append(r)
    floats = [n for n in names if types[n] in FLOATS]
    nans = [r for r in rows if floats and r.get(floats[0]) is not None and math.isnan(r[floats[0]])]
    if nans:
        # NaN rows and rows of ONE other value: the footer's min and max are that value
        x = floats[0]
        other = rng.choice((1.5, -2.25, 100.0))
        mixed = [{**r, RID: -r[RID]} for r in nans] + [{**r, RID: -r[RID] - 100000, x: other} for r in nans[:2]]
        f = ctx.scratch / f"mixed{ctx.next()}.parquet"
        write_parquet(f, cols, mixed)  # rids no check expects
        d = icectl("append", loc, str(f))
        ctx.stats.cases["append"] += 1
        if d.code == 0:
            from fuzz_shrink import table_script

            ctx.stats.add(Diff("append", "append: icectl append placed a file holding NaN and other "
                               f"values of {floats[0]} in one partition", case.name, case.seed, "",
                               d.out.strip()[-300:], table_script(Built(case, loc, "", rows={}))))
            raise BuildFailed("append of a file spanning a NaN partition was accepted")
    paths: list[str] = []
    for key, grp in groups.items():
        texts = {n: partition_text(grp[0].get(n)) if types[n] in FLOATS else
                 ("null" if grp[0].get(n) is None else str(grp[0].get(n))) for n in names}
        proven = all(types[n] not in FLOATS or grp[0].get(n) is None for n in names)
        how = rng.choice(("path", "option", "infer") if proven else ("path", "option"))
        folder = ctx.scratch / f"a{ctx.next()}"
        if how == "path":
            for n in names:
                folder = folder / f"{n}={texts[n]}"
        folder.mkdir(parents=True, exist_ok=True)
        f = folder / "part.parquet"
        write_parquet(f, cols, grp)
        if how == "option":  # one append per file: the values apply to every file given
            d = icectl("append", loc, str(f), *[a for n in names for a in ("--partition", f"{n}={texts[n]}")])
            ctx.stats.cases["append"] += 1
            if d.code != 0:
                _build_failed(ctx, case, loc, None, d.err, grp, how="icectl append --partition")
        else:
            paths.append(str(f))
    if paths:
        d = icectl("append", loc, *paths)
        ctx.stats.cases["append"] += 1
        if d.code != 0:
            _build_failed(ctx, case, loc, None, d.err, rows, how="icectl append")


def _json_ok(cols: list[Column], rows: list[dict]) -> bool:
    """Rows JSON lines can carry: no binary (text is stored as UTF-8), no NaN or infinity (icectl
    write refuses them in JSON: a difference of its own, checked by run_writes)."""
    from fuzz_model import iter_types

    if any(x in ("binary", "fixed[4]") for c in cols for x in iter_types(c.type)):
        return False
    def finite(v: Any) -> bool:
        if isinstance(v, float):
            return math.isfinite(v)
        if isinstance(v, dict):
            return all(finite(x) for x in v.values())
        if isinstance(v, (list, tuple)):
            return all(finite(x) for x in v)
        return True
    return all(finite(v) for r in rows for v in r.values())


class BuildFailed(Exception):
    """A table could not be built (recorded as a difference); the fuzzer goes on with the next."""


def _build_failed(ctx: Ctx, case: TableCase, loc: str, cat: str | None, err: str, rows: list,
                  how: str = "") -> None:
    from fuzz_shrink import category, table_script

    msg = (err.strip().splitlines() or ["?"])
    msg_line = msg[0][:300] if cat else msg[-1][:300]
    b = Built(case, loc, "", rows={})
    ctx.stats.add(Diff("write", cat or category("write", None, err=err), case.name, case.seed, "",
                       f"{how or 'Spark'} write failed: {msg_line}", table_script(b)))
    ctx.stats.cases["write"] += 1
    raise BuildFailed(msg_line)


def spark_read(ctx: Ctx, b: Built, source: str) -> dict[int, tuple]:
    cols = b.case.final_columns
    out = {}
    for r in ctx.sql(f"SELECT * FROM {source}"):
        d = r.asDict(recursive=False)
        out[d[RID]] = canon_row(cols, d)
    return out


def icectl_rows(ctx: Ctx, b: Built, *extra: str) -> tuple[dict[int, tuple] | None, str]:
    """icectl's full read (canonical rows by rid), or None and the error."""
    d = icectl("scan", b.location, "--format", "jsonl", *extra)
    if d.code != 0:
        return None, d.err.strip()
    cols = b.case.final_columns
    out = {}
    for line in d.out.splitlines():
        if line.strip():
            j = json.loads(line)
            row = {c.name: from_json(c.type, j.get(c.name)) for c in cols}
            out[row[RID]] = canon_row(cols, row)
    return out, ""


def icectl_rids(ctx: Ctx, location: str, flt: str | None, *extra: str, real: bool = False) -> tuple[list[int] | None, str]:
    args = ["scan", location, "--format", "jsonl", "--columns", RID, *extra]
    if flt is not None:
        args += ["--filter", flt]
    d = icectl_process(*args) if real else icectl(*args)
    if real:
        ctx.stats.real_cli += 1
    if d.code != 0:
        return None, (d.err.strip().splitlines() or ["exit %d" % d.code])[-1]
    return [json.loads(line)[RID] for line in d.out.splitlines() if line.strip()], ""

