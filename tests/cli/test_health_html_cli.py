"""`icectl health TABLE --html PATH` as a user runs it, and the page in a real browser.

A partitioned, sorted table whose partition values hold markup characters (< & " '), with
appends, a compaction and a merge-on-read delete, is judged once with ``--json --html``. Then:
- the page is self-contained (loads nothing: no URL, no src, no link) and its texts are escaped;
- headless Chromium renders it (``--dump-dom`` and ``--screenshot``): the charts are drawn (SVG
  marks present, one per figure, counted against the JSON), every element with ``data-figure``
  holds exactly the JSON's value at that JSON Pointer, every drawn sum of the "rest" equals the
  sum of the JSON rows it covers, and the screenshot is a real picture (not one flat colour);
- the snapshots dimension's timeline is the snapshots' summaries (``inspect snapshots``);
- a bad --html PATH is refused before any work and writes nothing; an existing file is replaced.

Chromium: see tests/health_page.py (fails under CI when missing, skips elsewhere).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from clirun import icectl
from health_page import Dom, browse, check_figures, dimension, png_facts

ENV = {"NO_COLOR": "1", "ICECTL_WAREHOUSE": None}
NASTY = ['a<b', 'x&y', 'q"uote', "it's", "<script>alert(1)</script>"]


def run(*args: Any) -> subprocess.CompletedProcess:
    return icectl(*args, env=ENV)


def make_table(root: Path) -> Path:
    """Partitions named with markup characters, sorted by id; appends, a compaction (replace),
    more appends and a merge-on-read delete of one row of a file (delete): small files, several manifests, delete
    files."""
    loc = root / "wh" / "db" / "t"
    assert run("create", loc, "--schema", "id long, cat string, v double", "--partition", "cat").returncode == 0
    assert run("sort-order", "set", loc, "id").returncode == 0  # the layout dimension judges id
    for i in range(5):
        rows = "".join(f'{i * 100 + k * 50 + j},"{NASTY[j].replace(chr(34), chr(34) * 2)}",{j}.5\n'
                       for j in range(len(NASTY)) for k in range(2))  # two rows a file
        data = root / f"rows{i}.csv"
        data.write_text("id,cat,v\n" + rows, encoding="utf-8")
        assert run("write", loc, data).returncode == 0
        if i == 2:
            done = run("compact", loc, "--min-input-files", "2")
            assert done.returncode == 0, done.stderr
    done = run("delete", loc, "--filter", "id = 401", "--mode", "merge-on-read")
    assert done.returncode == 0, done.stderr
    return loc


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], Path]:
    """(the table, `health --json`'s document, the page `--html` wrote in the same run)."""
    root = tmp_path_factory.mktemp("health-html")
    loc = make_table(root)
    page = root / "report.html"
    done = run("health", loc, "--json", "--html", page)
    assert done.returncode in (0, 14), done.stderr
    return loc, json.loads(done.stdout), page


def expected_charts(doc: dict[str, Any]) -> int:
    """Charts the page draws for this report: file sizes, bytes and files per partition, manifest
    sizes, the snapshot timeline and overlap depths, each when its figures are there."""
    figs = {d["name"]: d["figures"] for d in doc["dimensions"] if not d["skipped"]}
    files = figs.get("data-files", {})
    return (bool(files.get("size-histogram")) + 2 * bool(files.get("partitions"))
            + bool(figs.get("manifests", {}).get("manifest-sizes")) + bool(figs.get("snapshots", {}).get("timeline"))
            + bool(figs.get("layout", {}).get("columns")))


def check_charts(dom: Dom, doc: dict[str, Any]) -> None:
    """The charts are there, one mark per figure of the JSON."""
    i, files = dimension(doc, "data-files")
    hist = files["figures"]["size-histogram"]
    bars = [e for e in dom.select("rect", "bar") if f"/dimensions/{i}/figures/size-histogram/" in
            e["attrs"].get("data-figure", "")]
    assert len(bars) == len(hist) > 0
    assert [json.loads(b["attrs"]["data-value"]) for b in bars] == [b["files"] for b in hist]
    parts = files["figures"]["partitions"]
    per_part = [e for e in dom.select("rect", "bar") if f"/dimensions/{i}/figures/partitions/" in
                e["attrs"].get("data-figure", "")]
    assert len(per_part) == 2 * len(parts) == 2 * len(NASTY)  # bytes and files, each partition
    labels = {e["text"] for e in dom.select("text", "label")}
    assert {f"cat={v}" for v in NASTY} <= labels  # the values themselves, escaped only in the markup
    m, manifests = dimension(doc, "manifests")
    sizes = [e for e in dom.select("rect", "bar") if f"/dimensions/{m}/figures/manifest-sizes/" in
             e["attrs"].get("data-figure", "")]
    assert len(sizes) == len(manifests["figures"]["manifest-sizes"]) == manifests["figures"]["manifests"] > 1
    assert dom.select("line", "target")
    la, layout = dimension(doc, "layout")
    depth = [e for e in dom.select("rect", "bar") if f"/dimensions/{la}/figures/columns/" in
             e["attrs"].get("data-figure", "")]
    assert [c["column"] for c in layout["figures"]["columns"]] == ["id"]
    assert len(depth) == 2  # average and max of id


def test_the_page_is_self_contained_and_escaped(judged) -> None:
    _, doc, page = judged
    text = page.read_text(encoding="utf-8")
    assert not re.search(r"https?:|url\(|@import", text, re.I)
    dom = Dom(text)
    assert not [e for e in dom.elements if e["tag"] in ("script", "img", "link", "iframe", "object", "embed")]
    assert not [n for e in dom.elements for n in e["attrs"] if n in ("src", "href", "srcset", "action")]
    for nasty in NASTY:
        assert nasty not in text
    assert check_figures(dom, doc) > 50
    check_charts(dom, doc)


def test_chromium_draws_the_charts_with_the_json_figures(judged, tmp_path: Path) -> None:
    _, doc, page = judged
    rendered = Dom(browse(page, tmp_path, "--dump-dom").stdout)
    # the browser's DOM: the charts are SVG elements in it, every figure the JSON's number
    assert len(rendered.select("svg", "chart")) == expected_charts(doc)
    assert check_figures(rendered, doc) == check_figures(Dom(page.read_text(encoding="utf-8")), doc)
    check_charts(rendered, doc)
    assert not rendered.select("script")  # the partition values stayed text
    assert any("<script>alert(1)</script>" in e["text"] for e in rendered.select("text", "label"))
    shot = tmp_path / "report.png"
    browse(page, tmp_path, f"--screenshot={shot}")
    width, height, distinct = png_facts(shot.read_bytes())
    assert (width, height) == (1200, 3000) and distinct > 50


def test_an_empty_table_has_a_page(tmp_path: Path) -> None:
    loc = tmp_path / "t"
    assert run("create", loc, "--schema", "id long").returncode == 0
    page = tmp_path / "r.html"
    done = run("health", loc, "--json", "--html", page)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    dom = Dom(page.read_text(encoding="utf-8"))
    assert check_figures(dom, doc) > 20
    assert len(dom.select("svg", "chart")) == expected_charts(doc) == 1  # the (empty) size histogram


def test_html_replaces_the_file_and_leaves_no_temporary(judged, tmp_path: Path) -> None:
    loc, doc, _ = judged
    page = tmp_path / "r.html"
    page.write_text("old", encoding="utf-8")
    done = run("health", loc, "--html", page)
    assert done.returncode in (0, 14), done.stderr
    assert page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.html"]
    assert done.stdout.strip()  # the terminal view is printed as without --html


@pytest.mark.parametrize("bad", ["dir", "missing/r.html"])
def test_a_bad_html_path_is_refused_before_any_work(judged, tmp_path: Path, bad: str) -> None:
    loc, _, _ = judged
    (tmp_path / "dir").mkdir()
    before = sorted(str(p) for p in loc.rglob("*"))
    done = run("health", loc, "--html", tmp_path / bad)
    assert done.returncode == 2, done.stderr
    line, = done.stderr.strip().splitlines()
    assert "--html" in line
    assert sorted(str(p) for p in tmp_path.rglob("*")) == [str(tmp_path / "dir")]
    assert sorted(str(p) for p in loc.rglob("*")) == before


def test_html_with_a_bad_field_writes_nothing(judged, tmp_path: Path) -> None:
    loc, _, _ = judged
    done = run("health", loc, "--html", tmp_path / "r.html", "--field", "no-such-field")
    assert done.returncode == 2, done.stderr
    assert not list(tmp_path.iterdir())


def test_html_needs_one_table(tmp_path: Path) -> None:
    (tmp_path / "wh").mkdir()
    done = run("health", "--warehouse", tmp_path / "wh", "--html", tmp_path / "r.html")
    assert done.returncode == 2 and "--html" in done.stderr, done.stderr
    assert not (tmp_path / "r.html").exists()


def test_completion_offers_html() -> None:
    env = dict(os.environ, _ICECTL_COMPLETE="complete_bash", COMP_WORDS="icectl health t --ht", COMP_CWORD="3")
    done = subprocess.run([sys.executable, "-m", "icectl"], capture_output=True, text=True, env=env, timeout=60)
    assert done.stdout.split() == ["--html"]
    # after --html nothing is offered: the shell completes file names
    env.update(COMP_WORDS="icectl health t --html ", COMP_CWORD="4")
    done = subprocess.run([sys.executable, "-m", "icectl"], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0 and done.stdout.split() == []


def test_the_timeline_is_the_snapshots_summaries(judged) -> None:
    loc, doc, page = judged
    _, snaps = dimension(doc, "snapshots")
    timeline = snaps["figures"]["timeline"]
    listed = json.loads(run("inspect", "snapshots", loc, "--json").stdout)
    listed.sort(key=lambda s: (s["timestamp-ms"], s["sequence-number"]))
    assert [(r["snapshot-id"], r["operation"], r["timestamp-ms"]) for r in timeline] == \
        [(s["snapshot-id"], s["operation"], s["timestamp-ms"]) for s in listed]
    for r, s in zip(timeline, listed):
        for key in ("total-records", "total-data-files", "total-delete-files", "total-files-size"):
            assert r[key] == int(s["summary"][key]), (key, s["snapshot-id"])
    assert {r["operation"] for r in timeline} == {"append", "replace", "delete"}
    # the newest totals are the current snapshot's files, as the other dimensions count them
    last = timeline[-1]
    files = dimension(doc, "data-files")[1]["figures"]
    deletes = dimension(doc, "deletes")[1]["figures"]
    assert last["snapshot-id"] == doc["snapshot-id"]
    assert (last["total-data-files"], last["total-records"]) == (files["data-files"], files["records"])
    assert last["total-delete-files"] == deletes["delete-files"] > 0
    assert last["total-files-size"] == files["data-bytes"] + deletes["delete-bytes"]
    # drawn: one dot per snapshot and total, each the JSON's number (checked in check_figures)
    dots = [e for e in Dom(page.read_text(encoding="utf-8")).select("circle", "dot")
            if "/figures/timeline/" in e["attrs"]["data-figure"]]
    assert len(dots) == 4 * len(timeline)
