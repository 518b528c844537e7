"""The catalogue of known table properties: what the reference accepts, and fallbacks for garbage."""

from __future__ import annotations

import json

import pytest

from icectl.spec.properties import property_int, validate_properties, validate_property

VALID = [
    ("commit.retry.num-retries", "0"), ("commit.retry.min-wait-ms", "100"),
    ("commit.retry.total-timeout-ms", "2147483647"), ("write.format.default", "ORC"),
    ("write.format.default", "parquet"), ("write.parquet.compression-codec", "ZSTD"),
    ("write.parquet.compression-codec", "lz4_raw"), ("write.parquet.compression-codec", "uncompressed"),
    ("write.avro.compression-codec", "snappy"), ("write.metadata.compression-codec", "gzip"),
    ("write.metadata.previous-versions-max", "1"), ("write.metadata.delete-after-commit.enabled", "TRUE"),
    ("write.metadata.metrics.default", "truncate(16)"), ("write.metadata.metrics.column.a.b", "counts"),
    ("history.expire.max-snapshot-age-ms", "432000000"), ("history.expire.min-snapshots-to-keep", "1"),
    ("gc.enabled", "false"), ("write.delete.mode", "merge-on-read"), ("write.delete.granularity", "file"),
    ("write.merge.isolation-level", "snapshot"), ("write.distribution-mode", "hash"),
    ("write.target-file-size-bytes", "536870912"), ("format-version", "3"),
    ("schema.name-mapping.default", json.dumps([{"field-id": 1, "names": ["id"]}])),
    ("my.own.property", "anything at all"),
]

INVALID = [
    ("commit.retry.num-retries", "abc"), ("commit.retry.num-retries", "-1"),
    ("commit.retry.num-retries", " 4"), ("commit.retry.min-wait-ms", "1.5"),
    ("commit.retry.max-wait-ms", "2147483648"), ("write.format.default", "nonsense"),
    ("write.parquet.compression-codec", "zip"), ("write.avro.compression-codec", "brotli"),
    ("write.metadata.compression-codec", "zstd"), ("write.metadata.previous-versions-max", "x"),
    ("write.metadata.delete-after-commit.enabled", "yes"), ("write.metadata.metrics.default", "truncate(0)"),
    ("write.metadata.metrics.column.id", "most"), ("gc.enabled", "1"),
    ("history.expire.min-snapshots-to-keep", "0"), ("history.expire.max-snapshot-age-ms", "5d"),
    ("write.delete.mode", "cow"), ("write.delete.granularity", "row"),
    ("write.update.isolation-level", "read-committed"), ("format-version", "4"),
    ("schema.name-mapping.default", "garbage"), ("schema.name-mapping.default", '{"a": 1}'),
    ("write.target-file-size-bytes", "0"),
]


@pytest.mark.parametrize("key,value", VALID)
def test_valid_values(key, value):
    assert validate_property(key, value) is None


@pytest.mark.parametrize("key,value", INVALID)
def test_invalid_values_name_the_problem(key, value):
    problem = validate_property(key, value)
    assert problem and "\n" not in problem


def test_validate_properties_lists_every_problem_and_reserved_stored_names():
    props = {"gc.enabled": "nope", "write.format.default": "avro", "format-version": "2", "x": "y"}
    assert [p.key for p in validate_properties(props)] == ["gc.enabled"]
    stored = validate_properties(props, stored=True)
    assert [p.key for p in stored] == ["gc.enabled", "format-version"]
    assert str(stored[0]).startswith("table property gc.enabled='nope': expected true or false")
    # a per-column key is known by its prefix (its value checked), an unknown key is not checked
    assert [p.key for p in validate_properties({"write.metadata.metrics.column.x": "nope", "x": "y"})] \
        == ["write.metadata.metrics.column.x"]


def test_property_int_falls_back_for_garbage_and_says_so():
    problems: list[str] = []
    assert property_int({"commit.retry.num-retries": "abc"}, "commit.retry.num-retries", 4, problems) == 4
    assert property_int({"commit.retry.num-retries": "7"}, "commit.retry.num-retries", 4, problems) == 7
    assert property_int({}, "commit.retry.num-retries", 4, problems) == 4
    assert len(problems) == 1 and "commit.retry.num-retries='abc'" in problems[0] and "default 4" in problems[0]
