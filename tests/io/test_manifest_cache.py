"""The persistent decoded-manifest cache: hits across processes, misses, corrupt and truncated
entries re-decoded, a changed mtime invalidates, statistics widen, LRU eviction under
ICECTL_CACHE_MAX, concurrent writers, an unwritable directory and the bypass switches."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from icectl.io.manifest import cache as manifest_cache

from icectl.io.manifest import columns as manifest_columns
from icectl.io.manifest.records import read_manifest_list
from icectl.io.storage.files import FileIO
from icectl.io.manifest.columns import clear_cache, load_manifest_columns

DATA_DIR = Path(__file__).resolve().parent.parent / "data" / "manifests" / "t2"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("ICECTL_CACHE_DIR", str(d))
    monkeypatch.delenv("ICECTL_NO_CACHE", raising=False)
    monkeypatch.delenv("ICECTL_CACHE_MAX", raising=False)
    manifest_cache._estimates.clear()
    manifest_cache._unwritable.clear()
    manifest_cache._trusted.clear()
    manifest_cache.set_enabled(True)
    clear_cache()
    yield d / "manifests"
    manifest_cache.set_enabled(True)
    manifest_cache._estimates.clear()
    manifest_cache._unwritable.clear()
    manifest_cache._trusted.clear()
    clear_cache()


@pytest.fixture
def manifest(tmp_path) -> tuple[str, int]:
    m = read_manifest_list((DATA_DIR / "manifest-list.avro").read_bytes())[0]
    data = (DATA_DIR / m.manifest_path.rsplit("/", 1)[-1]).read_bytes()
    p = tmp_path / "m.avro"
    p.write_bytes(data)
    return str(p), len(data)


class Counting:
    def __init__(self, monkeypatch):
        self.calls: list[frozenset] = []
        real = manifest_columns.decode_manifest

        def counted(data, **kw):
            self.calls.append(frozenset(kw.get("wanted_stats", ())))
            return real(data, **kw)

        monkeypatch.setattr(manifest_columns, "decode_manifest", counted)


def load(path: str, length: int, wanted=frozenset({1}), seq=1):
    return load_manifest_columns(FileIO(), path, length, wanted_stats=wanted, sequence_number=seq,
                                 added_snapshot_id=5)


def entries(d: Path) -> list[Path]:
    return sorted(p for p in d.glob("*.mc") if not p.name.startswith(".tmp-")) if d.exists() else []


def test_miss_then_hit_in_a_fresh_in_process_cache(cache, manifest, monkeypatch) -> None:
    c = Counting(monkeypatch)
    a = load(*manifest)
    assert len(c.calls) == 1 and len(entries(cache)) == 1
    clear_cache()  # as a new process starts
    b = load(*manifest)
    assert len(c.calls) == 1 and a == b and b.count > 0
    # other inheritance inputs are another entry
    clear_cache()
    load(*manifest, seq=2)
    assert len(c.calls) == 2 and len(entries(cache)) == 2


def test_a_second_process_decodes_nothing(cache, manifest) -> None:
    path, length = manifest
    script = textwrap.dedent(f"""
        from icectl.io.manifest import columns as manifest_columns
        from icectl.io.storage.files import FileIO
        def boom(*a, **k):
            raise SystemExit("decoded")
        first = manifest_columns.load_manifest_columns(FileIO(), {path!r}, {length},
            wanted_stats={{1}}, sequence_number=1, added_snapshot_id=5)
        manifest_columns.clear_cache()
        manifest_columns.decode_manifest = boom
        second = manifest_columns.load_manifest_columns(FileIO(), {path!r}, {length},
            wanted_stats={{1}}, sequence_number=1, added_snapshot_id=5)
        print(second.count, second == first)
    """)
    env = dict(os.environ, ICECTL_CACHE_DIR=str(cache.parent))
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[1] == "True"
    # the next process: the entry it left is served without decoding
    script2 = textwrap.dedent(f"""
        from icectl.io.manifest import columns as manifest_columns
        from icectl.io.storage.files import FileIO
        def boom(*a, **k):
            raise SystemExit("decoded")
        manifest_columns.decode_manifest = boom
        c = manifest_columns.load_manifest_columns(FileIO(), {path!r}, {length},
            wanted_stats={{1}}, sequence_number=1, added_snapshot_id=5)
        print(c.count)
    """)
    r2 = subprocess.run([sys.executable, "-c", script2], capture_output=True, text=True, env=env,
                        timeout=60)
    assert r2.returncode == 0, r2.stderr + r2.stdout
    assert r2.stdout.split() == [r.stdout.split()[0]]


@pytest.mark.parametrize("damage", ["flip", "truncate", "header", "empty"])
def test_corrupt_or_truncated_entry_is_decoded_again_and_rewritten(cache, manifest, monkeypatch,
                                                                   damage) -> None:
    c = Counting(monkeypatch)
    expected = load(*manifest)
    (entry,) = entries(cache)
    data = bytearray(entry.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0xFF
    elif damage == "truncate":
        data = data[: len(data) - 7]
    elif damage == "header":
        data[0] ^= 0x01
    else:
        data = bytearray()
    entry.write_bytes(bytes(data))
    clear_cache()
    got = load(*manifest)
    assert got == expected and len(c.calls) == 2
    clear_cache()
    assert load(*manifest) == expected and len(c.calls) == 2  # rewritten entry serves


def test_a_changed_mtime_is_not_served_stale(cache, manifest, monkeypatch) -> None:
    c = Counting(monkeypatch)
    path, length = manifest
    load(path, length)
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1))  # 1 ns later, same length
    clear_cache()
    load(path, length)
    assert len(c.calls) == 2 and len(entries(cache)) == 2


def test_fewer_statistics_are_widened_and_rewritten(cache, manifest, monkeypatch) -> None:
    c = Counting(monkeypatch)
    load(*manifest, wanted=frozenset({1}))
    clear_cache()
    b = load(*manifest, wanted=frozenset({2}))
    assert c.calls[-1] == {1, 2} and set(b.stats) == {1, 2}
    clear_cache()
    load(*manifest, wanted=frozenset({1, 2}))
    assert len(c.calls) == 2 and len(entries(cache)) == 1


def test_lru_eviction_keeps_the_directory_under_the_bound(cache, monkeypatch) -> None:
    value = list(range(2000))
    manifest_cache.put(b"\x00" * 32, value)
    size = entries(cache)[0].stat().st_size
    monkeypatch.setenv("ICECTL_CACHE_MAX", str(size * 5))
    manifest_cache._estimates.clear()
    keys = [bytes([i]) * 32 for i in range(1, 13)]
    for i, k in enumerate(keys):
        assert manifest_cache.put(k, value)
        os.utime(entries(cache)[0].parent / (k.hex()[:40] + ".mc"), (1000 + i, 1000 + i))
        if i == 3:  # a hit makes the first key the most recently used
            assert manifest_cache.get(keys[0]) == value
        total = sum(p.stat().st_size for p in entries(cache))
        assert total <= size * 5
    assert manifest_cache.get(keys[0]) == value  # touched on its hit: survived
    assert manifest_cache.get(keys[1]) is None  # least recently used: evicted
    assert manifest_cache.get(keys[-1]) == value


def test_concurrent_writers_never_produce_a_corrupt_read(cache, manifest) -> None:
    path, length = manifest
    script = textwrap.dedent(f"""
        from icectl.io.manifest import columns as manifest_columns
        from icectl.io.storage.files import FileIO
        data = open({path!r}, "rb").read()
        want = [manifest_columns.decode_manifest(data, path={path!r}, wanted_stats={{1}},
                sequence_number=s, added_snapshot_id=5) for s in range(4)]
        for i in range(40):
            manifest_columns.clear_cache()
            s = i % 4
            got = manifest_columns.load_manifest_columns(FileIO(), {path!r}, {length},
                wanted_stats={{1}}, sequence_number=s, added_snapshot_id=5)
            assert got == want[s], (i, s)
        print("ok")
    """)
    env = dict(os.environ, ICECTL_CACHE_DIR=str(cache.parent))
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for _ in range(4)]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0 and out.strip() == "ok", err
    assert len(entries(cache)) == 4
    assert not list(cache.glob(".tmp-*"))


def test_an_unwritable_cache_directory_never_fails(tmp_path, manifest, monkeypatch, cache) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    monkeypatch.setenv("ICECTL_CACHE_DIR", str(blocker))
    c = Counting(monkeypatch)
    a = load(*manifest)
    clear_cache()
    assert load(*manifest) == a and len(c.calls) == 2
    assert manifest_cache.info().entries == 0


def test_bypass_switches_write_and_read_nothing(cache, manifest, monkeypatch) -> None:
    c = Counting(monkeypatch)
    monkeypatch.setenv("ICECTL_NO_CACHE", "1")
    load(*manifest)
    assert entries(cache) == []
    monkeypatch.delenv("ICECTL_NO_CACHE")
    clear_cache()
    load(*manifest)
    assert len(entries(cache)) == 1
    manifest_cache.set_enabled(False)
    clear_cache()
    load(*manifest)
    assert len(c.calls) == 3  # the filled entry was not read either


def test_info_and_clear(cache, manifest) -> None:
    load(*manifest)
    load(*manifest, seq=2)
    i = manifest_cache.info()
    assert i.entries == 2 and i.total_bytes == sum(p.stat().st_size for p in entries(cache))
    assert i.to_json()["directory"] == str(cache)
    r = manifest_cache.clear()
    assert r.removed == 2 and entries(cache) == []
    assert manifest_cache.info().entries == 0


def test_cache_dir_defaults(monkeypatch) -> None:
    monkeypatch.delenv("ICECTL_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "/x/cache")
    assert manifest_cache.cache_dir() == "/x/cache/icectl/manifests"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", "/home/u")
    assert manifest_cache.cache_dir() == "/home/u/.cache/icectl/manifests"


@pytest.mark.parametrize("text, size", [("100", 100), ("512M", 512 << 20), ("2G", 2 << 30),
                                        ("2GB", 2 << 30), ("1GiB", 1 << 30), ("64k", 64 << 10)])
def test_parse_size(text, size) -> None:
    assert manifest_cache.parse_size(text) == size


def test_parse_size_rejects_nonsense() -> None:
    from icectl.errors import InvalidInput

    for bad in ("lots", "-1", "1X"):
        with pytest.raises(InvalidInput):
            manifest_cache.parse_size(bad)


def test_a_directory_others_can_write_is_never_read(cache, manifest, monkeypatch) -> None:
    c = Counting(monkeypatch)
    load(*manifest)
    os.chmod(cache, 0o777)  # anyone could have planted the entry
    manifest_cache._trusted.clear()
    manifest_cache._unwritable.clear()
    clear_cache()
    load(*manifest)
    assert len(c.calls) == 2
    os.chmod(cache, 0o700)
    manifest_cache._trusted.clear()
    clear_cache()
    load(*manifest)
    assert len(c.calls) == 2


def test_clear_leaves_a_fresh_temporary_file_of_a_writer(cache, manifest) -> None:
    load(*manifest)
    tmp = cache / ".tmp-writer.mc"
    tmp.write_bytes(b"partial")
    assert manifest_cache.clear().removed == 1
    assert tmp.exists() and entries(cache) == []
    os.utime(tmp, (1000, 1000))  # abandoned long ago
    manifest_cache.clear()
    assert not tmp.exists()


def test_manifest_lists_are_cached_by_path_size_and_mtime(cache, tmp_path, monkeypatch) -> None:
    from icectl.io.manifest import manifest_list
    from icectl.io.manifest.records import load_manifest_list

    src = (DATA_DIR / "manifest-list.avro").read_bytes()
    p = tmp_path / "snap-1.avro"
    p.write_bytes(src)
    reads: list[int] = []
    real = manifest_list.read_manifest_list
    monkeypatch.setattr(manifest_list, "read_manifest_list",
                        lambda data, fv=None: reads.append(1) or real(data, fv))
    first = load_manifest_list(FileIO(), str(p), 2, cached=True)
    assert load_manifest_list(FileIO(), str(p), 2, cached=True) == first and len(reads) == 1
    assert load_manifest_list(FileIO(), str(p), 2) == first and len(reads) == 2  # not asked: read
    # the same path and size, one nanosecond later: read again, never served stale
    st = os.stat(p)
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    assert load_manifest_list(FileIO(), str(p), 2, cached=True) == first and len(reads) == 3
    # a corrupt entry is a miss
    for e in entries(cache):
        e.write_bytes(e.read_bytes()[:-3] + b"xyz")
    assert load_manifest_list(FileIO(), str(p), 2, cached=True) == first and len(reads) == 4
    manifest_cache.set_enabled(False)
    load_manifest_list(FileIO(), str(p), 2, cached=True)
    assert len(reads) == 5
