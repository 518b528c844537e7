"""Differential fuzzing of icectl against Spark 3.5 + Iceberg 1.10.2 Java (README.md here).

Random tables (every primitive type, structs, lists, maps; nulls, NaN, +-0.0, negative and
pre-1970 values, extremes; random partition specs over every transform; schema and partition
evolution between writes by Spark and by icectl) and random filters over icectl's whole filter
grammar. Per table and filter: ``icectl plan`` against Java's ``planFiles()``, ``icectl scan``
against Spark's reading of the filter translated with Iceberg's semantics, the ternary-logic
metamorphic check, ``icectl delete`` (both modes) against ``NOT coalesce(p, false)`` and Spark's
DELETE, ``icectl upsert`` against MERGE INTO, ``compact``/``rewrite-manifests`` keeping rows.

Seeds are fixed. ``ICECTL_FUZZ_SEEDS=1,2,3`` and ``ICECTL_FUZZ_CASES=N`` change the CI run; the
large run (``--runslow``) runs at least 5,000 cases (``ICECTL_FUZZ_LARGE_CASES``).
"""

from __future__ import annotations

import itertools
import os
import random
import time
from pathlib import Path
from typing import Any

import pytest

from fuzz_checks import run_table, run_upsert
from fuzz_model import float_partition_table, random_table
from fuzz_runner import BuildFailed, Ctx, Stats

pytestmark = pytest.mark.interop

_ns = itertools.count(1)


def fuzz(spark: Any, warehouse: Path, scratch: Path, seeds: list[int], target: int,
         budget_s: float, *, nfilters: int, shrink_s: float, big: bool = False) -> Stats:
    """Random tables of each seed in turn until ``target`` cases ran (or the time is up)."""
    stats = Stats(seeds=seeds)
    ns = f"fuzz{next(_ns)}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS ice.{ns}")
    ctx = Ctx(spark, warehouse, ns, scratch, stats, shrink_seconds_left=shrink_s)
    began = time.perf_counter()
    for round_ in itertools.count():
        for seed in ["float"] + seeds + [None]:
            if sum(stats.cases.values()) >= target or time.perf_counter() - began > budget_s:
                return stats
            if seed == "float":  # one table per round partitioned by NaN and signed-zero values
                seed = seeds[round_ % len(seeds)]
                name = f"s{seed}r{round_}f"
                rng = random.Random(seed * 9_000_011 + round_)
                try:
                    case = float_partition_table(rng, name, seed, rows=rng.randrange(10, 30))
                    stats.float_partition_tables += 1
                    run_table(ctx, case, rng, nfilters=nfilters, ndeletes=2, nspark_deletes=1, compact=True)
                except BuildFailed:
                    pass
                except Exception as exc:  # noqa: BLE001
                    _unexpected(stats, name, seed, exc)
                continue
            if seed is None:  # one upsert table per round, against MERGE INTO
                seed = seeds[round_ % len(seeds)]
                try:
                    run_upsert(ctx, seed, random.Random(seed * 7_000_003 + round_), f"s{seed}r{round_}u")
                except BuildFailed:
                    pass
                except Exception as exc:  # noqa: BLE001
                    _unexpected(stats, f"s{seed}r{round_}u", seed, exc)
                continue
            rng = random.Random(seed * 1_000_003 + round_)
            name = f"s{seed}r{round_}"
            heavy = round_ % 2 == 0 or big  # Spark's DELETE and icectl compact on every other table
            try:
                if rng.random() < 0.15:  # icectl alone: time columns, which Spark cannot read
                    case = random_table(rng, name + "i", seed, rows=rng.randrange(8, 40), spark=False,
                                        allow_time=True)
                    run_table(ctx, case, rng, nfilters=nfilters, ndeletes=2, nspark_deletes=0, compact=heavy)
                else:
                    case = random_table(rng, name, seed, rows=rng.randrange(8, 40))
                    run_table(ctx, case, rng, nfilters=nfilters, ndeletes=2, nspark_deletes=int(heavy),
                              compact=heavy)
            except BuildFailed:
                continue  # recorded; the next table
            except Exception as exc:  # noqa: BLE001 - the harness or the reference broke: say so, go on
                _unexpected(stats, name, seed, exc)
    return stats


