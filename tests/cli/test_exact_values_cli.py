"""`icectl write` / `upsert` store numbers exactly or refuse them: one error line naming the file,
the row and the column, exit code 2, and nothing written (no file under the table's directory, no
new metadata version) - for CSV, JSON lines, Parquet, Arrow tables and several files at once.
`--round` rounds as Python's Decimal.quantize; decimal(38) values keep all their digits."""

from __future__ import annotations

import decimal
import json
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from clirun import icectl

from icectl.errors import InvalidInput
from icectl.ops.delete.upsert import upsert_rows
from icectl.ops.write.rows import write_rows
from icectl.table.table import Table
from support.tables import empty_table

SCHEMA = "id long not null, price decimal(12,2), qty int, big decimal(38,3), tags list<decimal(5,2)>"


def make(tmp_path: Path, schema: str = SCHEMA, name: str = "t", fv: int = 2) -> str:
    return empty_table(tmp_path / "wh" / name, schema, format_version=fv).location


def tree(loc: str) -> dict[str, bytes]:
    return {str(p.relative_to(loc)): p.read_bytes() for p in sorted(Path(loc).rglob("*")) if p.is_file()}


def rows(loc: str) -> list[dict]:
    t = Table.load(loc)
    out = []
    for f in Path(t.location, "data").rglob("*.parquet"):
        out += pq.read_table(f).to_pylist()
    return sorted(out, key=lambda r: r["id"])


def refused(loc: str, args: list[str], line: str) -> None:
    """The write is refused with exactly this error line, exit 2, and leaves no trace."""
    before = tree(loc)
    r = icectl(*args)
    assert r.exit_code == InvalidInput.exit_code, r.output
    assert r.stdout == ""
    assert r.stderr.splitlines() == [f"icectl: error: {line}"], r.stderr
    assert tree(loc) == before


HINT = " (--round half-even|half-up|down to round it)"


def test_each_input_format_names_file_row_and_column(tmp_path: Path) -> None:
    loc = make(tmp_path)
    csv = tmp_path / "p.csv"
    csv.write_text("id,price,qty\n1,1.50,3\n2,2.25,4\n3,2.999,5\n")
    refused(loc, ["write", loc, str(csv)],
            f"{csv}: row 3, column price: 2.999 does not fit decimal(12, 2): more than 2 digits after the point{HINT}")
    js = tmp_path / "p.jsonl"
    js.write_text('{"id": 1, "price": 12.5}\n{"id": 2, "price": 12.555}\n')
    refused(loc, ["write", loc, str(js)],
            f"{js}: row 2, column price: 12.555 does not fit decimal(12, 2): more than 2 digits after the point{HINT}")
    js.write_text('{"id": 1, "price": "12.555"}\n')  # a JSON string: the same rule
    refused(loc, ["write", loc, str(js)],
            f"{js}: row 1, column price: 12.555 does not fit decimal(12, 2): more than 2 digits after the point{HINT}")
    pqf = tmp_path / "p.parquet"
    pq.write_table(pa.table({"id": [1, 2], "price": [0.5, 2.999]}), pqf)
    refused(loc, ["write", loc, str(pqf)],
            f"{pqf}: row 2, column price: 2.999 does not fit decimal(12, 2): more than 2 digits after the point "
            f"(as a binary floating-point number it is exactly 2.999000000000000110134124042815528810024261474609375)"
            f"{HINT}")
    pq.write_table(pa.table({"id": [1, 2], "qty": pa.array([7, 3_000_000_000], pa.int64())}), pqf)
    refused(loc, ["write", loc, str(pqf)],
            f"{pqf}: row 2, column qty: 3000000000 does not fit int: out of range (-2147483648 to 2147483647)")
    pq.write_table(pa.table({"id": [1], "qty": [2.5]}), pqf)
    refused(loc, ["write", loc, str(pqf)], f"{pqf}: row 1, column qty: 2.5 does not fit int: it has a fractional part{HINT}")
    csv.write_text("id,price\n1,123456789012\n")  # too many digits before the point: --round cannot help
    refused(loc, ["write", loc, str(csv), "--round", "half-up"],
            f"{csv}: row 1, column price: 123456789012 does not fit decimal(12, 2): more than 10 digits before the point")
    js.write_text('{"id": 1}\n{"id": 2, "tags": [1.5, null]}\n{"id": 3, "tags": [1, 2.345]}\n')
    refused(loc, ["write", loc, str(js)],
            f"{js}: row 3, column tags.element: 2.345 does not fit decimal(5, 2): more than 2 digits after the point{HINT}")
    # stdin is named as such
    before = tree(loc)
    r = icectl(*["write", loc, "-", "--format", "csv"], input="id,qty\n1,1.25\n")
    assert r.exit_code == 2 and r.stderr.splitlines() == [
        f"icectl: error: stdin: row 1, column qty: 1.25 does not fit int: it has a fractional part{HINT}"]
    assert tree(loc) == before
    refused(loc, ["write", loc, str(csv), "--round", "nearest"],
            "--round: unknown rounding 'nearest' (expected half-even, half-up, down)")


