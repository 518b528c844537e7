"""Interop test ordering. The Spark session fixtures (``spark``, ``jvm``, ``warehouse``, ``sql``,
``new_table``, ``ice_table``) live in ``spark_fixtures.py`` and are shared through tests/conftest.py.
"""

from __future__ import annotations

import pytest

# Runs after every other test: it checks every table the run built (test_zz_check_interop.py).
_LAST = "test_every_table_in_the_interop_warehouse_is_clean"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    last = [i for i in items if i.name == _LAST]
    if last:
        items[:] = [i for i in items if i.name != _LAST] + last
