"""The evaluators of bound filters, one module each, scalar and columnar forms side by side:

* :mod:`icectl.expr.eval_rows` -- rows (engine semantics) and partition tuples (the
  reference's ``Evaluator``);
* :mod:`icectl.expr.eval_manifest` -- manifests by partition field summaries;
* :mod:`icectl.expr.eval_metrics` -- files by column metrics, inclusive;
* :mod:`icectl.expr.eval_strict` -- files by column metrics, strict;
* :mod:`icectl.expr.eval_residual` -- residual filters per partition.

They share one walk (:mod:`icectl.expr.visitor`), one value order and one ``in`` limit
(:mod:`icectl.expr.ordering`). This module gathers their entry points.
"""

from icectl.expr.eval_manifest import ManifestEvaluator, manifests_might_match
from icectl.expr.eval_metrics import MetricsEvaluator, metrics_might_match
from icectl.expr.eval_residual import ResidualEvaluator
from icectl.expr.eval_rows import (
    evaluate_row,
    evaluate_rows,
    partition_matches,
    partitions_match,
)
from icectl.expr.eval_strict import StrictMetricsEvaluator, strict_metrics_match
from icectl.expr.ordering import IN_PREDICATE_LIMIT, value_key

__all__ = [
    "value_key", "IN_PREDICATE_LIMIT", "evaluate_row", "evaluate_rows",
    "partition_matches",
    "partitions_match", "ManifestEvaluator", "manifests_might_match", "MetricsEvaluator",
    "metrics_might_match", "StrictMetricsEvaluator", "strict_metrics_match", "ResidualEvaluator",
]
