"""Where a table's new files go (the reference's LocationProvider): one home for each rule."""

from __future__ import annotations

from typing import Mapping

from icectl.io.storage.files import join
from icectl.spec.properties import WRITE_DATA_PATH, WRITE_FOLDER_STORAGE_PATH

__all__ = ["data_location"]


def data_location(table_location: str, properties: Mapping[str, str]) -> str:
    """Where new data files go: ``write.data.path``, else the legacy folder-storage path, else
    ``<table location>/data``."""
    for key in (WRITE_DATA_PATH, WRITE_FOLDER_STORAGE_PATH):
        v = properties.get(key)
        if v:
            return v.rstrip("/")
    return join(table_location, "data")
