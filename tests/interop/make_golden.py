"""Regenerate the Spark-written golden metadata files in tests/data/metadata/.

    python tests/interop/make_golden.py [--out DIR]

Runs the reference stack (local Spark 3.5 + Iceberg 1.10.2, see spark_support.py) against a
throw-away warehouse, builds a few small tables with SQL, and copies selected
``metadata/v<N>.metadata.json`` files out. Only the JSON is kept: no data, manifests or
warehouses. The temporary warehouse path inside the JSON is replaced by ``/tmp/warehouse`` (so
locations read ``file:/tmp/warehouse/<namespace>/<table>/...``); everything else is exactly as
Iceberg Java wrote it. UUIDs, snapshot ids and timestamps change on every run.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from spark_support import CATALOG, IceTable, start_spark  # noqa: E402

PLACEHOLDER = "/tmp/warehouse"
DEFAULT_OUT = Path(__file__).resolve().parent.parent / "data" / "metadata"

MOR = (
    "'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
    "'write.merge.mode'='merge-on-read'"
)

ROWS_1 = """
    (1, 'alpha', 'a', 10.50, TIMESTAMP '2024-01-01 10:00:00', DATE '2024-01-01'),
    (2, 'beta', 'b', -3.25, TIMESTAMP '2024-01-02 11:30:00', DATE '2024-01-02'),
    (3, 'gamma', 'a', 0.00, TIMESTAMP '1969-12-31 23:59:59', DATE '1969-12-31'),
    (4, NULL, NULL, NULL, NULL, NULL)
"""
ROWS_2 = """
    (5, 'delta', 'b', 99.99, TIMESTAMP '2024-02-29 00:00:00', DATE '2024-02-29'),
    (6, 'epsilon', 'c', 1.01, TIMESTAMP '2024-03-01 23:00:00', DATE '2024-03-01')
"""
COLUMNS = "id bigint, name string, category string, amount decimal(10,2), ts timestamp, d date"


def build_v1_partitioned(sql: Callable[[str], Any], t: IceTable) -> None:
    sql(
        f"CREATE TABLE {t.ident} ({COLUMNS}) USING iceberg "
        "PARTITIONED BY (bucket(4, id), days(ts), truncate(2, name), category) "
        "TBLPROPERTIES ('format-version'='1')"
    )
    sql(f"INSERT INTO {t.ident} VALUES {ROWS_1}")
    sql(f"INSERT INTO {t.ident} VALUES {ROWS_2}")


def build_v1_spec_evolved(sql: Callable[[str], Any], t: IceTable) -> None:
    """v1 partition evolution: a dropped field stays as a void transform."""
    sql(
        f"CREATE TABLE {t.ident} ({COLUMNS}) USING iceberg PARTITIONED BY (category, months(d)) "
        "TBLPROPERTIES ('format-version'='1')"
    )
    sql(f"INSERT INTO {t.ident} VALUES {ROWS_1}")
    sql(f"ALTER TABLE {t.ident} DROP PARTITION FIELD category")
    sql(f"ALTER TABLE {t.ident} ADD PARTITION FIELD bucket(8, id)")
    sql(f"ALTER TABLE {t.ident} ADD COLUMN note string")
    sql(f"ALTER TABLE {t.ident} RENAME COLUMN name TO label")
    sql(f"INSERT INTO {t.ident} VALUES (7, 'eta', 'c', 2.00, NULL, DATE '2024-04-01', 'n')")


def build_v2_merge_on_read(sql: Callable[[str], Any], t: IceTable) -> None:
    sql(
        f"CREATE TABLE {t.ident} ({COLUMNS}) USING iceberg PARTITIONED BY (category) "
        f"TBLPROPERTIES ('format-version'='2', {MOR})"
    )
    sql(f"INSERT INTO {t.ident} VALUES {ROWS_1}")
    sql(f"INSERT INTO {t.ident} VALUES {ROWS_2}")
    sql(f"DELETE FROM {t.ident} WHERE id = 2")
    sql(f"UPDATE {t.ident} SET amount = amount + 1 WHERE id = 1")
    sql(f"ALTER TABLE {t.ident} ADD COLUMN score double")
    sql(f"ALTER TABLE {t.ident} ADD PARTITION FIELD bucket(8, id)")
    sql(f"ALTER TABLE {t.ident} WRITE ORDERED BY id ASC NULLS LAST, name DESC")
    sql(f"INSERT INTO {t.ident} VALUES (8, 'theta', 'a', 5.00, NULL, NULL, 0.5)")
    sql(f"ALTER TABLE {t.ident} CREATE BRANCH dev")
    sql(f"ALTER TABLE {t.ident} CREATE TAG v1_release RETAIN 30 DAYS")
    sql(f"INSERT INTO {t.ident}.branch_dev VALUES (9, 'iota', 'b', 6.00, NULL, NULL, 1.5)")


def build_v3_deletion_vectors(sql: Callable[[str], Any], t: IceTable) -> None:
    sql(
        f"CREATE TABLE {t.ident} ({COLUMNS}) USING iceberg PARTITIONED BY (category) "
        f"TBLPROPERTIES ('format-version'='3', {MOR})"
    )
    sql(f"INSERT INTO {t.ident} VALUES {ROWS_1}")
    sql(f"INSERT INTO {t.ident} VALUES {ROWS_2}")
    sql(f"DELETE FROM {t.ident} WHERE id = 1")
    sql(f"UPDATE {t.ident} SET amount = 0 WHERE id = 6")


# (output file, table name, builder, metadata version to keep or None for the latest)
GOLDEN = [
    ("spark_v1_partitioned.json", "v1_partitioned", build_v1_partitioned, None),
    ("spark_v1_spec_evolved.json", "v1_spec_evolved", build_v1_spec_evolved, None),
    ("spark_v2_empty.json", "v2_mor", build_v2_merge_on_read, 1),
    ("spark_v2_mor.json", "v2_mor", build_v2_merge_on_read, None),
    ("spark_v3_dv.json", "v3_dv", build_v3_deletion_vectors, None),
]


def latest_version(metadata_dir: Path) -> int:
    return int((metadata_dir / "version-hint.text").read_text(encoding="utf-8").strip())


def stable_text(text: str, warehouse: Path) -> str:
    """The metadata JSON with the temporary warehouse path replaced by the placeholder."""
    stable = text.replace(str(warehouse), PLACEHOLDER)
    if str(warehouse.parent) in stable:
        raise RuntimeError("a temporary path survived the rewrite")
    json.loads(stable)  # still valid JSON
    return stable


def generate(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="icectl-golden-") as tmp:
        root = Path(tmp).resolve()
        warehouse = root / "warehouse"
        started = start_spark(warehouse, root / "spark")
        spark = started.session
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.golden")

        def sql(query: str) -> Any:
            return spark.sql(query).collect()

        built: set[str] = set()
        written = []
        try:
            for file_name, table_name, build, version in GOLDEN:
                table = IceTable(CATALOG, "golden", table_name, warehouse)
                if table_name not in built:
                    build(sql, table)
                    built.add(table_name)
                n = version if version is not None else latest_version(table.metadata_dir)
                source = table.metadata_dir / f"v{n}.metadata.json"
                target = out / file_name
                target.write_text(
                    stable_text(source.read_text(encoding="utf-8"), warehouse), encoding="utf-8"
                )
                written.append(target)
        finally:
            spark.stop()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory")
    args = parser.parse_args(argv)
    for path in generate(args.out):
        print(f"{path}  ({path.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
