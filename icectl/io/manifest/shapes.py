"""Finding a merge's entries with one regular expression per entry *shape*.

A merge copies each entry's encoded ``data_file`` record; to find where a record ends, the
generated decoder (:mod:`icectl.io.manifest.codegen`, ``extents=True``) reads every field in
Python. Entries of one manifest nearly always share a shape: the same metric maps with the same
keys, the same array counts and path length. :func:`shape_decoder` learns the shape of an entry
by walking it and, the second time it sees that shape, compiles a pattern that matches exactly
the Avro encodings of the shape, with groups around the fields a copy keeps; entries of a known
shape are then matched in C, one ``match`` each. Every other entry is read by the generated
decoder: the first of a new shape, one that has no shape (a negative or second array block, an
Avro map), and all of a call's entries once shapes stop repeating (learning costs more than
decoding). The rows are the generated decoder's, value for value
(``tests/io/test_manifest_shapes.py`` checks both on random manifests).

The patterns are exact: varints are ``[\\x80-\\xff]*[\\x00-\\x7f]``, lengths and counts are
literals or (for byte strings shorter than 64) an alternation of the 64 one-byte lengths, and
Avro's binary encoding is a prefix code, so a match at an entry's start is its only parse.
"""

from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass
from typing import Any, Callable

from icectl.io.formats.avro_container import write_long
from icectl.io.manifest.codegen import COPY_COLUMNS, ENTRY_COLUMNS, Decoder
from icectl.io.manifest.maps import SHORT_BYTES_PATTERN, VARINT_PATTERN, ZIGZAG, read_long

__all__ = ["shape_decoder", "bound_widths"]

_MAX_SHAPES = 8  # shapes tried per entry, most recent first
_MAX_COMPILED = 64  # shapes compiled per decoder
# an entry no shape matched is learned (a walk in Python, dearer than decoding it) until there
# have been this many such entries and more than 1 in this many entries of a call
_MISSES_ALLOWED, _MISS_RATIO = 16, 16


class _NoShape(Exception):
    """The entry has a form no shape pattern covers (read by the generated decoder)."""


def _lit(n: int) -> bytes:
    return re.escape(write_long(n))


