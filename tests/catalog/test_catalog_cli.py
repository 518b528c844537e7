"""The catalog options through the CLI: configuration (.pyiceberg.yaml, PYICEBERG_CATALOG__*,
ICECTL_CATALOG, --catalog-uri), `list`, `create`/`register` in both directions, and bad input
(one line, the documented exit code, nothing written)."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3

import pytest
from clirun import icectl

from icectl.catalog.config import resolve_config
from icectl.catalog.yaml_subset import parse_yaml_mapping
from icectl.errors import InvalidInput

SCHEMA = "id long, s string"


def _yaml(home, text):
    home.mkdir(exist_ok=True)
    (home / ".pyiceberg.yaml").write_text(text)
    return {"PYICEBERG_HOME": str(home), "HOME": str(home)}


def _tree(path):
    """Every file under ``path`` with its digest, and the catalog database's rows (what "nothing
    written" compares: a WAL database's files change when a reader checkpoints)."""
    out = {}
    for d, _, files in os.walk(path):
        for f in files:
            p = os.path.join(d, f)
            if f.startswith("c.db"):
                continue
            out[p] = hashlib.sha256(open(p, "rb").read()).hexdigest()
    with sqlite3.connect(os.path.join(path, "c.db")) as db:
        for table in ("iceberg_tables", "iceberg_namespace_properties"):
            out[table] = sorted(db.execute(f"SELECT * FROM {table}").fetchall())
    return out


def test_yaml_subset_reads_pyicebergs_configuration_and_refuses_the_rest():
    text = """# catalogs
catalog:
  default:
    type: sql
    uri: "sqlite:////tmp/a b/c.db"   # quoted
    warehouse: 'file:///tmp/wh'
  Prod:
    uri: postgresql+pg8000://u:p@h:5432/db
"""
    data = parse_yaml_mapping(text, "x.yaml")
    assert data == {"catalog": {"default": {"type": "sql", "uri": "sqlite:////tmp/a b/c.db",
                                            "warehouse": "file:///tmp/wh"},
                                "prod": {"uri": "postgresql+pg8000://u:p@h:5432/db"}}}
    for bad in ("catalog:\n  - a\n", "catalog: [a, b]\n", "a: 1\n  b: 2\n", "a: &x 1\n", "a: 1\na: 2\n",
                "a: 'open\n"):
        with pytest.raises(InvalidInput, match="x.yaml line"):
            parse_yaml_mapping(bad, "x.yaml")


def test_environment_variables_overlay_the_file_as_pyiceberg_does(tmp_path):
    env = _yaml(tmp_path / "home", "catalog:\n  prod:\n    type: sql\n    uri: sqlite:///a.db\n    warehouse: /wh\n")
    env["PYICEBERG_CATALOG__PROD__URI"] = "sqlite:///b.db"
    cfg = resolve_config("prod", None, None, env)
    assert (cfg.name, cfg.uri, cfg.warehouse) == ("prod", "sqlite:///b.db", "/wh")
    only_env = {"PYICEBERG_CATALOG__ENVCAT__URI": "sqlite:///e.db", "PYICEBERG_CATALOG__ENVCAT__WAREHOUSE": "/w2",
                "HOME": str(tmp_path / "nohome")}
    cfg = resolve_config(None, None, None, {**only_env, "ICECTL_CATALOG": "envcat"})
    assert (cfg.name, cfg.uri, cfg.warehouse) == ("envcat", "sqlite:///e.db", "/w2")


