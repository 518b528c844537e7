"""`icectl cache info|clear` and `plan --no-cache` run as a user runs them (subprocess): a warm
plan decodes no manifest and equals a cold one and one without the cache."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from clirun import icectl as run
from tests.cli.plan_support import append, make



def icectl(*args: str, cache: Path, **env: str) -> subprocess.CompletedProcess:
    e: dict[str, str | None] = {"ICECTL_CACHE_DIR": str(cache), **env}
    if "ICECTL_NO_CACHE" not in env:
        e["ICECTL_NO_CACHE"] = None
    return run(*args, env=e)



def make_table(tmp_path: Path) -> str:
    loc = make(tmp_path)
    for i, cat in enumerate("abc"):
        append(tmp_path, loc, f"{cat}.parquet", range(i * 10, i * 10 + 5), cat)
    return loc


def entries(cache: Path) -> list[Path]:
    d = cache / "manifests"
    return sorted(d.glob("*.mc")) if d.exists() else []


def test_warm_plan_equals_cold_and_uncached_and_reads_no_manifest(tmp_path) -> None:
    loc = make_table(tmp_path)
    cache = tmp_path / "cache"
    plan = ["plan", loc, "--filter", "id >= 10", "--json"]
    cold = icectl(*plan, cache=cache)
    assert cold.returncode == 0, cold.stderr
    assert len(entries(cache)) == 4  # one per manifest, one for the current manifest list
    warm = icectl(*plan, cache=cache)
    uncached = icectl(*plan, "--no-cache", cache=tmp_path / "other")
    assert warm.stdout == cold.stdout == uncached.stdout
    assert not (tmp_path / "other").exists()
    assert json.loads(warm.stdout)["summary"]["data-files-matched"] == 2

    # garbage of the same length and mtime in every manifest and manifest list: the warm plan
    # never opens them, a plan without the cache does and reports corrupt metadata
    for m in [*Path(loc, "metadata").glob("*-m0.avro"), *Path(loc, "metadata").glob("snap-*.avro")]:
        st = m.stat()
        m.write_bytes(b"\0" * st.st_size)
        os.utime(m, ns=(st.st_atime_ns, st.st_mtime_ns))
    again = icectl(*plan, cache=cache)
    assert again.returncode == 0 and again.stdout == cold.stdout, again.stderr
    bypass = icectl(*plan, cache=cache, ICECTL_NO_CACHE="1")
    assert bypass.returncode == 8, bypass.stderr
    scan = icectl("scan", loc, "--count", "--no-cache", cache=cache)
    assert scan.returncode == 8, scan.stderr


def test_cache_info_and_clear(tmp_path) -> None:
    loc = make_table(tmp_path)
    cache = tmp_path / "cache"
    info = icectl("cache", "info", "--json", cache=cache)
    assert info.returncode == 0, info.stderr
    assert json.loads(info.stdout) == {"directory": str(cache / "manifests"), "entries": 0,
                                       "total-bytes": 0, "max-bytes": 1 << 30, "enabled": True}
    assert icectl("scan", loc, "--count", cache=cache).returncode == 0
    assert icectl("plan", loc, cache=cache).returncode == 0
    info = json.loads(icectl("cache", "info", "--json", cache=cache, ICECTL_CACHE_MAX="2M").stdout)
    assert info["entries"] == 4 and info["max-bytes"] == 2 << 20
    assert info["total-bytes"] == sum(p.stat().st_size for p in entries(cache))
    text = icectl("cache", "info", cache=cache, ICECTL_NO_CACHE="1").stdout
    assert "entries      4" in text and "enabled      false" in text
    cleared = icectl("cache", "clear", "--json", cache=cache)
    assert cleared.returncode == 0 and json.loads(cleared.stdout)["removed"] == 4
    assert entries(cache) == []
    assert "removed        0" in icectl("cache", "clear", cache=cache).stdout
    bad = icectl("cache", "info", cache=cache, ICECTL_CACHE_MAX="lots")
    assert bad.returncode == 2 and "ICECTL_CACHE_MAX" in bad.stderr and "Traceback" not in bad.stderr


def test_an_unwritable_cache_never_fails_a_plan(tmp_path) -> None:
    loc = make_table(tmp_path)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = icectl("plan", loc, "--json", cache=blocker)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert json.loads(r.stdout)["summary"]["data-files-matched"] == 3
