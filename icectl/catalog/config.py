"""Which catalog a command uses: ``--catalog NAME`` / ``--catalog-uri URI`` / ``ICECTL_CATALOG``,
resolved where users already keep catalog settings.

* A named catalog is an entry of pyiceberg's configuration: ``catalog: NAME: {type, uri,
  warehouse}`` in ``.pyiceberg.yaml`` (looked up as pyiceberg does: in ``$PYICEBERG_HOME``, the
  home directory, then the working directory; the first file found is used), overlaid by
  environment variables ``PYICEBERG_CATALOG__<NAME>__URI`` (``__WAREHOUSE``, ``__TYPE``).
* ``--catalog-uri`` names the database directly (its name is ``--catalog``'s, else
  ``ICECTL_CATALOG``'s, else ``default``, pyiceberg's default name); it overrides the entry's URI.
* ``--warehouse`` gives the warehouse when the entry has none (or with ``--catalog-uri``).
* ``ICECTL_CATALOG`` is the default of ``--catalog`` for a TABLE that is an identifier
  (``namespace.table``); a path, URL or metadata file is always a filesystem table then.

Only ``type: sql`` (or no type with a ``sqlite``/``postgresql`` URI) is a catalog icectl speaks.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping

from icectl.catalog import CATALOG_ENV
from icectl.catalog.yaml_subset import parse_yaml_mapping
from icectl.errors import InvalidInput, NotFound, StorageError, UnsupportedFeature

__all__ = ["CatalogConfig", "CATALOG_ENV", "resolve_config", "config_files", "catalog_names"]

CONFIG_FILE = ".pyiceberg.yaml"
DEFAULT_NAME = "default"


@dataclass(frozen=True)
class CatalogConfig:
    name: str
    type: str
    uri: str
    warehouse: str | None
    source: str  # where the settings came from (for messages)


def config_files(env: Mapping[str, str]) -> list[str]:
    dirs = [env.get("PYICEBERG_HOME"), os.path.expanduser("~"), os.getcwd()]
    return [os.path.join(d, CONFIG_FILE) for d in dirs if d]


def _from_file(env: Mapping[str, str]) -> tuple[dict, str | None]:
    for path in config_files(env):
        if os.path.isfile(path):
            try:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
            except OSError as e:
                raise StorageError(f"cannot read {path}: {e.strerror or e}") from None
            return parse_yaml_mapping(text, path), path
    return {}, None


def _from_env(env: Mapping[str, str], name: str) -> dict[str, str]:
    """``PYICEBERG_CATALOG__<NAME>__<KEY>`` (case-insensitive; ``_`` in KEY reads as ``-``)."""
    prefix = f"pyiceberg_catalog__{name.lower()}__"
    return {k.lower()[len(prefix):].replace("_", "-"): v for k, v in env.items() if k.lower().startswith(prefix)}


def resolve_config(name: str | None, uri: str | None, warehouse: str | None,
                   env: Mapping[str, str] | None = None) -> CatalogConfig:
    """The settings of the catalog the options name. NotFound for a NAME no configuration has
    (unless --catalog-uri gives the database); InvalidInput for a catalog icectl cannot speak."""
    env = os.environ if env is None else env
    chosen = name or env.get(CATALOG_ENV) or None
    if chosen is not None and not chosen.strip():
        raise InvalidInput("the catalog name must not be empty", argument="catalog")
    entry: dict = {}
    source = "the catalog URI"
    if chosen:
        data, path = _from_file(env)
        catalogs = data.get("catalog", {}) if isinstance(data, dict) else {}
        if catalogs and not isinstance(catalogs, dict):
            raise InvalidInput(f"{path}: 'catalog' must be a mapping of catalog names")
        found = catalogs.get(chosen.lower()) if catalogs else None
        if found is not None and not isinstance(found, dict):
            raise InvalidInput(f"{path}: catalog.{chosen} must be a mapping (type, uri, warehouse)")
        entry = dict(found or {})
        entry.update(_from_env(env, chosen))
        source = path if found is not None else "environment"
        if not entry and uri is None:
            looked = ", ".join(config_files(env))
            raise NotFound(f"no catalog {chosen!r}: no entry catalog.{chosen} in {CONFIG_FILE} (looked in {looked}) "
                           f"and no PYICEBERG_CATALOG__{chosen.upper()}__URI")
    final_uri = uri or entry.get("uri")
    if not final_uri:
        raise InvalidInput(f"catalog {chosen!r} ({source}) has no uri")
    kind = (entry.get("type") or "").strip().lower()
    if kind and kind != "sql":
        raise UnsupportedFeature(f"catalog {chosen!r} is of type {kind!r}: icectl speaks to SQL catalogs "
                                 "(type: sql) and filesystem warehouses")
    return CatalogConfig(chosen or DEFAULT_NAME, "sql", final_uri.strip(),
                         entry.get("warehouse") or warehouse or None, source)


def catalog_names(env: Mapping[str, str] | None = None) -> list[str]:
    """The catalog names configured (file entries and PYICEBERG_CATALOG__<NAME>__*), for shell
    completion; [] when the configuration cannot be read."""
    env = os.environ if env is None else env
    try:
        data, _ = _from_file(env)
    except (InvalidInput, StorageError):
        data = {}
    catalogs = data.get("catalog") if isinstance(data, dict) else None
    names = set(catalogs) if isinstance(catalogs, dict) else set()
    names |= {k.lower().split("__")[1] for k in env if k.lower().startswith("pyiceberg_catalog__") and k.count("__") >= 2}
    return sorted(names)
