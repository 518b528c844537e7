"""pyiceberg reads the table icectl wrote on each object store (StaticTable.from_metadata through
the store's emulator: S3 with pyiceberg's pyarrow FileIO, GCS and Azure with its fsspec FileIO)
and returns the rows `icectl scan` returns, deletes applied."""

from __future__ import annotations

import json


def test_pyiceberg_reads_what_icectl_scans(store, tmp_path) -> None:
    s3 = store
    from pyiceberg.table import StaticTable

    b = s3.new_bucket()
    t = store.url(b, "db/events")
    s3.run("create", t, "--schema", "id long not null, v string, d double", "--partition", "bucket(2, id)")
    csv = tmp_path / "rows.csv"
    csv.write_text("id,v,d\n" + "".join(
        f"{i},{'' if i % 5 == 0 else f'v{i}'},{'NaN' if i % 7 == 0 else -i / 2}\n" for i in range(-5, 30)))
    s3.run("write", t, str(csv))
    s3.run("delete", t, "--filter", "id between 3 and 9")
    csv2 = tmp_path / "more.csv"
    csv2.write_text("id,v,d\n100,x,0.0\n-100,,-0.0\n")
    s3.run("write", t, str(csv2))
    ours = [json.loads(x) for x in s3.run("scan", t, "--format", "jsonl").stdout.splitlines()]
    md = json.loads(s3.run("inspect", "table", t, "--json").stdout)["metadata-file"]

    table = StaticTable.from_metadata(md, properties=store.pyiceberg_properties())
    theirs = table.scan().to_arrow().to_pylist()

    def key(r):
        return r["id"]

    def norm(r):
        d = r["d"]  # (JSON lines carry NaN as the text "NaN")
        d = float(d) if isinstance(d, str) else d
        return (r["id"], r["v"], "nan" if d != d else repr(d) if d is not None else None)

    assert len(theirs) == len(ours) == 35 + 2 - 7
    assert [norm(r) for r in sorted(theirs, key=key)] == [norm(r) for r in sorted(ours, key=key)]
