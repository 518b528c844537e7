"""The checks of one random table: plan, scan, metamorphic, delete (icectl and Spark), compact,
rewrite-manifests; and upsert against MERGE INTO on a table of its own."""

from __future__ import annotations

import json
import math
import random
import re
from typing import Any

from fuzz_model import FLOATS, RID, Column, Step, TableCase, random_filter, maybe_null
from fuzz_runner import (
    Built,
    Ctx,
    Diff,
    build,
    canon_row,
    icectl,
    icectl_rids,
    icectl_rows,
    must,
    spark_read,
    write_parquet,
)
from fuzz_shrink import _ops, category, shrink_repro, table_script
from spark_support import java_iter, java_table
from fuzz_translate import evaluate, to_icectl, to_java, to_spark, spark_literal


def _fmt(rids: Any) -> str:
    rids = sorted(rids)
    return str(rids[:20]) + (f" ... ({len(rids)})" if len(rids) > 20 else "")


def spark_truth(ctx: Ctx, b: Built, filters: list, source: str | None = None) -> list[dict[int, Any]]:
    """Per filter, rid -> Spark's value of the translated filter (True, False, None)."""
    out: list[dict[int, Any]] = [dict() for _ in filters]
    src = source or b.ident
    for start in range(0, len(filters), 40):
        chunk = filters[start:start + 40]
        exprs = ", ".join(f"{to_spark(f)} AS p{i}" for i, f in enumerate(chunk))
        try:
            rows = ctx.sql(f"SELECT `{RID}`, {exprs} FROM {src}")
        except Exception:  # one bad translation: find it, report it, keep the others
            rows = None
        if rows is None:
            for i, f in enumerate(chunk):
                try:
                    for r in ctx.sql(f"SELECT `{RID}`, {to_spark(f)} AS p FROM {src}"):
                        out[start + i][r[0]] = r[1]
                except Exception as exc:  # noqa: BLE001
                    out[start + i] = None  # type: ignore[call-overload]
                    ctx.stats.add(Diff("reference", "fuzzer: Spark refused a translated filter",
                                       b.case.name, b.case.seed, to_icectl(f),
                                       f"spark sql: {to_spark(f)}\n{str(exc).splitlines()[0][:300]}"))
            continue
        for r in rows:
            for i in range(len(chunk)):
                out[start + i][r[0]] = r[i + 1]
    return out