class _Learner:
    """Walks one entry from ``pos`` along the writer schema, building its shape pattern."""

    def __init__(self, walk: Any, buf: bytes, pos: int, widths: dict[int, int]):
        self.walk = walk
        self.buf = buf
        self.pos = pos
        self.widths = widths

    def varint(self) -> int:
        v, self.pos = read_long(self.buf, self.pos)
        return v

    def frag(self, t: Any, *, literal_key: bool = False, literal_length: bool = False) -> bytes:
        """The pattern of the value of type ``t`` at ``pos`` (consumed); ``literal_key``: an int
        as its bytes; ``literal_length``: a byte string's length as read."""
        walk = self.walk
        t = walk.resolve(t)
        k = walk.kind(t)
        if k == "union":
            branches = list(t)
            kinds = [walk.kind(b) for b in branches]
            start = self.pos
            br = self.varint()
            if not 0 <= br < len(branches):
                raise _NoShape
            if len(branches) == 2 and "null" in kinds:
                ni = kinds.index("null")
                other = branches[1 - ni]
                if br == ni:
                    generic = self.generic(other)
                    return _lit(ni) if generic is None else (
                        b"(?:" + _lit(ni) + b"|" + _lit(1 - ni) + generic + b")")
                inner = self.frag(other)
                if self.generic(other) == inner:
                    return b"(?:" + _lit(ni) + b"|" + _lit(1 - ni) + inner + b")"
                return _lit(1 - ni) + inner
            return re.escape(self.buf[start:self.pos]) + self.frag(branches[br])
        if k == "null":
            return b""
        if k in ("int", "long", "enum"):
            start = self.pos
            self.varint()
            return re.escape(self.buf[start:self.pos]) if literal_key else VARINT_PATTERN
        if k in ("string", "bytes"):
            n = self.varint()
            if n < 0:
                raise _NoShape
            self.pos += n
            if n < 64 and not literal_length:
                return SHORT_BYTES_PATTERN
            return _lit(n) + rb"[\s\S]{%d}" % n
        if k == "record":
            return b"".join(self.frag(f["type"]) for f in t["fields"])
        if k == "array":
            c = self.varint()
            if c == 0:
                return b"\x00"
            if c < 0:
                raise _NoShape
            items = walk.resolve(t["items"])
            keyed = isinstance(items, dict) and items.get("type") == "record"
            parts = [_lit(c)]
            for _ in range(c):
                parts.append(self._keyed_item(items) if keyed else self.frag(items))
            if self.varint() != 0:
                raise _NoShape  # a second block
            return b"".join(parts) + b"\x00"
        size = {"boolean": 1, "float": 4, "double": 8}.get(k)
        if k == "fixed":
            size = int(t["size"])
        if size is None:
            raise _NoShape  # an Avro map: Iceberg's manifests have none
        if k == "boolean" and self.buf[self.pos] > 1:
            raise _NoShape
        self.pos += size
        return rb"[\x00\x01]" if k == "boolean" else rb"[\s\S]{%d}" % size

    def _keyed_item(self, record: dict) -> bytes:
        """A map item ``{key, value}`` (metrics keyed by field id): the key as its bytes, a byte
        string value of a field whose type has a fixed width (a bound) with its length."""
        fields = record["fields"]
        if [f["name"] for f in fields] != ["key", "value"]:
            return b"".join(self.frag(f["type"]) for f in fields)
        key_kind = self.walk.kind(self.walk.resolve(fields[0]["type"]))
        start = self.pos
        key_pattern = self.frag(fields[0]["type"], literal_key=True)
        key = read_long(self.buf, start)[0] if key_kind in ("int", "long") else None
        return key_pattern + self.frag(fields[1]["type"], literal_length=key in self.widths)

    def generic(self, t: Any) -> bytes | None:
        """The pattern of any value of a simple type ``t`` (no value read; byte strings
        shorter than 64 bytes), else None."""
        t = self.walk.resolve(t)
        k = self.walk.kind(t)
        if k in ("int", "long", "enum"):
            return VARINT_PATTERN
        if k == "boolean":
            return rb"[\x00\x01]"
        if k in ("float", "double", "fixed"):
            return rb"[\s\S]{%d}" % (int(t["size"]) if k == "fixed" else 4 if k == "float" else 8)
        if k in ("string", "bytes"):
            return SHORT_BYTES_PATTERN  # any shorter than 64 bytes
        if k == "null":
            return b""
        return None


@dataclass
class _Conv:
    """Captured bytes -> raw value: ``fn``, with ``cache`` (filled by ``fn``) when values repeat
    (unions and varints, cached by their bytes), or none at all (``fn`` None: the bytes)."""

    fn: Callable[[bytes], Any] | None
    cache: dict[bytes, Any] | None = None


def _converter(walk: Any, t: Any) -> _Conv:
    """The conversion of a captured value of type ``t`` to what the generated decoder reads."""
    t = walk.resolve(t)
    k = walk.kind(t)
    if k in ("string", "bytes"):
        return _Conv(lambda g: g[1:] if g[0] < 128 else g[read_long(g, 0)[1]:])
    if k in ("boolean", "float", "double", "fixed", "null"):
        return _Conv(_plain_converter(k))
    if k == "union":
        convs = [_converter(walk, b) for b in t]

        def convert(g: bytes) -> Any:
            br, p = read_long(g, 0)
            c = convs[br]
            return g[p:] if c.fn is None else c.fn(g[p:])
    elif k in ("int", "long", "enum"):
        def convert(g: bytes) -> Any:
            return ZIGZAG[g[0]] if len(g) == 1 else read_long(g, 0)[0]
    else:
        raise _NoShape
    cache: dict[bytes, Any] = {}

    def cached(g: bytes) -> Any:
        if len(cache) > 65536:
            cache.clear()
        v = cache[g] = convert(g)
        return v
    return _Conv(cached, cache)


def _plain_converter(k: str) -> Callable[[bytes], Any]:
    if k == "boolean":
        return lambda g: g[0] != 0
    if k == "float":
        unpack_f = struct.Struct("<f").unpack
        return lambda g: unpack_f(g)[0]
    if k == "double":
        unpack_d = struct.Struct("<d").unpack
        return lambda g: unpack_d(g)[0]
    if k == "null":
        return lambda g: None
    return lambda g: g  # fixed


