"""Columnar manifest decoding for scan planning.

A manifest is decoded straight from its Avro container into columns, one Python list (or Arrow
array) per field the planner needs, without building a record per entry. The decoder is
generated from the manifest's own writer schema (so manifests of every format version and
writer decode the same way): the code for one entry is specialised Python, reading varints and
length-prefixed bytes inline, keeping only the statistics of the field ids the filter names
and skipping the rest (whole ``int -> long`` metric maps are skipped with one compiled regular
expression per map).

Inheritance is applied as in :mod:`icectl.io.avro`: null snapshot ids take the manifest's
``added_snapshot_id``; null sequence numbers take the manifest's sequence number for ADDED
entries or when it is 0 (v1); v3 ``first_row_id`` likewise.

Decoded manifests are immutable facts about immutable files, so they are cached by
``(path, length)``; a later plan that needs statistics of more field ids decodes again.
"""

from __future__ import annotations

import json
import re
import struct
import threading
import uuid as uuid_module
import zlib
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Callable

import pyarrow as pa

from icectl.errors import CorruptMetadata, UnsupportedFeature
from icectl.io.avro_container import decompress_block, iter_blocks, split_header
from icectl.spec.manifests import ADDED, DELETED

__all__ = ["ManifestColumns", "ColumnStats", "decode_manifest", "load_manifest_columns",
           "clear_cache", "cache_info"]



# -- varints -------------------------------------------------------------------------------------


def _read_long(buf: bytes, pos: int) -> tuple[int, int]:
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


_ZIGZAG = tuple((b >> 1) ^ -(b & 1) for b in range(128))

# ``_SKIP[k]`` matches exactly k varints.
_SKIP: dict[int, re.Pattern] = {}


def _skipper(k: int) -> re.Pattern:
    p = _SKIP.get(k)
    if p is None:
        p = re.compile(rb"(?:[\x80-\xff]*[\x00-\x7f]){%d}" % k, re.DOTALL)
        _SKIP[k] = p
    return p


def _skip_varint_map(buf: bytes, pos: int) -> int:
    """Skip an Avro array whose items are two varints each (an int -> int/long map)."""
    while True:
        c, pos = _read_long(buf, pos)
        if c == 0:
            return pos
        if c < 0:
            size, pos = _read_long(buf, pos)
            pos += size
            continue
        m = _skipper(2 * c).match(buf, pos)
        if m is None:
            raise ValueError("truncated metrics map")
        pos = m.end()


for _k in range(2, 129, 2):
    _skipper(_k)


# Maps keyed by field id are Avro arrays of {key: int, value: long | bytes} records. One compiled
# pattern skips c items of a map, another finds the value of one key among c items; values of
# bytes maps are matched when shorter than 64 bytes (a one-byte length), which covers the
# truncated bounds writers produce; anything else takes the plain loop below.
_VARINT = rb"[\x80-\xff]*[\x00-\x7f]"
_SHORT_BYTES = b"(?:" + b"|".join(re.escape(bytes([2 * n])) + (rb"[\s\S]{%d}" % n if n else b"")
                                 for n in range(64)) + b")"
_ITEM = {"varint": _VARINT + _VARINT, "bytes": _VARINT + _SHORT_BYTES}
_VALUE = {"varint": _VARINT, "bytes": _SHORT_BYTES}
_MAP_SKIP: dict[tuple[str, int], re.Pattern] = {}
_MAP_FIND: dict[tuple[str, int, int], re.Pattern] = {}


