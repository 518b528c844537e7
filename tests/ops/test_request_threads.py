"""How many threads the reads and deletions of many files get by default: many where requests
wait on a network, one on a local disk (where threads made expire and orphans slower)."""

from __future__ import annotations

import concurrent.futures
import os

import pytest
from expire_history import DAY, History

from icectl import command_files
from icectl.io.storage import local
from icectl.io.storage.files import FileIO
from icectl.ops.maintain import file_removal, reachable
from icectl.ops.maintain.expire import expire_snapshots
from icectl.ops.maintain.orphans import delete_orphan_files

MOUNTS = """\
/dev/vda1 / ext4 rw,relatime 0 0
proc /proc proc rw 0 0
nas:/export /mnt/nas nfs4 rw,vers=4.2 0 0
//srv/share /mnt/my\\040share cifs rw 0 0
/dev/sdb1 /mnt/nas/local ext4 rw 0 0
sshfs#me@host: /mnt/remote fuse.sshfs rw 0 0
/dev/sdc1 /mnt/ntfs fuseblk rw 0 0
"""


@pytest.fixture
def mounts(monkeypatch):
    monkeypatch.setattr(local, "_mounts", local.parse_mounts(MOUNTS))


@pytest.mark.parametrize("path, network", [
    ("/mnt/nas/wh/t/data/f.parquet", True),
    ("file:///mnt/nas/wh/t", True),
    ("/mnt/my share/wh/t", True),  # the mount table escapes the space
    ("/mnt/nas/local/wh/t", False),  # a local disk mounted inside the network one
    ("/mnt/nasty/wh/t", False),  # a name that only starts like a mount point
    ("/mnt/remote/t", True),
    ("/mnt/ntfs/t", False),  # fuseblk: a local block device
    ("/home/me/wh/t", False),
])
def test_a_local_path_waits_on_network_only_under_a_network_mount(mounts, path, network) -> None:
    assert FileIO().storage(path).waits_on_network(path) is network
    assert FileIO().request_threads(path) == (command_files.io_threads() if network else 1)


def test_object_stores_get_many_threads() -> None:
    io = FileIO()
    assert io.request_threads("s3://bucket/wh/t") == command_files.io_threads() > 1


def test_an_unreadable_mount_table_counts_as_local_disks(monkeypatch) -> None:
    monkeypatch.setattr(local, "_mounts", [])
    assert FileIO().request_threads("/mnt/nas/t") == 1


def _no_pools(monkeypatch) -> list[int]:
    made: list[int] = []

    class Counting(concurrent.futures.ThreadPoolExecutor):
        def __init__(self, max_workers=None, *a, **kw):
            made.append(max_workers)
            super().__init__(max_workers, *a, **kw)

    for mod in (reachable, file_removal):
        monkeypatch.setattr(mod, "ThreadPoolExecutor", Counting)
    return made


def test_expire_and_orphans_on_a_local_disk_run_one_thread_by_default(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(local, "_mounts", [("/", "ext4")])
    h = History(str(tmp_path / "t"))
    for _ in range(3):
        h.append(3)
        h.overwrite(h.live()[:2], add=1)
    table = h.save()
    stray = tmp_path / "t" / "data" / "stray.parquet"
    stray.write_bytes(b"x")
    old = (h.clock - 3 * DAY) / 1000
    os.utime(stray, (old, old))
    made = _no_pools(monkeypatch)
    r = expire_snapshots(table, older_than_ms=h.clock + DAY, retain_last=1, now=h.clock + DAY)
    assert r.expired_snapshot_ids and r.files["data_files"]
    table.refresh()
    o = delete_orphan_files(table, older_than_ms=h.clock - DAY, now=h.clock + DAY)
    assert str(stray) in o.orphan_files and not stray.exists()
    assert made == [], made  # every read and deletion ran in the calling thread
    # asked for, threads are still used
    h2 = History(str(tmp_path / "t2"))
    for _ in range(3):
        h2.append(3)
        h2.overwrite(h2.live()[:2], add=1)
    expire_snapshots(h2.save(), older_than_ms=h2.clock + DAY, retain_last=1, now=h2.clock + DAY, max_workers=4)
    assert made and all(n == 4 for n in made)
