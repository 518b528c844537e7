"""Times given as text, parsed in one place for every caller that takes one.

It sits in the bottom layer so that planning (``scan``: a scan's as-of time) and operations
(``ops``: retention cut-offs, rollback to a time) share it; the operations and the CLI import
it from here. Every option naming a point in time
(``--older-than`` of expire and orphans, ``--as-of`` of plan and scan, ``--to-timestamp`` of
snapshot rollback) goes through :func:`parse_time_ms` and accepts the same forms, documented in
the README:

* an ISO-8601 timestamp: ``2024-06-01T12:00:00Z``, ``2024-06-01 12:00:00.250``, with ``Z`` or an
  offset such as ``+02:00``, or without a zone, read as UTC (the zone Iceberg stores snapshot
  times in, so the same text means the same instant on every machine); a date alone
  (``2024-06-01``) is midnight UTC;
* epoch milliseconds: only digits, at least 12 of them (``1717243200000``; the smallest is
  ``100000000000``, 1973-03-03). A shorter bare number (``7``, ``20240601``) is refused rather
  than read as a moment in the first years after 1970: it is almost always a duration without
  its unit or a compact date, and taking it as epoch milliseconds would make ``--older-than 7``
  a silent no-op;
* a duration ago: a number and a unit, ``ms``, ``s``, ``m`` (minutes), ``h``, ``d``, ``w``
  (``7d``, ``36h``, ``90m``, ``30s``, ``2w``, ``1.5h``; units combine: ``1d12h``), meaning that
  long before now.

Options naming a length of time (``--max-ref-age``, ``--max-snapshot-age``) take durations
through :func:`parse_duration_ms`. A bad value is an InvalidInput (exit 2) whose one-line
message repeats what was typed and names the accepted forms; the caller passes the option's
name, so this module knows nothing about flags.
"""

from __future__ import annotations

import re
import time
from datetime import datetime, timezone

from icectl.errors import InvalidInput

__all__ = ["parse_time_ms", "parse_duration_ms", "parse_timestamp_ms", "parse_cutoff", "now_ms", "MIN_EPOCH_MS",
           "TIME_FORMS", "DURATION_FORMS", "format_ms"]

_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}
_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)", re.I)
_DURATION = re.compile(r"^\s*(?:\d+(?:\.\d+)?\s*(?:ms|s|m|h|d|w)\s*)+$", re.I)

DURATION_FORMS = "a number and a unit ms, s, m, h, d or w (e.g. 7d, 36h, 90m, 30s, 2w, 1d12h)"
TIME_FORMS = ("an ISO-8601 timestamp (2024-06-01T12:00:00Z; UTC when no zone is given; or a date, "
              "2024-06-01), epoch milliseconds of 12 or more digits (1717243200000) or a duration ago "
              "(7d, 36h, 90m, 30s, 2w)")
# a bare number is epoch milliseconds only from here on (12 digits, 1973-03-03T09:46:40Z)
MIN_EPOCH_MS = 10**11


def format_ms(ms: int) -> str:
    """Epoch milliseconds as an ISO-8601 UTC time (``2024-06-01T12:00:00Z``, milliseconds shown
    only when there are any), the form messages use for a time the user typed."""
    try:
        dt = datetime.fromtimestamp(ms / 1000.0, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return f"{ms} ms"
    text = dt.strftime("%Y-%m-%dT%H:%M:%S")
    if ms % 1000:
        text += f".{ms % 1000:03d}"
    return text + "Z"


def now_ms() -> int:
    """The current time as epoch milliseconds: the one clock of commits and time arguments."""
    return int(time.time() * 1000)


def _echo(text: str | None) -> str:
    """What the user typed, quoted, on one line."""
    if text is None:
        return "nothing"
    return f"'{text}'" if text.isprintable() else repr(text)


def is_duration(text: str | None) -> bool:
    return bool(_DURATION.match(text or ""))


def parse_duration_ms(text: str | None, what: str = "duration") -> int:
    """Milliseconds of a duration such as ``7d``, ``36h``, ``90m``, ``1d12h``."""
    if text is None or not is_duration(text):
        raise InvalidInput(f"invalid {what} {_echo(text)}: expected {DURATION_FORMS}")
    total = 0.0
    for number, unit in _PART.findall(text):
        total += float(number) * _UNITS_MS[unit.lower()]
    return int(round(total))


def _iso_ms(raw: str) -> int | None:
    iso = raw[:-1] + "+00:00" if raw.endswith(("Z", "z")) else raw
    try:
        dt = datetime.fromisoformat(iso)
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(round(dt.timestamp() * 1000))


def _epoch_ms(raw: str, text: str | None, what: str, forms: str) -> int | None:
    """Epoch milliseconds of bare ASCII digits (None when ``raw`` is not only digits); a number
    below :data:`MIN_EPOCH_MS` is refused as ambiguous."""
    if not (raw.isascii() and raw.isdigit()):
        return None
    ms = int(raw)
    if ms < MIN_EPOCH_MS:
        raise InvalidInput(f"invalid {what} {_echo(text)}: a bare number is taken as epoch milliseconds "
                           f"only from 12 digits on ({MIN_EPOCH_MS}); expected {forms}")
    return ms


def parse_timestamp_ms(text: str | None, what: str = "timestamp") -> int:
    """Epoch milliseconds of ISO-8601 text (UTC when no zone is given) or of epoch-millis digits
    (12 or more)."""
    forms = ("an ISO-8601 timestamp (2024-06-01T12:00:00Z; UTC when no zone is given; or a date, "
             "2024-06-01) or epoch milliseconds of 12 or more digits (1717243200000)")
    raw = (text or "").strip()
    got = _epoch_ms(raw, text, what, forms)
    if got is None:
        got = _iso_ms(raw) if raw else None
    if got is None:
        raise InvalidInput(f"invalid {what} {_echo(text)}: expected {forms}")
    return got


def parse_time_ms(text: str | None, what: str = "time", now: int | None = None) -> int:
    """A point in time as epoch milliseconds: a timestamp, epoch millis, or a duration before
    ``now`` (default: the current time)."""
    if text is not None and is_duration(text):
        return (now if now is not None else now_ms()) - parse_duration_ms(text, what)
    raw = (text or "").strip()
    got = _epoch_ms(raw, text, what, TIME_FORMS)
    if got is None:
        got = _iso_ms(raw) if raw else None
    if got is None:
        raise InvalidInput(f"invalid {what} {_echo(text)}: expected {TIME_FORMS}")
    return got


# the name the retention commands were written against; the same function
parse_cutoff = parse_time_ms
