"""Every command of the README on an s3://, a gs:// and an abfs:// table (their emulators, see
conftest.py), run as a user runs them, with the store's options given by --storage-option (and
once by ICECTL_STORAGE_OPTIONS in its KEY=VALUE form); storage failures (no credentials, a
missing bucket or container, a bad option, access denied) as one line and their exit codes; a
store that ignores conditional creates refused before anything is written."""

from __future__ import annotations

import json


def _opt(store) -> list[str]:
    out = []
    for k, v in store.fs_options.items():
        out += ["--storage-option", f"{k}={v}"]
    return out


def _env_without_options(s3) -> dict[str, str]:
    return {"ICECTL_STORAGE_OPTIONS": ""}


def test_every_command_on_a_table_of_each_store(store, tmp_path) -> None:
    s3 = store
    b = s3.new_bucket()
    t = store.url(b, "db/events")
    env = _env_without_options(s3)

    def run(*args: str, check: bool = True):
        return s3.run(*args, *_opt(s3), env=env, check=check)

    run("create", t, "--schema", "id long, v string, n int", "--partition", "bucket(4, id)")
    csv = tmp_path / "rows.csv"
    csv.write_text("id,v,n\n" + "".join(f"{i},v{i},{i % 3}\n" for i in range(1, 21)))
    w = json.loads(run("write", t, str(csv), "--json").stdout)
    assert w["added-records"] == 20
    # append an existing data file that sits in the bucket
    import pyarrow as pa
    import pyarrow.parquet as pq

    fs = s3.fs()
    with fs.open(f"{b}/incoming/more.parquet", "wb") as f:
        pq.write_table(pa.table({"id": pa.array([100], pa.int64()), "v": ["a"],
                                 "n": pa.array([1], pa.int32())}), f)  # one id: its bucket is known
    run("append", t, store.url(b, "incoming/more.parquet"))
    for view in ("table", "schema", "partitions", "spec", "snapshots", "snapshot", "history", "refs",
                 "manifests", "files", "entries", "all-files", "position-deletes", "metadata-log"):
        run("inspect", view, t)
    plan = json.loads(run("plan", t, "--filter", "id = 5", "--json").stdout)
    assert plan  # the direct plan path took --storage-option
    run("delete", t, "--filter", "id <= 3")
    upsert = tmp_path / "up.csv"
    upsert.write_text("id,v,n\n4,changed,0\n500,new,1\n")
    run("upsert", t, str(upsert), "--key", "id")
    run("schema", "add", t, "extra", "string")
    run("partition", "add", t, "n")
    run("properties", "set", t, "history.expire.min-snapshots-to-keep=1")
    run("properties", "list", t)
    run("sort-order", "set", t, "id desc")
    snaps = json.loads(run("inspect", "snapshots", t, "--json").stdout)
    first = snaps[0]["snapshot-id"] if isinstance(snaps, list) else snaps["snapshots"][0]["snapshot-id"]
    run("branch", "create", t, "audit")
    run("tag", "create", t, "v1")
    run("compact", t, "--min-input-files", "2", "--workers", "1")
    run("rewrite-manifests", t)
    run("upgrade", t, "--format-version", "3")
    rows = [json.loads(x) for x in run("scan", t, "--format", "jsonl").stdout.splitlines()]
    ids = sorted(r["id"] for r in rows)
    assert ids == sorted([i for i in range(4, 21)] + [100, 500])
    assert {r["id"]: r["v"] for r in rows}[4] == "changed"
    assert run("scan", t, "--count").stdout.strip().endswith(str(len(ids)))
    # an orphan object under the table, and expiry of everything but the current snapshot
    fs.pipe_file(f"{b}/db/events/data/orphan.parquet", b"not referenced")
    orphans = json.loads(run("orphans", t, "--older-than", "0s", "--json").stdout)
    assert orphans["orphan-files"] == [store.url(b, "db/events/data/orphan.parquet")]
    run("orphans", t, "--older-than", "0s", "--delete", "--allow-recent")
    assert "db/events/data/orphan.parquet" not in s3.keys(b)
    run("tag", "drop", t, "v1")
    run("branch", "drop", t, "audit")
    ex = json.loads(run("expire", t, "--older-than", "0s", "--retain-last", "1", "--json").stdout)
    assert ex["expired-snapshot-ids"] if "expired-snapshot-ids" in ex else ex
    assert not [k for k in s3.keys(b) if ".icectl-expire-" in k]  # its pending record is gone
    check = run("check", t, "--deep", "--json", check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    after = sorted(json.loads(x)["id"] for x in run("scan", t, "--format", "jsonl").stdout.splitlines())
    assert after == ids
    run("snapshot", "rollback", t, str(first), check=False)  # expired: refused cleanly, not a crash
    r = run("snapshot", "rollback", t, str(first), check=False)
    assert r.returncode in (0, 3, 5), r.stderr
    # nothing but table files: no probe objects, no temp files
    assert not [k for k in s3.keys(b) if "_icectl-probe" in k or "version-hint.temp" in k]


def test_storage_options_from_the_environment_in_key_value_form(s3) -> None:
    b = s3.new_bucket()
    env = {"ICECTL_STORAGE_OPTIONS": f"endpoint_url={s3.endpoint},use_ssl=false"}
    s3.run("create", f"s3://{b}/t", "--schema", "id long", env=env)
    assert "t/metadata/v1.metadata.json" in s3.keys(b)


def test_a_bad_storage_option_is_invalid_input(s3) -> None:
    r = s3.run("inspect", "table", "s3://x/t", "--storage-option", "novalue", check=False)
    assert r.returncode == 2 and "--storage-option" in r.stderr and len(r.stderr.splitlines()) == 1
    r = s3.run("inspect", "table", "s3://x/t", env={"ICECTL_STORAGE_OPTIONS": "{bad json"}, check=False)
    assert r.returncode == 2 and "ICECTL_STORAGE_OPTIONS" in r.stderr


def _bad_credentials(store, tmp_path) -> dict[str, str]:
    """An environment whose credentials the store refuses (S3: none at all; GCS: a credentials
    file that is not one, as the emulator checks no token; Azure: a wrong account key)."""
    if store.kind == "s3":
        return {"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "",
                "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"), "AWS_CONFIG_FILE": str(tmp_path / "none"),
                "AWS_EC2_METADATA_DISABLED": "true", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "",
                "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": ""}
    if store.kind == "gcs":
        return {"ICECTL_STORAGE_OPTIONS": json.dumps({**store.fs_options, "token": "google_default"}),
                "GOOGLE_APPLICATION_CREDENTIALS": str(tmp_path / "none.json")}
    cs = store.fs_options["connection_string"].replace("AccountKey=Eby8", "AccountKey=Xby8")
    return {"ICECTL_STORAGE_OPTIONS": json.dumps({"connection_string": cs})}