def run_table(ctx: Ctx, case: TableCase, rng: random.Random, *, nfilters: int, ndeletes: int,
              nspark_deletes: int, compact: bool = True) -> None:
    b = build(ctx, case, rng)
    st = ctx.stats
    st.tables += 1
    cols = case.final_columns
    live = b.rows
    all_rids = set(live)

    # values: icectl's full read against Spark's (or against what was written)
    mine, err = icectl_rows(ctx, b)
    st.cases["values"] += 1
    ref = b.spark_rows if b.spark_rows is not None else {rid: canon_row(cols, r) for rid, r in live.items()}
    if mine is None:
        st.add(Diff("values", category("values", None, err=err), case.name, case.seed, "",
                    err, table_script(b)))
    elif mine != ref:
        bad_cols = sorted({c.name + " " + (c.type if isinstance(c.type, str) else c.type[0])
                           for rid in set(mine) | set(ref) for i, c in enumerate(cols)
                           if (mine.get(rid) or (None,) * len(cols))[i] != (ref.get(rid) or (None,) * len(cols))[i]})
        sample = next(rid for rid in sorted(set(mine) | set(ref)) if mine.get(rid) != ref.get(rid))
        tys = sorted({x.split(" ")[1] for x in bad_cols})
        st.add(Diff("values", f"values: icectl scan reads other values than Spark for {'/'.join(tys)} columns",
                    case.name, case.seed, "",
                    f"columns differing: {bad_cols}\nrid {sample}: icectl {mine.get(sample)}\n"
                    f"        reference {ref.get(sample)}", table_script(b)))

    filters = [random_filter(rng, cols, list(live.values())) for _ in range(nfilters)]
    truth = spark_truth(ctx, b, filters) if b.spark_rows is not None else [None] * len(filters)
    jt = java_table(ctx.spark, b.location) if b.spark_rows is not None else None

    if truth and truth[0] is not None:
        # the projected truth values are what Spark's own WHERE (with pushdown into Iceberg) selects
        where = sorted(r[0] for r in ctx.sql(f"SELECT `{RID}` FROM {b.ident} WHERE {to_spark(filters[0])}"))
        if where != sorted(r for r, v in truth[0].items() if v is True):
            st.add(Diff("reference", "reference: Spark's WHERE and its projected filter disagree", case.name,
                        case.seed, to_icectl(filters[0]), f"where {_fmt(where)}", table_script(b)))

    for i, f in enumerate(filters):
        text = to_icectl(f)
        py = {rid: evaluate(f, r) for rid, r in live.items()}
        sp = truth[i]
        if sp is not None and sp != py:
            bad = sorted(r for r in py if py[r] != sp.get(r))
            st.add(Diff("reference", "fuzzer: Spark (translated filter) and the Python evaluator disagree",
                        case.name, case.seed, text,
                        f"spark sql: {to_spark(f)}\nrids {_fmt(bad)}: python {[py[r] for r in bad[:5]]} "
                        f"spark {[sp.get(r) for r in bad[:5]]}\nrows: {[live[r] for r in bad[:2]]}",
                        table_script(b)))
        expect = sp if sp is not None else py
        selected = {r for r, v in expect.items() if v is True}
        unknown = {r for r, v in py.items() if v is None}

        # scan
        real = ctx.real_cli_every > 0 and i % ctx.real_cli_every == 0  # the real program, sometimes
        got, err = icectl_rids(ctx, b.location, text, real=real)
        st.cases["scan"] += 1
        if got is None or sorted(got) != sorted(selected):
            _report(ctx, b, "scan", f, got, selected, err, expect_map=expect)

        # metamorphic: p, not p and unknown(p) partition the table
        neg, err2 = icectl_rids(ctx, b.location, to_icectl(("not", f)))
        st.cases["metamorphic"] += 1
        if got is not None and neg is not None:
            sp_, sn = set(got), set(neg)
            problems = []
            if sp_ & sn:
                problems.append(f"rows in both p and not p: {_fmt(sp_ & sn)}")
            if (sp_ | sn) & unknown:
                problems.append(f"rows where p is unknown selected: {_fmt((sp_ | sn) & unknown)}")
            missing = all_rids - sp_ - sn - unknown
            if missing:
                problems.append(f"rows neither in p, not p nor unknown: {_fmt(missing)}")
            if len(got) + len(neg) != len(sp_ | sn) + len(sp_ & sn) or len(got) != len(sp_):
                problems.append("duplicate rows")
            if problems:
                st.add(Diff("metamorphic", category("metamorphic", f, live=live, rids=set().union(sp_ & sn, (sp_ | sn) & unknown, missing)),
                            case.name, case.seed, text, "\n".join(problems), table_script(b)))
        elif got is not None and neg is None:
            st.add(Diff("metamorphic", category("metamorphic", None, err=err2), case.name, case.seed,
                        to_icectl(("not", f)), err2, table_script(b)))

        # plan: files and delete files against Java's planFiles()
        if jt is not None:
            _plan(ctx, b, jt, f, text, selected)

        # icectl delete (both modes) on branches, against NOT coalesce(p, false)
        if i < ndeletes:
            for mode in ("copy-on-write", "merge-on-read"):
                br = f"d{i}{mode[0]}"
                must(icectl("branch", "create", b.location, br), "branch create")
                d = icectl("delete", b.location, "--filter", text, "--branch", br, "--mode", mode)
                st.cases["delete"] += 1
                left, lerr = (None, d.err.strip()) if d.code != 0 else icectl_rids(ctx, b.location, None, "--ref", br)
                keep = all_rids - selected
                if left is None or sorted(left) != sorted(keep):
                    _report(ctx, b, "delete", f, left, keep, lerr, mode=mode, expect_map=expect)
                elif b.spark_rows is not None and i == 0 and mode == "merge-on-read":
                    # Spark reads what icectl's delete left (its position delete files)
                    sl = sorted(r[0] for r in ctx.sql(f"SELECT `{RID}` FROM {b.ident}.branch_{br}"))
                    if sl != sorted(keep):
                        st.add(Diff("delete", f"delete ({mode}): Spark reads other rows than icectl's delete left",
                                    case.name, case.seed, text, f"spark {_fmt(sl)}\nexpected {_fmt(keep)}",
                                    table_script(b)))

        # Spark's DELETE on its own branch: icectl and Spark must leave the same rows
        if i < nspark_deletes and b.spark_rows is not None:
            _spark_delete(ctx, b, f, text, selected, all_rids)

    if case.float_keys:
        _equality_deletes(ctx, b, rng)
    if compact:
        _compact(ctx, b, rng, filters)
        run_writes(ctx, b, rng)


