"""The doctor's column metrics in Arrow (``ColumnPartial.add_arrow``, ``column_bounds``) against the row-by-row
definition (``ColumnPartial.add`` of ``decoded_maps``): the same state on the reference tables and on generated
metrics with every kind of damage a manifest can carry (unknown and null keys, a key twice in a row, bounds of
the wrong width, NaN, dates past year 9999, invalid UTF-8, counts near 2^63, one name for two ids)."""

from __future__ import annotations

import random
import struct
import uuid

import numpy as np
import pyarrow as pa
import pytest

from puffin_explorer.iceberg.column_stats import (METRIC_COLUMNS, ColumnPartial, column_bounds, columns_frame,
                                                  decoded_maps)

try:
    from _warehouse_fixtures import FIXTURES
except ImportError:  # tests/ imported as a package
    from tests._warehouse_fixtures import FIXTURES

COUNT = pa.list_(pa.struct([("key", pa.int32()), ("value", pa.int64())]))
BOUND = pa.list_(pa.struct([("key", pa.int32()), ("value", pa.binary())]))
SCHEMA = pa.schema([(c, BOUND if "bounds" in c else COUNT) for c in METRIC_COLUMNS])
TYPES = ["int", "long", "float", "double", "date", "time", "timestamp", "timestamptz", "timestamp_ns",
         "timestamptz_ns", "string", "binary", "uuid", "boolean", "decimal(9,2)", "fixed[3]", "struct<a: int>"]


def _state(p: ColumnPartial):
    def typed(d):
        return {k: {c: (repr(v), type(v).__name__) for c, v in m.items()} for k, m in d.items()}
    return p.first, p.sums, p.bounded, typed(p.ext), p.broken


def _assert_same(metrics: pa.Table, fields: dict, rids=None, chunk=None) -> None:
    rids = np.arange(metrics.num_rows) if rids is None else rids
    records = metrics.to_pylist()
    by_row = ColumnPartial()
    for i, record in zip(rids.tolist(), records):
        by_row.add(i, decoded_maps(record, fields))
    arrow = ColumnPartial()
    step = chunk or max(metrics.num_rows, 1)
    for s in range(0, metrics.num_rows, step):
        arrow.add_arrow(rids[s:s + step], metrics.slice(s, step), fields)
    assert _state(arrow) == _state(by_row)
    # every cell's repr, column by column (DataFrame.map is pandas 2.1's)
    assert columns_frame([arrow]).apply(lambda c: c.map(repr)).equals(
        columns_frame([by_row]).apply(lambda c: c.map(repr)))
    for name in {n for n, _ in fields.values()} | {"#77", "#None", "no such column"}:
        for side, col in (("lows", "lower_bounds"), ("highs", "upper_bounds")):
            assert repr(column_bounds(metrics.column(col), fields, name)) == \
                repr([decoded_maps(r, fields)[side].get(name) for r in records])


def _bound(rng: random.Random, t: str, damaged: bool) -> bytes:
    if damaged and rng.random() < 0.3:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(0, 10)))
    if t in ("int", "date"):
        return struct.pack("<i", rng.randrange(-2 ** 31, 2 ** 31) if damaged else rng.randrange(-1000, 1000))
    if t == "long":
        return struct.pack("<q", rng.randrange(-50, 50)) if rng.random() < .7 else struct.pack("<i", rng.randrange(-50, 50))
    if t == "float":
        return struct.pack("<f", rng.choice([rng.uniform(-5, 5), float("nan"), 0.0, -0.0, float("inf")]))
    if t == "double":
        return struct.pack("<d", rng.choice([rng.uniform(-5, 5), float("nan"), 0.0, -0.0])) if rng.random() < .8 \
            else struct.pack("<f", rng.uniform(-5, 5))
    if t == "time":
        return struct.pack("<q", rng.randrange(-2 ** 63, 2 ** 63) if damaged else rng.randrange(0, 86_400_000_000))
    if t.startswith("timestamp"):
        return struct.pack("<q", rng.choice([rng.randrange(-10 ** 15, 10 ** 15), -2 ** 63, 2 ** 63 - 1]) if damaged
                           else rng.randrange(-10 ** 15, 10 ** 15))
    if t == "string":
        return b"\xff\xfe" if damaged and rng.random() < .3 else rng.choice(["a", "b", "ab", "é", "z", "", "😀"]).encode()
    if t == "uuid":
        return uuid.UUID(int=rng.randrange(2 ** 128)).bytes
    if t == "boolean":
        return bytes([rng.choice([0, 1, 2])])
    if t.startswith("decimal"):
        return rng.randrange(-10 ** 6, 10 ** 6).to_bytes(4, "big", signed=True)
    return bytes(rng.randrange(256) for _ in range(rng.randrange(0, 4)))


def _generated(seed: int, damaged: bool):
    rng = random.Random(seed)
    fields = {i + 1: (f"c{i + 1}", rng.choice(TYPES)) for i in range(rng.randrange(1, 8))}
    if damaged and rng.random() < 0.2:
        fields[99] = ("c1", "long")  # two ids, one name
    keys = list(fields) + ([77, -5] if damaged else [])
    rows = []
    for _ in range(rng.randrange(0, 60)):
        record = {}
        for col in METRIC_COLUMNS:
            if rng.random() < 0.1:
                record[col] = None
                continue
            ks = rng.sample(keys, rng.randrange(0, len(keys) + 1))
            if damaged and rng.random() < 0.05 and ks:
                ks.append(ks[0])
            if damaged and rng.random() < 0.05:
                ks.append(None)
            if "bounds" in col:
                record[col] = [{"key": k, "value": _bound(rng, fields.get(k, ("", "binary"))[1], damaged)} for k in ks]
            else:
                record[col] = [{"key": k, "value": rng.choice([None, rng.randrange(0, 100), 2 ** 63 - 1, -2 ** 63])
                                if damaged else rng.randrange(0, 100)} for k in ks]
        rows.append(record)
    rids = None
    if rng.random() < .5:  # as Spark numbers rows: (manifest << 32) + entry, in any order
        rids = np.array(sorted(rng.sample(range(10 ** 6), len(rows))), dtype=np.int64)
        if rng.random() < .5:
            rng.shuffle(rids)
    return pa.Table.from_pylist(rows, schema=SCHEMA), fields, rids, rng.choice([None, 1, 7])


@pytest.mark.parametrize("damaged", [False, True], ids=["sound", "damaged"])
def test_arrow_column_metrics_equal_the_row_by_row_definition_on_generated_metrics(damaged):
    for seed in range(120):
        metrics, fields, rids, chunk = _generated(2 * seed + damaged, damaged)
        _assert_same(metrics, fields, rids, chunk)


def test_arrow_column_metrics_equal_the_row_by_row_definition_on_the_reference_tables():
    from puffin_explorer import Table, Warehouse
    from puffin_explorer.iceberg.index_build import build_index

    warehouse = FIXTURES / "warehouse"
    if not warehouse.is_dir():
        pytest.skip(f"reference fixtures not found at {warehouse}")
    wh = Warehouse(str(warehouse))
    tables = [wh.table(name) for name in wh.summary()["table"]]
    tables.append(Table.from_folder(str(FIXTURES / "engines" / "duckdb" / "dv_single")))
    for t in tables:
        index = build_index(t.source, metrics=True)
        at = np.flatnonzero(index.mask(["data"]))
        _assert_same(index.table.select(list(METRIC_COLUMNS)).take(pa.array(at)), t.source.fields_by_id())
