"""Where icectl keeps what it remembers between processes: ``$ICECTL_CACHE_DIR`` if set, else
``$XDG_CACHE_HOME/icectl``, else ``~/.cache/icectl``.

Decoded manifests live in its ``manifests/`` sub-directory (:mod:`icectl.io.manifest.cache`);
the object-store probe's answers beside it (:mod:`icectl.io.storage.objectstore`). This module imports
nothing of icectl, so both can use it without importing each other.
"""

from __future__ import annotations

import os

__all__ = ["cache_root"]


def cache_root() -> str:
    """icectl's cache directory (it need not exist)."""
    base = os.environ.get("ICECTL_CACHE_DIR")
    if base:
        return base
    xdg = os.environ.get("XDG_CACHE_HOME")
    return os.path.join(xdg, "icectl") if xdg else os.path.join(os.path.expanduser("~"), ".cache", "icectl")