class _Shapes:
    """The shape patterns of one decoder and the function turning a match into its row."""

    def __init__(self, dec: Decoder, widths: dict[int, int]):
        layout = dec.layout
        self.widths = widths
        self.walk = layout.walk
        self.layout = layout
        self.patterns: list[Any] = []  # compiled, most recent first (replaced, never changed)
        self.compiled: dict[bytes, Any] = {}
        self.seen: set[bytes] = set()  # shapes seen once
        # the groups, in the order their parentheses open: (sink, converter)
        groups: list[tuple[str, _Conv | None]] = []
        for f in layout.entry["fields"]:
            name = f["name"]
            if name in ENTRY_COLUMNS:
                groups.append((f"s_{name}", _converter(self.walk, f["type"])))
            elif name == "data_file":
                groups.append(("df", None))
                for h in layout.data_file["fields"]:
                    hn = h["name"]
                    if hn == "file_path" and self._plain_string(h["type"]):
                        groups.append(("s_file_path", _Conv(None)))  # the group holds the text
                    elif hn in COPY_COLUMNS:
                        groups.append((f"s_{hn}", _converter(self.walk, h["type"])))
                    elif hn == "partition":
                        for i, pf in enumerate(layout.partition):
                            groups.append((f"s_p{i}", _converter(self.walk, pf.avro_type)))
        self.row = self._row_function(dec.sinks, groups)

    def _row_function(self, sinks: list[str], groups: list[tuple[str, _Conv | None]]
                      ) -> Callable[[Any], tuple]:
        """The generated ``row(match)``: the tuple the generated decoder appends."""
        index = {sink: i + 1 for i, (sink, _) in enumerate(groups)}  # group numbers
        ns: dict[str, Any] = {"MISS": object()}
        body: list[str] = []
        exprs: list[str] = []
        for sink in sinks:
            if sink in ("s_df0", "s_df1"):
                exprs.append(f"m.{'start' if sink == 's_df0' else 'end'}({index['df']})")
            elif sink in ("s_fr0", "s_fr1"):
                group = index["s_first_row_id"]
                exprs.append(f"m.{'start' if sink == 's_fr0' else 'end'}({group})")
            else:
                i = index.get(sink)
                if i is None:
                    raise _NoShape  # a sink the shapes do not capture
                conv = groups[i - 1][1]
                assert conv is not None
                if conv.fn is None:
                    exprs.append(f"g[{i - 1}]")
                    continue
                ns[f"F{i}"] = conv.fn
                if conv.cache is None:
                    exprs.append(f"F{i}(g[{i - 1}])")
                    continue
                ns[f"K{i}"] = conv.cache.get
                body += [f"    v{i} = K{i}(g[{i - 1}], MISS)",
                         f"    if v{i} is MISS: v{i} = F{i}(g[{i - 1}])"]
                exprs.append(f"v{i}")
        src = "\n".join(["def row(m):", "    g = m.groups()", *body,
                         f"    return ({', '.join(exprs)},)", ""])
        exec(compile(src, "<manifest shape row>", "exec"), ns)  # noqa: S102 - generated
        return ns["row"]

    def learn(self, buf: bytes, pos: int) -> Any:
        """The compiled pattern of the entry at ``pos``; None when it has no shape, or when its
        shape is new (compiled the second time it is seen: a shape seen once does not pay for
        its compilation)."""
        lr = _Learner(self.walk, buf, pos, self.widths)
        parts: list[bytes] = []
        try:
            for f in self.layout.entry["fields"]:
                name = f["name"]
                if name in ENTRY_COLUMNS:
                    parts.append(b"(" + lr.frag(f["type"]) + b")")
                elif name == "data_file":
                    parts.append(b"(" + self._data_file(lr) + b")")
                else:
                    parts.append(lr.frag(f["type"]))
        except (_NoShape, IndexError):
            return None
        src = b"".join(parts)
        pat = self.compiled.get(src)
        if pat is None:
            if len(self.compiled) >= _MAX_COMPILED or src not in self.seen:
                if len(self.seen) > 4096:
                    self.seen.clear()
                self.seen.add(src)
                return None
            pat = self.compiled[src] = re.compile(src)
        self.patterns = [pat, *(p for p in self.patterns if p is not pat)][:_MAX_SHAPES]
        return pat

    def _plain_string(self, t: Any) -> bool:
        return self.walk.kind(self.walk.resolve(t)) == "string"

    def _data_file(self, lr: _Learner) -> bytes:
        parts: list[bytes] = []
        for h in self.layout.data_file["fields"]:
            hn = h["name"]
            if hn == "file_path" and self._plain_string(h["type"]):
                # its length is part of the shape: the group holds the text
                n = lr.varint()
                if n < 0:
                    raise _NoShape
                lr.pos += n
                parts.append(_lit(n) + rb"([\s\S]{%d})" % n)
            elif hn in COPY_COLUMNS:
                parts.append(b"(" + lr.frag(h["type"]) + b")")
            elif hn == "file_format":  # as read: a manifest lists files of one format
                start = lr.pos
                lr.frag(h["type"])
                parts.append(re.escape(lr.buf[start:lr.pos]))
            elif hn == "partition":
                part = self.walk.resolve(h["type"])
                parts.extend(b"(" + lr.frag(pf["type"]) + b")" for pf in part["fields"])
            else:
                parts.append(lr.frag(h["type"]))
        return b"".join(parts)