def test_a_named_catalog_from_pyiceberg_yaml_and_icectl_catalog_default(tmp_path):
    env = _yaml(tmp_path / "home", f"catalog:\n  lake:\n    type: sql\n    uri: sqlite:///{tmp_path}/lake.db\n"
                                  f"    warehouse: {tmp_path}/wh\n")
    assert icectl("create", "ns.t", "--catalog", "lake", "--schema", SCHEMA, env=env).exit_code == 0
    (tmp_path / "d.csv").write_text("id,s\n1,a\n2,b\n")
    assert icectl("write", "ns.t", str(tmp_path / "d.csv"), env={**env, "ICECTL_CATALOG": "lake"}).exit_code == 0
    r = icectl("scan", "ns.t", "--count", env={**env, "ICECTL_CATALOG": "lake"})
    assert (r.exit_code, r.stdout.strip()) == (0, "2")
    # plan's own fast parser resolves the default catalog too
    r = icectl("plan", "ns.t", "--json", env={**env, "ICECTL_CATALOG": "lake"})
    assert r.exit_code == 0 and json.loads(r.stdout)["summary"]["records"] == 2, r.output
    # with ICECTL_CATALOG set, a location is still a filesystem table
    loc = str(tmp_path / "wh" / "ns" / "t")
    assert icectl("inspect", "table", loc, env={**env, "ICECTL_CATALOG": "lake"}).exit_code == 0
    r = icectl("properties", "set", loc, "a=b", env={**env, "ICECTL_CATALOG": "lake"})
    assert r.exit_code == 9 and "managed by a catalog" in r.stderr  # its files, read-only without it
    with sqlite3.connect(tmp_path / "lake.db") as db:
        assert db.execute("SELECT catalog_name, table_namespace, table_name FROM iceberg_tables").fetchall() == \
            [("lake", "ns", "t")]


def test_list_namespaces_and_tables(tmp_path):
    uri = ["--catalog-uri", f"sqlite:///{tmp_path}/c.db", "--warehouse", str(tmp_path / "wh")]
    for ident in ("a.t1", "a.b.t2", "c.t3"):
        assert icectl("create", ident, *uri, "--schema", SCHEMA).exit_code == 0
    r = icectl("list", *uri, "--json")
    out = json.loads(r.stdout)
    assert out["catalog"] == "default" and out["namespaces"] == ["a", "a.b", "c"]
    assert [(t["identifier"], t["kind"]) for t in out["tables"]] == [("a.b.t2", "sql"), ("a.t1", "sql"), ("c.t3", "sql")]
    assert out["tables"][0]["location"] == str(tmp_path / "wh" / "a" / "b" / "t2")
    r = icectl("list", "a.b", *uri, "--json")
    assert [t["identifier"] for t in json.loads(r.stdout)["tables"]] == ["a.b.t2"]
    r = icectl("list", *uri)
    assert r.exit_code == 0 and "3 table(s), 3 namespace(s) in catalog default" in r.stderr


