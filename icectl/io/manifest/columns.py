"""Columnar manifest decoding for scan planning.

A manifest is decoded straight from its Avro container into columns, one Python list per field
the planner needs, without building a record per entry. The decoder is generated from the
manifest's own writer schema (:mod:`icectl.io.manifest.codegen`), so manifests of every format
version and writer decode the same way. It is the fast variant of the record reader in
:mod:`icectl.io.manifest.records` and shares with it the schema walk and every logical-type conversion
(:mod:`icectl.io.formats.avro_schema`) and the inheritance rules
(:func:`icectl.spec.manifests.inherit_columns`); a property test runs both on every type.

:func:`decode_manifest` (bytes -> :class:`ManifestColumns`) is the one seam for caching and
parallel decoding: it is a pure function of the manifest's bytes and the inheritance inputs,
and its result is a plain value (lists of ints, strings, bytes, Decimals, UUIDs, plus metadata)
that pickles as is. Decoded manifests are immutable facts about immutable files, so
:func:`load_manifest_columns` caches them in memory by ``(path, length)`` and on disk across
processes (:mod:`icectl.io.manifest.cache`, keyed also by the manifest's mtime); a later plan
that needs statistics of more field ids decodes again and stores the widened entry.
"""

from __future__ import annotations

import pickle
import struct
import threading
import zlib
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Iterable

from icectl.errors import CorruptMetadata
from icectl.io.manifest import cache as manifest_cache
from icectl.spec.manifests import DATA, inherit_columns

if TYPE_CHECKING:
    from icectl.io.manifest.codegen import Decoder
    from icectl.io.storage.files import FileIO

__all__ = ["ManifestColumns", "ColumnStats", "ManifestRequest", "decode_manifest",
           "load_manifest_columns", "manifest_request", "cached_manifest_columns", "keep_decoded",
           "in_memory", "disk_entry_key",
           "clear_cache", "cache_info"]


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
    (ints for dates/times/timestamps, Decimal, UUID, str, bytes, float, bool, None).
    ``inherited_from`` holds the inheritance inputs ``(added_snapshot_id, sequence_number,
    first_row_id)`` the columns were decoded with.
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
    inherited_from: tuple = (None, None, None)

    def partition_tuple(self, i: int) -> tuple:
        return tuple(col[i] for col in self.partitions)

    def __getattr__(self, name: str) -> Any:
        # only called for attributes not set: the columns of a cached entry not unpickled yet
        lazy = self.__dict__.get("_lazy")
        if not lazy or name not in lazy:
            raise AttributeError(name)
        value = pickle.loads(lazy[name])
        self.__dict__[name] = value
        lazy.pop(name, None)
        return value


# -- the cached form ------------------------------------------------------------------------------


class _LazyStats(dict):
    """The metrics of a cached entry: each field's :class:`ColumnStats` is unpickled when first
    read, so a plan loads the statistics of the columns its filter names and no others."""

    def __getitem__(self, fid: int) -> ColumnStats:
        v = dict.__getitem__(self, fid)
        if type(v) is bytes:
            v = pickle.loads(v)
            dict.__setitem__(self, fid, v)
        return v

    def get(self, fid: int, default: Any = None) -> Any:  # type: ignore[override]
        return self[fid] if dict.__contains__(self, fid) else default

    def values(self) -> list[ColumnStats]:  # type: ignore[override]
        return [self[k] for k in dict.keys(self)]

    def items(self) -> list[tuple[int, ColumnStats]]:  # type: ignore[override]
        return [(k, self[k]) for k in dict.keys(self)]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, dict) and dict(self.items()) == dict(
            other.items() if isinstance(other, _LazyStats) else dict.items(other))

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple:
        return (dict, (dict(self.items()),))


def _packed_stats(stats: dict) -> dict[int, bytes]:
    return {k: v if type(v) is bytes else pickle.dumps(v, protocol=5)
            for k, v in dict.items(stats)}


# Columns a plan reads for every entry (pruning); the others are pickled one by one in a cached
# entry and unpickled on first use, so a plan that keeps few files never builds their paths.
_EAGER = ("path", "length", "count", "status", "content", "record_count", "partition_names",
          "partitions", "stats", "stats_decoded", "nan_decoded", "inherited_from")
_PACKED = "icectl-manifest-columns-2"  # 2: the metrics of each field pickled on its own
_FIELD_NAMES = frozenset(f.name for f in fields(ManifestColumns))


