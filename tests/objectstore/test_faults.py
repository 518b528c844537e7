"""Faults on each object store's wire (a proxy in front of its emulator, see conftest.py): the
response of a commit's conditional create lost after the store made the object, a 503 instead
of an answer, a connection reset before the request reached the store; and, once, an outcome
that reading back cannot tell. Counted as for S3: no acknowledged commit lost, rows exact, an
exit-12 commit settled by reading the table back (it is there), and nothing deleted on an
unknown outcome (`check --deep` finds every file of every snapshot)."""

from __future__ import annotations

import json
import re

import pytest

from tests.objectstore.race_harness import check_race, figures, race

_VERSION = re.compile(r"metadata/v\d+\.metadata\.json$")


class Faults:
    """A proxy rule: every ``every``-th first conditional create of a version file gets the next
    fault of ``kinds`` (a retry of the same name passes); with ``unreadable``, reads of a faulted
    version file are refused (403) until ``clear``."""

    def __init__(self, kinds: tuple[str, ...], every: int = 1, unreadable: bool = False):
        self.kinds, self.every, self.unreadable = kinds, every, unreadable
        self.created: set[str] = set()
        self.hidden: set[str] = set()
        self.injected: list[str] = []

    def __call__(self, req) -> str | None:
        name = req.object_name()
        if not _VERSION.search(name):
            return None
        if req.conditional_create():
            if name in self.created:
                return None
            self.created.add(name)
            if len(self.created) % self.every:
                return None
            kind = self.kinds[len(self.injected) % len(self.kinds)]
            self.injected.append(kind)
            if self.unreadable:
                self.hidden.add(name)
            return kind
        if req.method in ("GET", "HEAD") and any(name.endswith(h.split("/metadata/")[-1]) and
                                                 h.split("/metadata/")[0].rsplit("/", 1)[-1] in name
                                                 for h in self.hidden):
            return "403"
        return None

    def clear(self) -> None:
        self.hidden.clear()


def _create(via, t: str) -> None:
    via.run("create", t, "--schema", "id long, v string")


def _csv(tmp_path, name: str, ids) -> str:
    p = tmp_path / f"{name}.csv"
    p.write_text("id,v\n" + "".join(f"{i},v{i}\n" for i in ids))
    return str(p)


def test_lost_responses_503s_and_resets_are_settled(store, proxied, tmp_path) -> None:
    via, proxy = proxied
    b = store.new_bucket()
    t = store.url(b, "db/t")
    _create(store, t)
    proxy.rule = rule = Faults(("lost", "503", "reset"))
    acked = []
    for k in range(3):
        r = json.loads(via.run("write", t, _csv(tmp_path, f"r{k}", range(k * 10, k * 10 + 10)), "--json").stdout)
        acked.append(r["snapshot-id"])
    assert rule.injected == ["lost", "503", "reset"]
    snaps = json.loads(store.run("inspect", "snapshots", t, "--json").stdout)
    assert [s["snapshot-id"] for s in snaps] == acked
    ids = sorted(json.loads(x)["id"] for x in store.run("scan", t, "--format", "jsonl").stdout.splitlines())
    assert ids == list(range(30))
    assert store.run("check", t, "--deep", check=False).returncode == 0


def test_an_outcome_nobody_can_tell_exits_12_and_keeps_every_file(store, proxied, tmp_path) -> None:
    via, proxy = proxied
    b = store.new_bucket()
    t = store.url(b, "db/t")
    _create(store, t)
    store.run("write", t, _csv(tmp_path, "first", range(5)))
    proxy.rule = rule = Faults(("lost",), unreadable=True)
    r = via.run("write", t, _csv(tmp_path, "second", range(5, 9)), check=False)
    assert r.returncode == 12, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "cannot tell whether" in r.stderr, r.stderr
    assert rule.injected == ["lost"]
    rule.clear()
    # read back: the commit is there, whole, and nothing of it was deleted
    ids = sorted(json.loads(x)["id"] for x in via.run("scan", t, "--format", "jsonl").stdout.splitlines())
    assert ids == list(range(9))
    assert len(json.loads(via.run("inspect", "snapshots", t, "--json").stdout)) == 2
    check = via.run("check", t, "--deep", "--json", check=False)
    assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.parametrize("processes,commits", [pytest.param(8, 1), pytest.param(8, 5, marks=pytest.mark.slow)])
def test_racing_writers_through_faults_lose_nothing(store, proxied, processes, commits) -> None:
    via, proxy = proxied
    b = store.new_bucket()
    proxy.rule = rule = Faults(("lost", "503", "reset"), every=2)
    rep = race(via.url(b, "db/events"), via.fs_options, via.env, processes=processes, commits=commits)
    figures(store, rep, processes, commits)
    print(f"faults injected: {len(rule.injected)}")
    check_race(rep, allowed=(": exit 6:", ": exit 5:"))
    assert rule.injected, "no fault was injected"
    check = via.run("check", via.url(b, "db/events"), "--deep", check=False)
    assert check.returncode == 0, check.stdout + check.stderr
