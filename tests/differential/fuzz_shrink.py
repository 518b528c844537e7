"""Shrink a difference to a minimal reproduction and name its category.

A scan or delete difference is replayed on a *flat* table: created by icectl with only ``_rid``
and the columns the filter names, the final partition spec restricted to those columns, the
table's live rows written by ``icectl write`` in one go. If the difference shows there too, rows
are removed (halves, quarters, ... single rows), the filter is replaced by its sub-filters and
partition fields are dropped while it still shows; the result is printed as a Python test that
can be pasted into a regression test. Otherwise (the difference needs Spark-written files, the
table's history or deletes) the table's whole history is printed instead.
"""

from __future__ import annotations

import collections
import math
import re
import time
import uuid
from decimal import Decimal
from typing import Any

from fuzz_model import FLOATS, RID, Column, filter_paths, icectl_type
from fuzz_translate import evaluate, to_icectl, to_spark

_TYPE_FAMILY = re.compile(r"\(.*\)|\[.*\]")


def _ops(e) -> list:
    if e[0] == "pred":
        return [(e[1], e[3])]
    return [x for c in e[1:] if isinstance(c, tuple) for x in _ops(c)]


def category(kind: str, f, *, live: dict | None = None, rids: set | None = None, err: str = "",
             mode: str = "", note: str = "") -> str:
    head = f"{kind} ({mode})" if mode else kind
    if err:
        msg = (err.strip().splitlines() or ["?"])[-1 if not err.startswith("Spark ") else 0]
        msg = re.sub(r"/[^\s'\"]+", "<path>", msg)
        msg = re.sub(r"\b\d+\b", "N", msg)[:120]
        who = "" if msg.startswith("Spark ") else "icectl fails: "
        return f"{head}: {who}{msg}"
    if f is None:
        return f"{head}: {note or 'difference'}"
    paths = filter_paths(f)
    feats = []
    if any(len(p) > 1 for p in paths):
        feats.append("nested struct field")
    vals = []
    for rid in sorted(rids or ())[:50]:
        row = (live or {}).get(rid) or {}
        for p in paths:
            v = row.get(p[0])
            for q in p[1:]:
                v = None if v is None else v.get(q)
            vals.append(v)
    if any(v is None for v in vals) and "nested struct field" not in feats:
        feats.append("null values")
    if any(isinstance(v, float) and math.isnan(v) for v in vals):
        feats.append("NaN")
    zero_lit = any(op[1] in FLOATS for op in _ops(f)) and "0.0" in to_icectl(f)
    if any(isinstance(v, float) and v == 0 for v in vals) and zero_lit:
        feats.append("-0.0/0.0")
    ops = sorted({f"{op} {_TYPE_FAMILY.sub('', t)}" for op, t in _ops(f)})
    if not feats and any(op in ("lt", "le", "gt", "ge") and t == "uuid" for op, t in _ops(f)):
        feats.append("uuid ordering comparison")
    if not feats:
        feats.append("other: " + ", ".join(ops)[:80])
    cat = f"{head}: {' + '.join(feats)}"
    if note:
        cat += f" ({note})"
    return cat


# -- Python source of values ----------------------------------------------------------------------