def pack(cols: ManifestColumns) -> tuple:
    """The form a decoded manifest is cached in: eager fields, and each other column pickled
    on its own (:func:`unpack` undoes it lazily)."""
    d = {f.name: getattr(cols, f.name) for f in fields(ManifestColumns)}
    eager = {k: d.pop(k) for k in _EAGER}
    eager["stats"] = _packed_stats(eager["stats"])
    return (_PACKED, eager, {k: pickle.dumps(v, protocol=5) for k, v in d.items()})


def unpack(value: Any) -> ManifestColumns | None:
    """A :class:`ManifestColumns` from :func:`pack`'s form (None for anything else)."""
    if not (isinstance(value, tuple) and len(value) == 3 and value[0] == _PACKED):
        return None
    _, eager, lazy = value
    if not (isinstance(eager, dict) and isinstance(lazy, dict)
            and set(eager) | set(lazy) == _FIELD_NAMES):
        return None
    if not isinstance(eager.get("stats"), dict):
        return None
    cols = object.__new__(ManifestColumns)
    cols.__dict__.update(eager)
    cols.__dict__["stats"] = _LazyStats(eager["stats"])
    cols.__dict__["_lazy"] = dict(lazy)
    return cols


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


def run_decoder(dec: Decoder, blocks: Iterable[tuple[int, bytes]],
                path: str) -> tuple[dict[str, Any], int]:
    """Raw columns by sink name, and the entry count, of (entry count, uncompressed bytes)
    blocks (:func:`icectl.io.formats.avro_container.decoded_blocks`)."""
    rows: list[tuple] = []
    count = 0
    try:
        for n, block in blocks:
            end = dec.fn(block, n, rows.append)
            if end != len(block):
                raise CorruptMetadata(f"manifest {path}: block has {len(block) - end} trailing bytes")
            count += n
    except CorruptMetadata:
        raise
    except (IndexError, ValueError, zlib.error, struct.error, AttributeError) as e:
        raise CorruptMetadata(f"cannot decode manifest {path}: {e!r}") from None
    columns = list(zip(*rows)) if rows else [() for _ in dec.sinks]
    return dict(zip(dec.sinks, columns)), count


def partition_columns(dec: Decoder, raw: dict[str, Any], path: str) -> list[list]:
    """The partition columns of raw decoded columns, in internal representation."""
    out = []
    for i, pf in enumerate(dec.layout.partition):
        column = raw[f"s_p{i}"]
        conv = pf.convert_raw
        if conv is not None:
            try:
                column = [conv(v) for v in column]
            except (UnicodeDecodeError, ValueError) as e:
                raise CorruptMetadata(f"manifest {path}: bad partition value: {e}") from None
        out.append(column)
    return out


