"""spec/timetext: the one parser of times given on the command line (the operations and the CLI import it directly)."""

from __future__ import annotations

import pytest

from icectl.errors import InvalidInput
from icectl.spec.timetext import DURATION_FORMS, TIME_FORMS, parse_duration_ms, parse_time_ms

NOW = 1_700_000_000_000


@pytest.mark.parametrize("text, ms", [
    ("2023-11-14T22:13:20Z", NOW),
    ("2023-11-14T22:13:20z", NOW),
    ("2023-11-14T22:13:20", NOW),  # no zone: UTC
    ("2023-11-14 22:13:20", NOW),
    ("2023-11-14T23:13:20+01:00", NOW),
    ("2023-11-14T17:13:20-05:00", NOW),
    ("2023-11-14T22:13:20.250Z", NOW + 250),
    ("2023-11-14T22:13", NOW - 20_000),
    ("2023-11-14", 1_699_920_000_000),  # a date: midnight UTC
    (" 2023-11-14 ", 1_699_920_000_000),
    ("1700000000000", NOW),  # epoch milliseconds
    ("100000000000", 100_000_000_000),  # the smallest bare number taken as epoch millis
    ("7d", NOW - 7 * 86_400_000),  # durations count back from now
    ("36h", NOW - 36 * 3_600_000),
    ("90m", NOW - 90 * 60_000),
    ("30s", NOW - 30_000),
    ("2w", NOW - 14 * 86_400_000),
    ("1d12h", NOW - 36 * 3_600_000),
    ("1.5h", NOW - 90 * 60_000),
    ("250ms", NOW - 250),
    ("7D", NOW - 7 * 86_400_000),
])
def test_every_form_of_a_point_in_time(text: str, ms: int) -> None:
    assert parse_time_ms(text, "--x", now=NOW) == ms


@pytest.mark.parametrize("bad", ["", " ", "yesterday", "-7d", "7 days", "7x", "d7", "2023-13-01",
                                 "2023-11-14T25:00", "1.5.2024", "now", "7d ago", "2023-11-14Tfoo",
                                 "line\nbreak", "1e3"])
def test_bad_points_in_time_echo_the_input_and_name_the_forms(bad: str) -> None:
    with pytest.raises(InvalidInput) as e:
        parse_time_ms(bad, "--as-of", now=NOW)
    msg = str(e.value)
    assert "\n" not in msg
    shown = repr(bad) if not bad.isprintable() else f"'{bad}'"
    assert msg == f"invalid --as-of {shown}: expected {TIME_FORMS}"


@pytest.mark.parametrize("bare", ["7", "0", "30", "20240601", "1717243200", "99999999999", " 7 "])
def test_short_bare_numbers_are_refused_as_ambiguous(bare: str) -> None:
    """A bare number under 12 digits is a duration without its unit, a compact date or epoch
    seconds far more often than a moment of 1970-1973: refused, naming the forms."""
    from icectl.spec.timetext import parse_timestamp_ms

    for parse, durations in ((lambda t: parse_time_ms(t, "--older-than", now=NOW), True),
                             (lambda t: parse_timestamp_ms(t, "--older-than"), False)):
        with pytest.raises(InvalidInput) as e:
            parse(bare)
        msg = str(e.value)
        assert "\n" not in msg
        assert msg.startswith(f"invalid --older-than '{bare}': a bare number is taken as epoch "
                              "milliseconds only from 12 digits on (100000000000); expected ")
        assert "2024-06-01" in msg and "1717243200000" in msg
        assert ("7d" in msg) == durations


def test_non_ascii_digits_are_not_epoch_millis() -> None:
    with pytest.raises(InvalidInput, match="expected"):
        parse_time_ms("\u0661" * 13, "--as-of", now=NOW)


@pytest.mark.parametrize("text, ms", [("7d", 7 * 86_400_000), ("36h", 129_600_000), ("90m", 5_400_000),
                                      ("30s", 30_000), ("2w", 1_209_600_000), ("1d 12h", 129_600_000)])
def test_durations(text: str, ms: int) -> None:
    assert parse_duration_ms(text, "--max-ref-age") == ms


@pytest.mark.parametrize("bad", ["", "7", "2024-01-01", "1700000000000", "-1d", "7 days"])
def test_bad_durations(bad: str) -> None:
    with pytest.raises(InvalidInput) as e:
        parse_duration_ms(bad, "--max-ref-age")
    assert str(e.value) == f"invalid --max-ref-age '{bad}': expected {DURATION_FORMS}"


@pytest.mark.parametrize("text", ["2023-11-14T22:13:20Z", "2023-11-14 22:13:20", "2023-11-14",
                                  "2023-11-14T23:13:20+01:00", "1700000000000", "7d"])
def test_scan_as_of_is_the_same_parser(text, monkeypatch) -> None:
    """Planning's as-of time (scan layer, which may not import ops) is parsed by the same code."""
    from icectl.scan import plan_setup
    from icectl.spec import timetext

    monkeypatch.setattr(timetext, "now_ms", lambda: NOW)
    assert plan_setup.parse_as_of(text) == parse_time_ms(text, now=NOW)
    with pytest.raises(InvalidInput, match="as-of time 'yesterday'"):
        plan_setup.parse_as_of("yesterday")
