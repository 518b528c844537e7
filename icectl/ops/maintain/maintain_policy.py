"""The policy of ``icectl maintain``: which steps may run and with which settings (pure, no I/O).

A policy is a mapping of property keys to values, read from the table's properties and, over
them, from a policy mapping the caller gives (a JSON file on the command line). Three families of
keys are accepted in a policy mapping:

* Iceberg's own table properties that the health thresholds read
  (``write.target-file-size-bytes``, ``commit.manifest.target-size-bytes``,
  ``history.expire.max-snapshot-age-ms`` ...: :data:`icectl.ops.health.policy.ICEBERG_KEYS`);
* the health thresholds ``icectl.health.*`` (:data:`icectl.ops.health.policy.HEALTH_KEYS`):
  a step runs only when health finds its threshold crossed;
* the maintenance command's own keys, ``icectl.maintain.*`` (:data:`MAINTAIN_KEYS` below).

Every key and value is checked before anything is read or written: a key of none of these
families in a policy mapping, an ``icectl.maintain.*`` key the command does not know (also as a
table property: it is this command's namespace) or a value that does not parse is refused with
:class:`~icectl.errors.InvalidInput` naming the key (and where it came from). The values of the
Iceberg and health keys are checked by health's own reading (one home per rule); a problem it
reports is refused here too, so maintenance never runs on thresholds it could not read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from icectl.errors import InvalidInput

__all__ = ["STEPS", "MAINTAIN_PREFIX", "MAINTAIN_KEYS", "MaintainPolicy", "read_maintain_policy",
           "policy_from_json"]

# the steps, in the order they run
EXPIRE, ORPHANS, COMPACT_DELETES, COMPACT, REWRITE_MANIFESTS = (
    "expire", "orphans", "compact-deletes", "compact", "rewrite-manifests")
STEPS = (EXPIRE, ORPHANS, COMPACT_DELETES, COMPACT, REWRITE_MANIFESTS)

MAINTAIN_PREFIX = "icectl.maintain."


def _bool(text: str) -> bool:
    v = text.strip().lower()
    if v not in ("true", "false"):
        raise ValueError("not true or false")
    return v == "true"


def _count(text: str) -> int:
    v = int(text.strip())
    if v < 1:
        raise ValueError("not at least 1")
    return v


def _time(text: str) -> str:
    from icectl.spec.timetext import parse_time_ms

    parse_time_ms(text, "time", now=0)  # the forms every time option takes; resolved at run time
    return text.strip()


def _defaults() -> dict[str, Any]:
    from icectl.ops.maintain.compact_rules import MIN_INPUT_FILES_DEFAULT as COMPACT_MIN
    from icectl.ops.maintain.compact_deletes import MIN_INPUT_FILES_DEFAULT as DELETES_MIN

    from icectl.ops.maintain.orphans import DEFAULT_OLDER_THAN_MS

    return {"compact.min-input-files": COMPACT_MIN, "compact-deletes.min-input-files": DELETES_MIN,
            "orphans.older-than": f"{DEFAULT_OLDER_THAN_MS // 86_400_000}d"}  # (the orphans command's)


# name (below icectl.maintain.) -> (parser, default, what the value is, what it does)
MAINTAIN_KEYS: dict[str, tuple[Callable[[str], Any], Any, str, str]] = {
    **{f"{step}.enabled": (_bool, True, "true or false",
                           f"whether the {step} step may run at all") for step in STEPS},
    "expire.older-than": (_time, None, "a timestamp or a duration back from now (7d, 36h)",
                          "the expiry cut-off; default: history.expire.max-snapshot-age-ms"),
    "orphans.older-than": (_time, None, "a timestamp or a duration back from now (7d, 36h)",
                           "only files modified before it are orphans (as the orphans command)"),
    "compact.min-input-files": (_count, None, "an integer of at least 1",
                                "a partition's file group is compacted from this many files"),
    "compact-deletes.min-input-files": (_count, None, "an integer of at least 1",
                                        "a partition's position delete files are merged from this many"),
}


@dataclass(frozen=True)
class MaintainPolicy:
    """The resolved policy: the command's own settings by name (below ``icectl.maintain.``),
    where each came from (``policy``, ``table-property`` or ``default``), and the overrides
    (property keys to values) handed on to health's thresholds."""

    settings: dict[str, Any]
    sources: dict[str, str]
    overrides: dict[str, str]

    def __getitem__(self, name: str) -> Any:
        return self.settings[name]

    def enabled(self, step: str) -> bool:
        return bool(self.settings[f"{step}.enabled"])

    def to_json(self) -> dict[str, Any]:
        return {
            "settings": {MAINTAIN_PREFIX + k: {"value": v, "source": self.sources[k]}
                         for k, v in sorted(self.settings.items())},
            "overrides": dict(sorted(self.overrides.items())),
        }


