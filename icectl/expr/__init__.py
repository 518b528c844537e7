"""Filter expressions: parsing, binding, projections and evaluators (pure; no I/O).

Layout: ``parser`` (text -> unbound tree), ``expressions`` (the tree, NOT elimination),
``rendering`` (values and names as filter text), ``binding`` (tree -> bound to a schema),
``projection`` (row filters -> partition filters), ``visitor`` (the one iterative walk every pass
uses), ``ordering`` (the one value order and ``in`` limit) and one module per evaluator --
``eval_rows``, ``eval_manifest``, ``eval_metrics``, ``eval_strict``, ``eval_residual`` -- each
holding its scalar form (with reasons for ``plan --explain``) beside its columnar form.
"""

from icectl.expr.binding import bind
from icectl.expr.expressions import (
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