def _key_match(t: Any, a: Any, b: Any) -> bool:
    """An equality delete's match: null matches null, NaN every NaN, -0.0 not 0.0."""
    from fuzz_model import same_value

    return (a is None and b is None) or same_value(t, a, b)


def _near_miss(rng: random.Random, v: Any) -> Any:
    """A float key value next to v: the other zero, a NaN of other bits (still v for Iceberg),
    NaN for a number or a null."""
    from fuzz_model import OTHER_NANS

    if v is None or (not math.isnan(v) and v != 0):
        return math.nan
    if math.isnan(v):
        return rng.choice((-math.nan,) + OTHER_NANS["double"])
    return -v


def _equality_deletes(ctx: Ctx, b: Built, rng: random.Random) -> None:
    """``icectl delete --equality`` on branches of a table partitioned by float sources: by
    ``_rid`` and the float sources (equality delete files in NaN and signed-zero partitions,
    keys with the other zero or NaNs of other bits) and by ``_rid`` alone (the keys do not
    determine the partition: position deletes or deletion vectors of the rows found). icectl's
    read, Spark's read and Java's plan of the branch against the rows the keys leave."""
    st, case, live = ctx.stats, b.case, b.rows
    types = {c.name: c.type for c in case.final_columns}
    if not live:
        return
    for keycols in ((RID,) + tuple(case.float_keys), (RID,)):
        keys = []
        nan_rows = [rid for rid, r in live.items() if any(isinstance(r.get(n), float) and math.isnan(r[n])
                                                          for n in case.float_keys)]
        picked = rng.sample(sorted(live), min(len(live), rng.randrange(1, 5)))
        if nan_rows:  # a key in a NaN partition, always
            picked.append(rng.choice(nan_rows))
        for rid in picked:
            k = {n: live[rid].get(n) for n in keycols}
            if len(keycols) > 1 and rng.random() < 0.5:
                n = rng.choice(keycols[1:])
                k[n] = _near_miss(rng, k[n])
            keys.append(k)
        keep = {rid for rid, r in live.items()
                if not any(all(_key_match(types[n], r.get(n), k[n]) for n in keycols) for k in keys)}
        f = ctx.scratch / f"k{ctx.next()}.parquet"
        write_parquet(f, [Column(n, types[n]) for n in keycols], keys)
        br = f"e{ctx.next()}"
        must(icectl("branch", "create", b.location, br), "branch create")
        text = f"delete --equality {','.join(keycols)} keys {keys!r}"
        d = icectl("delete", b.location, "--equality", ",".join(keycols), "--from", str(f), "--branch", br)
        st.cases["delete"] += 1
        left, err = (None, d.err.strip()) if d.code != 0 else icectl_rids(ctx, b.location, None, "--ref", br)
        script = table_script(b) + f"\n# {text}"
        if left is None or sorted(left) != sorted(keep):
            st.add(Diff("delete", category("delete", None, err=err) if left is None else
                        f"delete (equality by {'_rid and float partition sources' if len(keycols) > 1 else '_rid'}): "
                        "icectl leaves other rows than the keys leave", case.name, case.seed, text,
                        f"icectl left {_fmt(left or [])}\nexpected {_fmt(keep)}", script))
            continue
        if b.spark_rows is not None:
            sl = sorted(r[0] for r in ctx.sql(f"SELECT `{RID}` FROM {b.ident}.branch_{br}"))
            if sl != sorted(keep):
                st.add(Diff("delete", "delete (equality): Spark reads other rows than icectl's delete left",
                            case.name, case.seed, text, f"spark {_fmt(sl)}\nexpected {_fmt(keep)}", script))
            _plan(ctx, b, java_table(ctx.spark, b.location), ("true",), "true", set(keep), ref=br)