def test_several_files_refuse_as_one_and_remove_every_task_file(tmp_path: Path) -> None:
    loc = make(tmp_path)
    good = tmp_path / "a.csv"
    good.write_text("id,price\n" + "".join(f"{i},{i}.25\n" for i in range(200)))
    bad = tmp_path / "b.jsonl"
    bad.write_text('{"id": 1001, "price": 1.5}\n{"id": 1002, "price": 0.125}\n')
    refused(loc, ["write", loc, str(good), str(bad), "--workers", "2"],
            f"{bad}: row 2, column price: 0.125 does not fit decimal(12, 2): more than 2 digits after the point{HINT}")
    r = icectl(*["write", loc, str(good), str(bad), "--workers", "2", "--round", "half-even", "--json"])
    assert r.exit_code == 0, r.output
    assert {x["id"]: x["price"] for x in rows(loc) if x["price"] < 2} == {
        0: Decimal("0.25"), 1: Decimal("1.25"), 1001: Decimal("1.50"), 1002: Decimal("0.12")}


def test_arrow_tables_follow_the_same_rule(tmp_path: Path) -> None:
    loc = make(tmp_path)
    before = tree(loc)
    cases = [
        (pa.table({"id": [1, 2], "price": pa.array([Decimal("1.5"), Decimal("1.005")], pa.decimal128(10, 3))}),
         "the input: row 2, column price: 1.005 does not fit decimal(12, 2): more than 2 digits after the point"),
        (pa.table({"id": [1], "price": pa.array([Decimal("12345678901.5")], pa.decimal128(14, 1))}),
         "the input: row 1, column price: 12345678901.5 does not fit decimal(12, 2): more than 10 digits "
         "before the point"),
        (pa.table({"id": [1, 2, 3], "qty": pa.array([1.0, float("nan"), 2.0], pa.float32())}),
         "the input: row 2, column qty: nan does not fit int: not a finite number"),
        (pa.table({"id": pa.array([1, 2**63 - 1], pa.uint64())}), None),  # fits a long: written below
    ]
    for tbl, why in cases:
        if why is None:
            continue
        with pytest.raises(InvalidInput) as e:
            write_rows(Table.load(loc), tbl)
        assert str(e.value) == why
    assert tree(loc) == before
    categorical = pa.table({"id": [1, 2, 3], "price": pa.array(["1.5", "2.5", "1.505"]).dictionary_encode()})
    with pytest.raises(InvalidInput, match=r"^the input: row 3, column price: 1.505 does not fit decimal\(12, 2\)"):
        write_rows(Table.load(loc), categorical)
    with pytest.raises(InvalidInput, match="row 1, column id: 18446744073709551615 does not fit long"):
        write_rows(Table.load(loc), pa.table({"id": pa.array([2**64 - 1], pa.uint64())}))
    w = write_rows(Table.load(loc), pa.table({
        "id": pa.array([1, 2**63 - 1], pa.uint64()),
        "price": pa.array([Decimal("1.5"), Decimal("-1.005")], pa.decimal128(10, 3)),
        "qty": [2.5, -2.5]}), rounding="half-up")
    assert w.rows_read == 2
    assert [(r["id"], r["price"], r["qty"]) for r in rows(loc)] == [
        (1, Decimal("1.50"), 3), (2**63 - 1, Decimal("-1.01"), -3)]


@pytest.mark.parametrize("mode, python", [("half-even", decimal.ROUND_HALF_EVEN), ("half-up", decimal.ROUND_HALF_UP),
                                          ("down", decimal.ROUND_DOWN)])
def test_round_equals_decimal_quantize(tmp_path: Path, mode: str, python: str) -> None:
    loc = make(tmp_path)
    texts = ["12.555", "12.565", "-12.565", "0.005", "-0.005", "2.999", "7", "12.5", "99999999.994"]
    csv = tmp_path / "r.csv"
    csv.write_text("id,price,qty\n" + "".join(f"{i},{t},{t}\n" for i, t in enumerate(texts)))
    r = icectl(*["write", loc, str(csv), "--round", mode])
    assert r.exit_code == 0, r.output
    got = rows(loc)
    for i, t in enumerate(texts):
        assert got[i]["price"] == Decimal(t).quantize(Decimal("0.01"), rounding=python), t
        assert got[i]["qty"] == int(Decimal(t).quantize(Decimal("1"), rounding=python)), t


