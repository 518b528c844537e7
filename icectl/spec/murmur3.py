"""The spec's 32-bit Murmur3 hash of a value (Appendix B), for bucket partitioning."""

from __future__ import annotations

import math
import struct
import uuid as _uuid
from decimal import Decimal
from typing import Any

import mmh3

from icectl.spec.javatext import decimal_unscaled
from icectl.spec.types import TIMESTAMP_NS, TIMESTAMPTZ_NS, DecimalType, IcebergType

__all__ = ["murmur3_hash"]

_NS_TYPES = (TIMESTAMP_NS, TIMESTAMPTZ_NS)


def _min_twos_complement(n: int) -> bytes:
    length = (n + (n < 0)).bit_length() // 8 + 1
    return n.to_bytes(length, "big", signed=True)


_unscaled = decimal_unscaled


def murmur3_hash(value: Any, source_type: IcebergType | None = None) -> int:
    """The spec's 32-bit hash of a value (Appendix B), signed like Java's int."""
    if isinstance(value, bool):
        # the spec's hashInt widens to long first, like every integer
        return mmh3.hash(struct.pack("<q", int(value)), 0, signed=True)
    if isinstance(value, int):
        if source_type in _NS_TYPES:
            value = value // 1000
        return mmh3.hash(struct.pack("<q", value), 0, signed=True)
    if isinstance(value, float):
        if math.isnan(value):
            bits = b"\x00\x00\x00\x00\x00\x00\xf8\x7f"
        else:
            bits = struct.pack("<d", value + 0.0 if value != 0 else 0.0)
        return mmh3.hash(bits, 0, signed=True)
    if isinstance(value, Decimal):
        scale = source_type.scale if isinstance(source_type, DecimalType) else None
        return mmh3.hash(_min_twos_complement(_unscaled(value, scale)), 0, signed=True)
    if isinstance(value, str):
        return mmh3.hash(value.encode("utf-8"), 0, signed=True)
    if isinstance(value, _uuid.UUID):
        return mmh3.hash(value.bytes, 0, signed=True)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return mmh3.hash(bytes(value), 0, signed=True)
    raise TypeError(f"cannot hash {type(value).__name__} value {value!r}")