def _report(ctx: Ctx, b: Built, kind: str, f, got, expected: set, err: str, mode: str = "",
            expect_map: dict | None = None) -> None:
    text = to_icectl(f)
    if got is None:
        detail = f"icectl failed: {err}"
        cat = category(kind, f, err=err, mode=mode)
        repro, _, _ = shrink_repro(ctx, b, f, kind, mode, cat)
    else:
        extra, missing = set(got) - expected, expected - set(got)
        what = "left" if kind == "delete" else "returned"
        detail = (f"icectl {what} rows it should not: {_fmt(extra)}\n"
                  f"icectl did not {'leave' if kind == 'delete' else 'return'} rows it should: {_fmt(missing)}")
        if len(got) != len(set(got)):
            detail += "\nicectl returned duplicate rows"
        for rid in sorted(extra | missing)[:3]:
            detail += f"\n  rid {rid}: {b.rows.get(rid)}  (Iceberg truth: {(expect_map or {}).get(rid)})"
        pre = category(kind, f, live=b.rows, rids=extra | missing, mode=mode)
        repro, shrunk, _ = shrink_repro(ctx, b, f, kind, mode, pre)
        if shrunk is not None:  # name the category after the minimal case
            g, rows = shrunk
            cat = category(kind, g, live=rows, rids=set(rows), mode=mode)
        else:
            cat = pre
    ctx.stats.add(Diff(kind, cat, b.case.name, b.case.seed, text, detail, repro))


def _delete_paths(entry: dict) -> frozenset:
    out = set()
    for d in entry.get("delete-files", []):
        out.add(d["path"] if isinstance(d, dict) else d)
    return frozenset(out)


def _strip(p: str) -> str:
    return p[5:] if p.startswith("file:") else p


def _plan(ctx: Ctx, b: Built, jt: Any, f, text: str, selected: set, ref: str | None = None) -> None:
    st = ctx.stats
    args = ["plan", b.location, "--json", "--filter", text]
    if ref:
        args += ["--ref", ref]
    d = icectl(*args)
    st.cases["plan"] += 1
    try:
        scan = jt.newScan()
        if ref:
            scan = scan.useRef(ref)
        tasks = java_iter(scan.filter(to_java(ctx.jvm, f)).planFiles())
        theirs = {_strip(t.file().location()): frozenset(_strip(x.location()) for x in t.deletes()) for t in tasks}
    except Exception as exc:  # noqa: BLE001
        msg = str(exc).splitlines()[0][:200]
        if d.code == 0:
            st.add(Diff("plan", "plan: Java planFiles() failed where icectl planned (reference error)",
                        b.case.name, b.case.seed, text, msg, table_script(b)))
        return
    if d.code != 0:
        st.add(Diff("plan", category("plan", f, err=d.err.strip()), b.case.name, b.case.seed, text,
                    d.err.strip()[-500:], table_script(b)))
        return
    ours = {e["path"]: _delete_paths(e) for e in json.loads(d.out)["files"]}
    if ours != theirs:
        extra, missing = set(ours) - set(theirs), set(theirs) - set(ours)
        dels = [p for p in set(ours) & set(theirs) if ours[p] != theirs[p]]
        kinds = []
        if extra:
            kinds.append("plans files Java skips")
        if missing:
            kinds.append("skips files Java plans")
        if dels:
            kinds.append("attaches other delete files")
        detail = (f"icectl only: {sorted(extra)[:3]}\nJava only: {sorted(missing)[:3]}\n"
                  f"delete files differ for: {dels[:3]}")
        cat = plan_category(category("plan", f, live=b.rows, note=" and ".join(kinds)), f,
                            extra, missing, dels, selected)
        st.add(Diff("plan", cat, b.case.name, b.case.seed, text, detail, table_script(b)))