def test_bad_credentials_are_a_storage_error_naming_the_bucket(store, tmp_path) -> None:
    b = store.new_bucket()
    t = store.url(b, "t")
    store.run("create", t, "--schema", "id long")
    env = _bad_credentials(store, tmp_path)
    for args in (["inspect", "table", t], ["plan", t]):
        r = store.run(*args, env=env, check=False, process=True)  # no credentials cached in this process
        assert r.returncode == 7, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert f"{store.scheme}://{b}" in r.stderr, r.stderr
        assert ("access denied" if store.kind == "azure" else "no credentials") in r.stderr, r.stderr


def test_a_missing_bucket_is_not_found(store) -> None:
    t = store.url("no-such-bucket-icectl", "t")
    r = store.run("inspect", "table", t, check=False)
    assert r.returncode == 3, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "no-such-bucket-icectl" in r.stderr
    for args in (["create", t, "--schema", "id long"], ["create", f"{t}2", "--schema", "id long", "--json"]):
        r = store.run(*args, check=False)
        assert r.returncode == 3, r.stderr
        assert len(r.stderr.strip().splitlines()) == (1 if "--json" not in args else 2), r.stderr
        assert f"the bucket {store.scheme}://no-such-bucket-icectl does not exist" in r.stderr, r.stderr


