"""The health report's SVG chart kit: one mark per figure (counted by parsing the SVG), every
text escaped, figures carried as data attributes, no network reference of any kind."""

from __future__ import annotations

import json

from health_page import Elements

from icectl.ops.health.html_svg import (Bin, Mark, Point, esc, fmt_bytes, fmt_count, histogram, sized_bars,
                                        timeline, top_bars)

NASTY = '<script>alert("x")</script> & \'q\''


def test_histogram_one_bar_per_bin_and_the_target_line():
    bins = [Bin(0, 1024, 3, "h.0.count"), Bin(1024, 4096, 0, "h.1.count"), Bin(4096, None, 7, "h.2.count")]
    svg = histogram(bins, "sizes", target=2048)
    e = Elements(svg)
    bars = e.all("rect", "bar")
    assert [b["data-figure"] for b in bars] == ["h.0.count", "h.1.count", "h.2.count"]
    assert [json.loads(b["data-value"]) for b in bars] == [3, 0, 7]
    assert len(e.all("line", "target")) == 1
    heights = [float(b["height"]) for b in bars]
    assert heights[1] == 0 and heights[2] > heights[0] > 0
    # the target sits in the second bin, a third of the way in (2048 between 1024 and 4096)
    x = float(e.all("line", "target")[0]["x1"])
    left1 = float(bars[1]["x"]) - 1
    step = float(bars[2]["x"]) - float(bars[1]["x"])
    assert abs(x - (left1 + step / 3)) < 0.05


def test_histogram_without_target_or_bins():
    assert not Elements(histogram([Bin(0, 10, 1)], "t")).all("line", "target")
    e = Elements(histogram([], "t"))
    assert not e.all("rect") and "nothing to draw" in "".join(e.text)


def test_top_bars_n_and_rest():
    marks = [Mark(f"p={i}", 100 - i, f"p.{i}.bytes") for i in range(5)]
    e = Elements(top_bars(marks, "bytes", rest=Mark("12 others", 42), unit="bytes"))
    bars = e.all("rect", "bar")
    assert len(bars) == 6 and len(e.all("rect", "rest")) == 1
    assert "data-figure" not in bars[-1]  # the rest is no JSON figure of its own
    widths = [float(b["width"]) for b in bars[:5]]
    assert widths == sorted(widths, reverse=True)
    assert "12 others" in "".join(e.text)


def test_sized_bars_and_target():
    marks = [Mark(f"m{i}", v, f"manifests.{i}.length") for i, v in enumerate([10, 20, 5000])]
    e = Elements(sized_bars(marks, "manifests", target=8000))
    assert len(e.all("rect", "bar")) == 3 and len(e.all("line", "target")) == 1
    assert [json.loads(b["data-value"]) for b in e.all("rect", "bar")] == [10, 20, 5000]


def test_timeline_panels_dots_and_operations():
    pts = [Point(1_700_000_000_000 + i * 60_000, op, (i * 10, i, None if i == 1 else 0, i * 1000),
                 tuple(f"s.{i}.{k}" for k in range(4)))
           for i, op in enumerate(["append", "append", "overwrite", "delete", "replace"])]
    series = [("records", ""), ("data files", ""), ("delete files", ""), ("bytes", "bytes")]
    e = Elements(timeline(pts, series, "snapshots"))
    dots = e.all("circle", "dot")
    assert len(dots) == 5 * 4 - 1  # one value not recorded: no dot
    assert len(e.all("polyline", "series")) == 4
    assert len(e.all("circle", "op-append")) == 2 * 4 - 1 + 1  # the dots and the legend's one
    assert {a["data-figure"] for a in dots} == {f"s.{i}.{k}" for i in range(5) for k in range(4)} - {"s.1.2"}
    assert len(e.all("circle", "legend")) == 4


def test_timeline_same_times_spread_out():
    pts = [Point(5, "append", (i,), ("f",)) for i in range(3)]
    xs = [float(a["cx"]) for a in Elements(timeline(pts, [("records", "")], "t")).all("circle", "dot")]
    assert len(set(xs)) == 3


def test_every_text_is_escaped():
    bins = [Bin(0, 10, 1, NASTY)]
    charts = [histogram(bins, NASTY, target=5, target_label=NASTY),
              top_bars([Mark(NASTY, 1, NASTY)], NASTY, rest=Mark(NASTY, 2)),
              sized_bars([Mark(NASTY, 1, NASTY)], NASTY, target=1, target_label=NASTY),
              timeline([Point(0, NASTY, (1,), (NASTY,), NASTY)], [(NASTY, "")], NASTY)]
    for svg in charts:
        assert "<script" not in svg and "\"x\")" not in svg
        e = Elements(svg)
        assert not [t for t, _ in e.tags if t == "script"]
        assert NASTY in "".join(e.text) or any(NASTY in v for _, a in e.tags for v in a.values())
        assert "http" not in svg
    assert esc(NASTY) == "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#x27;q&#x27;"


def test_long_labels_are_cut_but_titles_keep_them():
    name = "x" * 100
    e = Elements(top_bars([Mark(name, 1)], "t"))
    assert name not in "".join(t for t in e.text if "…" in t)
    assert any(name in t for t in e.text)


def test_formats():
    assert fmt_bytes(512) == "512 B" and fmt_bytes(736.5) == "736.5 B" and fmt_bytes(1536) == "1.5 KiB" and fmt_bytes(128 * 2**20) == "128 MiB"
    assert fmt_count(1234567) == "1,234,567" and fmt_count(0.25) == "0.25" and fmt_count(None) == "-"
