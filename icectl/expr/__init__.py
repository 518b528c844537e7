"""Filter expressions: parsing, binding, projections and evaluators (pure; no I/O)."""

from icectl.expr.expressions import (  # first: binding re-exports through it
    FALSE,
    TRUE,
    And,
    BoundPredicate,
    Expression,
    Literal,
    Not,
    Operation,
    Or,
    Predicate,
    and_,
    bind,
    not_,
    or_,
    referenced_field_ids,
    rewrite_not,
)
from icectl.expr.evaluators import (
    ManifestEvaluator,
    MetricsEvaluator,
    ResidualEvaluator,
    StrictMetricsEvaluator,
    evaluate_row,
)
from icectl.expr.parser import FILTER_HELP, parse_filter
from icectl.expr.projection import inclusive_projection, strict_projection

__all__ = [
    "ManifestEvaluator", "MetricsEvaluator", "ResidualEvaluator", "StrictMetricsEvaluator",
    "evaluate_row", "FALSE", "TRUE", "And", "BoundPredicate", "Expression", "Literal", "Not",
    "Operation", "Or", "Predicate", "and_", "bind", "not_", "or_", "referenced_field_ids",
    "rewrite_not", "FILTER_HELP", "parse_filter", "inclusive_projection", "strict_projection",
]
