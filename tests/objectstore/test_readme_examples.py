"""The README's storage-options examples (the block after ``<!-- storage-options examples -->``
in its "Object stores" section), one per store, run as written against the store's emulator:
each example's ``export`` lines are its whole environment for icectl (the addresses
replaced by the emulator's), then its ``icectl create`` line, then a write and a scan."""

from __future__ import annotations

import json
import os
import re
import shlex

from tests.objectstore.conftest import AZURITE_ACCOUNT

README = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")
_SCHEME = {"s3": "s3", "gcs": "gs", "azure": "abfs"}


def _examples() -> dict[str, list[str]]:
    text = open(README, encoding="utf-8").read()
    block = text.split("<!-- storage-options examples -->", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    out: dict[str, list[str]] = {}
    for para in block.strip().split("\n\n"):
        lines = [ln for ln in para.splitlines() if ln.strip() and not ln.startswith("#")]
        create = [ln for ln in lines if ln.startswith("icectl create ")]
        kind = next(k for k, s in _SCHEME.items() if create and create[0].split()[2].startswith(f"{s}://"))
        out[kind] = lines
    return out


def test_the_readme_has_one_example_per_store() -> None:
    assert sorted(_examples()) == ["azure", "gcs", "s3"]


def test_the_readme_example_of_each_store_runs(store, tmp_path) -> None:
    lines = _examples()[store.kind]
    port = store.endpoint.rsplit(":", 1)[1]
    env = {"ICECTL_STORAGE_OPTIONS": None, "GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT": None,
           "ICECTL_CACHE_DIR": str(tmp_path / "cache")}
    create = None
    for line in lines:
        line = re.sub(r"127\.0\.0\.1:\d+", f"127.0.0.1:{port}", line.split("  #", 1)[0])
        if line.startswith("export "):
            key, _, value = line[len("export "):].partition("=")
            env[key] = shlex.split(value)[0]
        else:
            create = shlex.split(line)[1:]
    options = json.loads(env["ICECTL_STORAGE_OPTIONS"])
    assert options  # the example's own options, nothing of the fixture's
    if store.kind == "azure":
        assert f"AccountName={AZURITE_ACCOUNT}" in options["connection_string"]
    bucket = create[1].split("://", 1)[1].split("/", 1)[0]
    if not store.fs().exists(bucket):
        store.fs().mkdir(bucket)
    table = create[1].replace("/db/events", f"/db/events-{os.getpid()}-{store.kind}")
    store.run(*[table if a == create[1] else a for a in create], env=env, process=True)
    csv = tmp_path / "r.csv"
    csv.write_text("id,v\n1,a\n2,b\n")
    store.run("write", table, str(csv), env=env, process=True)
    r = store.run("scan", table, "--count", env=env, process=True)
    assert r.stdout.strip().endswith("2"), r.stdout
