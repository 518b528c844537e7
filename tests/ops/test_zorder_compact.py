"""Z-order compaction: the columnar z-order values equal the per-value definition on every type,
compaction keeps the rows and clusters them (box filters read fewer files than after a linear
sort), and the CLI refuses bad input with one line and writes nothing."""

from __future__ import annotations

import json
import random
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import Phase, given, settings, strategies as st

from icectl.ops.compute.zorder import zorder_bytes, zorder_keys
from icectl.ops.maintain.compact import CompactOptions, compact_table
from icectl.ops.write.rows import write_rows
from icectl.scan.planner import plan_scan
from icectl.spec import zorder as Z
from icectl.table.table import Table

from clirun import icectl
from ops_support import InProcess, files_on_disk, rows
from support.tables import empty_table

_I64 = st.integers(-2**63, 2**63 - 1)
_COLUMNS = {
    "long": (pa.int64(), st.none() | _I64),
    "int": (pa.int32(), st.none() | st.integers(-2**31, 2**31 - 1)),
    "double": (pa.float64(), st.none() | st.floats(allow_nan=True) | st.sampled_from([-0.0, 0.0])),
    "float": (pa.float32(), st.none() | st.floats(width=32, allow_nan=True)),
    "string": (pa.string(), st.none() | st.text(max_size=12)),
    "binary": (pa.binary(), st.none() | st.binary(max_size=12)),
    "boolean": (pa.bool_(), st.none() | st.booleans()),
    "date": (pa.date32(), st.none() | st.integers(-800_000, 800_000)),
    "timestamptz": (pa.timestamp("us", tz="UTC"), st.none() | st.integers(-2**62, 2**62)),
    "uuid": (pa.binary(16), st.none() | st.uuids()),
}


def _schema(types: list[str]):
    from icectl.spec.schema import Schema

    return Schema.from_json({"type": "struct", "schema-id": 0, "fields": [
        {"id": i + 1, "name": f"c{i}", "type": t, "required": False} for i, t in enumerate(types)]})


@st.composite
def _tables(draw):
    types = draw(st.lists(st.sampled_from(sorted(_COLUMNS)), min_size=1, max_size=4))
    n = draw(st.integers(1, 12))
    cols = {}
    values = []
    for i, t in enumerate(types):
        atype, strat = _COLUMNS[t]
        vals = draw(st.lists(strat, min_size=n, max_size=n))
        values.append(vals)
        stored = [v.bytes if isinstance(v, uuid.UUID) else v for v in vals]
        cols[f"c{i}"] = pa.array(stored, atype)
    return types, values, pa.table(cols)


@settings(max_examples=60, deadline=None)
@given(_tables(), st.sampled_from([1, 3, 8, 13]), st.sampled_from([Z.MAX_OUTPUT_SIZE_DEFAULT, 1, 9, 20]))
def test_columnar_values_equal_the_per_value_definition(table, var_length, max_out):
    types, values, data = table
    schema = _schema(types)
    order = Z.ZOrder.of(range(1, len(types) + 1), var_length, max_out)
    kinds = [Z.form_kind(f.type) for f in schema.fields]
    expected = [Z.zorder_value(kinds, row, var_length, max_out) for row in zip(*values)]
    assert zorder_bytes(data, order, schema) == expected


def test_sort_keys_order_rows_as_their_bytes():
    rnd = random.Random(3)
    a = pa.array([rnd.randint(-50, 50) for _ in range(300)], pa.int64())
    s = pa.array([rnd.choice(["", "a", "b\u00e9", None, "zz"]) for _ in range(300)])
    chunks = zorder_keys([a, s], ["long", "string"], 2, Z.MAX_OUTPUT_SIZE_DEFAULT)
    assert len(chunks) == 2  # 10 bytes: one full uint64 and one of 2 bytes
    by_keys = sorted(range(300), key=lambda i: tuple(c[i].as_py() for c in chunks))
    by_bytes = sorted(range(300), key=lambda i: Z.zorder_value(["long", "string"], [a[i].as_py(), s[i].as_py()], 2))
    assert [Z.zorder_value(["long", "string"], [a[i].as_py(), s[i].as_py()], 2) for i in by_keys] == \
        [Z.zorder_value(["long", "string"], [a[i].as_py(), s[i].as_py()], 2) for i in by_bytes]