def test_json_numbers_are_exact_and_decimal_38_keeps_every_digit(tmp_path: Path) -> None:
    loc = make(tmp_path)
    top = "99999999999999999999999999999999999.999"  # 10^38 - 1 unscaled
    values = [top, "-" + top, "0.001", "-0.001", "12345678901234567890.123", "0", "-0.000"]
    js = tmp_path / "big.jsonl"
    js.write_text("".join(json.dumps({"id": i, "price": 0.1, "big": "__N__"}).replace('"__N__"', v) + "\n"
                          for i, v in enumerate(values)))
    r = icectl(*["write", loc, str(js)])
    assert r.exit_code == 0, r.output
    csv = tmp_path / "big.csv"
    csv.write_text("id,big\n" + "".join(f"{100 + i},{v}\n" for i, v in enumerate(values)))
    assert icectl(*["write", loc, str(csv)]).exit_code == 0
    pqf = tmp_path / "big.parquet"
    pq.write_table(pa.table({"id": list(range(200, 200 + len(values))),
                             "big": pa.array([Decimal(v) for v in values], pa.decimal128(38, 3))}), pqf)
    assert icectl(*["write", loc, str(pqf)]).exit_code == 0
    got = rows(loc)
    for base in (0, 100, 200):
        assert [r["big"] for r in got if base <= r["id"] < base + 100] == [Decimal(v) for v in values]
    assert all(r["price"] == Decimal("0.10") for r in got if r["id"] < 100)  # 0.1, not the double
    # icectl's own reader gives the same digits
    r = icectl(*["scan", loc, "--format", "jsonl", "--columns", "id,big"])
    assert r.exit_code == 0, r.output
    scanned = {json.loads(line)["id"]: json.loads(line)["big"] for line in r.stdout.splitlines()}
    assert [Decimal(scanned[i]) for i in range(len(values))] == [Decimal(v) for v in values]
    one_more = tmp_path / "over.jsonl"
    one_more.write_text('{"id": 1, "big": 100000000000000000000000000000000000.000}\n')
    refused(loc, ["write", loc, str(one_more)],
            f"{one_more}: row 1, column big: 100000000000000000000000000000000000.000 does not fit "
            "decimal(38, 3): more than 35 digits before the point")


def test_upsert_refuses_and_rounds_the_same_way(tmp_path: Path) -> None:
    loc = make(tmp_path, "id decimal(10,1) not null, price decimal(12,2)", fv=2)
    csv = tmp_path / "u.csv"
    csv.write_text("id,price\n1.0,1.005\n")
    refused(loc, ["upsert", loc, str(csv), "--key", "id"],
            f"{csv}: row 1, column price: 1.005 does not fit decimal(12, 2): more than 2 digits after the point{HINT}")
    csv.write_text("id,price\n1.05,1.00\n")  # a key column too
    refused(loc, ["upsert", loc, str(csv), "--key", "id"],
            f"{csv}: row 1, column id: 1.05 does not fit decimal(10, 1): more than 1 digit after the point{HINT}")
    r = icectl(*["upsert", loc, str(csv), "--key", "id", "--round", "half-even", "--json"])
    assert r.exit_code == 0, r.output
    r = icectl(*["scan", loc, "--format", "jsonl"])
    assert r.exit_code == 0, r.output
    assert [json.loads(line) for line in r.stdout.splitlines()] == [{"id": "1.0", "price": "1.00"}]
    res = upsert_rows(Table.load(loc), pa.table({"id": [1.25], "price": [2.5]}), "id", rounding="down")
    assert res.committed


def test_append_registers_only_files_whose_decimal_types_match(tmp_path: Path) -> None:
    """`icectl append` registers files without reading their rows, so it cannot convert: a
    Parquet decimal of another scale, or doubles, into a decimal column are refused whole (exit
    5); a narrower precision at the same scale is a legal promotion."""
    loc = make(tmp_path, "id long, price decimal(12,2)")
    data = Path(loc, "data")
    data.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": [1], "price": pa.array([Decimal("1.234")], pa.decimal128(12, 3))}), data / "s3.parquet")
    pq.write_table(pa.table({"id": [1], "price": [1.5]}), data / "dbl.parquet")
    pq.write_table(pa.table({"id": [1], "price": pa.array([Decimal("1.20")], pa.decimal128(10, 2))}), data / "p10.parquet")
    for name in ("s3", "dbl"):
        r = icectl(*["append", loc, str(data / f"{name}.parquet")])
        assert r.exit_code == 5 and "cannot be read as decimal(12, 2)" in r.stderr, r.output
    r = icectl(*["append", loc, str(data / "p10.parquet")])
    assert r.exit_code == 0, r.output
