"""Reading the health report's HTML page in tests: headless Chromium (``chromium`` and
``browse``), a small DOM of the page (``Dom``; ``Elements``: its tags and texts, flat), JSON Pointers (``resolve``), PNG facts, and the
figure check every page test makes (``check_figures``: each ``data-figure`` element holds the
JSON's value at its pointer, each drawn sum the sum of the JSON rows it covers).

Chromium comes from the Debian package ``chromium`` (.ci/run installs it and names it in
ICECTL_CHROMIUM); without it a browser test fails under CI (or when ICECTL_CHROMIUM names a
missing file) and skips elsewhere.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

__all__ = ["Elements", "chromium", "browse", "Dom", "resolve", "png_facts", "dimension", "check_figures",
           "check_shown"]


class Elements(HTMLParser):
    """Every start tag with its attributes, and all text, of an HTML/SVG fragment."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    def handle_data(self, data):
        self.text.append(data)

    def all(self, tag: str, cls: str | None = None) -> list[dict[str, str]]:
        return [a for t, a in self.tags if t == tag and (cls is None or cls in a.get("class", "").split())]


def chromium() -> str:
    """The headless browser: ICECTL_CHROMIUM, else chromium on PATH."""
    named = os.environ.get("ICECTL_CHROMIUM")
    found = named or shutil.which("chromium") or shutil.which("chromium-browser")
    if found and os.access(found, os.X_OK):
        return found
    message = "Chromium not found (apt-get install chromium, or set ICECTL_CHROMIUM; .ci/run installs it)"
    if os.environ.get("CI") or named:
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def browse(page: Path, work: Path, *what: str) -> subprocess.CompletedProcess:
    """Run headless Chromium on the page (its own profile directory, no sandbox: tests may run as
    root); ``what``: --dump-dom or --screenshot=FILE."""
    argv = [chromium(), "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
            "--disable-extensions", f"--user-data-dir={work / 'profile'}", "--window-size=1200,3000",
            *what, page.resolve().as_uri()]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=180,
                          env={**os.environ, "HOME": str(work)})
    assert done.returncode == 0, done.stderr[-2000:]
    return done


class Dom(HTMLParser):
    """Every start tag with its attributes and the text inside it (its own and its children's)."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.elements: list[dict[str, Any]] = []
        self._open: list[dict[str, Any]] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        el = {"tag": tag, "attrs": {k: v or "" for k, v in attrs}, "text": ""}
        self.elements.append(el)
        if tag not in ("meta", "line", "circle", "br", "polyline", "input", "img", "link"):
            self._open.append(el)

    def handle_startendtag(self, tag, attrs):
        self.elements.append({"tag": tag, "attrs": {k: v or "" for k, v in attrs}, "text": ""})

    def handle_endtag(self, tag):
        while self._open:
            el = self._open.pop()
            if el["tag"] == tag:
                break

    def handle_data(self, data):
        for el in self._open:
            el["text"] += data

    def select(self, tag: str | None = None, cls: str | None = None, attr: str | None = None) -> list[dict]:
        return [e for e in self.elements if (tag is None or e["tag"] == tag)
                and (cls is None or cls in e["attrs"].get("class", "").split())
                and (attr is None or attr in e["attrs"])]


def resolve(doc: Any, ptr: str) -> Any:
    """The value at a JSON Pointer (RFC 6901)."""
    assert ptr.startswith("/"), ptr
    node = doc
    for raw in ptr[1:].split("/"):
        key = raw.replace("~1", "/").replace("~0", "~")
        node = node[int(key)] if isinstance(node, list) else node[key]
    return node


def png_facts(png: bytes) -> tuple[int, int, int]:
    """(width, height, distinct byte values of the decoded rows) of a PNG: a page drawn in one
    flat colour has a handful, a page with text and charts many."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(png):
        length, kind = struct.unpack(">I4s", png[pos:pos + 8])
        body = png[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    return width, height, len(set(zlib.decompress(idat)))


def dimension(doc: dict[str, Any], name: str) -> tuple[int, dict[str, Any]]:
    return next((i, d) for i, d in enumerate(doc["dimensions"]) if d["name"] == name)


_PLAIN = re.compile(r"-?[\d,]+(\.\d+)?")


def check_shown(text: str, value: Any) -> None:
    """The text a figure shows people says its value: a plain number (thousands separated,
    floats to 3 decimals), a share in percent (1 decimal) or a count of bytes (``938 B``);
    bigger byte units, times and words are left to the data attributes."""
    text = text.strip()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        assert text == ("-" if value is None else str(value)) or isinstance(value, bool), (text, value)
        return
    if _PLAIN.fullmatch(text) and isinstance(value, int):
        assert int(text.replace(",", "")) == value, (text, value)
    elif _PLAIN.fullmatch(text):
        assert abs(float(text.replace(",", "")) - value) <= 0.0005, (text, value)
    elif text.endswith("%"):
        assert abs(float(text[:-1]) - value * 100) <= 0.05, (text, value)
    elif text.endswith(" B"):
        assert abs(float(text[:-2]) - value) <= 0.05, (text, value)  # a median may be half a byte


def check_figures(dom: Dom, doc: dict[str, Any]) -> int:
    """Every figure element equals the JSON at its pointer, in its data attributes and in the
    text it shows; every rest bar equals its sum. The count of figure elements."""
    figures = dom.select(attr="data-figure")
    for el in figures:
        a = el["attrs"]
        value = resolve(doc, a["data-figure"])
        assert json.loads(a["data-value"]) == value, a
        if el["tag"] in ("span", "code"):
            check_shown(el["text"], value)
    for el in dom.select(attr="data-sum-of"):
        a = el["attrs"]
        rows = resolve(doc, a["data-sum-of"])[int(a["data-sum-from"]):]
        assert rows and json.loads(a["data-value"]) == sum(r[a["data-sum-key"]] for r in rows), a
    return len(figures)