def plan_category(cat: str, f, extra: set, missing: set, dels: list, selected: set) -> str:
    """The category of a plan difference. A file Java plans and icectl skips is accepted only
    when it holds no row the filter selects and the filter compares a uuid by order (Java 1.10
    orders uuids as signed longs, Iceberg and icectl by their bytes: Java plans files whose rows
    match only in its order); other delete files always fail. Files icectl plans and Java skips
    are `reference:` when each holds a selected row, `deliberate:` on a case the README
    documents, and fail otherwise."""
    if dels or not (extra or missing):
        return cat
    signed = None
    if missing:
        if _float_infinite_literal(f) and _hold_none(missing, selected) and not extra:
            # py4j has no float: Java is handed the infinity as a Double, which it binds beyond a
            # float column's range (always true), so it plans files holding no selected row
            return ("fuzzer: Java is given a float infinity as a Double (beyond the range) and "
                    "plans files holding no row the filter selects (" + cat + ")")
        if not (_uuid_ordering(f) and _hold_none(missing, selected)):
            return cat
        signed = ("reference: Java orders uuids as signed longs and plans files holding no row the "
                  "filter selects (" + cat + ")")
        if not extra:
            return signed
    if _hold_selected(extra, selected):
        # every extra file holds a row the filter selects: Java's planning lost rows (e.g. its
        # float/double counts inside a null struct leave rows out; README)
        return "reference: Java's planFiles() skips files holding rows the filter selects (" + cat + ")"
    label = None
    if _uuid_bounds_used(f):
        # README: Java 1.10 orders uuids as signed longs, icectl by their bytes (the order of
        # their text) and reads bounds safely under either: = and in as well as < <= > >=
        label = "deliberate: plan lists files Java skips on a uuid comparison (" + cat + ")"
    elif _infinite_literal(f):
        # README: `double 'Infinity'` is the float infinity; Java's binding calls it beyond the
        # range and settles the comparison, icectl compares it as a number
        label = "deliberate: plan lists files Java skips on a float infinity literal (" + cat + ")"
    elif _nested_float_nulls(f):
        # README: Java's float/double counts inside a struct leave out the rows whose struct is
        # null; icectl counts them as nulls (is null / is not nan keep such files)
        label = ("deliberate: plan lists files Java skips on is null / is not nan of a float "
                 "inside a struct (" + cat + ")")
    if label is None:
        return cat
    return signed or label


def _uuid_ordering(e) -> bool:
    return any(op in ("lt", "le", "gt", "ge") and t == "uuid" for op, t in _ops(e))


def _nested_float_nulls(e, negated: bool = False) -> bool:
    """Whether `is null` or `is not nan` (after pushing `not` in) of a float/double field inside
    a struct occurs in the filter."""
    if e[0] == "not":
        return _nested_float_nulls(e[1], not negated)
    if e[0] != "pred":
        return any(_nested_float_nulls(c, negated) for c in e[1:] if isinstance(c, tuple))
    ops = ("not_null", "is_nan") if negated else ("is_null", "not_nan")
    return len(e[2]) > 1 and e[3] in FLOATS and e[1] in ops


def _hold_none(paths: set, selected: set) -> bool:
    """Whether no data file in ``paths`` holds a row whose rid the filter selects."""
    got = _rids_of(paths)
    return got is not None and not any(r & selected for r in got)


def _uuid_bounds_used(e, negated: bool = False) -> bool:
    """Whether a uuid predicate that reads bounds (< <= > >= =, in; after pushing `not` in)
    occurs in the filter."""
    if e[0] == "not":
        return _uuid_bounds_used(e[1], not negated)
    if e[0] != "pred":
        return any(_uuid_bounds_used(c, negated) for c in e[1:] if isinstance(c, tuple))
    op = e[1]
    ordering = op in ("lt", "le", "gt", "ge")
    return e[3] == "uuid" and (ordering or op in (("ne", "not_in") if negated else ("eq", "in")))


def _preds(e) -> list:
    if e[0] == "pred":
        return [e]
    return [x for c in e[1:] if isinstance(c, tuple) for x in _preds(c)]


def _infinite_literal(f) -> bool:
    return any(isinstance(v, float) and math.isinf(v) for p in _preds(f) for v in p[4])


def _float_infinite_literal(f) -> bool:
    return any(p[3] == "float" and isinstance(v, float) and math.isinf(v)
               for p in _preds(f) for v in p[4])