def test_access_denied_is_one_line_and_writes_nothing(store, proxied, tmp_path) -> None:
    """The store refuses every write with 403 (a role that may read only)."""
    via, proxy = proxied
    b = store.new_bucket()
    t = store.url(b, "db/t")
    store.run("create", t, "--schema", "id long")
    before = store.keys(b)
    proxy.rule = lambda req: "403" if req.method in ("PUT", "POST", "DELETE") else None
    csv = tmp_path / "r.csv"
    csv.write_text("id\n1\n")
    for args in (["write", t, str(csv)], ["properties", "set", t, "a=b"]):
        r = via.run(*args, check=False)
        assert r.returncode == 7, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert f"access denied to {store.scheme}://{b}" in r.stderr, r.stderr
    assert store.keys(b) == before
    assert via.run("scan", t, "--count").stdout.strip().endswith("0")  # reading is allowed


def test_a_store_that_ignores_conditional_creates_is_refused(unsafe_store, store, tmp_path) -> None:
    unsafe_s3, s3 = unsafe_store, store
    b = unsafe_s3.new_bucket()
    t = store.url(b, "db/t")
    r = unsafe_s3.run("create", t, "--schema", "id long", check=False)
    assert r.returncode == 11, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "conditional creates" in r.stderr
    assert unsafe_s3.keys(b) == []
    # a table made through the real endpoint: writing through the proxy is refused, nothing added
    s3.run("create", t, "--schema", "id long")
    before = unsafe_s3.keys(b)
    csv = tmp_path / "r.csv"
    csv.write_text("id\n1\n")
    r = unsafe_s3.run("write", t, str(csv), check=False)
    assert r.returncode == 11 and unsafe_s3.keys(b) == before
    r = unsafe_s3.run("write", t, str(csv), "--json", check=False)
    assert json.loads(r.stderr.strip().splitlines()[-1])["error"]["kind"] == "unsafe-storage"
    # reading is fine; opting in by name writes
    unsafe_s3.run("inspect", "table", t)
    unsafe_s3.run("write", t, str(csv), "--storage-option", "icectl.unsafe-commits=true")
    assert s3.run("scan", t, "--count").stdout.strip().endswith("1")


def test_a_merge_of_s3_manifests_keeps_every_entry(s3, tmp_path) -> None:
    """Merging on an object store (its manifests fetched concurrently): six writes, the sixth
    commit merges the six manifests into one, which lists every file as existing or added."""
    b = s3.new_bucket()
    t = f"s3://{b}/db/merged"
    env = _env_without_options(s3)

    def run(*args: str):
        return s3.run(*args, *_opt(s3), env=env, check=True)

    run("create", t, "--schema", "id long, v string", "--partition", "bucket(4, id)",
        "-P", "commit.manifest-merge.enabled=true", "-P", "commit.manifest.min-count-to-merge=6")
    for k in range(6):
        csv = tmp_path / f"rows{k}.csv"
        csv.write_text("id,v\n" + "".join(f"{i},v{i}\n" for i in range(k * 10, k * 10 + 10)))
        run("write", t, str(csv))
    manifests = json.loads(run("inspect", "manifests", t, "--json").stdout)
    assert len(manifests) == 1, manifests
    # each file keeps the sequence number of the write that added it (made explicit by the merge)
    entries = json.loads(run("inspect", "entries", t, "--json").stdout)
    by_seq = {}
    for e in entries:
        assert e["status-name"] == ("added" if e["sequence-number"] == 6 else "existing"), e
        assert e["file-sequence-number"] == e["sequence-number"]
        by_seq.setdefault(e["sequence-number"], 0)
        by_seq[e["sequence-number"]] += e["data-file"]["record-count"]
    assert by_seq == {k: 10 for k in range(1, 7)}
    ids = sorted(json.loads(x)["id"] for x in run("scan", t, "--format", "jsonl").stdout.splitlines())
    assert ids == list(range(60))