def _known_threshold_keys() -> set[str]:
    from icectl.ops.health.policy import HEALTH_KEYS, ICEBERG_KEYS

    return {v[0] for v in HEALTH_KEYS.values()} | {v[0] for v in ICEBERG_KEYS.values()}


def policy_from_json(data: Any, origin: str) -> dict[str, str]:
    """A policy mapping from parsed JSON (an object of keys to strings, numbers or booleans);
    ``origin`` names where it came from in messages."""
    if not isinstance(data, dict):
        raise InvalidInput(f"the policy in {origin} is not a JSON object of property keys to values",
                           argument="policy")
    out: dict[str, str] = {}
    for key, value in data.items():
        if isinstance(value, bool):
            out[key] = "true" if value else "false"
        elif isinstance(value, (int, float, str)):
            out[key] = str(value)
        else:
            raise InvalidInput(f"the value of {key!r} in {origin} is not a string, number or boolean",
                               argument="policy")
    return out


def _parse(key: str, raw: str, origin: str, argument: str | None) -> Any:
    parser, _default, what, _doc = MAINTAIN_KEYS[key[len(MAINTAIN_PREFIX):]]
    try:
        return parser(raw)
    except (ValueError, InvalidInput):
        raise InvalidInput(f"{key}={raw!r} ({origin}) is not {what}", argument=argument) from None


def read_maintain_policy(properties: Mapping[str, str], overrides: Mapping[str, str] | None = None,
                         origin: str = "the policy") -> MaintainPolicy:
    """Check and resolve the policy of a table with these ``properties``; ``overrides`` (a policy
    mapping, from ``origin``) win over them. InvalidInput for the first key or value refused."""
    from icectl.ops.health.policy import read_policy

    over = dict(overrides or {})
    known = _known_threshold_keys()
    for key in over:
        if key.startswith(MAINTAIN_PREFIX):
            if key[len(MAINTAIN_PREFIX):] not in MAINTAIN_KEYS:
                raise InvalidInput(f"unknown policy key {key!r} in {origin} (the icectl.maintain keys: "
                                   + ", ".join(MAINTAIN_PREFIX + k for k in MAINTAIN_KEYS) + ")",
                                   argument="policy")
        elif key not in known:
            raise InvalidInput(f"unknown policy key {key!r} in {origin} (a policy holds icectl.maintain.*, "
                               "icectl.health.* and the Iceberg table properties the thresholds read)",
                               argument="policy")
    for key in properties:
        if key.startswith(MAINTAIN_PREFIX) and key[len(MAINTAIN_PREFIX):] not in MAINTAIN_KEYS:
            raise InvalidInput(f"unknown table property {key!r} (the icectl.maintain keys: "
                               + ", ".join(MAINTAIN_PREFIX + k for k in MAINTAIN_KEYS) + ")")
    defaults = _defaults()
    settings: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for name, (_parser, default, _what, _doc) in MAINTAIN_KEYS.items():
        key = MAINTAIN_PREFIX + name
        if key in over:
            settings[name], sources[name] = _parse(key, over[key], origin, "policy"), "policy"
        elif key in properties:
            settings[name], sources[name] = _parse(key, properties[key], "a table property", None), "table-property"
        else:
            settings[name], sources[name] = defaults.get(name, default), "default"
    thresholds = {k: v for k, v in over.items() if not k.startswith(MAINTAIN_PREFIX)}
    problems = read_policy({}, thresholds).problems
    if problems:  # a value of the policy mapping
        raise InvalidInput(f"{problems[0]} ({origin})".replace("; using the default", ""), argument="policy")
    problems = read_policy(properties).problems
    if problems:
        raise InvalidInput(f"{problems[0]} (a table property)".replace("; using the default", ""))
    return MaintainPolicy(settings, sources, thresholds)
