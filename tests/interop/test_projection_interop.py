"""Projections against the reference: Iceberg Java's Projections.inclusive / strict.

Random filters on int, long, string and date columns partitioned by identity, bucket, truncate,
year, month and day are projected by icectl and by Java; both projections are evaluated on the
same partition tuples (values of real rows and values near the epoch) and must agree on every
tuple: not just sound, the same function.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from icectl.expr.evaluators import evaluate_row
from icectl.expr.expressions import (
    And,
    BoundPredicate,
    Expression,
    Not,
    Operation,
    Or,
    make_bound,
    not_,
)
from icectl.expr.projection import inclusive_projection, strict_projection
from icectl.spec.partitioning import PartitionField, PartitionSpec
from icectl.spec.schema import Schema
from icectl.spec.transforms import (
    DAY,
    IDENTITY,
    MONTH,
    YEAR,
    BucketTransform,
    TruncateTransform,
)
from icectl.spec.types import DATE, INT, LONG, STRING, NestedField

Op = Operation
SCHEMA = Schema((NestedField(1, "i", INT), NestedField(2, "l", LONG),
                 NestedField(3, "s", STRING), NestedField(4, "d", DATE)))
SPEC = PartitionSpec(0, (
    PartitionField(1, 1000, "i_bucket", BucketTransform(4)),
    PartitionField(1, 1001, "i_trunc", TruncateTransform(10)),
    PartitionField(2, 1002, "l", IDENTITY),
    PartitionField(3, 1003, "s_trunc", TruncateTransform(2)),
    PartitionField(3, 1004, "s_bucket", BucketTransform(3)),
    PartitionField(4, 1005, "d_year", YEAR),
    PartitionField(4, 1006, "d_month", MONTH),
    PartitionField(4, 1007, "d_day", DAY),
))
TYPES = {1: INT, 2: LONG, 3: STRING, 4: DATE}
NAMES = {1: "i", 2: "l", 3: "s", 4: "d"}
JAVA_METHOD = {
    Op.LT: "lessThan", Op.LT_EQ: "lessThanOrEqual", Op.GT: "greaterThan",
    Op.GT_EQ: "greaterThanOrEqual", Op.EQ: "equal", Op.NOT_EQ: "notEqual", Op.IN: "in",
    Op.NOT_IN: "notIn", Op.STARTS_WITH: "startsWith", Op.NOT_STARTS_WITH: "notStartsWith",
    Op.IS_NULL: "isNull", Op.NOT_NULL: "notNull",
}


def random_value(rng: random.Random, fid: int) -> Any:
    if fid == 1:
        return rng.randint(-45, 45)
    if fid == 2:  # beyond the int range, so that py4j hands Java a Long
        return 2**33 + rng.randint(-45, 45)
    if fid == 3:
        return "".join(rng.choice("abc") for _ in range(rng.randint(0, 3)))
    return rng.choice([-400, -366, -365, -32, -31, -1, 0, 1, 31, 59, 365, rng.randint(-800, 800)])


def random_predicate(rng: random.Random) -> Expression:
    fid = rng.choice(list(TYPES))
    ops = [Op.LT, Op.LT_EQ, Op.GT, Op.GT_EQ, Op.EQ, Op.NOT_EQ, Op.IN, Op.NOT_IN, Op.IS_NULL,
           Op.NOT_NULL]
    if fid == 3:
        ops += [Op.STARTS_WITH, Op.NOT_STARTS_WITH]
    op = rng.choice(ops)
    t = TYPES[fid]
    if op in (Op.IS_NULL, Op.NOT_NULL):
        return BoundPredicate(op, fid, NAMES[fid], t)
    if op in (Op.IN, Op.NOT_IN):
        vals = [random_value(rng, fid) for _ in range(rng.randint(2, 4))]
        return make_bound(op, fid, NAMES[fid], t, vals)
    return BoundPredicate(op, fid, NAMES[fid], t, (random_value(rng, fid),))


def random_filter(rng: random.Random, depth: int = 2) -> Expression:
    if depth == 0 or rng.random() < 0.5:
        return random_predicate(rng)
    kind = rng.choice(["and", "or", "not"])
    if kind == "not":
        return not_(random_filter(rng, depth - 1))
    left, right = random_filter(rng, depth - 1), random_filter(rng, depth - 1)
    return And(left, right) if kind == "and" else Or(left, right)


def to_java(jvm: Any, gateway: Any, e: Expression) -> Any:
    ex = jvm.org.apache.iceberg.expressions.Expressions
    if isinstance(e, And):
        return getattr(ex, "and")(to_java(jvm, gateway, e.left), to_java(jvm, gateway, e.right))
    if isinstance(e, Or):
        return getattr(ex, "or")(to_java(jvm, gateway, e.left), to_java(jvm, gateway, e.right))
    if isinstance(e, Not):
        return getattr(ex, "not")(to_java(jvm, gateway, e.child))
    assert isinstance(e, BoundPredicate), e
    method = getattr(ex, JAVA_METHOD[e.op])
    if e.op.is_unary:
        return method(e.name)
    if e.op.is_set:
        arr = gateway.new_array(jvm.java.lang.Object, len(e.literals))
        for k, v in enumerate(e.literals):
            arr[k] = v
        return method(e.name, arr)
    return method(e.name, e.literal)


@pytest.fixture(scope="module")
def java_side(spark: Any) -> dict[str, Any]:
    jvm = spark._jvm
    jschema = jvm.org.apache.iceberg.SchemaParser.fromJson(json.dumps(SCHEMA.to_json()))
    jspec = jvm.org.apache.iceberg.PartitionSpecParser.fromJson(jschema, json.dumps(SPEC.to_json()))
    return {"jvm": jvm, "gateway": spark.sparkContext._gateway, "spec": jspec}


def partition_tuples(rng: random.Random, n: int) -> list[dict[int, Any]]:
    out = []
    for _ in range(n):
        row = {fid: random_value(rng, fid) for fid in TYPES}
        out.append({pf.field_id: pf.transform.apply(row[pf.source_id], TYPES[pf.source_id])
                    for pf in SPEC.fields})
    return out


@pytest.mark.parametrize("strict", [False, True], ids=["inclusive", "strict"])
def test_projections_match_java(java_side: dict[str, Any], strict: bool) -> None:
    jvm, gateway, jspec = java_side["jvm"], java_side["gateway"], java_side["spec"]
    projections = jvm.org.apache.iceberg.expressions.Projections
    ptype = jspec.partitionType()
    rng = random.Random(20240102 + strict)
    tuples = partition_tuples(rng, 24)
    jtuples = []
    for tup in tuples:
        pd = jvm.org.apache.iceberg.PartitionData(ptype)
        for pos, pf in enumerate(SPEC.fields):
            pd.set(pos, tup[pf.field_id])
        jtuples.append(pd)
    mismatches = []
    for _ in range(120):
        f = random_filter(rng)
        ours = (strict_projection if strict else inclusive_projection)(f, SPEC, SCHEMA)
        projector = projections.strict(jspec) if strict else projections.inclusive(jspec)
        theirs = projector.project(to_java(jvm, gateway, f))
        evaluator = jvm.org.apache.iceberg.expressions.Evaluator(ptype, theirs, True)
        for tup, pd in zip(tuples, jtuples):
            if evaluate_row(ours, tup) != evaluator.eval(pd):
                mismatches.append((str(f), str(ours), theirs.toString(), tup))
                break
    assert not mismatches, mismatches[:3]