def _rids_of(paths: set) -> list | None:
    """The rids each data file holds, or None when one cannot be read."""
    import pyarrow.parquet as pq

    try:
        return [set(pq.read_table(p.removeprefix("file:"), columns=[RID]).column(0).to_pylist())
                for p in paths]
    except Exception:  # noqa: BLE001 - unreadable: not proven
        return None


def _hold_selected(paths: set, selected: set) -> bool:
    """Whether each data file in ``paths`` holds a row whose rid the filter selects."""
    got = _rids_of(paths)
    return bool(got) and all(r & selected for r in got)


def _spark_delete(ctx: Ctx, b: Built, f, text: str, selected: set, all_rids: set) -> None:
    st = ctx.stats
    br = f"s{ctx.next()}"
    ctx.sql(f"ALTER TABLE {b.ident} CREATE BRANCH {br}")
    try:
        ctx.sql(f"DELETE FROM {b.ident}.branch_{br} WHERE {to_spark(f)}")
    except Exception as exc:  # noqa: BLE001
        st.add(Diff("spark-delete", "reference: Spark's DELETE failed", b.case.name, b.case.seed, text,
                    str(exc).splitlines()[0][:300], table_script(b)))
        return
    st.cases["spark-delete"] += 1
    spark_left = sorted(r[0] for r in ctx.sql(f"SELECT `{RID}` FROM {b.ident}.branch_{br}"))
    keep = sorted(all_rids - selected)
    if spark_left != keep:
        st.add(Diff("spark-delete", "reference: Spark's DELETE left other rows than its SELECT ... WHERE NOT "
                    "coalesce(p, false) (REFERENCE.md: null-partition metadata delete)", b.case.name,
                    b.case.seed, text, f"spark left {_fmt(spark_left)}\nexpected {_fmt(keep)}", table_script(b)))
    # icectl reads the branch Spark's DELETE wrote (its delete files or rewritten files)
    got, err = icectl_rids(ctx, b.location, None, "--ref", br)
    st.cases["scan"] += 1
    if got is None or sorted(got) != spark_left:
        st.add(Diff("scan", category("scan-after-spark-delete", None, err=err), b.case.name, b.case.seed,
                    text, f"icectl scan --ref {br}: {err or _fmt(got)}\nSpark: {_fmt(spark_left)}",
                    table_script(b)))
    # and plans it as Java does
    _plan(ctx, b, java_table(ctx.spark, b.location), ("true",), "true", set(), ref=br)


def _compact(ctx: Ctx, b: Built, rng: random.Random, filters: list) -> None:
    st = ctx.stats
    before, _ = icectl_rows(ctx, b)
    spark_before = b.spark_rows  # main is as built: deletes went to branches
    args = ["compact", b.location, "--min-input-files", "2", "--workers", "1"]
    if filters and rng.random() < 0.5:
        args += ["--filter", to_icectl(filters[0])]
    for step, cmd in (("compact", args), ("rewrite-manifests", ["rewrite-manifests", b.location])):
        d = icectl(*cmd)
        st.cases["compact"] += 1
        if d.code != 0:
            st.add(Diff("compact", category("compact", None, err=f"{step}: {d.err.strip()}"), b.case.name,
                        b.case.seed, " ".join(cmd[2:]), d.err.strip()[-500:], table_script(b)))
            continue
        after, err = icectl_rows(ctx, b)
        if after != before:
            st.add(Diff("compact", f"compact: icectl {step} changed the rows icectl reads", b.case.name,
                        b.case.seed, " ".join(cmd[2:]),
                        f"rids before {_fmt(before or {})}\nafter {_fmt(after or {})} {err}", table_script(b)))
        if spark_before is not None and step == "rewrite-manifests":  # once, after both
            sa = spark_read(ctx, b, b.ident)
            if sa != spark_before:
                st.add(Diff("compact", f"compact: icectl {step} changed the rows Spark reads", b.case.name,
                            b.case.seed, " ".join(cmd[2:]), f"rids before {_fmt(spark_before)}\nafter {_fmt(sa)}",
                            table_script(b)))
    # compact the branch icectl's merge-on-read delete wrote (deletes applied while rewriting)
    br = "d0m"
    rids, err = icectl_rids(ctx, b.location, None, "--ref", br)
    if rids is None:
        return  # no such branch: this table ran no delete
    d = icectl("compact", b.location, "--branch", br, "--min-input-files", "2", "--workers", "1")
    st.cases["compact"] += 1
    after, err = icectl_rids(ctx, b.location, None, "--ref", br) if d.code == 0 else (None, d.err.strip())
    if after is None or sorted(after) != sorted(rids):
        st.add(Diff("compact", category("compact", None, err=err) if after is None else
                    "compact: icectl compact of a branch with position deletes changed its rows",
                    b.case.name, b.case.seed, "--branch " + br, f"before {_fmt(rids)}\nafter {_fmt(after or [])}",
                    table_script(b)))