def _points(tmp_path: Path, name: str, seed: int, domain: int, files: int = 8, n: int = 4000) -> Table:
    # two columns of one range (the reference interleaves the raw forms, without rescaling: a
    # column whose values differ only in its low bits would be ordered after the other)
    t = empty_table(tmp_path / name / "wh" / "db" / "t", "a long, b int")
    rnd = random.Random(seed)
    for _ in range(files):
        write_rows(Table.load(t.location), pa.table({
            "a": pa.array([rnd.randrange(domain) for _ in range(n)], pa.int64()),
            "b": pa.array([rnd.randrange(domain) for _ in range(n)], pa.int32())}))
    return Table.load(t.location)


def _files_read(t: Table, filters: list[str]) -> int:
    return sum(len(plan_scan(Table.load(t.location), f).files) for f in filters)


@settings(max_examples=3, deadline=None, database=None)
@given(seed=st.integers(0, 2**32 - 1), domain=st.sampled_from([10_000, 16_384, 1_000_000]))
def test_zorder_beats_a_linear_sort_on_box_filters(tmp_path_factory, seed, domain) -> None:
    """64 output files; 2-column boxes, half narrow in a and wide in b, half the other way
    round: a linear sort by (a, b) prunes the first kind well and the second badly, z-order
    both fairly, and reads fewer files in all. (With a handful of files z-order does not win:
    the files whose z-range crosses a quadrant's edge span most of the domain; Spark's z-order
    writes the same rows in the same order, see the interop tests.)"""
    tmp_path = tmp_path_factory.mktemp("box")
    z, lin = _points(tmp_path, "z", seed, domain), _points(tmp_path, "l", seed, domain)
    before = rows(z.location)
    target = sum(f.file_size_in_bytes for f in plan_scan(z).files) // 64
    rz = compact_table(z, options=CompactOptions(strategy="zorder", zorder_columns=("a", "b"),
                                                 target_file_size=target, rewrite_all=True), engine=InProcess())
    # the linear sort's files rolled at the z-order files' mean size: about as many files
    mean = rz.added_bytes // max(1, rz.added_data_files)
    rl = compact_table(lin, options=CompactOptions(strategy="sort", sort_order="a, b",
                                                   target_file_size=int(mean / 1.4), rewrite_all=True),
                       engine=InProcess())
    assert rz.committed and rl.committed and rz.strategy == "zorder"
    assert rows(z.location) == before == rows(lin.location)
    assert rz.added_data_files == 64  # the expected output files, as the reference splits
    # no more files for the linear sort than for z-order (fewer files, fewer files to read)
    assert rl.added_data_files <= rz.added_data_files
    rnd = random.Random(seed)
    narrow, wide = domain // 16, domain // 2
    boxes = []
    for i in range(60):
        sa, sb = (narrow, wide) if i % 2 else (wide, narrow)
        a0, b0 = rnd.randrange(domain - sa), rnd.randrange(domain - sb)
        boxes.append(f"a >= {a0} and a < {a0 + sa} and b >= {b0} and b < {b0 + sb}")
    zread, lread = _files_read(z, boxes), _files_read(lin, boxes)
    assert zread < lread, (zread, lread)


