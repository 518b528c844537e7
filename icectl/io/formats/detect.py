"""Facts about existing data files that an append needs, read without reading their rows.

* :func:`detect_format` - PARQUET, ORC or AVRO from the file name (or an explicit choice).
* :func:`orc_record_count` / :func:`avro_record_count` - record counts from the ORC footer and
  from the Avro block headers (blocks are skipped, not decoded).

Parquet footers (metrics, statistics, schema) are read by :mod:`icectl.io.formats.parquet`.
"""

from __future__ import annotations

import io as _io
from typing import TYPE_CHECKING, Any

from icectl.errors import InvalidInput, NotFound, StorageError

if TYPE_CHECKING:
    from icectl.io.storage.files import FileIO

__all__ = ["FORMATS", "detect_format", "orc_record_count", "avro_record_count"]

FORMATS = ("PARQUET", "ORC", "AVRO")
_EXTENSIONS = {".parquet": "PARQUET", ".parq": "PARQUET", ".pqt": "PARQUET", ".orc": "ORC",
               ".avro": "AVRO"}


def detect_format(path: str, explicit: str | None = None) -> str:
    """The data file format: ``explicit`` (any case) or the one its extension names."""
    if explicit:
        fmt = explicit.strip().upper()
        if fmt not in FORMATS:
            raise InvalidInput(f"unknown file format {explicit!r} (expected parquet, orc or avro)",
                               argument="file_format")
        return fmt
    name = path.rsplit("/", 1)[-1].lower()
    for suffix in (".gz", ".zst", ".snappy"):
        if name.endswith(suffix) and not name.endswith(".parquet"):
            name = name[: -len(suffix)]
    for ext, fmt in _EXTENSIONS.items():
        if name.endswith(ext):
            return fmt
    raise InvalidInput(f"cannot tell the format of {path} from its name; give the file format "
                       "(parquet, orc or avro)", argument="file_format")


def _open(file_io: FileIO, path: str) -> Any:
    return file_io.open(path, "rb")


def orc_record_count(file_io: FileIO, path: str) -> int:
    """Rows in an ORC file, from its footer."""
    try:
        from pyarrow import orc
    except ImportError as e:  # pragma: no cover - pyarrow builds without ORC
        raise StorageError(f"ORC support is missing from pyarrow: {e}") from e
    try:
        with _open(file_io, path) as f:
            return int(orc.ORCFile(f).nrows)
    except (NotFound, StorageError):
        raise
    except Exception as e:  # noqa: BLE001 - pyarrow raises ArrowInvalid and friends
        raise InvalidInput(f"{path} is not a readable ORC file: {e}") from e


def avro_record_count(file_io: FileIO, path: str) -> int:
    """Records in an Avro container file: the sum of its block counts (no record decoding)."""
    import fastavro

    try:
        with _open(file_io, path) as f:
            data = f.read()
        return sum(block.num_records for block in fastavro.block_reader(_io.BytesIO(data)))
    except (NotFound, StorageError):
        raise
    except Exception as e:  # noqa: BLE001
        raise InvalidInput(f"{path} is not a readable Avro file: {e}") from e
