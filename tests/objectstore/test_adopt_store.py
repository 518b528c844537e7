"""`icectl migrate`, `snapshot-table` and `append --from-dir` on an object store (each store's
emulator, see conftest.py): a Hive-style prefix is listed, typed and adopted as on a local disk,
and the snapshot table leaves the source's keys as they were."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq


def _opt(store) -> list[str]:
    out = []
    for k, v in store.fs_options.items():
        out += ["--storage-option", f"{k}={v}"]
    return out


def test_adopt_a_hive_prefix(store) -> None:
    b = store.new_bucket()
    fs = store.fs()
    for k, d, ids in (("-5", "1969-12-31", [1, 2]), ("__HIVE_DEFAULT_PARTITION__", "2024-01-02", [3])):
        with fs.open(f"{b}/hive/k={k}/d={d}/part-0.parquet", "wb") as f:
            pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}), f)
    store.put(b, "hive/_SUCCESS", b"")
    before = store.keys(b, "hive")
    env = {"ICECTL_STORAGE_OPTIONS": ""}

    def run(*args: str):
        return store.run(*args, *_opt(store), env=env)

    snap = store.url(b, "wh/db/snap")
    out = json.loads(run("snapshot-table", store.url(b, "hive"), snap, "--json").stdout)
    assert out["schema"] == "id long, k int, d date" and out["added-records"] == 3
    assert [i["reason"] for i in out["ignored-files"]] == ["hidden"]
    assert store.keys(b, "hive") == before  # the source is untouched
    rows = [json.loads(x) for x in run("scan", snap, "--format", "jsonl").stdout.splitlines()]
    assert sorted((r["id"], r["k"], r["d"]) for r in rows) == [(1, -5, "1969-12-31"), (2, -5, "1969-12-31"),
                                                                (3, None, "2024-01-02")]
    t = store.url(b, "wh/db/t")
    run("create", t, "--schema", "id long, k int, d date", "--partition", "k, d")
    assert json.loads(run("append", t, "--from-dir", store.url(b, "hive"), "--json").stdout)["added-files"] == 2
    out = json.loads(run("migrate", store.url(b, "hive"), "--json").stdout)
    assert out["location"] == store.url(b, "hive") and out["added-files"] == 2
    assert any(k.startswith("hive/metadata/") for k in store.keys(b, "hive"))
