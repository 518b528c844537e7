"""Time arguments of operations: the one parser, :mod:`icectl.spec.timetext`, under the name the
operations and the CLI import it by (it lives in the bottom layer so planning shares it)."""

from __future__ import annotations

from icectl.spec.timetext import (
    DURATION_FORMS,
    TIME_FORMS,
    is_duration,
    now_ms,
    parse_cutoff,
    parse_duration_ms,
    parse_time_ms,
    parse_timestamp_ms,
)

__all__ = ["parse_time_ms", "parse_duration_ms", "parse_timestamp_ms", "parse_cutoff", "now_ms",
           "is_duration", "TIME_FORMS", "DURATION_FORMS"]