def _zigzag_bytes(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z & ~0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def _map_skip(kind: str, c: int) -> re.Pattern:
    p = _MAP_SKIP.get((kind, c))
    if p is None:
        p = _MAP_SKIP[(kind, c)] = re.compile(b"(?:" + _ITEM[kind] + b"){%d}" % c)
    return p


def _map_find(kind: str, key: int, c: int) -> re.Pattern:
    p = _MAP_FIND.get((kind, key, c))
    if p is None:
        p = _MAP_FIND[(kind, key, c)] = re.compile(
            b"(?:" + _ITEM[kind] + b"){0,%d}?" % (c - 1) + re.escape(_zigzag_bytes(key))
            + b"(" + _VALUE[kind] + b")")
    return p


def _map_slow(buf: bytes, pos: int, kind: str, wanted: tuple) -> tuple[dict, int]:
    found: dict[int, Any] = {}
    while True:
        c, pos = _read_long(buf, pos)
        if c == 0:
            return found, pos
        if c < 0:
            c = -c
            _, pos = _read_long(buf, pos)
        for _ in range(c):
            k, pos = _read_long(buf, pos)
            if kind == "varint":
                v, pos = _read_long(buf, pos)
            else:
                n, pos = _read_long(buf, pos)
                v = buf[pos:pos + n]
                pos += n
            if k in wanted:
                found[k] = v


def _make_map_skipper(kind: str) -> Callable[[bytes, int], int]:
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
        return _map_slow(buf, pos, kind, ())[1]
    return skip


def _varint_value(g: bytes) -> int:
    if len(g) == 1:
        return _ZIGZAG[g[0]]
    if len(g) == 2:
        z = (g[0] & 0x7F) | (g[1] << 7)
        return (z >> 1) ^ -(z & 1)
    return _read_long(g, 0)[0]


def _make_map_reader(kind: str, wanted: tuple) -> Callable[[bytes, int], tuple]:
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
        found, pos = _map_slow(buf, pos, kind, wanted)
        return tuple(found.get(k) for k in wanted), pos
    return read


# -- the container --------------------------------------------------------------------------------


def _blocks(buf: bytes, start: int, sync: bytes, codec: str):
    """(record count, decoded block bytes) for each data block."""
    if codec == "deflate":  # the reference's default: inline for speed
        for count, data in iter_blocks(buf, start, sync):
            yield count, zlib.decompress(data, -15)
        return
    for count, data in iter_blocks(buf, start, sync):
        yield count, decompress_block(codec, data)


_REGION_MAX_KEYS = 24  # wanted values per region above which no fast pattern is built
_FIND_MAX_KEYS = 8  # wanted keys per map above which maps are read by the plain loop


class _Region:
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
        self.readers = [(_make_map_reader(kind, wanted), _make_map_skipper(kind))
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
                    parts.append(re.escape(_zigzag_bytes(null_index)))
                    plan.extend((None, kind == "varint") for _ in wanted)
                    continue
                parts.append(re.escape(_zigzag_bytes(1 - null_index)))
            parts.append(re.escape(_zigzag_bytes(c)))
            if c == 0:
                plan.extend((None, kind == "varint") for _ in wanted)
                continue
            for k in wanted:
                parts.append(b"(?:(?=(?:" + _ITEM[kind] + b"){0,%d}?" % (c - 1)
                             + re.escape(_zigzag_bytes(k)) + b"(" + _VALUE[kind] + b"))|)")
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


# -- code generation ------------------------------------------------------------------------------


class _Gen:
    """Emits the Python source of a block decoder for one writer schema."""

    def __init__(self, named: dict[str, Any]):
        self.named = named
        self.lines: list[str] = []
        self.tmp = 0
        self.sinks: list[str] = []  # names of output lists, in order

    def var(self) -> str:
        self.tmp += 1
        return f"t{self.tmp}"

    def emit(self, ind: int, line: str) -> None:
        self.lines.append("    " * ind + line)

    def resolve(self, t: Any) -> Any:
        if isinstance(t, str) and t in self.named:
            return self.named[t]
        if isinstance(t, dict) and isinstance(t.get("type"), (dict, list)):
            return self.resolve(t["type"])
        if isinstance(t, dict) and isinstance(t.get("type"), str) and t["type"] in self.named:
            return self.named[t["type"]]
        return t

    def kind(self, t: Any) -> str:
        t = self.resolve(t)
        if isinstance(t, list):
            return "union"
        if isinstance(t, str):
            return t
        return t["type"]

    # reading a value into variable ``v``
    def read_long(self, ind: int, v: str) -> None:
        self.emit(ind, "b = buf[pos]")
        self.emit(ind, "if b < 128:")
        self.emit(ind + 1, f"{v} = ZZ[b]; pos += 1")
        self.emit(ind, "elif buf[pos + 1] < 128:")
        self.emit(ind + 1, "z = (b & 127) | (buf[pos + 1] << 7)")
        self.emit(ind + 1, f"{v} = (z >> 1) ^ -(z & 1); pos += 2")
        self.emit(ind, "else:")
        self.emit(ind + 1, f"{v}, pos = rl(buf, pos)")

    def skip_long(self, ind: int) -> None:
        self.emit(ind, "while buf[pos] & 128: pos += 1")
        self.emit(ind, "pos += 1")

    def read(self, ind: int, t: Any, v: str) -> None:
        """Code leaving the raw Avro value of type ``t`` in ``v``."""
        t = self.resolve(t)
        k = self.kind(t)
        if k == "union" and len(t) == 2 and "null" in [self.kind(b) for b in t]:
            null_i = [self.kind(b) for b in t].index("null")
            self.emit(ind, "b = buf[pos]; pos += 1")
            self.emit(ind, f"if b == {2 * null_i}:")
            self.emit(ind + 1, f"{v} = None")
            self.emit(ind, f"elif b == {2 * (1 - null_i)}:")
            self.read(ind + 1, t[1 - null_i], v)
            self.emit(ind, "else:")
            self.emit(ind + 1, "raise ValueError('bad union branch')")
        elif k == "union":
            branches = list(t)
            self.read_long(ind, "br")
            first = True
            for i, b in enumerate(branches):
                kw = "if" if first else "elif"
                first = False
                self.emit(ind, f"{kw} br == {i}:")
                if self.kind(b) == "null":
                    self.emit(ind + 1, f"{v} = None")
                else:
                    self.read(ind + 1, b, v)
            self.emit(ind, "else:")
            self.emit(ind + 1, "raise ValueError('bad union branch')")
        elif k == "null":
            self.emit(ind, f"{v} = None")
        elif k in ("int", "long"):
            self.read_long(ind, v)
        elif k == "boolean":
            self.emit(ind, f"{v} = buf[pos] != 0; pos += 1")
        elif k == "float":
            self.emit(ind, f"{v} = unpack_f(buf, pos)[0]; pos += 4")
        elif k == "double":
            self.emit(ind, f"{v} = unpack_d(buf, pos)[0]; pos += 8")
        elif k in ("string", "bytes"):
            n = self.var()
            self.read_long(ind, n)
            self.emit(ind, f"{v} = buf[pos:pos + {n}]; pos += {n}")
        elif k == "fixed":
            size = int(t["size"])
            self.emit(ind, f"{v} = buf[pos:pos + {size}]; pos += {size}")
        elif k == "array":
            items = t["items"]
            acc = self.var()
            c = self.var()
            item = self.var()
            self.emit(ind, f"{acc} = []")
            self.emit(ind, "while True:")
            self.read_long(ind + 1, c)
            self.emit(ind + 1, f"if {c} == 0: break")
            self.emit(ind + 1, f"if {c} < 0:")
            self.emit(ind + 2, f"{c} = -{c}")
            self.skip_long(ind + 2)
            self.emit(ind + 1, f"for _ in range({c}):")
            self.read(ind + 2, items, item)
            self.emit(ind + 2, f"{acc}.append({item})")
            self.emit(ind, f"{v} = {acc}")
        elif k == "record":
            d = self.var()
            self.emit(ind, f"{d} = {{}}")
            for f in t["fields"]:
                x = self.var()
                self.read(ind, f["type"], x)
                self.emit(ind, f"{d}[{f['name']!r}] = {x}")
            self.emit(ind, f"{v} = {d}")
        elif k == "map":
            d = self.var()
            c = self.var()
            key = self.var()
            val = self.var()
            self.emit(ind, f"{d} = {{}}")
            self.emit(ind, "while True:")
            self.read_long(ind + 1, c)
            self.emit(ind + 1, f"if {c} == 0: break")
            self.emit(ind + 1, f"if {c} < 0:")
            self.emit(ind + 2, f"{c} = -{c}")
            self.skip_long(ind + 2)
            self.emit(ind + 1, f"for _ in range({c}):")
            self.read(ind + 2, "string", key)
            self.read(ind + 2, t["values"], val)
            self.emit(ind + 2, f"{d}[{key}] = {val}")
            self.emit(ind, f"{v} = {d}")
        elif k == "enum":
            self.read_long(ind, v)
        else:
            raise UnsupportedFeature(f"Avro type {k!r} in a manifest")

    def skip(self, ind: int, t: Any) -> None:
        t = self.resolve(t)
        k = self.kind(t)
        if k == "union":
            branches = list(t)
            nonnull = [i for i, b in enumerate(branches) if self.kind(b) != "null"]
            self.read_long(ind, "br")
            for i in nonnull:
                self.emit(ind, f"if br == {i}:")
                self.skip(ind + 1, branches[i])
        elif k == "null":
            pass
        elif k in ("int", "long", "enum"):
            self.skip_long(ind)
        elif k == "boolean":
            self.emit(ind, "pos += 1")
        elif k == "float":
            self.emit(ind, "pos += 4")
        elif k == "double":
            self.emit(ind, "pos += 8")
        elif k in ("string", "bytes"):
            n = self.var()
            self.read_long(ind, n)
            self.emit(ind, f"pos += {n}")
        elif k == "fixed":
            self.emit(ind, f"pos += {int(t['size'])}")
        elif k == "array" and self._map_kind(t["items"]) is not None:
            self.emit(ind, f"pos = skip_{self._map_kind(t['items'])}(buf, pos)")
        elif k in ("array", "map"):
            c = self.var()
            self.emit(ind, "while True:")
            self.read_long(ind + 1, c)
            self.emit(ind + 1, f"if {c} == 0: break")
            self.emit(ind + 1, f"if {c} < 0:")
            n = self.var()
            self.read_long(ind + 2, n)
            self.emit(ind + 2, f"pos += {n}")
            self.emit(ind + 2, "continue")
            self.emit(ind + 1, f"for _ in range({c}):")
            if k == "map":
                self.skip(ind + 2, "string")
                self.skip(ind + 2, t["values"])
            else:
                self.skip(ind + 2, t["items"])
        elif k == "record":
            for f in t["fields"]:
                self.skip(ind, f["type"])
        else:
            raise UnsupportedFeature(f"Avro type {k!r} in a manifest")

    def _map_kind(self, items: Any) -> str | None:
        """"varint" / "bytes" for key/value records with an int key, else None."""
        r = self.resolve(items)
        if not isinstance(r, dict) or r.get("type") != "record":
            return None
        fs = r.get("fields", [])
        if len(fs) != 2 or [f["name"] for f in fs] != ["key", "value"]:
            return None
        if self.kind(fs[0]["type"]) not in ("int", "long"):
            return None
        vk = self.kind(fs[1]["type"])
        if vk in ("int", "long"):
            return "varint"
        if vk == "bytes":
            return "bytes"
        return None

    def kv_map_info(self, t: Any) -> tuple[str, int | None] | None:
        """(kind, null branch index) of an Iceberg int-keyed map field, or None."""
        t = self.resolve(t)
        branches = list(t) if isinstance(t, list) else [t]
        kinds = [self.kind(b) for b in branches]
        if len(branches) > 2 or (len(branches) == 2 and "null" not in kinds):
            return None
        arr = next((self.resolve(b) for b in branches if self.kind(b) != "null"), None)
        if not isinstance(arr, dict) or arr.get("type") != "array":
            return None
        kind = self._map_kind(arr["items"])
        if kind is None:
            return None
        null_index = kinds.index("null") if len(branches) == 2 else None
        return kind, null_index

    def read_kv_map(self, ind: int, t: Any, wanted: list[int], sink_prefix: str) -> None:
        """An Iceberg int-keyed map (array of key/value records): append the values of the
        wanted keys (None when absent, or when the map is null) to per-key sinks."""
        t = self.resolve(t)
        branches = list(t) if isinstance(t, list) else [t]
        arr = next(self.resolve(b) for b in branches if self.kind(b) != "null")
        items = self.resolve(arr["items"])
        kf, vf = items["fields"][0], items["fields"][1]
        if items["fields"][0]["name"] != "key":
            kf, vf = vf, kf
        null_index = next((i for i, b in enumerate(branches) if self.kind(b) == "null"), None)
        sinks = [f"{sink_prefix}_{fid}" for fid in wanted]
        self.sinks.extend(sinks)
        if isinstance(t, list):
            self.read_long(ind, "br")
            self.emit(ind, f"if br == {null_index}:")
            for s in sinks:
                self.emit(ind + 1, f"{s} = None")
            self.emit(ind, "else:")
            ind += 1
        kind = self._map_kind(arr["items"])
        if kind is None:
            raise UnsupportedFeature("unexpected metrics map layout in manifest")
        lhs = ", ".join(sinks) + ("," if len(sinks) == 1 else "")
        self.emit(ind, f"({lhs}), pos = read_{kind}(buf, pos)")


# data_file fields kept as plain columns (raw Avro values)
_DATA_FILE_COLUMNS = ("content", "file_path", "file_format", "record_count", "file_size_in_bytes",
                      "key_metadata", "split_offsets", "equality_ids", "sort_order_id",
                      "first_row_id", "referenced_data_file", "content_offset",
                      "content_size_in_bytes")
_STAT_MAPS = {"value_counts": "vc", "null_value_counts": "nc", "nan_value_counts": "nanc",
              "lower_bounds": "lo", "upper_bounds": "hi"}
_ENTRY_COLUMNS = ("status", "snapshot_id", "sequence_number", "file_sequence_number")


def _collect_named(schema: Any, out: dict[str, Any]) -> None:
    if isinstance(schema, list):
        for s in schema:
            _collect_named(s, out)
    elif isinstance(schema, dict):
        t = schema.get("type")
        if t in ("record", "fixed", "enum") and "name" in schema:
            out[schema["name"]] = schema
        if isinstance(t, (dict, list)):
            _collect_named(t, out)
        if t == "record":
            for f in schema.get("fields", ()):
                _collect_named(f["type"], out)
        for k in ("items", "values"):
            if k in schema:
                _collect_named(schema[k], out)


@dataclass
class _Decoder:
    fn: Callable
    sinks: list[str]
    partition_names: list[str]
    partition_types: list[Any]  # raw Avro types (for logical conversions)
    data_file_fields: set[str]
    entry_fields: set[str]


_DECODERS: dict[tuple, _Decoder] = {}


def _compile_decoder(schema_json: bytes, wanted: tuple[int, ...],
                     nan_wanted: tuple[int, ...] | None = None) -> _Decoder:
    if nan_wanted is None:
        nan_wanted = wanted
    key = (schema_json, wanted, nan_wanted)
    dec = _DECODERS.get(key)
    if dec is not None:
        return dec
    schema = json.loads(schema_json)
    named: dict[str, Any] = {}
    _collect_named(schema, named)
    g = _Gen(named)
    entry = g.resolve(schema)
    if not isinstance(entry, dict) or entry.get("type") != "record":
        raise CorruptMetadata("manifest schema is not a record")
    part_names: list[str] = []
    part_types: list[Any] = []
    df_fields: set[str] = set()
    entry_fields: set[str] = set()
    ind = 2
    regions: dict[str, _Region] = {}
    for f in entry["fields"]:
        name = f["name"]
        if name in _ENTRY_COLUMNS:
            entry_fields.add(name)
            g.read(ind, f["type"], "v")
            g.emit(ind, f"s_{name} = v")
            g.sinks.append(f"s_{name}")
        elif name == "data_file":
            df = g.resolve(f["type"])
            region: list[tuple[str, tuple, int | None]] = []
            region_sinks: list[str] = []

            def flush_region() -> None:
                if not region:
                    return
                name = f"region{len(regions)}"
                regions[name] = _Region(list(region))
                if region_sinks:
                    lhs = ", ".join(region_sinks) + ("," if len(region_sinks) == 1 else "")
                    g.emit(ind, f"({lhs}), pos = {name}.read(buf, pos)")
                    g.sinks.extend(region_sinks)
                else:
                    g.emit(ind, f"_, pos = {name}.read(buf, pos)")
                region.clear()
                region_sinks.clear()

            for h in df["fields"]:
                hn = h["name"]
                df_fields.add(hn)
                info = g.kv_map_info(h["type"])
                if info is not None:
                    keys = (nan_wanted if hn == "nan_value_counts" else wanted) \
                        if hn in _STAT_MAPS else ()
                    region.append((info[0], tuple(keys), info[1]))
                    region_sinks.extend(f"s_{_STAT_MAPS[hn]}_{fid}" for fid in keys)
                    continue
                flush_region()
                if hn in _DATA_FILE_COLUMNS:
                    g.read(ind, h["type"], "v")
                    g.emit(ind, f"s_{hn} = v")
                    g.sinks.append(f"s_{hn}")
                elif hn == "partition":
                    prec = g.resolve(h["type"])
                    for i, pf in enumerate(prec.get("fields", [])):
                        part_names.append(pf["name"])
                        part_types.append(g.resolve(pf["type"]))
                        g.read(ind, pf["type"], "v")
                        g.emit(ind, f"s_p{i} = v")
                        g.sinks.append(f"s_p{i}")
                elif hn in _STAT_MAPS and wanted:
                    g.read_kv_map(ind, h["type"], list(wanted), f"s_{_STAT_MAPS[hn]}")
                else:
                    g.skip(ind, h["type"])
            flush_region()
        else:
            g.skip(ind, f["type"])
    src = ["def decode(buf, count, app):", "    pos = 0", "    for _ in range(count):"]
    src.extend(g.lines or ["        pass"])
    src.append(f"        app(({', '.join(g.sinks)}{',' if len(g.sinks) == 1 else ''}))")
    src.append("    return pos")
    ns: dict[str, Any] = {"rl": _read_long, "ZZ": _ZIGZAG, "unpack_f": struct.Struct("<f").unpack_from,
                          "unpack_d": struct.Struct("<d").unpack_from,
                          "skip_varint": _make_map_skipper("varint"),
                          "skip_bytes": _make_map_skipper("bytes"),
                          "read_varint": _make_map_reader("varint", wanted),
                          "read_bytes": _make_map_reader("bytes", wanted), **regions}
    exec(compile("\n".join(src), "<manifest decoder>", "exec"), ns)  # noqa: S102 - generated
    dec = _Decoder(ns["decode"], list(g.sinks), part_names, part_types, df_fields, entry_fields)
    if len(_DECODERS) > 256:
        _DECODERS.clear()
    _DECODERS[key] = dec
    return dec


# -- the decoded form -----------------------------------------------------------------------------


@dataclass
class ColumnStats:
    """Per-entry metrics of one field id (None where the file has no value)."""

    value_counts: list
    null_counts: list
    nan_counts: list
    lower: list  # bytes | None
    upper: list  # bytes | None


@dataclass
class ManifestColumns:
    """A decoded manifest: one list per field, entries in file order, inheritance applied.

    ``partitions[i]`` is the column of partition field ``i`` in internal representation
    (ints for dates/timestamps, Decimal, UUID, str, bytes, float, bool, None).
    """

    path: str
    length: int
    count: int
    metadata: dict[str, str]
    status: list
    snapshot_id: list
    data_sequence_number: list
    file_sequence_number: list
    content: list
    file_path: list  # str
    file_format: list  # str (upper case)
    record_count: list
    file_size_in_bytes: list
    partition_names: list[str]
    partitions: list[list]
    split_offsets: list
    equality_ids: list
    sort_order_id: list
    first_row_id: list
    referenced_data_file: list
    content_offset: list
    content_size_in_bytes: list
    key_metadata: list
    stats: dict[int, ColumnStats] = field(default_factory=dict)
    stats_decoded: frozenset = frozenset()
    nan_decoded: frozenset = frozenset()  # field ids whose NaN counts were decoded

    def partition_tuple(self, i: int) -> tuple:
        return tuple(col[i] for col in self.partitions)

    def arrow_column(self, name: str, type_: pa.DataType | None = None) -> pa.Array:
        """A column as an Arrow array (built on demand, cached)."""
        cache = self.__dict__.setdefault("_arrow", {})
        a = cache.get(name)
        if a is None:
            a = pa.array(getattr(self, name), type=type_)
            cache[name] = a
        return a


def _partition_converter(t: Any) -> Callable[[Any], Any] | None:
    if not isinstance(t, (dict, list)):
        return _STR_CONV if t == "string" else None
    if isinstance(t, list):
        branch = next((b for b in t if b != "null" and not (isinstance(b, dict) and b.get("type") == "null")), "null")
        return _partition_converter(branch)
    logical = t.get("logicalType")
    if logical == "decimal":
        scale = int(t.get("scale", 0))
        return lambda v: None if v is None else Decimal(int.from_bytes(v, "big", signed=True)).scaleb(-scale)
    if logical == "uuid":
        return lambda v: None if v is None else (uuid_module.UUID(v.decode()) if len(v) != 16 else uuid_module.UUID(bytes=bytes(v)))
    if t.get("type") == "string":
        return _STR_CONV
    return None


def _STR_CONV(v: Any) -> Any:
    return None if v is None else v.decode("utf-8")


def _decode_strings(raw: list) -> list:
    try:
        return [None if v is None else v.decode("utf-8") for v in raw]
    except UnicodeDecodeError as e:
        raise CorruptMetadata(f"invalid UTF-8 in manifest: {e}") from None


def _decode_formats(raw: Any) -> list:
    seen: dict[bytes, str] = {}
    out = []
    for v in raw:
        s = seen.get(v)
        if s is None:
            s = seen[v] = v.decode("ascii", "replace").upper()
        out.append(s)
    return out


def decode_manifest(
    data: bytes,
    *,
    path: str = "",
    wanted_stats: frozenset[int] | set[int] = frozenset(),
    added_snapshot_id: int | None = None,
    sequence_number: int | None = None,
    first_row_id: int | None = None,
    inherit: bool = True,
    nan_stats: frozenset[int] | set[int] | None = None,
) -> ManifestColumns:
    """Decode a manifest's bytes into columns, keeping metrics of ``wanted_stats`` field ids.

    With ``inherit`` (the default), values are inherited from the manifest list entry fields
    given (``added_snapshot_id``, ``sequence_number``, ``first_row_id``).
    """
    data = bytes(data)
    meta_raw, sync, start = split_header(data)
    try:
        schema_json = meta_raw["avro.schema"]
    except KeyError:
        raise CorruptMetadata(f"manifest {path} has no Avro schema") from None
    codec = meta_raw.get("avro.codec", b"null").decode() or "null"
    wanted = tuple(sorted(wanted_stats))
    nan_wanted = wanted if nan_stats is None else tuple(sorted(set(nan_stats) & set(wanted)))
    try:
        dec = _compile_decoder(bytes(schema_json), wanted, nan_wanted)
    except (KeyError, TypeError, ValueError) as e:
        raise CorruptMetadata(f"manifest {path} has an unusable schema: {e}") from None
    rows: list[tuple] = []
    app = rows.append
    count = 0
    try:
        for n, block in _blocks(data, start, sync, codec):
            end = dec.fn(block, n, app)
            if end != len(block):
                raise CorruptMetadata(f"manifest {path}: block has {len(block) - end} trailing bytes")
            count += n
    except CorruptMetadata:
        raise
    except (IndexError, ValueError, zlib.error, struct.error, AttributeError) as e:
        raise CorruptMetadata(f"cannot decode manifest {path}: {e!r}") from None

    columns = list(zip(*rows)) if rows else [() for _ in dec.sinks]
    del rows
    lists = dict(zip(dec.sinks, columns))

    def col(name: str, default: Any = None) -> list:
        v = lists.get(f"s_{name}")
        return v if v is not None else [default] * count

    status = col("status")
    snapshot_id = col("snapshot_id")
    seq = col("sequence_number")
    fseq = col("file_sequence_number")
    record_count = col("record_count")
    row_ids = col("first_row_id")
    if inherit:
        if added_snapshot_id is not None and None in snapshot_id:
            snapshot_id = [added_snapshot_id if s is None else s for s in snapshot_id]
        if sequence_number is not None:
            ms = sequence_number
            if None in seq:
                seq = [ms if (s is None and (ms == 0 or st == ADDED)) else s
                       for s, st in zip(seq, status)]
            if None in fseq:
                fseq = [ms if (s is None and (ms == 0 or st == ADDED)) else s
                        for s, st in zip(fseq, status)]
        if first_row_id is None:
            row_ids = [None] * count
        else:
            nxt = first_row_id
            out = []
            for r, st, rc in zip(row_ids, status, record_count):
                if r is None and st != DELETED:
                    out.append(nxt)
                    nxt += rc
                else:
                    out.append(r)
            row_ids = out
    partitions = []
    for i, t in enumerate(dec.partition_types):
        column = lists[f"s_p{i}"]
        conv = _partition_converter(t)
        if conv is not None:
            try:
                column = [conv(v) for v in column]
            except (UnicodeDecodeError, ValueError) as e:
                raise CorruptMetadata(f"manifest {path}: bad partition value: {e}") from None
        partitions.append(column)
    stats = {}
    for fid in wanted:
        stats[fid] = ColumnStats(
            value_counts=col(f"vc_{fid}"), null_counts=col(f"nc_{fid}"),
            nan_counts=col(f"nanc_{fid}"), lower=col(f"lo_{fid}"), upper=col(f"hi_{fid}"))
    content = col("content", 0)
    return ManifestColumns(
        path=path,
        length=len(data),
        count=count,
        metadata={k: v.decode("utf-8", "replace") for k, v in meta_raw.items()},
        status=status,
        snapshot_id=snapshot_id,
        data_sequence_number=seq,
        file_sequence_number=fseq,
        content=content,
        file_path=_decode_strings(col("file_path")),
        file_format=_decode_formats(col("file_format", b"")),
        record_count=record_count,
        file_size_in_bytes=col("file_size_in_bytes"),
        partition_names=list(dec.partition_names),
        partitions=partitions,
        split_offsets=col("split_offsets"),
        equality_ids=col("equality_ids"),
        sort_order_id=col("sort_order_id"),
        first_row_id=row_ids,
        referenced_data_file=_decode_strings(col("referenced_data_file")),
        content_offset=col("content_offset"),
        content_size_in_bytes=col("content_size_in_bytes"),
        key_metadata=col("key_metadata"),
        stats=stats,
        stats_decoded=frozenset(wanted),
        nan_decoded=frozenset(nan_wanted),
    )


# -- cache ----------------------------------------------------------------------------------------

_CACHE: dict[tuple[str, int], ManifestColumns] = {}
_CACHE_LOCK = threading.Lock()
_CACHE_MAX_ENTRIES = 2_000_000  # total manifest entries kept


def clear_cache() -> None:
    with _CACHE_LOCK:
        _CACHE.clear()


def cache_info() -> dict[str, int]:
    with _CACHE_LOCK:
        return {"manifests": len(_CACHE), "entries": sum(c.count for c in _CACHE.values())}


def load_manifest_columns(
    file_io: Any,
    path: str,
    length: int,
    *,
    wanted_stats: frozenset[int] | set[int] = frozenset(),
    added_snapshot_id: int | None = None,
    sequence_number: int | None = None,
    first_row_id: int | None = None,
    nan_stats: frozenset[int] | set[int] | None = None,
) -> ManifestColumns:
    """A manifest's columns through a FileIO, from the cache when possible.

    ``nan_stats`` limits NaN counts to those field ids (float and double columns; default: all
    of ``wanted_stats``).

    The cache key is ``(path, length)`` plus the inheritance inputs; an entry decoded with
    fewer statistics than wanted is decoded again with the union of both sets.
    """
    key = (path, length)
    wanted = frozenset(wanted_stats)
    nan = wanted if nan_stats is None else frozenset(nan_stats) & wanted
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
    inputs = (added_snapshot_id, sequence_number, first_row_id)
    if hit is not None and hit.__dict__.get("_inputs") == inputs:
        if wanted <= hit.stats_decoded and nan <= hit.nan_decoded:
            return hit
        wanted = wanted | hit.stats_decoded
        nan = nan | hit.nan_decoded
    cols = decode_manifest(file_io.read(path), path=path, wanted_stats=wanted, nan_stats=nan,
                           added_snapshot_id=added_snapshot_id, sequence_number=sequence_number,
                           first_row_id=first_row_id)
    cols.__dict__["_inputs"] = inputs
    with _CACHE_LOCK:
        total = sum(c.count for c in _CACHE.values())
        if total + cols.count > _CACHE_MAX_ENTRIES:
            _CACHE.clear()
        _CACHE[key] = cols
    return cols