_FIXED_WIDTHS = {"boolean": 1, "int": 4, "date": 4, "float": 4, "long": 8, "double": 8, "time": 8,
                 "timestamp": 8, "timestamptz": 8, "timestamp_ns": 8, "timestamptz_ns": 8,
                 "uuid": 16}


def bound_widths(schema_json: bytes | str | None) -> dict[int, int]:
    """Field id -> width of its single-value serialization (spec Appendix D), for the fields of
    a fixed-width type in an Iceberg schema (JSON, a manifest's ``schema`` metadata)."""
    out: dict[int, int] = {}
    if not schema_json:
        return out
    try:
        doc = json.loads(schema_json)
    except ValueError:
        return out

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            t = node.get("type")
            fid = node.get("id")
            if isinstance(t, str) and isinstance(fid, int):
                width = _FIXED_WIDTHS.get(t)
                if width is None and t.startswith("fixed[") and t.endswith("]"):
                    width = int(t[6:-1]) if t[6:-1].isdigit() else None
                if width is not None:
                    out[fid] = width
            for v in node.values():
                visit(v)
        elif isinstance(node, list):
            for v in node:
                visit(v)
    visit(doc)
    return out


_SHAPE_DECODERS: dict[tuple[int, tuple], tuple[Decoder, Decoder]] = {}


def shape_decoder(dec: Decoder, widths: dict[int, int] | None = None) -> Decoder:
    """``dec`` (an extents decoder) with its function reading entries by shape patterns,
    falling back to ``dec``'s own function entry by entry; ``dec`` itself when its sinks are
    not all captured by shapes. ``widths``: :func:`bound_widths` of the manifest's schema, whose
    bounds then match by their length. Cached per decoder and widths, so the shapes learned in
    one manifest serve the next."""
    widths = widths or {}
    key = (id(dec), tuple(sorted(widths.items())))
    hit = _SHAPE_DECODERS.get(key)
    if hit is not None and hit[0] is dec:
        return hit[1]
    fast = _shape_decoder(dec, widths)
    if len(_SHAPE_DECODERS) > 64:
        _SHAPE_DECODERS.clear()
    _SHAPE_DECODERS[key] = (dec, fast)
    return fast


def _shape_decoder(dec: Decoder, widths: dict[int, int]) -> Decoder:
    try:
        shapes = _Shapes(dec, widths)
    except _NoShape:
        return dec
    plain = dec.fn
    row = shapes.row

    def decode(buf: bytes, count: int, app: Callable, pos: int = 0) -> int:
        n = misses = 0
        learning = True
        pat = shapes.patterns[0] if shapes.patterns else None
        while n < count:
            m = None if pat is None else pat.match(buf, pos)
            if m is None:
                for pat in shapes.patterns:  # another known shape
                    m = pat.match(buf, pos)
                    if m is not None:
                        break
                else:
                    pat = shapes.learn(buf, pos) if learning else None
                    m = None if pat is None else pat.match(buf, pos)
                    if m is None:  # no shape: the generated decoder reads this entry
                        misses += 1
                        if misses > _MISSES_ALLOWED and misses * _MISS_RATIO > n:
                            learning = False  # shapes do not repeat here
                        pos = plain(buf, 1, app, pos)
                        n += 1
                        continue
            app(row(m))
            pos = m.end()
            n += 1
        return pos

    return Decoder(decode, dec.sinks, dec.layout)

