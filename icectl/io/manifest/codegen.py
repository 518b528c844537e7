"""The generated manifest decoder: Python source specialised for one writer schema.

The code for one entry reads varints and length-prefixed bytes inline, keeps the plain
columns and partition values *raw* (converted afterwards by :mod:`icectl.io.formats.avro_schema`, the
record reader's conversions) and, of the metric maps, only the values of the field ids the
filter names (:mod:`icectl.io.manifest.maps`). Types are looked at through the shared
:class:`~icectl.io.formats.avro_schema.SchemaWalk`, so name references resolve as in the record reader.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from typing import Any, Callable

from icectl.errors import UnsupportedFeature
from icectl.io.formats.avro_schema import ManifestLayout, SchemaWalk
from icectl.io.manifest.maps import ZIGZAG, Region, make_map_reader, make_map_skipper, read_long

__all__ = ["Decoder", "compile_decoder", "ENTRY_COLUMNS", "COPY_COLUMNS"]


class _Gen:
    """Emits the Python source of a block decoder for one writer schema."""

    def __init__(self, walk: SchemaWalk):
        self.walk = walk
        self.lines: list[str] = []
        self.tmp = 0
        self.sinks: list[str] = []  # names of output lists, in order

    def var(self) -> str:
        self.tmp += 1
        return f"t{self.tmp}"

    def emit(self, ind: int, line: str) -> None:
        self.lines.append("    " * ind + line)

    def resolve(self, t: Any) -> Any:
        return self.walk.resolve(t)

    def kind(self, t: Any) -> str:
        return self.walk.kind(t)

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
COPY_COLUMNS = ("record_count", "file_path", "first_row_id")  # all a copy (extents) reads
_STAT_MAPS = {"value_counts": "vc", "null_value_counts": "nc", "nan_value_counts": "nanc",
              "lower_bounds": "lo", "upper_bounds": "hi"}
ENTRY_COLUMNS = ("status", "snapshot_id", "sequence_number", "file_sequence_number")


@dataclass
class Decoder:
    """A compiled block decoder: ``fn(block, count, append, pos=0)`` appends, for each of the
    ``count`` entries starting at ``pos``, one tuple of raw values in the order of ``sinks``
    (``s_<column>``, ``s_p<i>`` for partition field i, ``s_<vc|nc|nanc|lo|hi>_<field id>`` for
    metrics), and returns the position after them."""

    fn: Callable
    sinks: list[str]
    layout: ManifestLayout


_DECODERS: dict[tuple, Decoder] = {}


def compile_decoder(schema_json: bytes, wanted: tuple[int, ...],
                    nan_wanted: tuple[int, ...] | None = None, *,
                    extents: bool = False) -> Decoder:
    """The decoder for a writer schema keeping metrics of ``wanted`` field ids (NaN counts of
    ``nan_wanted``), cached by those and ``extents``. With ``extents`` it also keeps where each
    entry's encoded data_file starts and ends (``s_df0``, ``s_df1``) and, when the record has
    one, where its first_row_id field does (``s_fr0``, ``s_fr1``): a merge copies those bytes;
    of the data_file's plain columns it then reads only those a copy needs (``COPY_COLUMNS``)."""
    if nan_wanted is None:
        nan_wanted = wanted
    key = (schema_json, wanted, nan_wanted, extents)
    dec = _DECODERS.get(key)
    if dec is not None:
        return dec
    layout = ManifestLayout(json.loads(schema_json))
    g = _Gen(layout.walk)
    regions: dict[str, Region] = {}
    for f in layout.entry["fields"]:
        name = f["name"]
        if name in ENTRY_COLUMNS:
            g.read(_IND, f["type"], "v")
            g.emit(_IND, f"s_{name} = v")
            g.sinks.append(f"s_{name}")
        elif name == "data_file":
            _mark(g, extents, "s_df0")
            _emit_data_file(g, layout, wanted, nan_wanted, regions, extents)
            _mark(g, extents, "s_df1")
        else:
            g.skip(_IND, f["type"])
    src = ["def decode(buf, count, app, pos=0):", "    for _ in range(count):"]
    src.extend(g.lines or ["        pass"])
    src.append(f"        app(({', '.join(g.sinks)}{',' if len(g.sinks) == 1 else ''}))")
    src.append("    return pos")
    ns: dict[str, Any] = {"rl": read_long, "ZZ": ZIGZAG, "unpack_f": struct.Struct("<f").unpack_from,
                          "unpack_d": struct.Struct("<d").unpack_from,
                          "skip_varint": make_map_skipper("varint"),
                          "skip_bytes": make_map_skipper("bytes"),
                          "read_varint": make_map_reader("varint", wanted),
                          "read_bytes": make_map_reader("bytes", wanted), **regions}
    exec(compile("\n".join(src), "<manifest decoder>", "exec"), ns)  # noqa: S102 - generated
    dec = Decoder(ns["decode"], list(g.sinks), layout)
    if len(_DECODERS) > 256:
        _DECODERS.clear()
    _DECODERS[key] = dec
    return dec


_IND = 2  # indentation of the per-entry loop body


def _mark(g: _Gen, extents: bool, sink: str) -> None:
    """With ``extents``: the current position kept in ``sink``."""
    if extents:
        g.emit(_IND, f"{sink} = pos")
        g.sinks.append(sink)


def _emit_data_file(g: _Gen, layout: ManifestLayout, wanted: tuple[int, ...],
                    nan_wanted: tuple[int, ...], regions: dict[str, Region],
                    extents: bool = False) -> None:
    """Code for the data_file record: plain columns, the partition fields (in the order of
    ``layout.partition``) and runs of metric maps read as one :class:`Region` each."""
    region: list[tuple[str, tuple, int | None]] = []
    region_sinks: list[str] = []

    def flush_region() -> None:
        if not region:
            return
        name = f"region{len(regions)}"
        regions[name] = Region(list(region))
        if region_sinks:
            lhs = ", ".join(region_sinks) + ("," if len(region_sinks) == 1 else "")
            g.emit(_IND, f"({lhs}), pos = {name}.read(buf, pos)")
            g.sinks.extend(region_sinks)
        else:
            g.emit(_IND, f"_, pos = {name}.read(buf, pos)")
        region.clear()
        region_sinks.clear()

    for h in layout.data_file["fields"]:
        hn = h["name"]
        info = g.kv_map_info(h["type"])
        if info is not None:
            keys = (nan_wanted if hn == "nan_value_counts" else wanted) if hn in _STAT_MAPS else ()
            region.append((info[0], tuple(keys), info[1]))
            region_sinks.extend(f"s_{_STAT_MAPS[hn]}_{fid}" for fid in keys)
            continue
        flush_region()
        if hn in _DATA_FILE_COLUMNS and (not extents or hn in COPY_COLUMNS):
            _mark(g, extents and hn == "first_row_id", "s_fr0")
            g.read(_IND, h["type"], "v")
            g.emit(_IND, f"s_{hn} = v")
            g.sinks.append(f"s_{hn}")
            _mark(g, extents and hn == "first_row_id", "s_fr1")
        elif hn == "partition":
            for i, pf in enumerate(layout.partition):
                g.read(_IND, pf.avro_type, "v")
                g.emit(_IND, f"s_p{i} = v")
                g.sinks.append(f"s_p{i}")
        elif hn in _STAT_MAPS and wanted:
            g.read_kv_map(_IND, h["type"], list(wanted), f"s_{_STAT_MAPS[hn]}")
        else:
            g.skip(_IND, h["type"])
    flush_region()