@settings(max_examples=3, deadline=None, database=None, phases=(Phase.generate,))
@given(seed=st.integers(0, 2**32 - 1), domain=st.sampled_from([1_000, 65_536, 1_000_000]))
def test_files_are_cut_at_z_cell_edges_near_equal_shares(tmp_path_factory, seed, domain) -> None:
    """Each cut between output files lies within 5% of its equal-share boundary (k shares into
    the group: no drift), where the adjacent z-values share the shortest prefix in that window
    (the edge of the largest z-cell there), and the group still becomes its expected number of
    files."""
    tmp_path = tmp_path_factory.mktemp("cells")
    t = _points(tmp_path, "t", seed, domain, files=4, n=2500)
    target = sum(f.file_size_in_bytes for f in plan_scan(t).files) // 12
    r = compact_table(t, options=CompactOptions(strategy="zorder", zorder_columns=("a", "b"),
                                                target_file_size=target, rewrite_all=True), engine=InProcess())
    assert r.committed and r.added_data_files == 12
    files = []
    for f in plan_scan(Table.load(t.location)).files:
        data = pq.read_table(f.path, columns=["a", "b"])
        files.append([Z.zorder_value(["long", "long"], [a, b])
                      for a, b in zip(data.column("a").to_pylist(), data.column("b").to_pylist())])
    files.sort(key=lambda values: values[0])
    values = [v for f in files for v in f]
    assert values == sorted(values)
    share = -(-len(values) // 12)
    slack = share // 20

    def split(j: int) -> int:  # bits in which the values either side of a cut before row j differ
        return (int.from_bytes(values[j - 1], "big") ^ int.from_bytes(values[j], "big")).bit_length()

    at = 0
    for k, f in enumerate(files[:-1], start=1):
        at += len(f)
        window = range(k * share - slack, k * share + slack + 1)
        assert at in window, (k, at, k * share)
        assert split(at) == max(split(j) for j in window)


def test_sort_strategy_with_a_zorder_term_is_the_zorder_strategy(tmp_path: Path) -> None:
    one, two = _points(tmp_path, "one", 5, 1000, files=6, n=200), _points(tmp_path, "two", 5, 1000, files=6, n=200)
    p = icectl("compact", one.location, "--strategy", "zorder", "--columns", "a,b", "--json")
    assert p.returncode == 0, p.stderr
    q = icectl("compact", two.location, "--strategy", "sort", "--sort-order", "zorder(a, b)", "--json")
    assert q.returncode == 0, q.stderr
    assert json.loads(p.stdout)["strategy"] == "zorder" and json.loads(q.stdout)["strategy"] == "sort"

    def ordered(t: Table) -> list[tuple]:
        out = []
        for b in __import__("icectl.scan.reader", fromlist=["open_scan"]).open_scan(Table.load(t.location)).batches():
            out += list(zip(*(b.column(i).to_pylist() for i in range(b.num_columns))))
        return out

    got = ordered(one)
    assert got == ordered(two) and got != sorted(got)
    keys = [Z.zorder_value(["long", "long"], r[:2]) for r in got]
    assert keys == sorted(keys)  # one output file, in z-order


def test_identity_partition_columns_are_ignored_with_a_warning(tmp_path: Path) -> None:
    t = empty_table(tmp_path / "wh" / "db" / "t", "a long, p string", partition="p")
    for i in range(5):
        write_rows(Table.load(t.location), pa.table({"a": pa.array([i, -i], pa.int64()), "p": ["x", "y"]}))
    p = icectl("compact", t.location, "--strategy", "zorder", "--columns", "p,a", "--json")
    assert p.returncode == 0, p.stderr
    assert "warning: z-order ignores column 'p'" in p.stderr
    assert json.loads(p.stdout)["warnings"] and json.loads(p.stdout)["added-data-files-count"] == 2


def test_bad_zorder_input_is_one_line_with_its_exit_code_and_writes_nothing(tmp_path: Path) -> None:
    t = empty_table(tmp_path / "wh" / "db" / "t", "a long, d decimal(9,2), p string", partition="p")
    for i in range(5):
        write_rows(Table.load(t.location), pa.table({"a": pa.array([i], pa.int64()),
                                                     "d": pa.array([None], pa.decimal128(9, 2)),
                                                     "p": ["x"]}))
    before = files_on_disk(t.location)
    cases = [
        (["--strategy", "zorder", "--columns", "a,nope"], 3, "--columns: cannot find column 'nope'"),
        (["--strategy", "zorder", "--columns", "d"], 2, "decimal"),
        (["--strategy", "zorder", "--columns", "p"], 2, "identity partition column"),
        (["--strategy", "zorder"], 2, "--columns: cannot z-order without columns"),
        (["--strategy", "zorder", "--columns", "a", "--var-length-contribution", "0"], 2,
         "--var-length-contribution: z-order cannot use less than 1 byte"),
        (["--strategy", "zorder", "--columns", "a", "--max-output-size", "0"], 2, "--max-output-size"),
        (["--strategy", "sort", "--sort-order", "zorder(a), p"], 2, "cannot mix"),
        (["--sort-order", "zorder(a)"], 2, "strategy is binpack"),
        (["--columns", "a"], 2, "--columns: z-order options are given but the strategy is binpack"),
        (["--strategy", "zorder", "--columns", "a", "--sort-order", "zorder(a)"], 2, "give one"),
        (["--deletes", "--columns", "a"], 2, "--columns: z-order does not apply"),
    ]
    for args, code, text in cases:
        p = icectl("compact", t.location, *args)
        assert p.returncode == code, (args, p.stderr)
        assert p.stdout == "" and len(p.stderr.strip().splitlines()) == 1 and text in p.stderr, (args, p.stderr)
    assert files_on_disk(t.location) == before