def decode_manifest(
    data: bytes,
    *,
    path: str = "",
    wanted_stats: frozenset[int] | set[int] = frozenset(),
    added_snapshot_id: int | None = None,
    sequence_number: int | None = None,
    first_row_id: int | None = None,
    nan_stats: frozenset[int] | set[int] | None = None,
) -> ManifestColumns:
    """Decode a manifest's bytes into columns, keeping metrics of ``wanted_stats`` field ids
    (NaN counts only of ``nan_stats``, default all of them), inheriting from the manifest list
    entry's ``added_snapshot_id``, ``sequence_number`` and ``first_row_id``."""
    # (imported here: a plan served by the cache decodes nothing and need not load the decoder)
    from icectl.io.formats.avro_container import decoded_blocks, split_header
    from icectl.io.formats.avro_schema import wire_schema_jsons
    from icectl.io.manifest.codegen import compile_decoder

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
        wires = wire_schema_jsons(bytes(schema_json))
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise CorruptMetadata(f"manifest {path} has an unusable schema: {e}") from None
    for i, wire in enumerate(wires):  # (more than one only with plain fixed partition fields)
        try:
            dec = compile_decoder(wire, wanted, nan_wanted)
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise CorruptMetadata(f"manifest {path} has an unusable schema: {e}") from None
        try:
            raw, count = run_decoder(dec, decoded_blocks(data, start, sync, codec), path)
            partitions = partition_columns(dec, raw, path)
            break
        except CorruptMetadata:
            if i == len(wires) - 1:
                raise

    def col(name: str, default: Any = None) -> list:
        v = raw.get(f"s_{name}")
        return v if v is not None else [default] * count

    status = col("status")
    record_count = col("record_count")
    inherited = inherit_columns(
        status, col("snapshot_id"), col("sequence_number"), col("file_sequence_number"),
        col("first_row_id"), record_count, added_snapshot_id=added_snapshot_id,
        manifest_sequence_number=sequence_number, manifest_first_row_id=first_row_id)
    stats = {fid: ColumnStats(value_counts=col(f"vc_{fid}"), null_counts=col(f"nc_{fid}"),
                              nan_counts=col(f"nanc_{fid}"), lower=col(f"lo_{fid}"),
                              upper=col(f"hi_{fid}"))
             for fid in wanted}
    return ManifestColumns(
        path=path, length=len(data), count=count,
        metadata={k: v.decode("utf-8", "replace") for k, v in meta_raw.items()},
        status=status, snapshot_id=inherited.snapshot_id,
        data_sequence_number=inherited.sequence_number,
        file_sequence_number=inherited.file_sequence_number,
        content=col("content", DATA),
        file_path=_decode_strings(col("file_path")),
        file_format=_decode_formats(col("file_format", b"")),
        record_count=record_count, file_size_in_bytes=col("file_size_in_bytes"),
        partition_names=dec.layout.partition_names,
        partitions=partitions,
        split_offsets=col("split_offsets"), equality_ids=col("equality_ids"),
        sort_order_id=col("sort_order_id"), first_row_id=inherited.first_row_id,
        referenced_data_file=_decode_strings(col("referenced_data_file")),
        content_offset=col("content_offset"),
        content_size_in_bytes=col("content_size_in_bytes"), key_metadata=col("key_metadata"),
        stats=stats, stats_decoded=frozenset(wanted), nan_decoded=frozenset(nan_wanted),
        inherited_from=(added_snapshot_id, sequence_number, first_row_id),
    )


# -- cache ----------------------------------------------------------------------------------------

_CACHE: dict[tuple[str, int], ManifestColumns] = {}
_CACHE_LOCK = threading.Lock()
# The in-memory cache serves the repeated plans of one long-lived process (the Python API, a
# notebook); the persistent cache serves later processes. A manifest is kept in memory from its
# second decoding or load in the process on: a process that plans once (a command line) holds
# only the manifests whose files its plan keeps, so its memory does not grow with the table. It
# holds at most this many entries and, when full, admits nothing more (a plan walks the
# manifests in the same order each time, so what it holds stays hits instead of being evicted
# one by one).
_CACHE_MAX_ENTRIES = 1_000_000
_SEEN: set[tuple[str, int]] = set()  # manifests met once (kept in memory when met again)
_cached_entries = 0


def clear_cache() -> None:
    global _cached_entries
    with _CACHE_LOCK:
        _CACHE.clear()
        _SEEN.clear()
        _cached_entries = 0


def cache_info() -> dict[str, int]:
    with _CACHE_LOCK:
        return {"manifests": len(_CACHE), "entries": sum(c.count for c in _CACHE.values())}


@dataclass(frozen=True)
class ManifestRequest:
    """What to decode of one manifest: its path and length (from the manifest list), the field
    ids whose statistics (and NaN counts) are wanted, and the inheritance inputs. Plain data:
    it pickles to worker processes."""

    path: str
    length: int
    wanted: frozenset
    nan: frozenset
    inputs: tuple  # (added_snapshot_id, sequence_number, first_row_id)

    def decode(self, data: bytes) -> ManifestColumns:
        from icectl.io.formats.avro_container import naming_file

        a, s, f = self.inputs
        with naming_file("manifest", self.path):
            return decode_manifest(data, path=self.path, wanted_stats=self.wanted, nan_stats=self.nan,
                                   added_snapshot_id=a, sequence_number=s, first_row_id=f)


def manifest_request(path: str, length: int, *, wanted_stats: frozenset[int] | set[int] = frozenset(),
                     added_snapshot_id: int | None = None, sequence_number: int | None = None,
                     first_row_id: int | None = None,
                     nan_stats: frozenset[int] | set[int] | None = None) -> ManifestRequest:
    wanted = frozenset(wanted_stats)
    nan = wanted if nan_stats is None else frozenset(nan_stats) & wanted
    return ManifestRequest(path, length, wanted, nan,
                           (added_snapshot_id, sequence_number, first_row_id))


