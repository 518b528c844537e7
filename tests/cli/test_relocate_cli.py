"""`icectl relocate` run as a user runs it: what it writes where, its refusals (one line, their
exit codes, nothing written), the clean-up of a run that fails half-way, copy plans and staging,
incremental runs, gzip metadata, and files outside the table's location."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from clirun import icectl, icectl_json


def _tree(root: Path) -> dict[str, str]:
    if not root.exists():
        return {}
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _ok(*args: object) -> str:
    r = icectl(*map(str, args))
    assert r.returncode == 0, r.stderr
    return r.stdout


def _rows(location: Path) -> list[str]:
    return sorted(_ok("scan", location, "--format", "csv").splitlines())


@pytest.fixture
def table(tmp_path: Path) -> Path:
    t = tmp_path / "wh" / "db" / "t"
    csv = tmp_path / "rows.csv"
    csv.write_text("id,s\n" + "".join(f"{i},s{i}\n" for i in range(12)))
    _ok("create", t, "--schema", "id long not null, s string", "--partition", "bucket(2, id)")
    _ok("write", t, csv)
    _ok("delete", t, "--filter", "id in (1, 4)", "--mode", "merge-on-read")
    return t


def _refused(code: int, *args: object) -> str:
    r = icectl(*map(str, args))
    assert r.returncode == code, (r.returncode, r.stderr)
    assert r.stdout == "" and len(r.stderr.strip().splitlines()) == 1, r.stderr
    return r.stderr


def test_relocated_table_is_whole_and_the_source_untouched(table: Path, tmp_path: Path) -> None:
    before = _tree(table)
    moved = tmp_path / "new" / "t"
    out = icectl_json("relocate", str(table), "--to", str(moved), "--json")
    assert _tree(table) == before
    assert out["metadata-file"] == str(moved / "metadata" / "v3.metadata.json")
    assert (moved / "metadata" / "version-hint.text").read_text() == "3"
    assert out["files-to-copy"] == len(_tree(moved)) - 1  # every file but the version hint
    assert _rows(moved) == _rows(table)
    assert set(_tree(moved)) - {"metadata/version-hint.text"} == set(_tree(table)) - {"metadata/version-hint.text"}
    check = icectl_json("check", str(moved), "--deep", "--json")
    assert [p for p in check["problems"] if p["severity"] == "error"] == []
    pos = icectl_json("inspect", "position-deletes", str(moved), "--json")
    assert pos and all(p["file-path"].startswith(str(moved) + "/data/") for p in pos)


def test_a_target_holding_a_table_is_refused_and_nothing_written(table: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    _ok("create", other, "--schema", "x int")
    before = _tree(other)
    err = _refused(4, "relocate", table, "--to", other)
    assert "a table already exists" in err
    assert _tree(other) == before
    # inside the source, and above it: refused too
    inside = table / "copy"
    _refused(5, "relocate", table, "--to", inside)
    assert not inside.exists()
    _refused(5, "relocate", table, "--to", table.parent)


def test_bad_options_are_refused_before_anything_is_written(table: Path, tmp_path: Path) -> None:
    moved = tmp_path / "moved"
    assert "--staging" in _refused(2, "relocate", table, "--to", moved, "--staging", tmp_path / "st")
    assert "--start-version" in _refused(3, "relocate", table, "--to", moved, "--start-version", "v9.metadata.json")
    assert "--end-version" in _refused(3, "relocate", table, "--to", moved, "--end-version", "v7")
    _refused(2, "relocate", table, "--to", moved, "--start-version", "v3.metadata.json")  # not older than the end
    # incrementally, the target must hold the start version relocated
    _refused(3, "relocate", table, "--to", moved, "--start-version", "2")
    assert not moved.exists()


def test_a_run_that_fails_half_way_leaves_nothing(table: Path, tmp_path: Path) -> None:
    data = sorted((table / "data").rglob("*.parquet"))
    victim = next(p for p in data if "deletes" not in p.name)
    victim.unlink()
    moved = tmp_path / "moved"
    r = icectl("relocate", str(table), "--to", str(moved))
    assert r.returncode == 3, r.stderr
    assert str(victim.name) in r.stderr
    assert _tree(moved) == {}


def test_copy_plan_writes_nothing_at_the_target(table: Path, tmp_path: Path) -> None:
    target = tmp_path / "far" / "t"
    plan = tmp_path / "plan" / "copies.csv"
    staging = tmp_path / "staging"
    out = icectl_json("relocate", str(table), "--to", str(target), "--copy-plan", str(plan),
                      "--staging", str(staging), "--json")
    assert not target.exists()
    assert out["staging-location"] == str(staging) and out["file-list-location"] == str(plan)
    pairs = [line.split(",") for line in plan.read_text().splitlines()]
    assert len(pairs) == out["files-to-copy"]
    staged = {str(staging / p) for p in _tree(staging)}
    assert {s for s, _ in pairs if s.startswith(str(staging))} == staged
    for src, dst in pairs:
        rel = dst.removeprefix(str(target) + "/")
        assert src in (str(staging / rel), str(table / rel)), (src, dst)
    # making the copies gives a table that reads the same
    for src, dst in pairs:
        Path(dst).parent.mkdir(parents=True, exist_ok=True)
        Path(dst).write_bytes(Path(src).read_bytes())
    assert _rows(target) == _rows(table)
    # a new location holding a table is refused with a copy plan too
    assert "a table already exists" in _refused(4, "relocate", table, "--to", target, "--copy-plan", plan)
    # a staging location that is not empty is refused
    assert "--staging" in _refused(4, "relocate", table, "--to", target, "--copy-plan", plan, "--staging", staging)
    # the default staging location is a new directory beside the plan
    out = icectl_json("relocate", str(table), "--to", str(target) + "2", "--copy-plan", str(plan), "--json")
    assert Path(out["staging-location"]).parent == plan.parent
    assert Path(out["staging-location"]).name.startswith("copy-table-staging-")


def test_incremental_relocation_adds_only_what_is_new(table: Path, tmp_path: Path) -> None:
    moved = tmp_path / "moved"
    _ok("relocate", table, "--to", moved)
    more = tmp_path / "more.csv"
    more.write_text("id,s\n100,new\n")
    _ok("write", table, more)
    _ok("delete", table, "--filter", "id = 6", "--mode", "merge-on-read")
    before = _tree(moved)
    out = icectl_json("relocate", str(table), "--to", str(moved), "--start-version", "v3.metadata.json", "--json")
    assert out["start-version"] == "v3.metadata.json" and out["latest-version"] == "v5.metadata.json"
    assert out["rewritten-metadata-files"] == 2 and out["rewritten-manifest-lists"] == 2
    assert out["copied-files"] == 1
    after = _tree(moved)
    assert {k: v for k, v in after.items() if k in before and k != "metadata/version-hint.text"} == \
        {k: v for k, v in before.items() if k != "metadata/version-hint.text"}
    assert _rows(moved) == _rows(table)
    # the same again: the target is now at v5, not at v3
    _refused(5, "relocate", table, "--to", moved, "--start-version", "v3.metadata.json")


def test_gzip_metadata_and_a_custom_source_prefix(tmp_path: Path) -> None:
    t = tmp_path / "wh" / "db" / "gz"
    _ok("create", t, "--schema", "id long", "--property", "write.metadata.compression-codec=gzip")
    ext = tmp_path / "wh" / "landing" / "f.csv"
    ext.parent.mkdir(parents=True)
    ext.write_text("id\n1\n2\n")
    _ok("write", t, ext)
    # a data file outside the table's location, added in place
    import pyarrow as pa
    import pyarrow.parquet as pq

    outside = tmp_path / "wh" / "landing" / "x.parquet"
    pq.write_table(pa.table({"id": pa.array([7], pa.int64())}), outside)
    _ok("append", t, outside)
    err = _refused(5, "relocate", t, "--to", tmp_path / "dr" / "gz")
    assert str(outside) in err and "--source-prefix" in err
    out = icectl_json("relocate", str(t), "--source-prefix", str(tmp_path / "wh"), "--to", str(tmp_path / "dr"),
                      "--json")
    moved = tmp_path / "dr" / "db" / "gz"
    assert out["target-location"] == str(moved)
    assert (tmp_path / "dr" / "landing" / "x.parquet").is_file()
    names = sorted(p.name for p in (moved / "metadata").glob("*.metadata.json"))
    assert names == ["v1.gz.metadata.json", "v2.gz.metadata.json", "v3.gz.metadata.json"]
    assert _rows(moved) == _rows(t) == ["1", "2", "7", "id"]
    assert json.loads(_ok("inspect", "table", moved, "--json"))["location"] == str(moved)


def test_an_unknown_outcome_of_a_version_file_keeps_every_file(table: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from icectl.errors import CommitStateUnknown
    from icectl.io.storage.files import FileIO

    real = FileIO.rename_no_replace
    seen: list[frozenset[str]] = []

    def rename_no_replace(self, src, dst, durable=False):
        if str(dst).endswith("/v2.metadata.json"):
            seen.append(frozenset(_tree(tmp_path / "moved")))
            raise CommitStateUnknown(f"cannot tell whether {dst} was created (injected)")
        return real(self, src, dst, durable)

    monkeypatch.setattr(FileIO, "rename_no_replace", rename_no_replace)
    r = icectl("relocate", str(table), "--to", str(tmp_path / "moved"))
    assert r.returncode == 12 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert len(seen) == 1 and "metadata/v1.metadata.json" in seen[0]
    assert seen[0] <= frozenset(_tree(tmp_path / "moved"))  # nothing written before was removed


def test_an_end_version_then_the_rest_incrementally(table: Path, tmp_path: Path) -> None:
    moved = tmp_path / "moved"
    out = icectl_json("relocate", str(table), "--to", str(moved), "--end-version", "2", "--json")
    assert out["latest-version"] == "v2.metadata.json" and out["rewritten-metadata-files"] == 2
    assert (moved / "metadata" / "version-hint.text").read_text() == "2"
    assert not (moved / "metadata" / "v3.metadata.json").exists()
    first = json.loads(_ok("inspect", "snapshots", table, "--json"))[0]["snapshot-id"]
    assert _rows(moved) == sorted(_ok("scan", table, "--snapshot", first, "--format", "csv").splitlines())
    assert out["rewritten-delete-files"] == 0
    out = icectl_json("relocate", str(table), "--to", str(moved), "--start-version", "v2.metadata.json", "--json")
    assert out["rewritten-delete-files"] >= 1 and out["copied-files"] == 0
    assert _rows(moved) == _rows(table)


def test_a_format_v1_table(tmp_path: Path) -> None:
    t = tmp_path / "v1"
    csv = tmp_path / "rows.csv"
    csv.write_text("id,d\n1,2020-01-01\n2,1969-12-31\n3,\n")
    _ok("create", t, "--schema", "id long, d date", "--partition", "year(d)", "--format-version", "1")
    _ok("write", t, csv)
    _ok("delete", t, "--filter", "id = 2")
    moved = tmp_path / "v1-moved"
    _ok("relocate", t, "--to", moved)
    assert _rows(moved) == _rows(t) and len(_rows(t)) == 3
