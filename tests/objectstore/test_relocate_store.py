"""`icectl relocate` between a local directory and S3 (moto's server): a local table with
position deletes moved to a bucket, then back to another directory, then incrementally after a
new commit; each copy scans to the source's rows (icectl, and pyiceberg reading from the bucket)
and names no path of where it came from."""

from __future__ import annotations

import json
from pathlib import Path

from clirun import icectl


def _rows(run, location: str) -> list[dict]:
    out = run("scan", location, "--format", "jsonl").stdout
    return sorted((json.loads(x) for x in out.splitlines()), key=lambda r: r["id"])


def test_relocate_local_to_s3_and_back(s3, tmp_path: Path) -> None:
    src = tmp_path / "wh" / "db" / "events"
    csv = tmp_path / "rows.csv"
    csv.write_text("id,v\n" + "".join(f"{i},v{i}\n" for i in range(30)))
    for args in (["create", src, "--schema", "id long not null, v string", "--partition", "bucket(3, id)"],
                 ["write", src, csv], ["delete", src, "--filter", "id in (2, 5, 29)", "--mode", "merge-on-read"]):
        r = icectl(*map(str, args))
        assert r.returncode == 0, r.stderr
    expected = _rows(lambda *a: icectl(*a), str(src))
    assert len(expected) == 27

    bucket = s3.new_bucket()
    remote = s3.url(bucket, "dr/events")
    out = json.loads(s3.run("relocate", str(src), "--to", remote, "--json").stdout)
    files = json.loads(icectl("inspect", "files", str(src), "--json").stdout)
    assert out["copied"] and out["rewritten-delete-files"] == sum(f["content"] != "data" for f in files) >= 1
    assert out["copied-files"] == sum(f["content"] == "data" for f in files)
    assert _rows(s3.run, remote) == expected
    keys = s3.keys(bucket, "dr/events")
    assert "dr/events/metadata/version-hint.text" in keys
    for k in keys:
        if k.endswith((".json", ".avro")):
            assert str(src).encode() not in s3.fs().cat_file(f"{bucket}/{k}"), k

    from pyiceberg.table import StaticTable

    hint = s3.fs().cat_file(f"{bucket}/dr/events/metadata/version-hint.text").decode().strip()
    t = StaticTable.from_metadata(f"{remote}/metadata/v{hint}.metadata.json", properties=s3.pyiceberg_properties())
    assert sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == expected

    back = tmp_path / "restored" / "events"
    s3.run("relocate", remote, "--to", str(back))
    assert _rows(lambda *a: icectl(*a), str(back)) == expected

    # incrementally: one more commit at the source, then only what is new goes to the bucket
    start = f"v{hint}.metadata.json"
    more = tmp_path / "more.csv"
    more.write_text("id,v\n100,new\n")
    assert icectl("write", str(src), str(more)).returncode == 0
    out = json.loads(s3.run("relocate", str(src), "--to", remote, "--start-version", start, "--json").stdout)
    assert out["rewritten-metadata-files"] == 1 and out["copied-files"] == 1
    assert _rows(s3.run, remote) == sorted(expected + [{"id": 100, "v": "new"}], key=lambda r: r["id"])
