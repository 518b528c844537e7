"""What `expire` and `orphans` may delete: never anything through a symbolic link that leaves the
table, never the files of another table whose metadata a copied table still names, nothing
before the retained snapshots are known to be readable, nothing too young or with GC disabled.

Every test counts the files outside the table before and after: none may go (except, in the
external-file test, the one file `append` registered outside the location, which Iceberg's
expiry deletes too once no snapshot needs it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time

import pytest
from expire_history import DAY, History

from icectl.errors import CorruptMetadata, ValidationError
from icectl.ops.maintain.expire import PENDING_PREFIX, expire_snapshots
from icectl.ops.maintain.orphans import delete_orphan_files, find_orphan_files
from icectl.table.table import Table
from clirun import icectl as run

OLD = time.time() - 5 * 86400
T0 = 1_600_000_000_000


def files_under(root: str) -> set[str]:
    """Every file and link below ``root``, without following links."""
    out = set()
    for d, dirs, names in os.walk(root, followlinks=False):
        out.update(os.path.join(d, n) for n in names + [x for x in dirs if os.path.islink(os.path.join(d, x))])
    return out


def outside(tmp_path, *tables: str) -> set[str]:
    """Files below ``tmp_path`` that are not below one of the tables."""
    roots = tuple(os.path.join(t, "") for t in tables)
    return {p for p in files_under(str(tmp_path)) if not p.startswith(roots)}


def age(root: str) -> None:
    for d, _, names in os.walk(root):
        for n in names:
            os.utime(os.path.join(d, n), (OLD, OLD), follow_symlinks=False)


def plant(path: str, old: bool = True) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(b"precious")
    if old:
        os.utime(path, (OLD, OLD))
    return path


def icectl(*args: str) -> subprocess.CompletedProcess:
    """The CLI as a user runs it, no terminal (tests/clirun.py, in this process)."""
    return run(*args, env={"NO_COLOR": "1", "ICECTL_WAREHOUSE": None})



def history(tmp_path, name="t", **kw) -> History:
    return History(str(tmp_path / name), start_ms=T0, step_ms=DAY, **kw)


def churn(h: History, rounds: int = 3) -> None:
    """Appends and overwrites, so that expiring all but the newest snapshot frees data files."""
    for _ in range(rounds):
        h.append(2)
        h.overwrite(h.live()[:2], add=1)


# -- item 1: symbolic links -----------------------------------------------------------------------

def test_orphans_delete_never_follows_a_linked_directory(tmp_path):
    h = history(tmp_path)
    churn(h, 1)
    h.save()
    elsewhere = [plant(str(tmp_path / "elsewhere" / "sub" / f"f{i}.parquet")) for i in range(3)]
    target = plant(str(tmp_path / "elsewhere" / "target.parquet"))
    os.symlink(tmp_path / "elsewhere", os.path.join(h.location, "data", "linkdir"))
    os.symlink(target, os.path.join(h.location, "data", "link.parquet"))
    stray = plant(os.path.join(h.location, "data", "stray.parquet"))
    age(h.location)
    before = outside(tmp_path, h.location)

    r = icectl("orphans", h.location, "--delete", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert all(os.path.exists(p) for p in elsewhere + [target])
    assert outside(tmp_path, h.location) == before  # nothing outside the table went
    assert out["orphan-files"] == [stray] and not os.path.exists(stray)
    # the links are reported, neither followed nor deleted
    links = sorted(os.path.join(h.location, "data", n) for n in ("link.parquet", "linkdir"))
    assert out["skipped-links"] == links
    assert all(os.path.islink(p) for p in links)
    assert "link" in r.stderr  # and said on stderr


def test_orphans_recheck_the_real_path_just_before_deleting(tmp_path):
    """A directory listed as real becomes a link (to a directory holding files of the same names)
    between the listing and the deletion: the deletion resolves the path again and refuses."""
    h = history(tmp_path)
    h.append()
    table = h.save()
    strays = [plant(os.path.join(h.location, "data", "sub", f"s{i}.parquet")) for i in range(2)]
    twins = [plant(str(tmp_path / "elsewhere" / f"s{i}.parquet")) for i in range(2)]
    age(h.location)
    swapped = []

    def swap(phase, done, total):
        if not swapped:  # after the listing, before any deletion
            shutil.rmtree(os.path.join(h.location, "data", "sub"))
            os.symlink(tmp_path / "elsewhere", os.path.join(h.location, "data", "sub"))
            swapped.append(phase)

    result = delete_orphan_files(table, older_than_ms=int(time.time() * 1000) - DAY, progress=swap)
    assert swapped and swapped[0].startswith("reading")  # the swap happened before deleting
    assert all(os.path.exists(p) for p in twins)
    assert list(result.orphan_files) == strays and not result.failed
    assert [p for p, _ in result.refused] == strays and result.to_json()["deleted-files-count"] == 0


def test_expire_never_deletes_through_a_link_leaving_the_table(tmp_path):
    """data/ is a link to another directory: the data files resolve outside the table's real
    path, so expiry commits and deletes metadata files but refuses those, naming them."""
    loc = tmp_path / "t"
    (tmp_path / "other-disk").mkdir()
    loc.mkdir()
    os.symlink(tmp_path / "other-disk", loc / "data")
    h = history(tmp_path)
    churn(h)
    table = h.save()
    data = files_under(str(tmp_path / "other-disk"))
    assert len(data) == 9
    before = outside(tmp_path, h.location)

    now = h.clock + DAY
    result = expire_snapshots(table, older_than_ms=now, retain_last=1, now=now)
    assert outside(tmp_path, h.location) == before == data  # every data file is still there
    assert result.count("data_files") == 0 and result.count("manifest_lists") == 5
    # the six files the overwrites removed; the three live ones were never candidates
    live = set(h.live())
    assert len(live) == 3 and sorted(p for p, _ in result.refused) == sorted(
        os.path.join(h.location, "data", os.path.basename(p)) for p in data if
        os.path.join(h.location, "data", os.path.basename(p)) not in live)
    assert all("link" in why for _, why in result.refused)
    assert result.to_json()["refused-deletes"][0].keys() == {"path", "reason"}
    # the cleanup is complete: refusing is final, the rerun has nothing to redo
    assert not [n for n in os.listdir(loc / "metadata") if n.startswith(PENDING_PREFIX)]


def test_boundary_resolves_paths_instead_of_comparing_text(tmp_path):
    from icectl.ops.maintain.file_removal import TableBoundary

    (tmp_path / "t" / "data").mkdir(parents=True)
    (tmp_path / "x").mkdir()
    os.symlink(tmp_path / "x", tmp_path / "t" / "data" / "l")
    os.symlink(tmp_path / "t", tmp_path / "alias")
    b = TableBoundary(str(tmp_path / "t"))
    assert b.refusal(str(tmp_path / "t" / "data" / "f.parquet")) is None
    assert b.refusal(f"file:{tmp_path}/t/data/f.parquet") is None
    assert b.refusal(str(tmp_path / "t" / "data" / "l" / "f.parquet")) is not None
    assert b.refusal(str(tmp_path / "t" / "data" / ".." / ".." / "x" / "f")) is not None
    # a table reached through a link to its directory is still itself
    assert TableBoundary(str(tmp_path / "alias")).refusal(str(tmp_path / "t" / "data" / "f")) is None
    assert b.contains(str(tmp_path / "t" / "data" / "l" / "f")) and not b.contains(str(tmp_path / "x" / "f"))


# -- item 3: nothing is committed while a retained snapshot is unreadable -------------------------

@pytest.mark.parametrize("broken", ["manifest-list", "manifest"])
def test_expire_with_an_unreadable_current_snapshot_commits_nothing(tmp_path, broken):
    from icectl.io.manifest import records as avro

    h = history(tmp_path)
    churn(h)
    table = h.save()
    current = table.metadata.current_snapshot()
    if broken == "manifest-list":
        os.remove(current.manifest_list)
    else:
        m = avro.load_manifest_list(table.io, current.manifest_list, 2)[0]
        os.remove(m.manifest_path)
    files = files_under(h.location)
    before = outside(tmp_path, h.location)

    now = h.clock + DAY
    with pytest.raises(CorruptMetadata, match="missing"):
        expire_snapshots(table, older_than_ms=now, retain_last=1, now=now)
    after = Table.load(h.location)
    assert after.version == 1 and len(after.metadata.snapshots) == 6  # nothing committed
    assert files_under(h.location) == files  # nothing deleted, no pending record left
    assert outside(tmp_path, h.location) == before

    r = icectl("expire", h.location, "--older-than", "1d", "--retain-last", "1")
    assert r.returncode == 8 and r.stderr.count("\n") == 1, r.stderr
    assert Table.load(h.location).version == 1 and files_under(h.location) == files


def test_clean_expired_metadata_reads_once_and_still_refuses_before_commit(tmp_path):
    h = history(tmp_path)
    churn(h, 2)
    table = h.save()
    os.remove(table.metadata.current_snapshot().manifest_list)
    with pytest.raises(CorruptMetadata):
        expire_snapshots(table, older_than_ms=h.clock + DAY, retain_last=1, clean_expired_metadata=True,
                         now=h.clock + DAY)
    assert Table.load(h.location).version == 1


# -- item 4: a copied table --------------------------------------------------------------------

def copied(tmp_path) -> tuple[History, str]:
    h = history(tmp_path, "orig")
    churn(h)
    h.save()
    copy = str(tmp_path / "copy")
    shutil.copytree(h.location, copy, symlinks=True)
    age(h.location)
    age(copy)
    return h, copy


def test_expire_on_a_copy_refuses_and_names_both_locations(tmp_path):
    h, copy = copied(tmp_path)
    orig_files, copy_files = files_under(h.location), files_under(copy)
    for extra in ([], ["--dry-run"]):
        r = icectl("expire", copy, "--older-than", "1d", "--retain-last", "1", *extra)
        assert r.returncode == 5, (extra, r.stderr)
        assert r.stderr.count("\n") == 1 and h.location in r.stderr and copy in r.stderr
        assert r.stdout == ""  # the original's paths are not listed
    assert files_under(h.location) == orig_files and files_under(copy) == copy_files
    assert Table.load(copy).version == 1


def test_orphans_on_a_copy_refuse(tmp_path):
    h, copy = copied(tmp_path)
    copy_files = files_under(copy)
    for extra in ([], ["--delete"]):
        r = icectl("orphans", copy, *extra)
        assert r.returncode == 5 and h.location in r.stderr and copy in r.stderr, r.stderr
    assert files_under(copy) == copy_files


def test_allow_location_mismatch_expires_the_copys_metadata_only(tmp_path):
    h, copy = copied(tmp_path)
    orig_files, copy_files = files_under(h.location), files_under(copy)
    before = outside(tmp_path, h.location, copy)
    r = icectl("expire", copy, "--older-than", "1d", "--retain-last", "1", "--allow-location-mismatch", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["metadata-only"] is True and out["expired-snapshots-count"] == 5
    assert all(out[f"deleted_{k}_count"] == 0 for k in ("data_files", "manifest_files", "manifest_lists"))
    assert files_under(h.location) == orig_files  # the original is untouched
    new_copy = files_under(copy)
    assert copy_files <= new_copy and len(new_copy - copy_files) == 1  # one new metadata version
    assert Table.load(h.location).version == 1 and len(Table.load(copy).metadata.snapshots) == 1
    assert outside(tmp_path, h.location, copy) == before


def test_a_table_loaded_through_another_spelling_is_not_a_copy(tmp_path):
    h = history(tmp_path)
    churn(h, 1)
    h.save()
    os.symlink(h.location, tmp_path / "alias")
    now = h.clock + DAY
    for loc in (f"file:{h.location}", str(tmp_path / "alias"), h.location + "/"):
        result = expire_snapshots(Table.load(loc), older_than_ms=now, retain_last=1, now=now, dry_run=True)
        assert result.count("data_files") == 2 and not result.metadata_only


# -- item 5: orphans honours gc.enabled and refuses young cut-offs --------------------------------

def test_orphans_delete_refuses_when_gc_is_disabled(tmp_path):
    h = history(tmp_path, properties={"gc.enabled": "false"})
    churn(h, 1)
    h.save()
    stray = plant(os.path.join(h.location, "data", "stray.parquet"))
    age(h.location)
    r = icectl("orphans", h.location, "--delete")
    assert r.returncode == 5 and "GC is disabled" in r.stderr, r.stderr
    assert os.path.exists(stray)
    r = icectl("orphans", h.location)  # listing stays allowed
    assert r.returncode == 0 and r.stdout.split() == [stray]
    r = icectl("expire", h.location, "--older-than", "1d", "--retain-last", "1")
    assert r.returncode == 5 and "GC is disabled" in r.stderr and Table.load(h.location).version == 1


@pytest.mark.parametrize("cutoff", ["0s", "23h", "2099-01-01T00:00:00Z"])
def test_orphans_delete_refuses_a_cutoff_under_24_hours(tmp_path, cutoff):
    h = history(tmp_path)
    churn(h, 1)
    h.save()
    age(h.location)
    in_flight = plant(os.path.join(h.location, "data", "in-flight.parquet"), old=False)
    hour_ago = time.time() - 3600
    os.utime(in_flight, (hour_ago, hour_ago))  # written by a commit still running
    r = icectl("orphans", h.location, "--older-than", cutoff, "--delete")
    assert r.returncode == 5 and "24 hours" in r.stderr and "--allow-recent" in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1 and os.path.exists(in_flight)
    r = icectl("orphans", h.location, "--older-than", cutoff, "--delete", "--allow-recent", "--json")
    assert r.returncode == 0, r.stderr
    expected = [] if cutoff == "23h" else [in_flight]  # 23h ago: the file is younger than that
    assert json.loads(r.stdout)["orphan-files"] == expected
    assert os.path.exists(in_flight) == (not expected)


def test_recent_cutoff_guard_in_the_library(tmp_path):
    from icectl.ops.maintain.file_removal import NeedsOverride

    h = history(tmp_path)
    h.append()
    table = h.save()
    now = int(time.time() * 1000)
    with pytest.raises(NeedsOverride) as e:
        delete_orphan_files(table, older_than_ms=now - DAY + 1000, now=now)
    assert isinstance(e.value, ValidationError) and e.value.override == "allow_recent"
    assert delete_orphan_files(table, older_than_ms=now - DAY, now=now).orphan_files == ()
    assert delete_orphan_files(table, older_than_ms=now + DAY, now=now, allow_recent=True).orphan_files == ()
    assert find_orphan_files(table, older_than_ms=now + DAY).orphan_files == ()  # listing is free


# -- item 9: files registered outside the table location --------------------------------------

def test_expire_reports_deleted_files_outside_the_location(tmp_path):
    h = history(tmp_path)
    ext = plant(str(tmp_path / "landing" / "ext-1.parquet"))
    keep = plant(str(tmp_path / "landing" / "ext-2.parquet"))
    h.append_paths([ext, keep])
    h.overwrite([ext], add=1)
    h.append()
    table = h.save()
    before = outside(tmp_path, h.location)
    now = h.clock + DAY
    kept = expire_snapshots(table, older_than_ms=now, retain_last=1, now=now, dry_run=True).to_json()
    assert kept["deleted-outside-location-count"] == 0 and kept["kept-outside-location"] == [ext]
    dry = expire_snapshots(table, older_than_ms=now, retain_last=1, now=now, dry_run=True,
                           delete_outside_location=True)
    assert dry.to_json()["deleted-outside-location-count"] == 1
    r = icectl("expire", h.location, "--older-than", "1d", "--retain-last", "1", "--json",
               "--delete-outside-location")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["deleted-outside-location-count"] == 1 and out["deleted_data_files_count"] == 1
    assert before - outside(tmp_path, h.location) == {ext}  # the registered file no snapshot needs
    assert os.path.exists(keep)
    r = icectl("expire", h.location, "--older-than", "1d", "--retain-last", "1",
                    "--delete-outside-location")
    assert r.returncode == 0 and "deleted-outside-location" in r.stdout
