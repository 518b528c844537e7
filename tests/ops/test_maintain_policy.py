"""The policy of `icectl maintain` (icectl/ops/maintain/maintain_policy.py): every key checked,
resolved from the policy mapping over the table's properties over the defaults, and documented."""

from __future__ import annotations

from pathlib import Path

import pytest

from icectl.errors import InvalidInput
from icectl.ops.maintain.maintain_policy import MAINTAIN_KEYS, MAINTAIN_PREFIX, STEPS, policy_from_json, read_maintain_policy

ROOT = Path(__file__).resolve().parents[2]


def test_sources_win_in_order() -> None:
    props = {"icectl.maintain.orphans.older-than": "7d", "icectl.maintain.compact.min-input-files": "3"}
    over = {"icectl.maintain.compact.min-input-files": "2", "write.target-file-size-bytes": "1048576"}
    p = read_maintain_policy(props, over)
    assert p["orphans.older-than"] == "7d" and p.sources["orphans.older-than"] == "table-property"
    assert p["compact.min-input-files"] == 2 and p.sources["compact.min-input-files"] == "policy"
    assert p["expire.older-than"] is None and p.sources["expire.older-than"] == "default"
    assert p.sources["compact.enabled"] == "default" and read_maintain_policy({})["orphans.older-than"] == "3d"
    assert p["compact.min-input-files"] == 2 and p["compact-deletes.min-input-files"] == 5
    assert p.overrides == {"write.target-file-size-bytes": "1048576"}  # (handed on to health)
    assert all(p.enabled(s) for s in STEPS)


@pytest.mark.parametrize("over,argument", [
    ({"icectl.maintain.nope": "1"}, "policy"),
    ({"unrelated.property": "1"}, "policy"),
    ({"icectl.maintain.expire.enabled": "maybe"}, "policy"),
    ({"icectl.maintain.compact.min-input-files": "0"}, "policy"),
    ({"icectl.maintain.expire.older-than": "soon"}, "policy"),
    ({"icectl.health.max-deleted-row-share": "a lot"}, "policy"),
])
def test_every_key_and_value_of_a_policy_is_checked(over: dict, argument: str) -> None:
    with pytest.raises(InvalidInput) as e:
        read_maintain_policy({}, over, origin="p.json")
    assert next(iter(over)) in str(e.value) and "p.json" in str(e.value)
    assert e.value.argument == argument


def test_table_properties_of_ours_are_checked_too() -> None:
    for props in ({"icectl.maintain.compact.min-input": "3"}, {"icectl.maintain.compact.enabled": "no"},
                  {"write.target-file-size-bytes": "big"}):
        with pytest.raises(InvalidInput) as e:
            read_maintain_policy(props)
        assert next(iter(props)) in str(e.value) and e.value.argument is None  # (not the file's)
    read_maintain_policy({"write.format.default": "parquet", "icectl.other": "x"})  # others are not ours


def test_json_values() -> None:
    assert policy_from_json({"a": True, "b": 3, "c": "x", "d": 0.5}, "f") == {"a": "true", "b": "3", "c": "x",
                                                                            "d": "0.5"}
    for bad in ([1], {"a": None}, {"a": {"b": 1}}, "text"):
        with pytest.raises(InvalidInput):
            policy_from_json(bad, "f")


def test_every_key_is_documented() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    man = (ROOT / "man" / "icectl.1").read_text(encoding="utf-8").replace("\\-", "-")
    for name in MAINTAIN_KEYS:
        documented = name if not name.endswith(".enabled") else "<step>.enabled"
        assert MAINTAIN_PREFIX + documented in readme, name
        short = "\\fI<step>\\fR.enabled" if name.endswith(".enabled") else name
        assert short in man, name