def test_create_and_register_round_trip(tmp_path):
    """A filesystem table moves into the catalog (register, no data copied), is changed there, and
    goes back to a filesystem table (register of its current file as v<N+1> + version hint)."""
    cat = ["--catalog-uri", f"sqlite:///{tmp_path}/c.db"]
    fs = str(tmp_path / "wh" / "db" / "t")
    (tmp_path / "d.csv").write_text("id,s\n1,a\n2,b\n3,c\n")
    assert icectl("create", fs, "--schema", SCHEMA).exit_code == 0
    assert icectl("write", fs, str(tmp_path / "d.csv")).exit_code == 0
    r = icectl("register", "db.t", "--metadata", fs, *cat, "--json")  # a table's location: its current file
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["metadata-file"].endswith("/v2.metadata.json")
    assert icectl("register", "db.t", "--metadata", fs, *cat).exit_code == 4  # exists already
    assert icectl("delete", "db.t", "--filter", "id = 2", *cat).exit_code == 0
    current = icectl("inspect", "table", "db.t", *cat, "--field", "metadata-file").stdout.strip()
    assert current.rsplit("/", 1)[-1].startswith("00000-")  # after v2 (no NNNNN number): 00000, as Java
    # and back: the filesystem home has versions up to v2; a new location is needed for a fresh one,
    # so export under a second warehouse layout is refused (the location is the table's) ...
    r = icectl("register", str(tmp_path / "wh2" / "db" / "t"), "--metadata", current)
    assert r.exit_code == 5
    # ... and at its own location, where v1, v2 exist, it is refused as existing: drop the filesystem
    # pointer first (the catalog now holds the table), then export
    assert icectl("register", fs, "--metadata", current).exit_code == 4
    for name in os.listdir(os.path.join(fs, "metadata")):
        if name.startswith("v") or name == "version-hint.text":
            os.remove(os.path.join(fs, "metadata", name))
    r = icectl("register", fs, "--metadata", current, "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["metadata-file"].endswith("/v1.metadata.json")
    assert (tmp_path / "wh" / "db" / "t" / "metadata" / "version-hint.text").read_text() == "1"
    assert icectl("scan", fs, "--columns", "id").stdout.split() == ["id", "1", "3"]


def test_bad_input_one_line_exit_code_nothing_written(tmp_path):
    uri = f"sqlite:///{tmp_path}/c.db"
    assert icectl("create", "db.t", "--catalog-uri", uri, "--warehouse", str(tmp_path / "wh"),
                  "--schema", SCHEMA).exit_code == 0
    (tmp_path / "d.csv").write_text("id,s\n1,a\n")
    before = _tree(tmp_path)
    env = {"HOME": str(tmp_path / "nohome"), "PYICEBERG_HOME": None}
    cases = [
        (["write", "db.t", str(tmp_path / "d.csv"), "--catalog", "nosuch"], 3, "no catalog 'nosuch'"),
        (["write", "db.t", str(tmp_path / "d.csv"), "--catalog-uri", "mysql://h/db"], 2, "unsupported catalog URI"),
        (["write", "db.t", str(tmp_path / "d.csv"), "--catalog-uri", "sqlite:/x.db"], 2, "invalid sqlite catalog URI"),
        (["write", "db.t", str(tmp_path / "d.csv"), "--catalog-uri", f"sqlite:///{tmp_path}/none.db"], 3,
         "no catalog database"),
        (["write", "db.t", str(tmp_path / "d.csv"), "--catalog-uri", "postgresql://u@127.0.0.1:9/db"], 7,
         "cannot connect to the catalog database"),
        (["write", "db.nope", str(tmp_path / "d.csv"), "--catalog-uri", uri], 3, "no table db.nope"),
        (["write", str(tmp_path / "wh" / "db" / "t"), str(tmp_path / "d.csv"), "--catalog-uri", uri], 2,
         "--catalog-uri: a catalog's table is named namespace.table"),
    ]
    for argv, code, text in cases:
        r = icectl(*argv, env=env)
        assert (r.exit_code, r.stdout) == (code, ""), (argv, r.output)
        assert r.stderr.count("\n") == 1 and text in r.stderr, r.stderr
    assert _tree(tmp_path) == before
    # a row whose metadata file is missing
    md = icectl("inspect", "table", "db.t", "--catalog-uri", uri, "--field", "metadata-file").stdout.strip()
    os.remove(md)
    before = _tree(tmp_path)
    r = icectl("write", "db.t", str(tmp_path / "d.csv"), "--catalog-uri", uri)
    assert r.exit_code == 8 and r.stderr.count("\n") == 1 and "that file is missing" in r.stderr
    assert _tree(tmp_path) == before


def test_the_python_api_loads_and_commits_a_catalog_table(tmp_path):
    import pyarrow as pa

    import icectl as api

    uri = f"sqlite:///{tmp_path}/c.db"
    assert icectl("create", "db.t", "--catalog", "lake", "--catalog-uri", uri, "--warehouse", str(tmp_path / "wh"),
                  "--schema", SCHEMA).exit_code == 0
    t = api.load_table("db.t", catalog="lake", catalog_uri=uri)
    t.write(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "s": ["a", "b", "c"]}))
    t.delete("id = 2")
    again = api.load_table("db.t", catalog="lake", catalog_uri=uri)
    assert sorted(again.scan(columns=["id"]).to_arrow().column("id").to_pylist()) == [1, 3]
    assert again.metadata_location.rsplit("/", 1)[-1].startswith("00002-")
    with sqlite3.connect(tmp_path / "c.db") as db:
        assert db.execute("SELECT metadata_location FROM iceberg_tables WHERE catalog_name = 'lake'").fetchone()[0] \
            == again.metadata_location
