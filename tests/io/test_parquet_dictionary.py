"""The Parquet writer's column choices follow the reference's writer: a dictionary only where it
pays (parquet-mr's first-page test), the reference's compression level when the table names
none, the page index written; the table's write properties still win."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from icectl.io.formats.parquet_dictionary import dictionary_columns, dictionary_pays
from icectl.io.formats.parquet_write import (ParquetWriteOptions, arrow_schema, compression_level,
                                             write_rolling)
from icectl.io.storage.files import FileIO
from icectl.spec.schema import Schema

N = 30_000

SCHEMA = Schema.from_json({"type": "struct", "schema-id": 0, "fields": [
    {"id": 1, "name": "id", "required": True, "type": "long"},
    {"id": 2, "name": "cat", "required": False, "type": "string"},
    {"id": 3, "name": "s", "required": False, "type": "string"},
    {"id": 4, "name": "n", "required": False, "type": "int"},
    {"id": 5, "name": "b", "required": False, "type": "boolean"},
    {"id": 6, "name": "st", "required": False, "type": {"type": "struct", "fields": [
        {"id": 7, "name": "k", "required": False, "type": "int"},
        {"id": 8, "name": "u", "required": False, "type": "string"}]}},
    {"id": 9, "name": "l", "required": False, "type": {"type": "list", "element-id": 10,
                                                       "element-required": False, "element": "long"}},
]})


def _rows() -> pa.Table:
    return pa.table({
        "id": pa.array(range(N), pa.int64()),
        "cat": [f"c{i % 7}" for i in range(N)],
        "s": [f"row-{i}" for i in range(N)],
        "n": pa.array([(i * 37) % 100 if i % 9 else None for i in range(N)], pa.int32()),
        "b": [i % 3 == 0 for i in range(N)],
        "st": [{"k": i % 4, "u": f"u{i * 7919}"} for i in range(N)],
        "l": [[2 * i, 2 * i + 1] for i in range(N)],
    })


def _write(tmp_path: Path, props: dict[str, str]) -> pq.FileMetaData:
    names = iter(range(100))
    opts = ParquetWriteOptions.from_properties(props)
    written = write_rolling(FileIO(), _rows().cast(arrow_schema(SCHEMA)), SCHEMA, opts,
                            lambda: str(tmp_path / f"{next(names)}.parquet"))
    assert len(written) == 1
    return pq.ParquetFile(written[0].path).metadata


def _dictionary_encoded(md: pq.FileMetaData) -> dict[str, bool]:
    rg = md.row_group(0)
    return {rg.column(i).path_in_schema: any("DICTIONARY" in e for e in rg.column(i).encodings)
            for i in range(rg.num_columns)}


def test_a_dictionary_only_where_it_pays(tmp_path: Path) -> None:
    md = _write(tmp_path, {"write.parquet.compression-codec": "zstd"})
    assert _dictionary_encoded(md) == {
        "id": False,               # unique and increasing: PLAIN, as parquet-mr writes it
        "cat": True,               # 7 values
        "s": False,                # unique text
        "n": True,                 # 100 values and nulls
        "b": False,                # booleans never
        "st.k": True,              # nested leaves are decided one by one
        "st.u": False,
        "l.list.element": False,
    }
    rg = md.row_group(0)
    for i in range(rg.num_columns):  # the page index, as the reference writes it
        assert rg.column(i).has_column_index and rg.column(i).has_offset_index
        assert rg.column(i).compression == "ZSTD"


def test_the_choice_is_made_on_the_first_page() -> None:
    # repeats after the first page do not make a dictionary pay: parquet-mr decides on its first page
    first_page_unique = pa.table({"x": pa.array(list(range(20_000)) + [1] * 80_000, pa.int64())})
    assert dictionary_columns(first_page_unique, 20_000) == []
    assert dictionary_columns(first_page_unique.slice(20_000), 20_000) == ["x"]
    # long runs of one value are cheap as RLE indices even with many distinct values
    runs = pa.array([i // 1000 for i in range(20_000)], pa.int64())
    assert dictionary_pays(runs)
    assert not dictionary_pays(pa.array(range(20_000), pa.int64()))
    assert dictionary_pays(pa.array([None, None], pa.string()))  # no values: nothing to lose


def test_compression_level_defaults_to_the_references_and_the_property_wins(tmp_path: Path) -> None:
    zstd = ParquetWriteOptions.from_properties({"write.parquet.compression-codec": "zstd"})
    assert compression_level(zstd) == 3  # parquet-mr's ZSTD default (Arrow's own is 1)
    gzip = ParquetWriteOptions.from_properties({"write.parquet.compression-codec": "gzip"})
    assert compression_level(gzip) == 6  # Hadoop zlib's default (Arrow's own is 9)
    snappy = ParquetWriteOptions.from_properties({"write.parquet.compression-codec": "snappy"})
    assert compression_level(snappy) is None
    set_ = ParquetWriteOptions.from_properties({"write.parquet.compression-codec": "zstd",
                                               "write.parquet.compression-level": "19"})
    assert compression_level(set_) == 19
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    default = _write(tmp_path / "a", {"write.parquet.compression-codec": "zstd"})
    high = _write(tmp_path / "b", {"write.parquet.compression-codec": "zstd",
                                   "write.parquet.compression-level": "19"})
    size = lambda md: sum(md.row_group(0).column(i).total_compressed_size  # noqa: E731
                          for i in range(md.num_columns))
    assert size(high) < size(default)


def test_dictionary_size_property_still_bounds_the_dictionary(tmp_path: Path) -> None:
    # a column whose dictionary pays on its first page but outgrows dict-size-bytes falls back
    md = _write(tmp_path, {"write.parquet.compression-codec": "zstd", "write.parquet.dict-size-bytes": "64"})
    rg = md.row_group(0)
    n = next(rg.column(i) for i in range(rg.num_columns) if rg.column(i).path_in_schema == "n")
    assert "PLAIN" in n.encodings
