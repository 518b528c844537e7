"""The health page from a report's JSON (html.render_html): self-contained, escaped, and every
figure element holding the JSON's value at its JSON Pointer. The real engine and a real
browser: tests/cli/test_health_html_cli.py."""

from __future__ import annotations

import json
import re
from typing import Any

from health_page import Elements, resolve

from icectl.ops.health.html import pointer, render_html
from icectl.ops.health.html_charts import TOP_PARTITIONS

NASTY = '<img src=x onerror="alert(1)"> & \'q\''


def report_json(partitions: int = 15) -> dict[str, Any]:
    hist = [{"lower-bytes": lo, "upper-bytes": hi, "files": f, "bytes": f * lo}
            for lo, hi, f in [(0, 1000, 3), (1000, 4000, 9), (4000, None, 2)]]
    parts = [{"spec-id": 0, "partition": {"c": f"{NASTY}{i}"}, "partition-path": f"c={NASTY}{i}",
              "data-files": 40 - i, "data-bytes": (40 - i) * 1000} for i in range(partitions)]
    verdict = {"dimension": "data-files", "code": "small-files", "severity": "due", "problem": f"small {NASTY}",
               "threshold": "max-small-file-share", "command": ["icectl", "compact", NASTY],
               "command-text": f"icectl compact '{NASTY}'",
               "effects": [{"measure": "data-files", "unit": "files", "before": 14, "after": 2},
                           {"measure": "small-file-share", "unit": "share", "before": 0.5, "after": None}]}
    return {
        "table": f"/wh/{NASTY}", "identifier": None, "metadata-file": "/wh/t/metadata/v3.metadata.json",
        "format-version": 2, "snapshot-id": 8028682378333561475, "generated-at-ms": 1_700_000_000_000,
        "status": "maintenance-due", "verdict-counts": {"due": 1, "warn": 0, "info": 0},
        "thresholds": {"target-file-size": {"value": 3000, "unit": "bytes", "source": "table-property",
                                            "property": "write.target-file-size-bytes"},
                       "a/b~c": {"value": 0.25, "unit": "share", "source": "default", "property": None}},
        "policy-problems": [f"property x={NASTY!r} is not a number"],
        "dimensions": [
            {"name": "data-files", "status": "maintenance-due", "skipped": None,
             "figures": {"data-files": 14, "data-bytes": 12345, "small-file-share": 0.5, "median-file-bytes": 940.5,
                         "target-file-size-bytes": 3000, "nested": {"deep-bytes": 7}, "size-histogram": hist,
                         "partitions": parts}, "verdicts": [verdict]},
            {"name": "manifests", "status": "ok", "skipped": None,
             "figures": {"manifests": 3, "manifest-sizes": [10, 200, 3000], "target-size-bytes": 8000},
             "verdicts": []},
            {"name": "snapshots", "status": "ok", "skipped": None,
             "figures": {"snapshots": 3, "oldest-snapshot-ms": 1_600_000_000_000, "oldest-snapshot-age-ms": 90_000,
                         "timeline": [
                             {"snapshot-id": 1, "timestamp-ms": 1_600_000_000_000, "operation": "append",
                              "total-records": 10, "total-data-files": 2, "total-delete-files": 0,
                              "total-files-size": 2000},
                             {"snapshot-id": 2, "timestamp-ms": 1_600_000_060_000, "operation": NASTY,
                              "total-records": None, "total-data-files": 3, "total-delete-files": 1,
                              "total-files-size": 3000},
                             {"snapshot-id": 3, "timestamp-ms": 1_600_000_090_000, "operation": "delete",
                              "total-records": 4, "total-data-files": 1, "total-delete-files": 0,
                              "total-files-size": 900}]},
             "verdicts": []},
            {"name": "layout", "status": "ok", "skipped": None,
             "figures": {"chosen": False, "columns": [
                 {"column": NASTY, "field-id": 1, "overlap-depth-average": 1.5, "overlap-depth-max": 3},
                 {"column": "b", "field-id": 2, "overlap-depth-average": None, "overlap-depth-max": None}]},
             "verdicts": []},
            {"name": "orphans", "status": "skipped", "skipped": "not listed (--list-files)", "figures": {},
             "verdicts": []}],
        "verdicts": [verdict],
    }


