"""A fuzzer for the filter language: random token soups and random, long and deep well-formed
filters go through parse, bind, NOT elimination, projections, every evaluator and printing.
The only errors allowed are InvalidInput and NotFound (an unknown column), each a one-line
message; nothing may hang (a deadline per
example). Fixed seed, bounded examples."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from icectl.errors import InvalidInput, NotFound
from icectl.expr.binding import bind
from icectl.expr.evaluators import (
    ManifestEvaluator,
    MetricsEvaluator,
    ResidualEvaluator,
    StrictMetricsEvaluator,
    evaluate_row,
)
from icectl.expr.expressions import rewrite_not
from icectl.expr.parser import parse_filter
from icectl.expr.projection import inclusive_projection, strict_projection
from icectl.spec.manifests import DATA, DataFile, FieldSummary, ManifestFile
from icectl.spec.partitioning import PartitionField, PartitionSpec
from icectl.spec.schema import Schema
from icectl.spec.transforms import DAY, IDENTITY, BucketTransform, TruncateTransform
from icectl.spec.types import (
    DOUBLE,
    LONG,
    STRING,
    TIMESTAMPTZ,
    DecimalType,
    NestedField,
)

SCHEMA = Schema((NestedField(1, "id", LONG, False), NestedField(2, "s", STRING, False),
                 NestedField(3, "x", DOUBLE, False), NestedField(4, "ts", TIMESTAMPTZ, False),
                 NestedField(5, "d", DecimalType(38, 2), False),
                 NestedField(6, "catégorie", STRING, False)))
SPEC = PartitionSpec(0, (PartitionField(1, 1000, "id_bucket", BucketTransform(4)),
                         PartitionField(2, 1001, "s_trunc", TruncateTransform(2)),
                         PartitionField(4, 1002, "ts_day", DAY),
                         PartitionField(5, 1003, "d", IDENTITY)))
PTYPE = SPEC.partition_type(SCHEMA)

TOKENS = ["id", "s", "x", "ts", "d", "catégorie", "ID", "nope", "`s`", '"id"', "=", "==", "!=",
          "<>", "<", "<=", ">", ">=", "(", ")", ",", ".", "-", "+", "and", "or", "not", "in",
          "is", "null", "nan", "between", "like", "starts", "with", "true", "false", "1", "-7",
          "1.50", "1e3", "2.5e-1", "'a'", "'it''s'", "'2024-01-02'", "date", "timestamptz",
          "timestamp", "uuid", "double", "'Infinity'", "X'0a'", "'ab%'", "'😀'", "'",
          "12345678901234567890123456789012345678", "\t", "\n", "é", "类", "~", "%", "$"]
COLUMNS = {"id": ["0", "-3", "9223372036854775807", "99999999999999999999"],
           "s": ["'a'", "'ab'", "'\U0001F600'", "''"],
           "x": ["1.5", "-0.0", "1e300", "double 'inf'"],
           "ts": ["'2024-01-02 10:00:00+00:00'", "timestamptz '1969-12-31 23:59:59+00:00'"],
           "d": ["123456789012345678901234567890123456.78", "-0.01", "0"],
           "catégorie": ["'x'", "'é'"]}


@st.composite
def predicate(draw) -> str:
    col = draw(st.sampled_from(sorted(COLUMNS)))
    vals = COLUMNS[col]
    kind = draw(st.sampled_from(["cmp", "in", "null", "between", "like"]))
    if kind == "cmp":
        op = draw(st.sampled_from(["=", "==", "!=", "<>", "<", "<=", ">", ">="]))
        return f"{col} {op} {draw(st.sampled_from(vals))}"
    if kind == "in":
        n = draw(st.sampled_from([1, 3, 250]))
        items = ", ".join(draw(st.sampled_from(vals)) for _ in range(n))
        return f"{col} {draw(st.sampled_from(['in', 'not in']))} ({items})"
    if kind == "null":
        return f"{col} is {draw(st.sampled_from(['null', 'not null', 'nan', 'not nan']))}"
    if kind == "between":
        return f"{col} between {draw(st.sampled_from(vals))} and {draw(st.sampled_from(vals))}"
    return f"{col} {draw(st.sampled_from(['like', 'not like']))} 'a%'"


@st.composite
def well_formed(draw) -> str:
    """Random trees, long chains and deep nesting."""
    shape = draw(st.sampled_from(["tree", "chain", "deep", "nots"]))
    if shape == "chain":
        op = draw(st.sampled_from([" or ", " and "]))
        return op.join(draw(predicate()) for _ in range(draw(st.integers(100, 400))))
    if shape == "deep":
        depth = draw(st.integers(100, 600))
        text = draw(predicate())
        for _ in range(depth):
            text = f"({draw(predicate())} {draw(st.sampled_from(['or', 'and']))} {text})"
        return text
    if shape == "nots":
        return "not " * draw(st.integers(1, 1200)) + f"({draw(predicate())})"
    parts = [draw(predicate()) for _ in range(draw(st.integers(1, 8)))]
    text = parts[0]
    for p in parts[1:]:
        op = draw(st.sampled_from(["and", "or"]))
        text = draw(st.sampled_from([f"{text} {op} {p}", f"({text}) {op} not ({p})"]))
    return text


soup = st.lists(st.sampled_from(TOKENS), max_size=40).map(" ".join)
mangled = st.tuples(well_formed(), st.integers(0, 10**6), st.sampled_from(TOKENS)).map(
    lambda t: t[0][:t[1] % (len(t[0]) + 1)] + t[2] + t[0][t[1] % (len(t[0]) + 1):])

FILE = DataFile(DATA, "f", "PARQUET", (1, "ab", 19723, None), 10, 100,
                value_counts={1: 10, 3: 10}, null_value_counts={1: 0, 3: 1},
                nan_value_counts={3: 2}, lower_bounds={1: (1).to_bytes(8, "little", signed=True)},
                upper_bounds={1: (9).to_bytes(8, "little", signed=True)})
MANIFEST = ManifestFile("m", 1, 0, partitions=(FieldSummary(False, None, b"\x01\0\0\0", b"\x03\0\0\0"),
                                               FieldSummary(True), FieldSummary(False),
                                               FieldSummary(True)))


def _every_pass(text: str) -> None:
    try:
        e = parse_filter(text)
        b = rewrite_not(bind(e, SCHEMA))
    except (InvalidInput, NotFound) as err:
        assert "\n" not in str(err)
        return
    inc = inclusive_projection(b, SPEC, SCHEMA)
    strict = strict_projection(b, SPEC, SCHEMA)
    ManifestEvaluator(inc, PTYPE).eval(MANIFEST)
    MetricsEvaluator(b).eval(FILE)
    StrictMetricsEvaluator(b).eval(FILE)
    ResidualEvaluator(SPEC, b, SCHEMA).residual_for((1, "ab", 19723, None))
    evaluate_row(b, {1: 5, 2: "abc", 3: float("nan")})
    for x in (e, b, inc, strict):
        str(x)
    assert parse_filter(str(e)) == e  # printing round-trips


@seed(20261123)
@settings(max_examples=40, deadline=timedelta(seconds=20),
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.one_of(soup, well_formed(), mangled))
def test_no_crash_no_hang(text: str) -> None:
    _every_pass(text)