def py_src(v: Any) -> str:
    if isinstance(v, float):
        if math.isnan(v):
            return "float('nan')"
        if math.isinf(v):
            return "float('inf')" if v > 0 else "float('-inf')"
        return repr(v)
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k!r}: {py_src(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(py_src(x) for x in v) + "]"
    if isinstance(v, tuple):
        return "(" + ", ".join(py_src(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    if isinstance(v, uuid.UUID):
        return f"uuid.UUID('{v}')"
    if isinstance(v, Decimal):
        return f"Decimal('{v}')"
    return repr(v)  # datetime.* reprs name the datetime module


def _source_col(transform: str) -> str:
    m = re.search(r"(\w+)\)\s*$", transform)
    return m.group(1) if m else transform


def table_script(b: Any, max_rows: int = 30) -> str:
    """The table's history as comments: how it was created and each step, with the rows."""
    c = b.case
    out = [f"# table {c.name} (seed {c.seed}) at {b.location}, created by {c.creator}, "
           f"format v{c.format_version}, {c.mode}",
           f"#   schema: {', '.join(f'{x.name} {icectl_type(x.type)}' for x in c.columns)}",
           f"#   partition: {', '.join(c.spec) or '(none)'}"]
    for s in c.steps:
        if s.kind == "write":
            out.append(f"#   write by {s.by}: {len(s.rows)} rows")
            for r in s.rows[:max_rows]:
                out.append(f"#     {py_src(r)}")
            if len(s.rows) > max_rows:
                out.append("#     ...")
        elif s.kind == "add-column":
            out.append(f"#   add column {s.column.name} {icectl_type(s.column.type)}")
        else:
            out.append(f"#   {s.kind} {s.transform}")
    return "\n".join(out)


# -- replay on a flat table -----------------------------------------------------------------------


class _Replay:
    def __init__(self, ctx: Any, kind: str, mode: str) -> None:
        self.ctx, self.kind, self.mode = ctx, kind, mode
        self.tries = 0

    def differs(self, cols: list[Column], spec: list[str], rows: list[dict], f) -> bool:
        from fuzz_runner import icectl, icectl_rids, write_parquet

        self.tries += 1
        loc = str(self.ctx.scratch / f"shrink{self.ctx.next()}")
        args = ["create", loc, "--schema", ", ".join(f"{c.name} {icectl_type(c.type)}" for c in cols)]
        if spec:
            args += ["--partition", ", ".join(spec)]
        if icectl(*args).code != 0:
            return False
        if rows:
            p = self.ctx.scratch / f"shrink{self.ctx.next()}.parquet"
            write_parquet(p, cols, rows)
            if icectl("write", loc, str(p)).code != 0:
                return False
        truth = {r[RID]: evaluate(f, r) for r in rows}
        if self.kind == "delete":
            d = icectl("delete", loc, "--filter", to_icectl(f), "--mode", self.mode)
            if d.code != 0:
                return True
            got, err = icectl_rids(self.ctx, loc, None)
            want = {rid for rid, v in truth.items() if v is not True}
        else:
            got, err = icectl_rids(self.ctx, loc, to_icectl(f))
            want = {rid for rid, v in truth.items() if v is True}
        return got is None or sorted(got) != sorted(want)


def _subfilters(f) -> list:
    if f[0] in ("and", "or"):
        return [f[1], f[2]] + [(f[0], x, f[2]) for x in _subfilters(f[1])] + [(f[0], f[1], x) for x in _subfilters(f[2])]
    if f[0] == "not":
        return [f[1]] + [("not", x) for x in _subfilters(f[1])]
    if f[0] == "pred" and len(f[4]) > 1:
        return [f[:4] + ((x,),) + f[5:] for x in f[4]]
    return []


def shrink(ctx: Any, b: Any, f, kind: str, mode: str, budget_s: float = 25.0):
    """(cols, spec, rows, filter) of a smaller case showing the difference, or None."""
    started = time.perf_counter()
    rp = _Replay(ctx, kind, mode)
    refs = {p[0] for p in filter_paths(f)} | {RID}
    cols = [c for c in b.case.final_columns if c.name in refs]
    spec = [t for t in b.case.final_spec if _source_col(t) in refs]
    rows = [{c.name: r.get(c.name) for c in cols} for r in b.rows.values()]
    if not rp.differs(cols, spec, rows, f):
        if not spec or not rp.differs(cols, [], rows, f):
            return None
        spec = []

    def left() -> bool:
        return time.perf_counter() - started < budget_s

    # rows: ddmin
    n = 2
    while len(rows) >= 2 and left():
        chunk = max(1, len(rows) // n)
        reduced = False
        for i in range(0, len(rows), chunk):
            cand = rows[:i] + rows[i + chunk:]
            if rp.differs(cols, spec, cand, f):
                rows, reduced = cand, True
                n = max(n - 1, 2)
                break
            if not left():
                break
        if not reduced:
            if chunk == 1:
                break
            n = min(len(rows), n * 2)
    # filter: a sub-filter that still shows it
    changed = True
    while changed and left():
        changed = False
        for g in _subfilters(f):
            if rp.differs(cols, spec, rows, g):
                f, changed = g, True
                break
    # partition fields and columns the smaller filter no longer names
    for t in list(spec):
        if left() and rp.differs(cols, [x for x in spec if x != t], rows, f):
            spec = [x for x in spec if x != t]
    refs = {p[0] for p in filter_paths(f)} | {RID}
    if len(refs) < len(cols):
        c2 = [c for c in cols if c.name in refs]
        s2 = [t for t in spec if _source_col(t) in refs]
        r2 = [{c.name: r.get(c.name) for c in c2} for r in rows]
        if left() and rp.differs(c2, s2, r2, f):
            cols, spec, rows = c2, s2, r2
    return cols, spec, rows, f


def repro_source(cols: list[Column], spec: list[str], rows: list[dict], f, kind: str, mode: str) -> str:
    """A self-contained pytest test reproducing the difference (fails while it exists)."""
    from fuzz_runner import arrow_type

    truth = {r[RID]: evaluate(f, r) for r in rows}
    arrow = ", ".join(f"({c.name!r}, {_arrow_src(arrow_type(c.type))})" for c in cols)
    lines = [
        "# --- reproduction: paste into a test module ---",
        "import datetime, uuid",
        "from decimal import Decimal",
        "import pyarrow as pa, pyarrow.parquet as pq",
        "from typer.testing import CliRunner",
        "from icectl.cli.app import app",
        "",
        f"def test_repro_{kind.replace('-', '_')}(tmp_path):",
        f"    schema = {', '.join(f'{c.name} {icectl_type(c.type)}' for c in cols)!r}",
        f"    partition = {', '.join(spec)!r}",
        f"    rows = [{', '.join(py_src(_arrowish(cols, r)) for r in rows)}]",
        f"    flt = {to_icectl(f)!r}  # Spark SQL with Iceberg semantics: {to_spark(f)}",
    ]
    if kind == "delete":
        lines.append(f"    expected_rids = {sorted(r for r, v in truth.items() if v is not True)}  # rows delete must leave")
    else:
        lines.append(f"    expected_rids = {sorted(r for r, v in truth.items() if v is True)}  # rows the filter selects")
    lines += [
        "    run = CliRunner().invoke",
        "    loc = str(tmp_path / 't')",
        "    assert run(app, ['create', loc, '--schema', schema] + (['--partition', partition] if partition else [])).exit_code == 0",
        f"    pq.write_table(pa.Table.from_pylist(rows, schema=pa.schema([{arrow}])), str(tmp_path / 'rows.parquet'))",
        "    assert run(app, ['write', loc, str(tmp_path / 'rows.parquet')]).exit_code == 0",
    ]
    if kind == "delete":
        lines += [f"    assert run(app, ['delete', loc, '--filter', flt, '--mode', {mode!r}]).exit_code == 0",
                  "    out = run(app, ['scan', loc, '--format', 'jsonl', '--columns', '_rid'])"]
    else:
        lines.append("    out = run(app, ['scan', loc, '--format', 'jsonl', '--columns', '_rid', '--filter', flt])")
    lines += ["    import json",
              "    assert out.exit_code == 0, out.output",
              "    assert sorted(json.loads(x)['_rid'] for x in out.stdout.splitlines() if x) == expected_rids"]
    return "\n".join(lines)


def _arrowish(cols: list[Column], r: dict) -> dict:
    from fuzz_runner import arrow_value

    return {c.name: arrow_value(c.type, r.get(c.name)) for c in cols}


def _arrow_src(t: Any) -> str:
    import pyarrow as pa

    if pa.types.is_struct(t):
        return "pa.struct([" + ", ".join(f"({t.field(i).name!r}, {_arrow_src(t.field(i).type)})" for i in range(t.num_fields)) + "])"
    if pa.types.is_map(t):
        return f"pa.map_({_arrow_src(t.key_type)}, {_arrow_src(t.item_type)})"
    if pa.types.is_list(t):
        return f"pa.list_({_arrow_src(t.value_type)})"
    if pa.types.is_decimal(t):
        return f"pa.decimal128({t.precision}, {t.scale})"
    if pa.types.is_timestamp(t):
        return f"pa.timestamp('us'{', tz=' + repr(t.tz) if t.tz else ''})"
    if pa.types.is_time(t):
        return "pa.time64('us')"
    if pa.types.is_fixed_size_binary(t):
        return f"pa.binary({t.byte_width})"
    return {"bool": "pa.bool_()", "int32": "pa.int32()", "int64": "pa.int64()", "float": "pa.float32()",
            "double": "pa.float64()", "date32[day]": "pa.date32()", "string": "pa.string()",
            "binary": "pa.binary()"}[str(t)]


_shrunk: collections.Counter = collections.Counter()


def shrink_repro(ctx: Any, b: Any, f, kind: str, mode: str, pre_category: str) -> tuple[str, Any, set]:
    """(reproduction text, filter of the reproduction, rids of its differing rows)."""
    if _shrunk[pre_category] >= 2 or ctx.shrink_seconds_left <= 0:
        return "(not shrunk: enough reproductions of this category)\n" + table_script(b), None, set()
    _shrunk[pre_category] += 1
    began = time.perf_counter()
    from fuzz_runner import TIMERS
    try:
        got = shrink(ctx, b, f, kind, mode, budget_s=min(25.0, ctx.shrink_seconds_left))
    finally:
        ctx.shrink_seconds_left -= time.perf_counter() - began
        TIMERS["shrinking"] += time.perf_counter() - began
    if got is None:
        return ("(does not show on a flat icectl-written table: it needs this table's history)\n"
                + table_script(b)), None, set()
    cols, spec, rows, g = got
    return repro_source(cols, spec, rows, g, kind, mode), (g, {r[RID]: r for r in rows}), set()