def _unexpected(stats: Stats, name: str, seed: int, exc: Exception) -> None:
    import traceback

    from fuzz_runner import Diff

    tb = "".join(traceback.format_exception(exc))
    stats.add(Diff("fuzzer", f"fuzzer: unexpected {type(exc).__name__} (harness or reference)", name, seed, "",
                   (str(exc).splitlines() or [""])[0][:300], tb[-3000:]))


def _check(stats: Stats) -> None:
    # reported, but not icectl's errors: the reference's own bugs, the harness's, and differences
    # from Java's plans the README documents as deliberate
    icectl_diffs = [d for d in stats.diffs
                    if not d.category.startswith(("reference", "fuzzer", "deliberate"))]
    print(stats.summary())
    print(stats.report())
    assert stats.cases, "no case ran"
    assert not icectl_diffs, (
        f"{len(icectl_diffs)} differences between icectl and the reference; categories and one "
        f"reproduction each:\n{stats.summary()}\n{stats.report()}")


def _seeds(var: str, default: str) -> list[int]:
    return [int(x) for x in os.environ.get(var, default).split(",") if x.strip()]


def test_differential_ci(spark: Any, warehouse: Path, tmp_path: Path, fuzz_report: list) -> None:
    """The CI share: at least 300 cases in at most about 6 minutes."""
    target = int(os.environ.get("ICECTL_FUZZ_CASES", "320"))
    stats = fuzz(spark, warehouse, tmp_path, _seeds("ICECTL_FUZZ_SEEDS", "1,2,3"), target,
                 budget_s=float(os.environ.get("ICECTL_FUZZ_SECONDS", "270")), nfilters=20, shrink_s=40)
    fuzz_report.append(("CI share", stats))
    _check(stats)
    # the share always holds NaN and signed-zero partitions (append, equality deletes included)
    assert stats.float_partition_tables >= 1 and stats.cases["append"] >= 1, stats.summary()


@pytest.mark.slow
def test_differential_large(spark: Any, warehouse: Path, tmp_path: Path, fuzz_report: list) -> None:
    """The opt-in run (--runslow): at least 5,000 cases."""
    target = int(os.environ.get("ICECTL_FUZZ_LARGE_CASES", "5000"))
    stats = fuzz(spark, warehouse, tmp_path, _seeds("ICECTL_FUZZ_LARGE_SEEDS", "101,102,103,104"), target,
                 budget_s=float("inf"), nfilters=30, shrink_s=600, big=True)
    fuzz_report.append(("large run", stats))
    _check(stats)


def test_float_order_matches_iceberg_java_evaluator(jvm: Any) -> None:
    """The translation's -0.0 rule comes from Iceberg Java: its row ``Evaluator`` (two-valued,
    ``Double.compare``) orders -0.0 before 0.0 and keeps them unequal. On non-null, non-NaN
    values the fuzzer's three-valued evaluator must agree with it on every comparison. (Where
    they deliberately differ: Java's row evaluator orders NaN above every number and compares
    nulls as smallest; Iceberg's filter semantics, which Spark + Iceberg and icectl follow,
    never select NaN by an ordering comparison nor null by any comparison -- README, REFERENCE.md.)
    """
    from fuzz_translate import evaluate, to_java

    types = jvm.org.apache.iceberg.types.Types
    fields = jvm.java.util.ArrayList()
    fields.add(types.NestedField.optional(1, "d", types.DoubleType.get()))
    fields.add(types.NestedField.optional(2, "f", types.FloatType.get()))
    schema = jvm.org.apache.iceberg.Schema(fields)
    values = (-0.0, 0.0, 1.0, -1.0, float("inf"), float("-inf"), 5e-324)
    checked = 0
    # (a float column cannot be filled through py4j: it hands every float to Java as a Double)
    for col, jcls in (("d", jvm.java.lang.Double),):
        for v in values:
            rec = jvm.org.apache.iceberg.data.GenericRecord.create(schema)
            rec.setField(col, jcls.valueOf(repr(v).replace("inf", "Infinity")))
            t = "double" if col == "d" else "float"
            for op in ("lt", "le", "gt", "ge", "eq", "ne"):
                for lit in (-0.0, 0.0, 1.0):
                    f = ("pred", op, (col,), t, (lit,), "")
                    java = jvm.org.apache.iceberg.expressions.Evaluator(schema.asStruct(), to_java(jvm, f), True)
                    mine = evaluate(f, {col: v})
                    assert mine is not None
                    assert java.eval(rec) == mine, (col, v, op, lit)
                    checked += 1
    assert checked == len(values) * 6 * 3