def in_memory(req: ManifestRequest) -> ManifestColumns | None:
    """The decoding of ``req`` the in-memory cache holds, if it has every statistic wanted."""
    with _CACHE_LOCK:
        hit = _CACHE.get((req.path, req.length))
    if (hit is not None and hit.inherited_from == req.inputs
            and req.wanted <= hit.stats_decoded and req.nan <= hit.nan_decoded):
        return hit
    return None


def disk_entry_key(file_io: FileIO, req: ManifestRequest) -> bytes | None:
    """The persistent-cache key of ``req`` when an entry is stored under it (it is read, and
    may still lack statistics ``req`` wants, only by :func:`cached_manifest_columns`), else None:
    a planner looks the entries up without holding them all at once."""
    if not manifest_cache.enabled():
        return None
    key = manifest_cache.manifest_key(file_io, req.path, req.length, req.inputs)
    return key if key is not None and manifest_cache.entry_stamp(key) is not None else None


def cached_manifest_columns(file_io: FileIO, req: ManifestRequest, disk_key: bytes | None = None,
                            ) -> tuple[ManifestColumns | None, ManifestRequest, bytes | None]:
    """A cached decoding of ``req`` (in memory, else on disk), or None with the request to
    decode (widened to the statistics a cached entry already had, so the stored entry keeps
    them) and the disk-cache key to store the result under (None: not cached on disk).
    ``disk_key``: that key when the caller has it (:func:`disk_entry_key`)."""
    key = (req.path, req.length)
    wanted, nan = req.wanted, req.nan
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
    if hit is not None and hit.inherited_from == req.inputs:
        if wanted <= hit.stats_decoded and nan <= hit.nan_decoded:
            return hit, req, None
        wanted = wanted | hit.stats_decoded
        nan = nan | hit.nan_decoded
    if disk_key is None and manifest_cache.enabled():
        disk_key = manifest_cache.manifest_key(file_io, req.path, req.length, req.inputs)
    if disk_key is not None:
        stored = unpack(manifest_cache.get(disk_key))
        if (stored is not None and stored.inherited_from == req.inputs
                and stored.path == req.path and stored.length == req.length):
            if wanted <= stored.stats_decoded and nan <= stored.nan_decoded:
                _remember(key, stored)
                return stored, req, None
            wanted = wanted | stored.stats_decoded
            nan = nan | stored.nan_decoded
    return None, ManifestRequest(req.path, req.length, wanted, nan, req.inputs), disk_key


def keep_decoded(req: ManifestRequest, disk_key: bytes | None, cols: ManifestColumns,
                 payload: bytes | None = None) -> None:
    """Remember a fresh decoding in memory and store it on disk under ``disk_key`` (``payload``:
    its pickle when a worker process already made it)."""
    _remember((req.path, req.length), cols)
    if disk_key is not None:
        if payload is not None:
            manifest_cache.put_payload(disk_key, payload)
        else:
            manifest_cache.put(disk_key, pack(cols))


def load_manifest_columns(
    file_io: FileIO,
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

    The cache key is ``(path, length)`` plus the inheritance inputs (on disk also the
    manifest's mtime, see :mod:`icectl.io.manifest.cache`); an entry decoded with fewer
    statistics than wanted is decoded again with the union of both sets and stored again.
    """
    req = manifest_request(path, length, wanted_stats=wanted_stats,
                           added_snapshot_id=added_snapshot_id, sequence_number=sequence_number,
                           first_row_id=first_row_id, nan_stats=nan_stats)
    hit, req, disk_key = cached_manifest_columns(file_io, req)
    if hit is not None:
        return hit
    cols = req.decode(file_io.read(path))
    keep_decoded(req, disk_key, cols)
    return cols


def _remember(key: tuple[str, int], cols: ManifestColumns) -> None:
    global _cached_entries
    with _CACHE_LOCK:
        if key not in _SEEN:
            _SEEN.add(key)  # met once: not kept (see _CACHE_MAX_ENTRIES)
            return
        old = _CACHE.pop(key, None)
        if old is not None:
            _cached_entries -= old.count
        if _cached_entries + cols.count > _CACHE_MAX_ENTRIES:
            return  # full: what it holds stays
        _CACHE[key] = cols
        _cached_entries += cols.count