def test_pointer_escapes_as_rfc6901():
    assert pointer("thresholds", "a/b~c", "value") == "/thresholds/a~1b~0c/value"
    assert resolve(report_json(), pointer("thresholds", "a/b~c", "value")) == 0.25


def test_every_figure_is_the_jsons_value():
    doc = report_json()
    e = Elements(render_html(doc))
    figs = [a for _, a in e.tags if "data-figure" in a]
    assert len(figs) > 40
    for a in figs:
        assert json.loads(a["data-value"]) == resolve(doc, a["data-figure"]), a
    # every scalar figure of every dimension is on the page
    shown = {a["data-figure"] for a in figs}
    for i, dim in enumerate(doc["dimensions"]):
        for k, v in dim["figures"].items():
            if not isinstance(v, (list, dict)):
                assert pointer("dimensions", i, "figures", k) in shown, k
    assert "/dimensions/0/figures/nested/deep-bytes" in shown
    assert "/verdicts/0/command-text" in shown and "/verdicts/0/effects/1/after" in shown


def test_charts_draw_one_mark_per_figure_and_the_rest_sums():
    doc = report_json()
    e = Elements(render_html(doc))
    hist = [a for a in e.all("rect", "bar") if "/size-histogram/" in a.get("data-figure", "")]
    assert len(hist) == 3 and len(e.all("line", "target")) == 2  # the file and the manifest target
    for key in ("data-bytes", "data-files"):
        bars = [a for a in e.all("rect", "bar") if a.get("data-figure", "").endswith("/" + key)
                and "/partitions/" in a["data-figure"]]
        assert len(bars) == TOP_PARTITIONS
        rest, = [a for a in e.all("rect", "rest") if a["data-sum-key"] == key]
        rows = resolve(doc, rest["data-sum-of"])[int(rest["data-sum-from"]):]
        assert len(rows) == 15 - TOP_PARTITIONS
        assert json.loads(rest["data-value"]) == sum(r[key] for r in rows)
    assert len([a for a in e.all("rect", "bar") if "/manifest-sizes/" in a.get("data-figure", "")]) == 3
    dots = [a for a in e.all("circle", "dot") if "/timeline/" in a["data-figure"]]
    assert len(dots) == 3 * 4 - 1  # one snapshot without total-records: no dot
    assert len(e.all("circle", "op-other")) == 4 - 1 + 1  # the odd operation's dots and its legend
    depth = [a for a in e.all("rect", "bar") if "/overlap-depth-" in a.get("data-figure", "")]
    assert [json.loads(a["data-value"]) for a in depth] == [1.5, 3]  # no bounds, no bar
    assert len(e.all("svg", "chart")) == 6


def test_few_partitions_have_no_rest_bar():
    e = Elements(render_html(report_json(partitions=2)))
    assert not e.all("rect", "rest")


def test_self_contained_and_escaped():
    page = render_html(report_json())
    e = Elements(page)
    assert not [t for t, _ in e.tags if t in ("script", "img", "link", "iframe", "object", "embed")]
    assert not [n for _, a in e.tags for n in a if n in ("src", "href", "xlink:href", "srcset", "action")]
    assert not re.search(r"https?:|url\(|@import", page, re.I)
    assert "default-src 'none'" in page
    assert NASTY not in page  # only ever escaped
    text = "".join(e.text)
    assert f"icectl compact '{NASTY}'" in text and f"c={NASTY}1" in text
    assert "not listed (--list-files)" in text  # a skipped dimension says why


def test_a_report_object_renders_as_its_json():
    class Report:
        def to_json(self):
            return report_json()

    assert render_html(Report()) == render_html(report_json())
