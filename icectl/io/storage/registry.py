"""Which store serves a path: its URL scheme looked up in :data:`STORES`, else fsspec.

A new store (HDFS without fsspec, a catalog's vended credentials) is one module implementing
:class:`icectl.io.storage.base.Storage` and one entry here (or, from outside the package,
``STORES["scheme"] = MyStorage``, before any FileIO meets the scheme: each FileIO looks a
scheme up once): every FileIO then routes that scheme's paths to it. A process the engines
spawn imports this module afresh, so a store registered from outside it must be registered
where the workers import it too.
"""

from __future__ import annotations

from typing import Any

from icectl.io.storage.base import scheme_of
from icectl.io.storage.fsspec_store import FsspecStorage
from icectl.io.storage.local import LocalStorage

__all__ = ["STORES", "DEFAULT_STORE", "store_class"]

# scheme -> the store class, built as cls(scheme, storage_options)
STORES: dict[str, Any] = {"": LocalStorage, "file": LocalStorage, "local": LocalStorage}
DEFAULT_STORE: Any = FsspecStorage  # every other scheme: fsspec knows the object stores


def store_class(path: str) -> Any:
    """The store class of ``path``'s scheme."""
    return STORES.get(scheme_of(path), DEFAULT_STORE)