# -- upsert against MERGE INTO --------------------------------------------------------------------


UPSERT_TYPES = ("int", "long", "double", "float", "decimal(9,2)", "decimal(38,10)", "date",
                "timestamp", "timestamptz", "string", "binary", "boolean")


def run_upsert(ctx: Ctx, seed: int, rng: random.Random, name: str) -> None:
    cols = [Column(RID, "long")] + [Column(f"u{i}", t) for i, t in
                                    enumerate(rng.sample(UPSERT_TYPES, rng.randrange(2, 5)))]
    if rng.random() < 0.4:
        cols.append(Column("st", ("struct", (("a", "int"), ("b", "string")))))
    spec = rng.choice(([], [], ["bucket(4, _rid)"], ["truncate(10, _rid)"], ["identity(_rid)"]))
    if rng.random() < 0.4:  # rows moving between NaN and signed-zero partitions
        cols.append(Column("x", rng.choice(FLOATS)))
        spec = rng.choice((["identity(x)"], ["identity(x)", "bucket(4, _rid)"]))
    case = TableCase(name, seed, rng.choice(("spark", "icectl")), cols, spec, [],
                     mode=rng.choice(("copy-on-write", "merge-on-read")))

    def value(c: Column) -> Any:
        if c.name == "x":
            from fuzz_model import float_partition_value

            return float_partition_value(rng, c.type)
        return maybe_null(rng, c.type)

    rid = 1
    for _ in range(rng.randrange(1, 3)):
        rows = []
        for _ in range(rng.randrange(3, 9)):
            rows.append({RID: rid, **{c.name: value(c) for c in cols[1:]}})
            rid += 1
        case.steps.append(Step("write", by=rng.choice(("spark", "icectl")), rows=rows))
    b = build(ctx, case, rng)
    ctx.stats.tables += 1
    existing = sorted(b.rows)
    keys = rng.sample(existing, min(len(existing), rng.randrange(1, 4))) + list(range(rid, rid + rng.randrange(0, 3)))
    src = [{RID: k, **{c.name: value(c) for c in cols[1:]}} for k in keys]
    expected = dict(b.rows)
    for r in src:
        expected[r[RID]] = r
    ice_br, sp_br = "ui", "us"
    must(icectl("branch", "create", b.location, ice_br), "branch create")
    ctx.sql(f"ALTER TABLE {b.ident} CREATE BRANCH {sp_br}")
    f = ctx.scratch / f"u{ctx.next()}.parquet"
    write_parquet(f, cols, src)
    d = icectl("upsert", b.location, str(f), "--key", RID, "--branch", ice_br)
    ctx.stats.cases["upsert"] += 1
    values = ", ".join("(" + ", ".join(spark_literal(c.type, r.get(c.name)) for c in cols) + ")" for r in src)
    names = ", ".join(f"`{c.name}`" for c in cols)
    ctx.sql(f"MERGE INTO {b.ident}.branch_{sp_br} t USING (SELECT * FROM VALUES {values} AS s({names})) s "
            f"ON t.`{RID}` = s.`{RID}` WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    spark_merge = spark_read(ctx, b, f"{b.ident}.branch_{sp_br}")
    want = {k: canon_row(cols, v) for k, v in expected.items()}
    script = table_script(b) + f"\n# upsert input (key {RID}):\n" + "\n".join(repr(r) for r in src)
    if spark_merge != want:
        ctx.stats.add(Diff("upsert", "reference: Spark's MERGE INTO gave other rows than expected", name, seed,
                           "", f"spark {sorted(spark_merge.items())[:3]}\nwant {sorted(want.items())[:3]}", script))
    if d.code != 0:
        ctx.stats.add(Diff("upsert", category("upsert", None, err=d.err.strip()), name, seed, "",
                           d.err.strip()[-500:], script))
        return
    mine, err = icectl_rows(ctx, b, "--ref", ice_br)
    spark_of_mine = spark_read(ctx, b, f"{b.ident}.branch_{ice_br}")
    for who, rows in (("icectl scan", mine), ("Spark", spark_of_mine)):
        if rows != spark_merge:
            diff = sorted(set(rows or {}) ^ set(spark_merge)) or [k for k in spark_merge if (rows or {}).get(k) != spark_merge[k]]
            keyed = any("struct keyed by" in repr((rows or {}).get(k)) for k in diff)
            ctx.stats.add(Diff("upsert", f"upsert: {who} reads other rows after icectl upsert than after Spark MERGE INTO"
                               + (" (struct keyed by field id)" if keyed else ""),
                               name, seed, "", f"rids differing: {diff[:5]} {err}\n" +
                               "".join(f"  {k}: icectl-branch {(rows or {}).get(k)}\n         merge {spark_merge.get(k)}\n" for k in diff[:2]),
                               script))


# -- writes: icectl's text and float inputs (exactness, the JSON form scan prints) -----------------


def run_writes(ctx: Ctx, b: Built, rng: random.Random) -> None:
    """icectl write through JSON lines on branches: an inexact decimal must be refused (never
    rounded), NaN and infinities in the form ``icectl scan`` prints must be accepted."""
    st = ctx.stats
    loc = b.location
    cols = b.case.final_columns
    rid = max(b.rows, default=0) + 1000
    for c in cols:
        if not isinstance(c.type, str):
            continue
        cases = []
        if c.type.startswith("decimal"):
            from fuzz_model import decimal_ps

            _, s = decimal_ps(c.type)
            inexact = "1." + "2" * s + "5"  # one digit more than the scale allows
            cases += [("JSON string", inexact, False), ("JSON number", float(inexact), False),
                      ("Parquet double", float(inexact), False)]
        elif c.type in FLOATS:
            cases += [("JSON string", rng.choice(("NaN", "Infinity", "-Infinity")), True)]
        for form, value, ok in cases:
            br = f"w{ctx.next()}"
            must(icectl("branch", "create", loc, br), "branch create")
            rid += 1
            if form == "Parquet double":
                import pyarrow as pa
                import pyarrow.parquet as pq

                path = ctx.scratch / f"{br}.parquet"
                pq.write_table(pa.table({RID: pa.array([rid], pa.int64()), c.name: pa.array([value], pa.float64())}), str(path))
            else:
                path = ctx.scratch / f"{br}.jsonl"
                path.write_text(json.dumps({RID: rid, c.name: value}) + "\n", encoding="utf-8")
            d = icectl("write", loc, str(path), "--branch", br)
            st.cases["write"] += 1
            got, _ = icectl_rids(ctx, loc, None, "--ref", br)
            written = got is not None and rid in got
            if ok and (d.code != 0 or not written):
                msg = (d.err.strip().splitlines() or [""])[-1]
                st.add(Diff("write", f"write: icectl write refuses NaN/Infinity for a {c.type} column given as a "
                            f"{form} (the form icectl scan --format jsonl prints)", b.case.name, b.case.seed, "",
                            f"{path.name}: {path.read_text(encoding='utf-8') if path.suffix == '.jsonl' else value}"
                            f"exit {d.code}: {msg}", f"# icectl write TABLE rows.jsonl with the line above, on a "
                            f"table with a column {c.name} {c.type}"))
            if not ok and (d.code == 0 or written):
                stored, _ = icectl_rows(ctx, b, "--ref", br, "--filter", f"{RID} = {rid}")
                st.add(Diff("write", f"write: icectl write accepts an inexact {re.sub(r'[(].*', '', c.type)} "
                            f"(more digits than its scale) given as a {form} and rounds it", b.case.name,
                            b.case.seed, "", f"{c.name} {c.type} given {value!r}; stored "
                            f"{[r for r in (stored or {}).values()][:1]}",
                            f"# icectl write TABLE input with {{'{RID}': {rid}, '{c.name}': {value!r}}} "
                            f"({form}); a column {c.name} {c.type}"))
