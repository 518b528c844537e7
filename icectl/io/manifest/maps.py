"""Reading Avro pieces of manifest entries fast: varints and int-keyed metric maps.

Iceberg stores per-column metrics as Avro arrays of ``{key: int, value: long | bytes}``
records. The planner wants the values of a few keys out of maps of many, so a map is skipped or
searched with compiled regular expressions (one per item count and key) rather than read item
by item; :class:`Region` matches a whole run of consecutive maps with one pattern per *shape*.
Every fast path falls back to the plain loop (:func:`map_slow`) on anything unusual. Used by
the code the generator in :mod:`icectl.io.manifest.codegen` emits.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from icectl.io.formats.avro_container import write_long

__all__ = ["read_long", "ZIGZAG", "make_map_skipper", "make_map_reader", "Region", "VARINT_PATTERN",
           "SHORT_BYTES_PATTERN"]


# -- varints -------------------------------------------------------------------------------------


def read_long(buf: bytes, pos: int) -> tuple[int, int]:
    b = buf[pos]
    acc = b & 0x7F
    shift = 7
    pos += 1
    while b & 0x80:
        b = buf[pos]
        pos += 1
        acc |= (b & 0x7F) << shift
        shift += 7
    return (acc >> 1) ^ -(acc & 1), pos


ZIGZAG = tuple((b >> 1) ^ -(b & 1) for b in range(128))



# Maps keyed by field id are Avro arrays of {key: int, value: long | bytes} records. One compiled
# pattern skips c items of a map, another finds the value of one key among c items; values of
# bytes maps are matched when shorter than 64 bytes (a one-byte length), which covers the
# truncated bounds writers produce; anything else takes the plain loop below.
VARINT_PATTERN = rb"[\x80-\xff]*[\x00-\x7f]"
SHORT_BYTES_PATTERN = b"(?:" + b"|".join(
    re.escape(bytes([2 * n])) + (rb"[\s\S]{%d}" % n if n else b"") for n in range(64)) + b")"
_ITEM = {"varint": VARINT_PATTERN + VARINT_PATTERN, "bytes": VARINT_PATTERN + SHORT_BYTES_PATTERN}
_VALUE = {"varint": VARINT_PATTERN, "bytes": SHORT_BYTES_PATTERN}
_MAP_SKIP: dict[tuple[str, int], re.Pattern] = {}
_MAP_FIND: dict[tuple[str, int, int], re.Pattern] = {}


def _map_skip(kind: str, c: int) -> re.Pattern:
    p = _MAP_SKIP.get((kind, c))
    if p is None:
        p = _MAP_SKIP[(kind, c)] = re.compile(b"(?:" + _ITEM[kind] + b"){%d}" % c)
    return p


def _map_find(kind: str, key: int, c: int) -> re.Pattern:
    p = _MAP_FIND.get((kind, key, c))
    if p is None:
        p = _MAP_FIND[(kind, key, c)] = re.compile(
            b"(?:" + _ITEM[kind] + b"){0,%d}?" % (c - 1) + re.escape(write_long(key))
            + b"(" + _VALUE[kind] + b")")
    return p


def map_slow(buf: bytes, pos: int, kind: str, wanted: tuple) -> tuple[dict, int]:
    found: dict[int, Any] = {}
    while True:
        c, pos = read_long(buf, pos)
        if c == 0:
            return found, pos
        if c < 0:
            c = -c
            _, pos = read_long(buf, pos)
        for _ in range(c):
            k, pos = read_long(buf, pos)
            if kind == "varint":
                v, pos = read_long(buf, pos)
            else:
                n, pos = read_long(buf, pos)
                v = buf[pos:pos + n]
                pos += n
            if k in wanted:
                found[k] = v


def make_map_skipper(kind: str) -> Callable[[bytes, int], int]:
    def skip(buf: bytes, pos: int) -> int:
        b = buf[pos]
        if b == 0:
            return pos + 1
        if b < 128 and not b & 1:
            m = _map_skip(kind, b >> 1).match(buf, pos + 1)
            if m is not None:
                end = m.end()
                if buf[end] == 0:
                    return end + 1
        return map_slow(buf, pos, kind, ())[1]
    return skip


def _varint_value(g: bytes) -> int:
    if len(g) == 1:
        return ZIGZAG[g[0]]
    if len(g) == 2:
        z = (g[0] & 0x7F) | (g[1] << 7)
        return (z >> 1) ^ -(z & 1)
    return read_long(g, 0)[0]


def make_map_reader(kind: str, wanted: tuple) -> Callable[[bytes, int], tuple]:
    nones = tuple(None for _ in wanted)
    varint = kind == "varint"
    per_count: dict[int, tuple] = {}
    value = _varint_value
    few = len(wanted) <= _FIND_MAX_KEYS

    def read(buf: bytes, pos: int) -> tuple:
        b = buf[pos]
        if b == 0:
            return nones, pos + 1
        if b < 128 and not b & 1 and few:
            c = b >> 1
            pats = per_count.get(c)
            if pats is None:
                pats = per_count[c] = (_map_skip(kind, c).match,
                                       [_map_find(kind, k, c).match for k in wanted])
            start = pos + 1
            m = pats[0](buf, start)
            if m is not None:
                end = m.end()
                if buf[end] == 0:
                    vals = []
                    for find in pats[1]:
                        f = find(buf, start)
                        if f is None:
                            vals.append(None)
                        elif varint:
                            vals.append(value(f.group(1)))
                        else:
                            vals.append(f.group(1)[1:])
                    return tuple(vals), end + 1
        found, pos = map_slow(buf, pos, kind, wanted)
        return tuple(found.get(k) for k in wanted), pos
    return read


_REGION_MAX_KEYS = 24  # wanted values per region above which no fast pattern is built
_FIND_MAX_KEYS = 8  # wanted keys per map above which maps are read by the plain loop


class Region:
    """A run of consecutive int-keyed metric maps in a data_file record, decoded with one
    regular-expression match per entry.

    The pattern is exact for one *shape* (per map: null, or a single block of c items): the
    union branch and item count bytes are literals, every item is matched structurally, and the
    value of each wanted key is captured by a lookahead. The shape of the previous entry is
    tried first (entries of one manifest nearly always share it); when it does not match, the
    maps are read one by one and the new shape's pattern is compiled (cached per shape).
    """

    def __init__(self, maps: list[tuple[str, tuple, int | None]]):
        # per map: (kind "varint"/"bytes", wanted keys, index of the null branch or None)
        self.maps = maps
        self.width = sum(len(w) for _, w, _ in maps)
        self.patterns: dict[tuple, tuple | None] = {}
        self.seen: dict[tuple, int] = {}
        self.fast: tuple | None = None
        self.readers = [(make_map_reader(kind, wanted), make_map_skipper(kind))
                        for kind, wanted, _ in maps]

    def _compile(self, shape: tuple) -> tuple | None:
        parts: list[bytes] = []
        plan: list[tuple[int | None, bool]] = []  # per output: (group, is varint)
        group = 0
        for (kind, wanted, null_index), c in zip(self.maps, shape):
            if c == "x":
                return None
            if null_index is not None:
                if c is None:
                    parts.append(re.escape(write_long(null_index)))
                    plan.extend((None, kind == "varint") for _ in wanted)
                    continue
                parts.append(re.escape(write_long(1 - null_index)))
            parts.append(re.escape(write_long(c)))
            if c == 0:
                plan.extend((None, kind == "varint") for _ in wanted)
                continue
            for k in wanted:
                parts.append(b"(?:(?=(?:" + _ITEM[kind] + b"){0,%d}?" % (c - 1)
                             + re.escape(write_long(k)) + b"(" + _VALUE[kind] + b"))|)")
                group += 1
                plan.append((group, kind == "varint"))
            parts.append(b"(?:" + _ITEM[kind] + b"){%d}\x00" % c)
        return re.compile(b"".join(parts)).match, plan

    def read(self, buf: bytes, pos: int) -> tuple[tuple, int]:
        fast = self.fast
        if fast is not None:
            m = fast[0](buf, pos)
            if m is not None:
                g = m.groups()
                out = []
                for i, varint in fast[1]:
                    v = None if i is None else g[i - 1]
                    if v is not None:
                        v = _varint_value(v) if varint else v[1:]
                    out.append(v)
                return tuple(out), m.end()
        out_vals: list = []
        shape: list = []
        for (kind, wanted, null_index), (reader, skipper) in zip(self.maps, self.readers):
            if null_index is not None:
                b = buf[pos]
                pos += 1
                if b == 2 * null_index:
                    out_vals.extend(None for _ in wanted)
                    shape.append(None)
                    continue
            b = buf[pos]
            c: Any = "x"
            if b < 128 and not b & 1:
                c = b >> 1
                if c:
                    m2 = _map_skip(kind, c).match(buf, pos + 1)
                    if m2 is None or buf[m2.end()] != 0:
                        c = "x"
            shape.append(c)
            if wanted:
                vals, pos = reader(buf, pos)
                out_vals.extend(vals)
            else:
                pos = skipper(buf, pos)
        key = tuple(shape)
        fast = self.patterns.get(key, False)
        if fast is False:
            # compile a shape's pattern once it repeats, for few wanted keys, a few shapes
            seen = self.seen[key] = self.seen.get(key, 0) + 1
            fast = None
            if seen >= 2 and self.width <= _REGION_MAX_KEYS and len(self.patterns) < 16:
                fast = self.patterns[key] = self._compile(key)
        self.fast = fast
        return tuple(out_vals), pos