def test_plan_differences_labelled_only_when_a_documented_superset(tmp_path: Path) -> None:
    """(No Spark.) A plan difference is `deliberate:` only when icectl's plan is a superset of
    Java's and the filter has a case the README documents (uuid bounds: < <= > >= = in; float
    infinities), `reference:` when every extra file holds a selected row, else it fails."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from fuzz_checks import plan_category

    path = str(tmp_path / "f.parquet")
    pq.write_table(pa.table({"_rid": [1, 2]}), path)
    u = "12345678-1234-1234-1234-123456789abc"
    eq_uuid = ("pred", "eq", ("u",), "uuid", [u], "")
    lt_uuid = ("pred", "lt", ("u",), "uuid", [u], "")
    ne_uuid = ("pred", "ne", ("u",), "uuid", [u], "")  # the model's name for !=
    inf = ("pred", "gt", ("d",), "double", [float("inf")], "")
    plain = ("pred", "gt", ("i",), "int", [5], "")
    label = lambda f, **kw: plan_category("plan: x", f, **{  # noqa: E731
        "extra": {path}, "missing": set(), "dels": [], "selected": set(), **kw})
    assert label(eq_uuid).startswith("deliberate:") and label(lt_uuid).startswith("deliberate:")
    assert label(("and", plain, inf)).startswith("deliberate:")
    assert label(("not", ne_uuid)).startswith("deliberate:")  # (u = ...)
    for f in (ne_uuid, plain, ("not", ("or", ("pred", "in", ("u",), "uuid", [u], ""), plain))):
        assert label(f) == "plan: x"
    # icectl skipping a file Java plans, or other delete files: never deliberate; a skipped
    # file without a selected row on a uuid ordering comparison is Java's signed uuid order
    assert label(eq_uuid, missing={path}) == "plan: x"
    assert label(inf, dels=[path]) == "plan: x"
    assert label(lt_uuid, extra=set(), missing={path}, selected={3}).startswith("reference:")
    assert label(lt_uuid, extra=set(), missing={path}, selected={1}) == "plan: x"
    assert label(lt_uuid, extra={path}, missing={path}, selected={3}).startswith("reference:")
    assert label(plain, extra={path}, missing={path}, selected={3}) == "plan: x"
    # is null / is not nan of a float inside a struct (Java's counts leave null structs out)
    nested = ("pred", "is_null", ("st", "b"), "float", [], "")
    assert label(("and", nested, plain)).startswith("deliberate:")
    assert label(("not", ("pred", "is_nan", ("st", "b"), "double", [], ""))).startswith("deliberate:")
    assert label(("pred", "is_null", ("b",), "float", [], "")) == "plan: x"
    assert label(("not", nested)) == "plan: x"
    # every extra file holds a selected row: Java lost rows
    assert label(plain, selected={2}).startswith("reference:")
    assert label(plain, selected={3}) == "plan: x"
