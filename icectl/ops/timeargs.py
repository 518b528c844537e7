"""Times on the command line: durations (``7d``) and points in time (ISO-8601 or epoch millis).

Used by ``expire``, ``orphans``, ``snapshot rollback --to-timestamp`` and the ref retention
options. Rules, all documented in the README:

* a duration is a number and a unit: ``ms``, ``s``, ``m`` (minutes), ``h``, ``d``, ``w``
  (``90m``, ``36h``, ``7d``, ``1.5h``); units may be combined (``1d12h``);
* a point in time is epoch milliseconds (only digits, e.g. ``1718000000000``) or ISO-8601
  (``2024-06-01``, ``2024-06-01T12:00:00``, ``2024-06-01 12:00:00.250``, with ``Z`` or an
  offset such as ``+02:00``). A timestamp without a zone is read as UTC, the zone Iceberg
  stores snapshot times in, so the same text means the same instant on every machine.
* ``parse_cutoff`` accepts either: a duration means "that long before now".
"""

from __future__ import annotations

import re
import time
from datetime import datetime, timezone

from icectl.errors import InvalidInput

__all__ = ["parse_duration_ms", "parse_timestamp_ms", "parse_cutoff", "now_ms"]

_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}
_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)", re.I)
_DURATION = re.compile(r"^\s*(?:\d+(?:\.\d+)?\s*(?:ms|s|m|h|d|w)\s*)+$", re.I)


def now_ms() -> int:
    return int(time.time() * 1000)


def is_duration(text: str) -> bool:
    return bool(_DURATION.match(text or ""))


def parse_duration_ms(text: str, what: str = "duration") -> int:
    """Milliseconds of a duration such as ``7d``, ``36h``, ``90m``, ``1d12h``."""
    if text is None or not is_duration(text):
        raise InvalidInput(
            f"invalid {what} {text!r}: expected a number and a unit (ms, s, m, h, d, w), e.g. 7d or 36h")
    total = 0.0
    for number, unit in _PART.findall(text):
        total += float(number) * _UNITS_MS[unit.lower()]
    return int(round(total))


def parse_timestamp_ms(text: str, what: str = "timestamp") -> int:
    """Epoch milliseconds of ISO-8601 text (UTC when no zone is given) or of epoch-millis digits."""
    raw = (text or "").strip()
    if not raw:
        raise InvalidInput(f"empty {what}")
    if raw.isdigit():
        return int(raw)
    iso = raw
    if iso.endswith(("Z", "z")):
        iso = iso[:-1] + "+00:00"
    try:
        dt = datetime.fromisoformat(iso)
    except ValueError:
        raise InvalidInput(
            f"invalid {what} {text!r}: expected ISO-8601 (2024-06-01T12:00:00Z, zone optional, "
            "UTC when absent) or epoch milliseconds") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(round(dt.timestamp() * 1000))


def parse_cutoff(text: str, what: str = "--older-than", now: int | None = None) -> int:
    """A point in time from a timestamp, or from a duration counted back from ``now``."""
    if text is not None and is_duration(text):
        return (now if now is not None else now_ms()) - parse_duration_ms(text, what)
    return parse_timestamp_ms(text, what)
